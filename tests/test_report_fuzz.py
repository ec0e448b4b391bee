"""The report's fuzz section: read from the fuzz summary, shown in both
renderings; a broken summary is said, never an exit code."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from report_fixtures import SAMPLE_2, report

from runner.report import fuzzing, html_fuzz, markdown
from runner.report.fuzzing import FuzzSection


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


# ---- a fuzz summary of the wrong shape: refused cleanly, the report still written ----------------


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        ({"found": 3}, "found"),
        ({"found": True}, "found"),
        ({"coverage": {"ops": 7}}, "coverage.ops"),
        ({"burn": "\ud800"}, "burn"),
        ({"divergences": {"new": {"values": "many"}}}, "divergences.new.values"),
        ({"found": [{"signature": "s", "class": "values"}]}, "found[0].case"),
    ],
)
def test_a_summary_of_the_wrong_shape_is_listed_as_unreadable(tmp_path, edit, key):
    fuzz = tmp_path / "fuzz.json"
    fuzz.write_text(json.dumps(summary() | edit))  # json escapes a lone surrogate as \ud800
    code = report("--from-results", SAMPLE_2, "--out", tmp_path / "out", "--fuzz", fuzz)
    assert code == 0  # said on the page; the report is written and its exit code unchanged
    md = (tmp_path / "out" / "report.md").read_text()
    line = next(x for x in md.splitlines() if "could not be read" in x)
    assert f"{fuzz}: {key}:" in line  # the file and the key
    assert "could not be read" in (tmp_path / "out" / "report.html").read_text()


def test_markup_and_huge_strings_from_the_summary_stay_bounded_text(tmp_path):
    doc = summary()
    doc["burn"] = "x" * 9_000 + "<img src=x onerror=alert(1)>"
    doc["found"][0]["signature"] = "<img src=x onerror=alert(2)>"
    doc["found"][0]["case"] = "`<script>alert(3)</script>`"
    doc["found"][0]["torch"] = "![x](http://tracker.invalid/x.png)"
    doc["divergences"]["known"] = {f"<b>k{i}</b>": i for i in range(5000)}
    fuzz = tmp_path / "fuzz.json"
    fuzz.write_text(json.dumps(doc))
    assert report("--from-results", SAMPLE_2, "--out", tmp_path / "out", "--fuzz", fuzz) == 0
    md = (tmp_path / "out" / "report.md").read_text()
    html = (tmp_path / "out" / "report.html").read_text()
    for page in (md, html):
        assert "<img" not in page and "<script>alert(3)" not in page and "<b>k1</b>" not in page
    # no image for a CI summary to load: shown as code (a code span renders no markup)
    assert md.count("](http://tracker.invalid") == md.count("`![x](http://tracker.invalid/x.png)`") == 1
    fuzz_md = md[md.index("## Fuzzing") : md.index("## Expectations")]
    assert len(fuzz_md) < 10_000  # a few lines, not 9,000 characters of `burn` or 5,000 counts
    assert "and 4970 more" in fuzz_md


def test_a_ten_megabyte_string_is_refused_not_copied(tmp_path):
    doc = summary()
    doc["found"][0]["signature"] = "s" * (10 << 20)
    fuzz = tmp_path / "fuzz.json"
    fuzz.write_text(json.dumps(doc))
    assert report("--from-results", SAMPLE_2, "--out", tmp_path / "out", "--fuzz", fuzz) == 0
    md = tmp_path / "out" / "report.md"
    assert md.stat().st_size < 100_000
    assert f"{fuzz}: found[0].signature: String should have at most" in md.read_text()


# ---- any JSON value renders or is refused cleanly -------------------------------------------------

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
# Near misses: the summary's own keys, each with any value, so that validation is reached.
NEAR_MISSES = st.fixed_dictionaries(
    {"fuzz_schema_version": st.just(1)},
    optional={key: JSON_VALUES for key in summary() if key != "fuzz_schema_version"}
    | {"found": st.lists(JSON_VALUES | st.just(summary()["found"][0]))},
)


def _render(section: FuzzSection | None) -> None:
    page = html_fuzz.section(section) + "\n".join(markdown._fuzz(section))
    page.encode("utf-8")  # writable as the report files are
    assert "<img" not in page


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=JSON_VALUES | NEAR_MISSES)
def test_any_json_value_as_a_fuzz_summary_renders_or_is_refused_cleanly(tmp_path, value):
    fuzz = tmp_path / "fuzz.json"
    fuzz.write_text(json.dumps(value))
    section = fuzzing.read(fuzz)
    assert section is not None
    assert (section.doc is None) != (section.error is None)
    if section.error is not None:
        assert section.error.startswith(str(fuzz))
    _render(section)
