"""The case collector (`runner.pytest_plugin`): pytest turns `cases/*.toml` into tests.

And, for the whole session (tests/, cases/, benchmarks/): after it, no worker
process and no `runner-*` temporary folder is left behind (issue 11).

For the session, TMPDIR is a folder of its own (every runner, in this process
or in the CLI processes the tests start, puts its `runner-*` folders there),
and this process is the "child subreaper" of everything it starts: a worker
orphaned by a killed runner is re-parented here instead of to PID 1, where the
check at the end finds it. The check kills what it finds, and fails the
session (an error at the teardown of the last test) naming it. The zygotes
that fork torch's semantic runs (`runner.workers.fork`) live as long as the
process that started them, by design: they are shut down before the check.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ["runner.pytest_plugin"]

_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass


def _children() -> list[tuple[int, str, str]]:
    """This process's living children: (pid, state, command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            state, ppid = stat.rsplit(")", 1)[1].split()[:2]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError):
            continue
        if int(ppid) == os.getpid():
            found.append((int(entry.name), state, cmdline))
    return found


def _reap_zombies() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _mentioning(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind(tmp_path_factory: pytest.TempPathFactory):
    private = tmp_path_factory.mktemp("session-tmp")
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(private)
    tempfile.tempdir = None
    _become_subreaper()
    yield private
    if saved is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved
    tempfile.tempdir = None

    from runner import workers

    workers.shutdown_zygotes()  # the fork servers this process started live until now, by design
    _reap_zombies()
    left = {pid: cmd for pid, state, cmd in _children() if state != "Z"}
    left.update({pid: "(names the session's temporary folder)" for pid in _mentioning(str(private))})
    folders = sorted(p.name for p in private.rglob("runner-*") if p.is_dir())
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    problems = [f"process {pid} left running: {cmd[:200]}" for pid, cmd in left.items()]
    problems += [f"temporary folder {name} left in {private}" for name in folders]
    assert not problems, "after the suite:\n" + "\n".join(problems)
