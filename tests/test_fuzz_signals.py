"""The fuzzer's process controls and its files, with the real frameworks (issue 21, items 4, 8, 9):

- an output place that cannot be written is refused before the first program runs;
- SIGKILL of `fuzz` takes its shards and their workers along (each dies with the process that
  started it: PR_SET_PDEATHSIG);
- SIGTERM (and a second one during the cleanup) stops it the way Ctrl-C does: exit 143, no
  worker left, and a `fuzz.json` marked partial with what it found until then.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_runs import alive, gone

ROOT = Path(__file__).resolve().parent.parent


def fuzz(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path), "RUNNER_CACHE": str(tmp_path / "cache")}
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "fuzz", "--seed", "5", "--found", str(tmp_path / "found"), *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def workers_of(proc: subprocess.Popen[str], count: int = 2, timeout: float = 120) -> list[int]:
    """The campaign's worker processes, once `count` of them run (torch and burn)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = [k for k in children(proc.pid) if alive(k)]
        if len(kids) >= count:
            time.sleep(1.0)  # let them import their framework and take programs
            return kids
        if proc.poll() is not None:
            raise AssertionError(f"fuzz ended early ({proc.returncode}): {proc.communicate()[1][-2000:]}")
        time.sleep(0.1)
    raise AssertionError("the fuzz workers did not start")


def descendants(pid: int) -> list[int]:
    found = []
    for kid in children(pid):
        found += [kid, *descendants(kid)]
    return found


def grandchildren_of(proc: subprocess.Popen[str], timeout: float = 120) -> list[int]:
    """Every process under the campaign, once its shards have started their own workers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = children(proc.pid)
        everyone = descendants(proc.pid)
        if len(everyone) > len(kids) + 1:
            time.sleep(1.0)
            return descendants(proc.pid)
        if proc.poll() is not None:
            raise AssertionError(f"fuzz ended early ({proc.returncode}): {proc.communicate()[1][-2000:]}")
        time.sleep(0.1)
    raise AssertionError("the shards' workers did not start")


def test_an_output_place_that_cannot_be_written_is_refused_before_anything_runs(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    proc = fuzz(tmp_path, "--out", str(blocker / "under"), "--budget", "60")
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "--out" in err and "not a folder" in err
    assert "fuzz: seed" not in err  # nothing started


@pytest.mark.slow
def test_sigkill_of_fuzz_takes_its_workers_along(tmp_path):
    proc = fuzz(tmp_path, "--out", str(tmp_path / "out"), "--budget", "300")
    workers_of(proc)
    kids = grandchildren_of(proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert all(gone(k, timeout=10) for k in kids), [k for k in kids if alive(k)]


@pytest.mark.slow
@pytest.mark.parametrize("twice", [False, True], ids=["once", "twice"])
def test_sigterm_stops_fuzz_keeps_what_it_found_and_leaves_no_worker(tmp_path, twice):
    out = tmp_path / "out"
    proc = fuzz(tmp_path, "--out", str(out), "--budget", "300")
    workers_of(proc)
    kids = grandchildren_of(proc)  # the shards and their own workers: none may outlive the campaign
    proc.send_signal(signal.SIGTERM)
    if twice:
        time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert all(gone(k, timeout=10) for k in kids)
    doc = json.loads((out / "fuzz.json").read_text())
    assert doc["partial"] is True and "SIGTERM" in doc["partial_reason"]
    assert doc["programs"] >= 0 and "stopped by SIGTERM" in err


HUNG = "import os, sys, time\nopen(sys.argv[1], 'w').write(str(os.getpid()))\ntime.sleep(3600)\n"
POOL = """
import sys
from runner.fuzz.pool import WorkerPool
hung = [sys.executable, "-c", {hung!r}, {pidfile!r}]
with WorkerPool(timeout_s=3600, commands={{"torch": hung}}) as pool:
    pool.run_pair({{}}, ("torch",))
"""


def test_a_hung_fuzz_worker_dies_with_a_killed_fuzzer(tmp_path):
    """A worker that ignores its input and hangs (a hung interpreter) is killed by the kernel when
    the process that started it is killed outright (the same process controls as check's workers)."""
    pidfile = tmp_path / "worker.pid"
    runner = subprocess.Popen(
        [sys.executable, "-c", POOL.format(hung=HUNG, pidfile=str(pidfile))],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    worker = int(pidfile.read_text())
    assert alive(worker)
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait(timeout=30)
    assert gone(worker, timeout=10), "the hung worker outlived the killed fuzzer"
