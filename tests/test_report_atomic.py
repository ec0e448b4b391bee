"""A report interrupted at any write leaves the previous report and the history
intact: every file is the old one or a complete new one, never half of either.

The interruption is a fake (the runner's own fault handling): `os` inside
`runner.atomic` raises KeyboardInterrupt at the N-th rename or fsync."""

from __future__ import annotations

import json
import os

import pytest
from report_fixtures import SAMPLE_1, SAMPLE_2, report, snapshot

from runner import atomic
from runner.results import load_results

# The order `report` writes in; history entries come last.
WRITES = ["results.json", "report.md", "report.html", "history entry"]


class InterruptingOs:
    def __init__(self, call: str, at: int):
        self.call, self.at, self.count = call, at, 0

    def __getattr__(self, name):
        real = getattr(os, name)
        if name != self.call:
            return real

        def interrupted(*args):
            if self.count == self.at:
                raise KeyboardInterrupt
            self.count += 1
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
def test_interrupted_at_each_rename(tmp_path, monkeypatch, capsys, at):
    out = tmp_path / "out"
    assert report("--from-results", SAMPLE_1, "--out", out) == 1
    before = snapshot(out)
    monkeypatch.setattr(atomic, "os", InterruptingOs("replace", at))
    assert report("--from-results", SAMPLE_2, "--out", out) == 130  # interrupted
    assert "interrupted" in capsys.readouterr().err
    after = snapshot(out)

    leftovers = [name for name in after if name.split("/")[-1].startswith(".")]
    assert leftovers == []  # temporary files removed
    new = [name for name in WRITES[:3] if after[name] != before[name]]
    assert new == WRITES[:at][:3]  # files before the interruption replaced, the rest untouched
    for name in new:
        assert complete(name, after[name])
    history = sorted(name for name in after if name.startswith("history/") and "HISTORY" not in name)
    assert len(history) == 1  # the second run is never recorded without its report
    for name in history:
        assert after[name] == before[name]
        load_results(out / name)


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
