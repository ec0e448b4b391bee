"""Run one (case, framework, mode) in a worker process and classify what happened.

One process per run, so RSS is per run and a panic, abort, segfault or hang
costs only that run. The outcome is always a value:

- ``ok``: the run completed;
- ``panic``: burn panicked (message, location, step), caught by the probe;
- ``error``: the adapter raised (type, message);
- ``crash``: the worker died without a record (signal or exit code, with the
  tail of its stderr, the only free text that is read);
- ``timeout``: the worker outlived its time and was killed;
- ``oom``: the worker reached its memory limit (see `runner.limits`).

A torch run that only shows semantics (`RunRequest.timed` False: it runs side by side with
others, nothing is claimed of its time) is forked from a zygote that has imported torch already
(`runner.workers.fork`, `runner.zygote`) instead of started fresh: the same process of its own,
limits and outcomes, without the seconds of torch's import. A timed run, a run of burn and a
stand-in worker (`worker=`, `RUNNER_TEST_WORKER`) are fresh processes, as every run was before;
so is a run whose zygote cannot be started or dies under it (it runs again, fresh).

Nothing outlives its run: the worker runs in its own process group, which is
killed when the run ends, times out or the runner is interrupted (SIGINT,
SIGTERM, SIGHUP: see `runner.signals`), and it is killed by the kernel if the
runner itself dies (PR_SET_PDEATHSIG). Its temporary folder
(`runner-<runner pid>-*`) is removed on the way out; one left by a runner that
was killed outright (SIGKILL) is removed by the next run.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from . import limits, noise, workers
from .errors import signal_name
from .frameworks import FORKED_FRAMEWORK
from .model.base import describe_errors
from .model.results import RawRun, from_data

STDERR_TAIL_CHARS = 4000
# How much of a dead worker's stderr is searched for an allocation failure.
STDERR_SCAN_BYTES = 1 << 20
# How often a running worker's peak address space is read while waiting for it.
POLL_S = 0.25
# Tests stand in a fake worker for the CLI through this variable: a JSON array, the command.
WORKER_ENV = "RUNNER_TEST_WORKER"
TEMP_PREFIX = "runner-"
_OWNED = re.compile(rf"^{TEMP_PREFIX}(\d+)-")


@dataclass(frozen=True)
class RunRequest:
    case: str
    kind: str
    framework: str
    mode: str
    params: dict[str, Any]
    timeout_s: float
    # Extra environment for the worker (e.g. which probe build to load).
    env: dict[str, str] = field(default_factory=dict)
    # What the run record keeps of `params` (a program's IR carries all its data: the
    # record keeps a summary); None: `params` itself.
    recorded_params: dict[str, Any] | None = None
    # The worker's address space limit (RLIMIT_AS); None: no limit.
    memory_mib: int | None = limits.DEFAULT_MEMORY_MIB
    # Noise controls (`runner.noise`): fixed malloc settings, CPU pinning.
    controls: noise.Controls = field(default_factory=noise.Controls)
    # Whether the run is timed (runs alone, claims are made of its time or memory): such a run is
    # always a fresh process. False: semantics only; a torch one is forked from the zygote.
    timed: bool = True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(root: Path | None = None) -> list[Path]:
    """Remove the temporary folders of runners that no longer exist (killed
    outright, so they could not clean up); return what was removed."""
    root = Path(root or tempfile.gettempdir())
    removed = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    for entry in entries:
        match = _OWNED.match(entry.name)
        if not match or int(match.group(1)) == os.getpid() or _alive(int(match.group(1))):
            continue
        try:
            if entry.is_symlink() or not entry.is_dir() or entry.stat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def _default_worker() -> list[str]:
    return [sys.executable, "-m", "runner.worker"]


def _worker_command(worker: list[str] | None) -> list[str]:
    if worker:
        return worker
    stand_in = os.environ.get(WORKER_ENV)
    if stand_in:
        try:
            command = json.loads(stand_in)
        except ValueError:
            command = None
        if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
            return command
    return _default_worker()


def forks(request: RunRequest, command: list[str]) -> bool:
    """Whether the run is forked from the zygote: torch, semantics only, the real worker."""
    return request.framework == FORKED_FRAMEWORK and not request.timed and command == _default_worker()


@dataclass
class _Ended:
    timed_out: bool
    peak_bytes: int | None  # the largest of the peak address space seen and the peak RSS


def _wait(proc: subprocess.Popen[bytes] | workers.Forked, timeout: float) -> _Ended:
    """Wait for the worker's end or its timeout, watching its peak address space.

    On its end, its process group is killed before it is reaped (so nothing it
    started survives it, and its group id cannot have been reused): here, or by the
    zygote for a forked run."""
    if isinstance(proc, workers.Forked):
        return _wait_forked(proc, timeout)
    deadline = time.monotonic() + timeout
    peak: int | None = None
    try:
        pidfd: int | None = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            try:
                ended = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # reaped by someone else: its status is lost
                workers.kill_group(proc.pid)
                if proc.returncode is None:
                    proc.returncode = 255
                return _Ended(False, peak)
            if ended is not None:
                workers.kill_group(proc.pid)
                _pid, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
                return _Ended(False, max(peak or 0, usage.ru_maxrss * 1024) or None)
            seen = limits.vm_peak(proc.pid)
            if seen is not None:
                peak = max(peak or 0, seen)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _Ended(True, peak)
            if pidfd is not None:
                select.select([pidfd], [], [], min(remaining, POLL_S))
            else:
                time.sleep(min(remaining, POLL_S))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _wait_forked(proc: workers.Forked, timeout: float) -> _Ended:
    """`_wait` for a run forked by the zygote, which reaps it and says how it ended (wait
    status, ru_maxrss); its peak address space is read from /proc meanwhile, a reading kept
    only when the child was still running after it (its pid was still its own)."""
    deadline = time.monotonic() + timeout
    peak: int | None = None
    while not proc.wait_ended(0):
        seen = limits.vm_peak(proc.pid)
        if seen is not None and proc.running():
            peak = max(peak or 0, seen)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return _Ended(True, peak)
        proc.wait_ended(min(remaining, POLL_S))
    return _Ended(False, max(peak or 0, proc.maxrss_bytes or 0) or None)


def _launch(
    command: list[str],
    spec_path: Path,
    result_path: Path,
    *,
    fork: bool,
    memory_mib: int | None,
    env: dict[str, str],
    output: IO[bytes],
    progress: int,
) -> subprocess.Popen[bytes] | workers.Forked | None:
    """A `runner.worker` for SPEC RESULT, with `output` as its stdout and stderr and `progress` as
    its PROGRESS_FD: forked from the zygote (`fork`; None when no zygote can fork it), or
    `command` started fresh."""
    args = [str(spec_path), str(result_path)]
    if fork:
        return workers.fork(args, memory_mib=memory_mib, env=env, fds=(output.fileno(), progress))
    return workers.start(
        [*command, *args, str(progress)],
        memory_mib=memory_mib,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT,
        pass_fds=(progress,),
    )


def kill_running() -> None:
    """Kill every worker under way (their `execute` calls then return at once)."""
    workers.kill_running()


def _read_progress(fd: int, on_event: Callable[[dict[str, Any]], None], seen: list[dict[str, Any]]) -> None:
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as stream:
        for line in stream:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict) and event.get("event") == "checkpoint":
                event.pop("event")
                seen.append(event)
                on_event(event)


def execute(
    request: RunRequest,
    on_progress: Callable[[dict[str, Any]], None] = lambda event: None,
    worker: list[str] | None = None,
) -> RawRun:
    """Run `request` in a worker process of its own (fresh, or forked from the zygote: see the
    module's docstring); return its record, whatever happened.

    `worker` replaces the worker command (tests use it to stand in a process
    that crashes or hangs; the CLI takes one from `RUNNER_TEST_WORKER`); it is
    called with SPEC RESULT PROGRESS_FD appended.
    """
    command = _worker_command(worker)
    base: dict[str, Any] = {
        "case": request.case,
        "framework": request.framework,
        "mode": request.mode,
        "params": request.params if request.recorded_params is None else request.recorded_params,
    }
    if request.memory_mib is not None:
        base["memory_mib"] = request.memory_mib
    sweep_stale()
    with tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}{os.getpid()}-") as tmp:
        spec_path, result_path = Path(tmp, "spec.json"), Path(tmp, "result.json")
        stderr_path = Path(tmp, "stderr.txt")
        spec_path.write_text(
            json.dumps(
                {
                    "kind": request.kind,
                    "framework": request.framework,
                    "mode": request.mode,
                    "params": request.params,
                    "memory_mib": request.memory_mib,
                }
            )
        )
        env = workers.environment(request.controls, request.env)
        started = time.monotonic()
        proc: subprocess.Popen[bytes] | workers.Forked | None = None
        ended = _Ended(False, None)
        seen: list[dict[str, Any]] = []
        with open(stderr_path, "wb") as stderr:
            # Forked from the zygote when it may be; fresh when not, or when the zygote is not
            # there or died under the run (not the run's doing: it runs again, fresh).
            for fork in (True, False) if forks(request, command) else (False,):
                read_fd, write_fd = os.pipe()
                seen = []
                try:
                    proc = _launch(
                        command,
                        spec_path,
                        result_path,
                        fork=fork,
                        memory_mib=request.memory_mib,
                        env=env,
                        output=stderr,
                        progress=write_fd,
                    )
                except (OSError, subprocess.SubprocessError, workers.Stopped) as err:
                    os.close(read_fd)
                    os.close(write_fd)
                    why = (
                        "stopped before the worker started (a stop signal)"
                        if isinstance(err, workers.Stopped)
                        else f"could not start the worker: {err}"
                    )
                    return from_data(
                        RawRun,
                        {**base, "outcome": "crash", "crash": {"signal": None, "exit_code": None, "stderr_tail": why}},
                    )
                except BaseException:  # a stop signal while the zygote starts or answers
                    os.close(read_fd)
                    os.close(write_fd)
                    raise
                os.close(write_fd)
                if proc is None:  # no zygote: a fresh worker
                    os.close(read_fd)
                    continue
                reader = threading.Thread(target=_read_progress, args=(read_fd, on_progress, seen), daemon=True)
                reader.start()
                try:
                    ended = _wait(proc, request.timeout_s)
                finally:
                    # On timeout, Ctrl-C, SIGTERM or any other exit: no worker outlives its run.
                    workers.stop(proc)
                reader.join(timeout=5)
                if isinstance(proc, workers.Forked) and proc.lost and not proc.stopped:
                    stderr.seek(0)
                    stderr.truncate()
                    result_path.unlink(missing_ok=True)
                    continue
                break
        assert proc is not None  # the last attempt is a fresh worker's, which always has one
        wall_s = time.monotonic() - started
        stderr_text = _tail(stderr_path, STDERR_SCAN_BYTES)
        stderr_tail = stderr_text[-STDERR_TAIL_CHARS:]
        record = _load_result(result_path)

    if ended.timed_out:
        return _checked(
            {
                **base,
                "outcome": "timeout",
                "timeout_s": request.timeout_s,
                "checkpoints": seen,
                "stderr_tail": stderr_tail,
                "wall_s": wall_s,
            }
        )
    if record is not None:
        return _checked({**base, **record, "wall_s": wall_s}, stderr_tail)
    code: int = 255 if proc.returncode is None else proc.returncode  # None: its status was lost
    signal_text = signal_name(-code) if code < 0 else None
    peak_mib = None if ended.peak_bytes is None else round(ended.peak_bytes / (1 << 20), 1)
    hit_limit = code < 0 and -code in _LIMIT_SIGNALS and limits.at_limit(ended.peak_bytes, request.memory_mib)
    # The allocation failure is said before the backtraces that follow it: look further back than the tail.
    if limits.looks_out_of_memory(stderr_text) or hit_limit:
        detail = _oom_line(stderr_text) or f"{signal_text} with its address space at the limit"
        return _checked(
            {
                **base,
                "outcome": "oom",
                "oom": {
                    "limit_mib": request.memory_mib,
                    "peak_mib": peak_mib,
                    "detail": detail,
                    "stderr_tail": stderr_tail,
                },
                "checkpoints": seen,
                "wall_s": wall_s,
            }
        )
    return _checked(
        {
            **base,
            "outcome": "crash",
            "crash": {
                "signal": signal_text,
                "exit_code": code if code >= 0 else None,
                "stderr_tail": stderr_tail,
            },
            "checkpoints": seen,
            "wall_s": wall_s,
        }
    )


@dataclass(frozen=True)
class CountRequest:
    """The FLOP count of programs (`count_flop`): key -> the program's recipe
    (`runner.program.data.Recipe.dump`), counted in one torch worker."""

    recipes: dict[str, dict[str, Any]]
    timeout_s: float
    memory_mib: int | None = limits.DEFAULT_MEMORY_MIB
    env: dict[str, str] = field(default_factory=dict)
    controls: noise.Controls = field(default_factory=noise.Controls)


def count_flop(request: CountRequest, worker: list[str] | None = None) -> dict[str, int]:
    """Key -> FLOPs of one iteration of that program's timed loop, counted by torch in one
    worker process (`runner.worker`'s `count_flop` task), forked from the zygote as a semantic
    run is (nothing is timed; a fresh one when no zygote can fork it), capped and reaped as a
    run's worker is. A program without a count (no timed loop, torch fails in it) is left out;
    so is every program when the worker crashes, times out or reaches its memory limit: a count
    is never a reason for a check to fail."""
    if not request.recipes:
        return {}
    command = _worker_command(worker)
    with tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}{os.getpid()}-") as tmp:
        spec_path, result_path = Path(tmp, "spec.json"), Path(tmp, "result.json")
        spec = {
            "task": "count_flop",
            "kind": "program",
            "framework": "torch",
            "programs": request.recipes,
            "memory_mib": request.memory_mib,
        }
        spec_path.write_text(json.dumps(spec))
        env = workers.environment(request.controls, request.env)
        with open(os.devnull, "wb") as sink:
            proc: subprocess.Popen[bytes] | workers.Forked | None = None
            try:
                for fork in (True, False) if command == _default_worker() else (False,):
                    proc = _launch(
                        command,
                        spec_path,
                        result_path,
                        fork=fork,
                        memory_mib=request.memory_mib,
                        env=env,
                        output=sink,
                        progress=sink.fileno(),
                    )
                    if proc is not None:
                        break
            except (OSError, subprocess.SubprocessError, workers.Stopped):
                return {}
            assert proc is not None  # the last attempt is a fresh worker's
            try:
                ended = _wait(proc, request.timeout_s)
            finally:
                workers.stop(proc)
        if ended.timed_out:
            return {}
        try:
            counts = json.loads(result_path.read_text()).get("counts")
        except (OSError, ValueError, RecursionError, AttributeError):
            return {}
    if not isinstance(counts, dict):
        return {}
    return {
        key: value
        for key, value in counts.items()
        if key in request.recipes and isinstance(value, int) and not isinstance(value, bool) and value >= 0
    }


# A worker at its address space limit dies of these: a kernel kill, a stack or
# mapping that could not grow, an abort after a failed allocation.
_LIMIT_SIGNALS = {signal.SIGKILL, signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT}


def _tail(path: Path, limit: int) -> str:
    """The last `limit` bytes of a file, as text."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - limit))
        return handle.read().decode("utf-8", errors="replace")


def _oom_line(text: str) -> str | None:
    """The first line of stderr that says an allocation failed."""
    for line in text.splitlines():
        if limits.looks_out_of_memory(line):
            return line.strip()[:300]
    return None


def _checked(data: dict[str, Any], stderr_tail: str = "") -> RawRun:
    """The record as the model; a record that is not one is the worker's crash, with the reason."""
    try:
        return from_data(RawRun, data)
    except (ValidationError, ValueError) as err:
        reason = "; ".join(describe_errors(err)) if isinstance(err, ValidationError) else str(err)
        keep = {k: data[k] for k in ("case", "framework", "mode", "params", "wall_s", "memory_mib") if k in data}
        return from_data(
            RawRun,
            {
                **keep,
                "outcome": "crash",
                "crash": {
                    "signal": None,
                    "exit_code": None,
                    "stderr_tail": f"the worker wrote an invalid record: {reason}\n{stderr_tail}"[-STDERR_TAIL_CHARS:],
                },
            },
        )


def _load_result(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) and "outcome" in record else None
