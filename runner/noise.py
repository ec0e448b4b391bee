"""Noise controls for timed runs, and the state of the machine while they ran.

What a worker's per-step clock measures depends on more than the code under
test. Each control was measured on and off on the shared 2-core VM this runner
was calibrated on (`python3 -m runner.calibrate noise`: 10 interleaved runs
per setting, p10_ema at 2000 steps, 1-minute load 2.3-7.6; the spread is
(max - min) / median of the runs' reference-window medians):

    run                  none             malloc          pin              malloc,pin
    burn/without         1.558 ms  60 %   0.766 ms   6 %  1.571 ms  53 %   0.777 ms   8 %
    burn/target-without  1.711 ms  17 %   1.092 ms   7 %  1.694 ms  28 %   1.091 ms   9 %
    torch/detach         1.011 ms  54 %   0.983 ms  24 %  0.993 ms  25 %   0.951 ms  20 %
    torch/ema-only       0.082 ms   8 %   0.082 ms   4 %  0.083 ms   9 %   0.082 ms   5 %

- **glibc malloc** (`malloc`, on): with glibc's defaults the mmap threshold
  adapts to the process's allocation history, so 1 MiB tensors come from mmap
  (page faults and zeroing every step) in some processes, from the heap in
  others, and a process can switch between the two mid-run. Fixed
  (`FIXED_MALLOC`), burn's steps are twice as fast and a tenth as spread, and
  the windows of a torch run see no page faults at all (up to 72 per step
  without). A torch `ema-only` run whose every 1 MiB tensor came from mmap
  measured 0.9-1.35 ms per step against 0.08 ms from the heap: a switch of
  regime between the reference and the last window is enough for a flat run's
  slowdown ratio of 3.67, as the check once measured.
- **CPU affinity** (`pin`, off): a worker pinned to one CPU
  (`os.sched_setaffinity`) is not migrated mid-run, but cannot leave a CPU
  another process is busy on either; it measured no better here, so it is
  available (`--noise-controls malloc,pin`) and not the default. Where the
  system refuses, the worker runs unpinned and its record says so.
- **one thread** in every BLAS and thread pool, as in the seed's measurement.

The 1-minute load average (before and after each run) and the CPU frequency
(where readable) are recorded with every run and in the results' provenance,
so a reader can tell a quiet machine's figures from a loaded one's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from . import procinfo

# One thread everywhere, as in the seed's measurement.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS")
# A fixed mmap threshold (which also stops glibc adapting it) and a trim
# threshold above it: tensors up to 64 MiB come from the heap in every process.
FIXED_MALLOC: dict[str, str] = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20), "MALLOC_TRIM_THRESHOLD_": str(128 << 20)}
# The CPU a worker pins itself to (set by the parent, read by the worker).
PIN_ENV = "RUNNER_PIN_CPU"


@dataclass(frozen=True)
class Controls:
    """Which noise controls a worker gets. The default is the ones that helped
    (module docstring): fixed malloc settings, no pinning. Semantic runs (which
    run side by side) are never pinned."""

    malloc: bool = True
    pin: bool = False

    @classmethod
    def parse(cls, text: str) -> Controls:
        """`all`, `none`, or a comma-separated subset of `malloc,pin`."""
        names = {part.strip() for part in text.split(",") if part.strip()}
        if names == {"all"}:
            return cls(malloc=True, pin=True)
        if names == {"none"}:
            return cls(malloc=False, pin=False)
        unknown = names - {"malloc", "pin"}
        if unknown or not names:
            raise ValueError(f"noise controls: expected all, none or a subset of malloc,pin; got {text!r}")
        return cls(malloc="malloc" in names, pin="pin" in names)

    def __str__(self) -> str:
        on = [name for name, enabled in (("malloc", self.malloc), ("pin", self.pin)) if enabled]
        return ",".join(on) or "none"


def worker_env(base: Mapping[str, str], controls: Controls, cpu: int | None = None) -> dict[str, str]:
    """The environment of a worker: `base` with one thread everywhere, the malloc
    settings (or glibc's own, with `malloc` off) and the CPU to pin to."""
    env = dict(base)
    for var in THREAD_VARS:
        env[var] = "1"
    if controls.malloc:
        env.update(FIXED_MALLOC)
    else:
        for var in FIXED_MALLOC:
            env.pop(var, None)
    env.pop(PIN_ENV, None)
    if controls.pin and cpu is not None:
        env[PIN_ENV] = str(cpu)
    return env


def allowed_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def timed_cpu() -> int | None:
    """The CPU a timed worker is pinned to: the last one this process may use
    (CPU 0 takes more of the system's interrupts); None with a single CPU."""
    cpus = allowed_cpus()
    return cpus[-1] if len(cpus) > 1 else None


def pin_from_env(environ: Mapping[str, str] = os.environ) -> int | None:
    """In the worker: pin this process to the CPU the parent named. The CPU, or
    None when none was named or the system does not allow it."""
    text = environ.get(PIN_ENV)
    if not text:
        return None
    try:
        cpu = int(text)
        os.sched_setaffinity(0, {cpu})
    except (ValueError, AttributeError, OSError):
        return None
    return cpu


def load_average() -> float | None:
    """The 1-minute load average, where the system has one."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def cpu_mhz(root: Path = Path("/")) -> float | None:
    """The CPUs' mean current frequency in MHz: cpufreq's `scaling_cur_freq`
    where the kernel exposes it, else `cpu MHz` of /proc/cpuinfo (on many VMs
    the nominal frequency, fixed)."""
    freqs = procinfo.cpufreq_mhz("scaling_cur_freq", root)
    if not freqs:
        for value in procinfo.cpuinfo("cpu mhz", root):
            try:
                freqs.append(float(value))
            except ValueError:
                continue
    return round(sum(freqs) / len(freqs), 1) if freqs else None
