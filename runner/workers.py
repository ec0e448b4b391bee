"""Worker processes: started, limited and reaped one way, for every command.

`check`'s one-run workers (`runner.execute`) and the fuzzer's long-lived ones
(`runner.fuzz.pool`) are started here, each:

- in a process group of its own (`start_new_session`), so that killing the
  group kills whatever it started;
- with its address space capped (RLIMIT_AS, `memory_mib`) and tied to the
  runner's life (PR_SET_PDEATHSIG: if the runner dies, however it dies, the
  kernel kills the worker; `runner.limits.child_setup`);
- registered while it runs, so that a stop signal (SIGINT, SIGTERM, SIGHUP)
  kills every worker under way (`kill_running`) before the command unwinds.

`stop` kills the group of a worker that is still running and reaps it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Any

from . import limits, noise
from .paths import PROJECT_ROOT

# The process groups of the workers running now (they run side by side in threads): a signal
# arrives in the main thread, which kills them all (`kill_running`) before it unwinds.
_RUNNING: set[int] = set()
_LOCK = threading.Lock()


def environment(controls: noise.Controls, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A worker's environment: the runner's, with the noise controls, this checkout on the path, and `extra`."""
    env = noise.worker_env(os.environ, controls, noise.timed_cpu())
    env["PYTHONFAULTHANDLER"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    return {**env, **(extra or {})}


def start(
    command: Sequence[str],
    *,
    memory_mib: int | None,
    env: Mapping[str, str],
    stdin: int | IO[Any] | None,
    stdout: int | IO[Any] | None,
    stderr: int | IO[Any] | None,
    pass_fds: Sequence[int] = (),
    text: bool = False,
) -> subprocess.Popen[Any]:
    """Start a worker (its own process group, capped, tied to the runner) and register it."""
    proc: subprocess.Popen[Any] = subprocess.Popen(
        list(command),
        pass_fds=tuple(pass_fds),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=dict(env),
        cwd=PROJECT_ROOT,
        start_new_session=True,
        preexec_fn=limits.child_setup(memory_mib),
        text=text,
        bufsize=1 if text else -1,
    )
    with _LOCK:
        _RUNNING.add(proc.pid)
    return proc


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def forget(proc: subprocess.Popen[Any]) -> None:
    with _LOCK:
        _RUNNING.discard(proc.pid)


def stop(proc: subprocess.Popen[Any]) -> None:
    """Kill the worker's group if it still runs, reap it, and forget it."""
    if proc.returncode is None:
        kill_group(proc.pid)
        proc.wait()
    forget(proc)


def kill_running() -> None:
    """Kill every worker under way (their callers then see them end at once)."""
    with _LOCK:
        groups = list(_RUNNING)
    for pgid in groups:
        kill_group(pgid)


def running() -> int:
    """How many workers are registered now (for tests)."""
    with _LOCK:
        return len(_RUNNING)
