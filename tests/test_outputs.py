"""Output places: checked before the first run (a folder, FIFO, socket or
device at the target, a path under a file, a name too long, a folder that
takes no new files: exit 2 naming the option, nothing run); a write that
fails after the runs keeps the results in a kept file and says where (exit 3);
the atomic writer never replaces anything but a regular file."""

from __future__ import annotations

import errno
import json
import os
import stat

import pytest
from fake_runs import case_file, environment
from report_fixtures import SAMPLE_1, SAMPLE_2, report, snapshot
from tools import missing

from runner import atomic, cli, outputs
from runner.errors import BadInput
from runner.upgrade import command as upgrade_command


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """In-process CLI runs with the stand-in worker; returns a counter of the runs started."""
    for key, value in environment(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr("tempfile.tempdir", None)

    def runs() -> int:
        path = tmp_path / "pids"
        return len(path.read_text().split()) if path.exists() else 0

    return runs


def main(*args: str) -> int:
    """`cli.main`, with argparse's own exit (a bad argument) as its code."""
    try:
        return cli.main(list(args))
    except SystemExit as exit:
        return int(exit.code or 0)


def special(kind: str, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a private copy of /dev/null
        except PermissionError:
            missing("mknod", "to make a device file for the runner to refuse")
    return path


@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
def test_check_json_at_a_non_regular_file_is_refused_before_running(tmp_path, fake, capsys, kind):
    target = special(kind, tmp_path / "target")
    mode = os.lstat(target).st_mode
    code = cli.main(["check", str(case_file(tmp_path / "c", "q", "without")), "--json", str(target)])
    assert code == 2 and fake() == 0
    assert f"--json '{target}': is a" in capsys.readouterr().err
    assert os.lstat(target).st_mode == mode  # still what it was


@pytest.mark.parametrize(
    "where, fragment",
    [
        (lambda t: t / "file" / "out.json", "is a file, not a folder"),
        (lambda t: t / ("n" * 300) / "out.json", "a name of 300 bytes"),
    ],
    ids=["under a file", "a name too long"],
)
def test_check_json_that_cannot_be_made_is_refused_before_running(tmp_path, fake, capsys, where, fragment):
    (tmp_path / "file").write_text("x")
    code = main("check", str(case_file(tmp_path / "c", "q", "without")), "--json", str(where(tmp_path)))
    assert code == 2 and fake() == 0
    assert fragment in capsys.readouterr().err


def test_a_read_only_folder_is_refused_before_running(tmp_path, fake, capsys, monkeypatch):
    # As root, permission bits do not stop a write: stand in the file system's answer.
    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(outputs.tempfile, "mkstemp", read_only)
    code = cli.main(["check", str(case_file(tmp_path / "c", "q", "without")), "--json", str(tmp_path / "o.json")])
    assert code == 2 and fake() == 0
    assert "cannot create files in" in capsys.readouterr().err


def test_a_write_that_fails_after_the_runs_keeps_the_results(tmp_path, fake, capsys, monkeypatch):
    real_stage = atomic._stage

    def full(path, text):
        if path.name == "o.json":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_stage(path, text)

    monkeypatch.setattr(atomic, "_stage", full)
    code = cli.main(["check", str(case_file(tmp_path / "c", "q", "without")), "--json", str(tmp_path / "o.json")])
    assert code == 3 and fake() == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and "the results are kept in" in err
    kept = err.split("the results are kept in ", 1)[1].split()[0]
    assert json.loads(open(kept).read())["runs"][0]["case"] == "q"
    assert kept.startswith(str(tmp_path / "cache" / "kept"))


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_report_with_a_report_file_that_is_not_a_file_is_refused(tmp_path, capsys, kind):
    out = tmp_path / "out"
    special(kind, out / "report.md")
    assert report("--from-results", SAMPLE_2, "--out", out) == 2
    assert "report.md in it is a" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]


def test_report_keeps_fresh_results_when_the_history_cannot_be_written(tmp_path, fake, capsys, monkeypatch):
    out = tmp_path / "out"
    assert report("--from-results", SAMPLE_1, "--out", out) == 1
    before = snapshot(out)
    real_stage = atomic._stage

    def full_history(path, text):
        if path.parent.name == "history":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_stage(path, text)

    monkeypatch.setattr(atomic, "_stage", full_history)
    assert report(str(case_file(tmp_path / "c", "q", "without")), "--out", out) == 3
    err = capsys.readouterr().err
    assert snapshot(out) == before  # the report and its history entry both stay
    kept = err.split("the results are kept in ", 1)[1].split()[0]
    assert json.loads(open(kept).read())["runs"][0]["case"] == "q"


def test_upgrade_check_out_is_checked_before_any_build(tmp_path, capsys, monkeypatch):
    def no_build(*args, **kwargs):
        raise AssertionError("built before checking --out")

    monkeypatch.setattr(upgrade_command.probe_build, "build", no_build)
    monkeypatch.setattr(upgrade_command.sources, "resolve", lambda source: source)
    out = tmp_path / "up"
    special("fifo", out / "upgrade.md")
    code = cli.main(["upgrade-check", "--from", "0.22.1", "--to", "0.22.2", "--out", str(out)])
    assert code == 2
    assert "upgrade.md in it is a FIFO" in capsys.readouterr().err


# ---- the atomic writer ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
def test_the_atomic_writer_refuses_anything_but_a_regular_file(tmp_path, kind):
    target = special(kind, tmp_path / "t")
    with pytest.raises(BadInput, match="not a regular file; refusing to replace it"):
        atomic.write_text(target, "x")
    assert not stat.S_ISREG(os.lstat(target).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["t"]


def test_the_atomic_writer_writes_through_a_symbolic_link(tmp_path):
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    atomic.write_text(tmp_path / "link.json", "new")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "real.json").read_text() == "new"


def test_a_failed_rename_puts_the_earlier_files_back(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("old a")
    b.write_text("old b")
    real = os.replace
    calls = []

    def failing(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(errno.EIO, "Input/output error")
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", failing)
    with pytest.raises(OSError):
        atomic.write_together([(a, "new a"), (b, "new b")])
    monkeypatch.undo()
    assert (a.read_text(), b.read_text()) == ("old a", "old b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_a_corrupt_previous_run_of_this_machine_is_found_before_the_cases_run(tmp_path, fake, capsys):
    from runner.report.history import MARKER, MARKER_DOC
    from runner.report.machines import fingerprint
    from runner.results import now, provenance

    history = tmp_path / "history"
    history.mkdir()
    (history / MARKER).write_text(json.dumps(MARKER_DOC))
    entry = history / f"20200101T000000Z__burn-0.22.1__{fingerprint(provenance(now(), now()))}.json"
    entry.write_text('{"schema_version": 2, "provenance": ')
    code = report(str(case_file(tmp_path / "c", "q", "without")), "--out", tmp_path / "out", "--history", history)
    assert code == 2 and fake() == 0
    assert f"{entry}: not valid JSON (truncated?)" in capsys.readouterr().err
