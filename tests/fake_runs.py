"""Fakes for the runner's own fault handling: a stand-in worker that the CLI
runs instead of `python -m runner.worker` (through `RUNNER_TEST_WORKER`), and
case files for it. Nothing here claims to check torch or burn.

The stand-in decides by mode: `without` and `log` finish at once with a
record; `detach` sleeps for an hour (a run to interrupt); `target` runs
`FAKE_BODY` (Python source in the environment) first. Every worker appends its
pid to `FAKE_PIDS` when that is set, so a test can check none is left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from runner.execute import WORKER_ENV

ROOT = Path(__file__).resolve().parent.parent

# A p10 run small enough for a test (torch's adapter has no `without` mode: a run of it is an error).
SMALL_P10 = {
    "d_in": 8,
    "d_out": 8,
    "batch": 2,
    "lr": 1e-3,
    "steps": 3,
    "checkpoints": [3],
    "ema_decay": 0.99,
    "seed": 0,
}

WORKER = r"""
import json, os, signal, sys, time
spec_path, result_path, progress_fd = sys.argv[1:]
spec = json.load(open(spec_path))
if os.environ.get("FAKE_PIDS"):
    with open(os.environ["FAKE_PIDS"], "a") as pids:
        pids.write(f"{os.getpid()}\n")
progress = os.fdopen(int(progress_fd), "w", buffering=1)
progress.write(json.dumps({"event": "checkpoint", "step": 1, "ms_per_step": 1.0, "rss_delta_mib": 0.0,
                           "tracked": False, "flags": {}}) + "\n")
mode = spec["mode"]
if mode == "detach":
    time.sleep(3600)
if mode == "target":
    exec(os.environ.get("FAKE_BODY", ""))
steps = spec["params"]["steps"]
json.dump({"outcome": "ok", "versions": {"burn": "0.22.1"}, "step_ms": [1.0] * steps, "checkpoints": [],
           "rss_samples": []}, open(result_path, "w"))
"""


def worker_script(folder: Path) -> Path:
    path = folder / "fake_worker.py"
    path.write_text(WORKER)
    return path


def case_file(folder: Path, name: str, mode: str, steps: int = 400, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nkind = "p10"\n[params]\nd_in = 8\nd_out = 8\nbatch = 2\nsteps = {steps}\n{extra}\n'
        f'[[runs]]\nframework = "burn"\nmode = "{mode}"\n'
    )
    return path


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The CLI's environment for a fake run: the stand-in worker, a private
    TMPDIR (where the runner's temporary folders go) and RUNNER_CACHE (kept files)."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = dict(os.environ)
    env.update(
        {
            WORKER_ENV: json.dumps([sys.executable, str(worker_script(tmp_path))]),
            "TMPDIR": str(tmp_path / "tmp"),
            "RUNNER_CACHE": str(tmp_path / "cache"),
            "FAKE_PIDS": str(tmp_path / "pids"),
            "PYTHONPATH": str(ROOT),
        }
    )
    env.update(extra)
    return env


def start(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "runner", *args],
        cwd=ROOT,
        env=env or environment(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_pids(tmp_path: Path, count: int, timeout: float = 60) -> list[int]:
    """The pids of the first `count` fake workers, once they have all started."""
    deadline = time.monotonic() + timeout
    path = tmp_path / "pids"
    while time.monotonic() < deadline:
        pids = [int(p) for p in path.read_text().split()] if path.exists() else []
        if len(pids) >= count:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"{count} fake workers did not start within {timeout} s")


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False
