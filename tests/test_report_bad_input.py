"""Bad input to `report`: a clear message naming the file, key or argument,
exit 2, and nothing on disk touched."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from report_fixtures import SAMPLE_1, SAMPLE_2, load, report, save, snapshot

ROOT = SAMPLE_1.parent.parent.parent


@pytest.fixture
def previous(tmp_path):
    """An output folder with a previous report and history, to check nothing changes."""
    out = tmp_path / "out"
    assert report("--from-results", SAMPLE_1, "--out", out) == 1
    return out


def expect_bad(capsys, out, *args, fragments):
    before = snapshot(out)
    assert report(*args, "--out", out) == 2
    err = capsys.readouterr().err
    for fragment in fragments:
        assert fragment in err, err
    assert snapshot(out) == before
    return err


def with_edit(tmp_path, name, edit):
    doc = load(SAMPLE_2)
    edit(doc)
    return save(tmp_path / name, doc)


def test_unknown_schema_version(tmp_path, previous, capsys):
    path = with_edit(tmp_path, "v9.json", lambda d: d.update(schema_version=9))
    expect_bad(
        capsys,
        previous,
        "--from-results",
        path,
        fragments=[f"{path}: schema_version: 9 is not supported; this runner reads 1, 2"],
    )


def test_truncated_file(tmp_path, previous, capsys):
    path = tmp_path / "truncated.json"
    path.write_bytes(SAMPLE_2.read_bytes()[:50_000])
    expect_bad(capsys, previous, "--from-results", path, fragments=[f"{path}: not valid JSON (truncated?)"])


def test_foreign_json(tmp_path, previous, capsys):
    path = tmp_path / "package.json"
    path.write_text(json.dumps({"name": "left-pad", "version": "1.3.0"}))
    expect_bad(
        capsys,
        previous,
        "--from-results",
        path,
        fragments=[
            f"{path}: schema_version: missing: not a results document of this runner (top-level keys: name, version)"
        ],
    )
    path.write_text("[1, 2, 3]")
    expect_bad(
        capsys,
        previous,
        "--from-results",
        path,
        fragments=[f"{path}: top level: expected a results document (an object), got an array"],
    )


@pytest.mark.parametrize(
    "edit, fragment",
    [
        (
            lambda d: d["runs"][3].update(outcome="exploded"),
            "runs[3].outcome: Input should be 'ok', 'panic', 'error', 'unsupported', 'crash', 'timeout' or 'oom', got 'exploded'",
        ),
        (
            lambda d: d["runs"][4]["step_ms"].__setitem__(7, "fast"),
            "runs[4].step_ms[7]: Input should be a valid number",
        ),
        (lambda d: d["runs"][0]["metrics"].pop("last_window"), "runs[0].metrics.last_window: missing"),
        (
            lambda d: d["expectations"][2].update(passed="yes"),
            "expectations[2].passed: Input should be a valid boolean",
        ),
        (
            lambda d: d["provenance"].update(started="last night"),
            "provenance.started: Input should be a valid datetime",
        ),
        (
            lambda d: d["provenance"].update(started="0001-01-01T00:00:00+14:00"),
            "provenance.started: a time that cannot be converted to UTC",
        ),
        (lambda d: d["runs"].append(dict(d["runs"][0])), "runs[10]: a second run of p10_ema torch/detach"),
        (
            lambda d: d["expectations"][-1].update(pair="torch ~ burn"),
            "schema_version 1: expectations[44].pair: expected FRAMEWORK/MODE",
        ),
        (lambda d: d["runs"][4]["rss_samples"].__setitem__(3, [100]), "runs[4].rss_samples[3][1]: missing"),
        (
            lambda d: d["runs"][4]["metrics"].update(slowdown_ratio={"x": 1}),
            "runs[4].metrics.slowdown_ratio: Input should",
        ),
        (lambda d: d["runs"][5].update(outcome="crash"), "runs[5]: outcome 'crash' needs its 'crash' details"),
        (lambda d: d["runs"][5].update(outcome="error", error="boom"), "runs[5].error: Input should be"),
        (lambda d: d["runs"][0]["metrics"].update(reference_window=[1.5, 3]), "runs[0].metrics.reference_window[0]"),
    ],
)
def test_a_broken_key_is_named(tmp_path, previous, capsys, edit, fragment):
    path = with_edit(tmp_path, "broken.json", edit)
    expect_bad(capsys, previous, "--from-results", path, fragments=[f"{path}: {fragment}"])


def test_missing_file_and_empty_file(tmp_path, previous, capsys):
    expect_bad(
        capsys,
        previous,
        "--from-results",
        tmp_path / "nope.json",
        fragments=[f"{tmp_path / 'nope.json'}: no such results file"],
    )
    (tmp_path / "empty.json").write_text("")
    expect_bad(capsys, previous, "--from-results", tmp_path / "empty.json", fragments=["empty file"])


def test_history_folder_that_is_not_one(tmp_path, previous, capsys):
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("mine")
    err = expect_bad(
        capsys,
        previous,
        "--from-results",
        SAMPLE_2,
        "--history",
        home,
        fragments=[f"--history {home}: not a history folder (no HISTORY.json; it holds 1 other entries: notes.txt)"],
    )
    assert sorted(p.name for p in home.iterdir()) == ["notes.txt"] and "Traceback" not in err
    expect_bad(
        capsys,
        previous,
        "--from-results",
        SAMPLE_2,
        "--history",
        home / "notes.txt",
        fragments=["is a file, not a history folder"],
    )
    (previous / "history" / "HISTORY.json").write_text('{"history_schema_version": 5}')
    expect_bad(
        capsys,
        previous,
        "--from-results",
        SAMPLE_2,
        fragments=["HISTORY.json: history_schema_version: 5 is not supported"],
    )


def test_a_corrupt_previous_run_in_the_history(tmp_path, previous, capsys):
    entry = next(p for p in (previous / "history").iterdir() if p.name != "HISTORY.json")
    entry.write_bytes(entry.read_bytes()[:1000])
    expect_bad(capsys, previous, "--from-results", SAMPLE_2, fragments=[f"{entry}: not valid JSON (truncated?)"])


def test_same_machine_twice_with_the_same_runs(tmp_path, previous, capsys):
    expect_bad(
        capsys,
        previous,
        "--from-results",
        SAMPLE_1,
        SAMPLE_2,
        fragments=[f"{SAMPLE_2}: run p10_ema/torch/detach of machine x86_64", f"is also in {SAMPLE_1}"],
    )


def test_arguments(tmp_path, previous, capsys):
    expect_bad(
        capsys,
        previous,
        "p10_ema",
        "--from-results",
        SAMPLE_2,
        fragments=["give CASE arguments (to run them) or --from-results FILE, not both"],
    )
    expect_bad(capsys, previous, "p99", fragments=["case 'p99'"])
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert report("--from-results", SAMPLE_2, "--out", a_file) == 2
    assert f"--out {a_file}: is a file, expected a folder" in capsys.readouterr().err


def test_the_process_exits_2_without_a_traceback(tmp_path):
    path = with_edit(tmp_path, "v7.json", lambda d: d.update(schema_version=7))
    out = subprocess.run(
        [sys.executable, "-m", "runner", "report", "--from-results", str(path), "--out", str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert out.stderr.startswith(f"error: {path}: schema_version: 7 is not supported")
    assert "Traceback" not in out.stderr and not (tmp_path / "out").exists()


def test_screenshots_without_chromium_exit_3_before_anything_is_written(previous, capsys, monkeypatch):
    from runner.report import browser

    monkeypatch.setattr(browser, "NAMES", ("no-such-chromium-here",))
    before = snapshot(previous)
    assert report("--from-results", SAMPLE_2, "--out", previous, "--screenshots") == 3
    assert "chromium is not installed" in capsys.readouterr().err
    assert snapshot(previous) == before
