"""A report interrupted at any write leaves the previous report and the history
intact: every file is the old one or a complete new one, never half of either,
and the report files and the history entry change together or not at all.

The interruption is a fake (the runner's own fault handling): `os` inside
`runner.atomic` raises KeyboardInterrupt (or OSError) at the N-th rename or
fsync. A real signal cannot land between the renames (they run with SIGINT,
SIGTERM and SIGHUP held back); a rename that fails is undone with the ones
before it."""

from __future__ import annotations

import errno
import json
import os

import pytest
from report_fixtures import SAMPLE_1, SAMPLE_2, report, snapshot

from runner import atomic

# The renames of a second report: the three report files, then the history entry.
WRITES = ["results.json", "report.md", "report.html", "history entry"]


class InterruptingOs:
    """`os`, except that the `at`-th call of `call` raises `error` (once)."""

    def __init__(self, call: str, at: int, error: BaseException | None = None):
        self.call, self.at, self.count = call, at, 0
        self.error = error or KeyboardInterrupt()

    def __getattr__(self, name):
        real = getattr(os, name)
        if name != self.call:
            return real

        def interrupted(*args):
            self.count += 1
            if self.count == self.at + 1:
                raise self.error
            return real(*args)

        return interrupted


def complete(name: str, data: bytes) -> bool:
    text = data.decode()
    if name.endswith(".json"):
        json.loads(text)
        return True
    if name.endswith(".html"):
        return text.endswith("</body></html>\n")
    return text.startswith("# burn-torch-diff") and text.rstrip().endswith("</sub>")


@pytest.mark.parametrize("at", range(len(WRITES)))
def test_interrupted_at_each_rename_leaves_everything_as_it_was(tmp_path, monkeypatch, capsys, at):
    out = tmp_path / "out"
    assert report("--from-results", SAMPLE_1, "--out", out) == 1
    before = snapshot(out)
    fake = InterruptingOs("replace", at)
    monkeypatch.setattr(atomic, "os", fake)
    assert report("--from-results", SAMPLE_2, "--out", out) == 130  # interrupted
    assert fake.count > at  # the interruption did happen at that rename
    assert "interrupted" in capsys.readouterr().err
    assert snapshot(out) == before  # no temporary file, no backup, nothing replaced
    monkeypatch.undo()
    assert report("--from-results", SAMPLE_2, "--out", out) == 1  # and the next report goes through
    after = snapshot(out)
    assert all(complete(name, after[name]) for name in WRITES[:3])
    assert (
        len([n for n in after if n.startswith("history/")]) == len([n for n in before if n.startswith("history/")]) + 1
    )


@pytest.mark.parametrize("at", range(len(WRITES)))
def test_a_failing_write_keeps_everything_as_it_was(tmp_path, monkeypatch, capsys, at):
    """A full disk at the N-th temporary file: nothing replaced, exit 3 (results from files need no keeping)."""
    out = tmp_path / "out"
    report("--from-results", SAMPLE_1, "--out", out)
    before = snapshot(out)
    monkeypatch.setattr(atomic, "os", InterruptingOs("fsync", at, OSError(errno.ENOSPC, "No space left on device")))
    assert report("--from-results", SAMPLE_2, "--out", out) == 3
    assert "No space left on device" in capsys.readouterr().err
    assert snapshot(out) == before


def test_interrupted_while_writing_a_temporary_file(tmp_path, monkeypatch):
    out = tmp_path / "out"
    report("--from-results", SAMPLE_1, "--out", out)
    before = snapshot(out)
    monkeypatch.setattr(atomic, "os", InterruptingOs("fsync", 0))
    assert report("--from-results", SAMPLE_2, "--out", out) == 130
    assert snapshot(out) == before


def test_uninterrupted_run_replaces_everything(tmp_path):
    out = tmp_path / "out"
    report("--from-results", SAMPLE_1, "--out", out)
    before = snapshot(out)
    report("--from-results", SAMPLE_2, "--out", out)
    after = snapshot(out)
    assert all(after[name] != before[name] for name in WRITES[:3])
    assert (
        len([n for n in after if n.startswith("history/")]) == len([n for n in before if n.startswith("history/")]) + 1
    )


def test_written_files_get_the_usual_mode_not_owner_only(tmp_path):
    import os

    from runner.atomic import write_text

    path = tmp_path / "r.md"
    write_text(path, "x")
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
