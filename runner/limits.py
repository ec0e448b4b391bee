"""What bounds a worker process: its address space (RLIMIT_AS), and its
parent's life (it is killed when the runner dies, however the runner dies).

The default memory limit comes from measurement (p10 at 512x512, batch 64,
2000 steps, one thread, on x86_64): a torch run peaks at 3.3 GiB of address
space (0.7 GiB resident: most of it is libtorch, mapped but untouched); a burn
run at 36 MiB. 8 GiB leaves torch 4.7 GiB above that. RLIMIT_AS counts
address space, not resident memory, which is why it is this high: it is a
cap on runaway allocation, not a measurement.

A run that reaches the limit is outcome `oom`, however the framework reports
it: Python's MemoryError, torch's "DefaultCPUAllocator: can't allocate
memory", a library that cannot be mapped, or Rust's "memory allocation of N
bytes failed" followed by an abort (`looks_out_of_memory`); or a worker killed
by SIGKILL/SIGSEGV/SIGBUS with its peak at the limit (`at_limit`).
"""

from __future__ import annotations

import ctypes
import os
import re
import resource
import signal
import sys
from collections.abc import Callable

from . import procinfo

DEFAULT_MEMORY_MIB = 8192
# Python itself needs a few tens of MiB of address space to start.
MIN_MEMORY_MIB = 64
MAX_MEMORY_MIB = 1 << 24  # 16 TiB
# A worker killed by a signal with its peak above this share of the limit ran out of memory.
AT_LIMIT_SHARE = 0.9

_PR_SET_PDEATHSIG = 1

_OOM_PATTERNS = re.compile(
    r"MemoryError|memory allocation of \d+ bytes failed|can't allocate memory|Cannot allocate memory"
    r"|failed to map segment from shared object|std::bad_alloc|out of memory",
    re.IGNORECASE,
)


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return function


# Looked up once, in the parent: the child between fork and exec should do as little as it can.
_PRCTL = _prctl()


def child_setup(memory_mib: int | None) -> Callable[[], None]:
    """What a worker does between fork and exec (a run forked by the zygote: between fork and
    the run): cap its address space, and die (SIGKILL) when the thread that started it dies.
    If the parent is already gone by then, exit at once."""
    parent = os.getpid()
    limit = None if memory_mib is None else memory_mib << 20
    prctl = _PRCTL

    def setup() -> None:
        if limit is not None:
            _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != parent:
                os._exit(1)

    return setup


def vm_peak(pid: int) -> int | None:
    """The peak address space of a running process (VmPeak, bytes), or None."""
    return procinfo.status_bytes("VmPeak", pid)


def looks_out_of_memory(text: str) -> bool:
    """Whether an error message or the tail of stderr says an allocation failed."""
    return _OOM_PATTERNS.search(text) is not None


def at_limit(peak_bytes: int | None, memory_mib: int | None) -> bool:
    return peak_bytes is not None and memory_mib is not None and peak_bytes >= AT_LIMIT_SHARE * (memory_mib << 20)
