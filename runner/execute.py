"""Run one (case, framework, mode) in a worker process and classify what happened.

One process per run, so RSS is per run and a panic, abort, segfault or hang
costs only that run. The outcome is always a value:

- ``ok``: the run completed;
- ``panic``: burn panicked (message, location, step), caught by the probe;
- ``error``: the adapter raised (type, message);
- ``crash``: the worker died without a record (signal or exit code, with the
  tail of its stderr, the only free text that is read);
- ``timeout``: the worker outlived its time and was killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import noise
from .model.base import describe_errors
from .model.results import RawRun, from_data
from .paths import PROJECT_ROOT

STDERR_TAIL_CHARS = 4000


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
    # Noise controls (`runner.noise`): fixed malloc settings, CPU pinning.
    controls: noise.Controls = field(default_factory=noise.Controls)


def _worker_env(controls: noise.Controls) -> dict[str, str]:
    env = noise.worker_env(os.environ, controls, noise.timed_cpu())
    env["PYTHONFAULTHANDLER"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    return env


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


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
    """Run `request` in a fresh worker; return its record, whatever happened.

    `worker` replaces the worker command (tests use it to stand in a process
    that crashes or hangs); it is called with SPEC RESULT PROGRESS_FD appended.
    """
    command = worker or [sys.executable, "-m", "runner.worker"]
    base: dict[str, Any] = {
        "case": request.case,
        "framework": request.framework,
        "mode": request.mode,
        "params": request.params,
    }
    with tempfile.TemporaryDirectory(prefix="runner-") as tmp:
        spec_path, result_path = Path(tmp, "spec.json"), Path(tmp, "result.json")
        stderr_path = Path(tmp, "stderr.txt")
        spec_path.write_text(
            json.dumps(
                {"kind": request.kind, "framework": request.framework, "mode": request.mode, "params": request.params}
            )
        )
        read_fd, write_fd = os.pipe()
        seen: list[dict[str, Any]] = []
        started = time.monotonic()
        with open(stderr_path, "wb") as stderr:
            try:
                proc = subprocess.Popen(
                    [*command, str(spec_path), str(result_path), str(write_fd)],
                    pass_fds=(write_fd,),
                    stdin=subprocess.DEVNULL,
                    stdout=stderr,
                    stderr=subprocess.STDOUT,
                    env={**_worker_env(request.controls), **request.env},
                    cwd=PROJECT_ROOT,
                    start_new_session=True,
                )
            except OSError as err:
                os.close(read_fd)
                os.close(write_fd)
                return from_data(
                    RawRun,
                    {
                        **base,
                        "outcome": "crash",
                        "crash": {
                            "signal": None,
                            "exit_code": None,
                            "stderr_tail": f"could not start the worker: {err}",
                        },
                    },
                )
            os.close(write_fd)
            reader = threading.Thread(target=_read_progress, args=(read_fd, on_progress, seen), daemon=True)
            reader.start()
            timed_out = False
            try:
                proc.wait(timeout=request.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                # On timeout, Ctrl-C or any other exit: no worker outlives its run.
                if proc.poll() is None:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    proc.wait()
            reader.join(timeout=5)
        wall_s = time.monotonic() - started
        stderr_tail = stderr_path.read_text(errors="replace")[-STDERR_TAIL_CHARS:]
        record = _load_result(result_path)

    if timed_out:
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
    code = proc.returncode
    return _checked(
        {
            **base,
            "outcome": "crash",
            "crash": {
                "signal": _signal_name(-code) if code < 0 else None,
                "exit_code": code if code >= 0 else None,
                "stderr_tail": stderr_tail,
            },
            "checkpoints": seen,
            "wall_s": wall_s,
        }
    )


def _checked(data: dict[str, Any], stderr_tail: str = "") -> RawRun:
    """The record as the model; a record that is not one is the worker's crash, with the reason."""
    try:
        return from_data(RawRun, data)
    except (ValidationError, ValueError) as err:
        reason = "; ".join(describe_errors(err)) if isinstance(err, ValidationError) else str(err)
        keep = {k: data[k] for k in ("case", "framework", "mode", "params", "wall_s") if k in data}
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
