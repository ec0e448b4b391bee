"""The report's fuzz section: read from the fuzz summary, shown in both
renderings; a broken summary is said, never an exit code."""

from __future__ import annotations

import json

from report_fixtures import SAMPLE_2, report


def summary(found=True):
    return {
        "fuzz_schema_version": 1,
        "seed": 3,
        "seconds": 60.0,
        "programs": 3000,
        "programs_per_second": 50.0,
        "burn": "installed probe",
        "divergences": {"new": {"values": 1}, "known": {"consumed-tape-panic": 12}},
        "filtered": {"nonfinite": 4, "chaotic": 2},
        "coverage": {"ops": {"exp": 40, "relu": 30}, "below": [], "pairs_seen": 10, "pairs_possible": 1089},
        "found": [
            {
                "signature": "values:exp-sum-backward",
                "class": "values",
                "case": "cases/found/x.toml",
                "torch": "cases/found/x/torch_repro.py",
                "rust": "cases/found/x/rust",
            }
        ]
        if found
        else [],
    }


def test_the_fuzz_section_shows_counts_and_reproducers(tmp_path):
    fuzz = tmp_path / "fuzz.json"
    fuzz.write_text(json.dumps(summary()))
    report("--from-results", SAMPLE_2, "--out", tmp_path / "out", "--fuzz", fuzz)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Fuzzing" in md and "3000 generated programs" in md
    assert "new divergences: values 1" in md and "consumed-tape-panic 12" in md
    assert "cases/found/x/torch_repro.py" in md
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="fuzzing"' in html and "values:exp-sum-backward" in html


def test_a_broken_fuzz_summary_is_said_not_fatal(tmp_path):
    fuzz = tmp_path / "fuzz.json"
    fuzz.write_text("{not json")
    code = report("--from-results", SAMPLE_2, "--out", tmp_path / "out", "--fuzz", fuzz)
    assert code == 0  # the same report as without --fuzz: a broken summary changes no exit code
    assert "could not be read" in (tmp_path / "out" / "report.md").read_text()


def test_no_summary_no_section(tmp_path):
    report("--from-results", SAMPLE_2, "--out", tmp_path / "out", "--fuzz", tmp_path / "missing.json")
    assert "## Fuzzing" not in (tmp_path / "out" / "report.md").read_text()
