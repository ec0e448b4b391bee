"""`python3 -m runner report --from-results`: the HTML page, the Markdown
summary and results.json rendered from committed real results."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from report_fixtures import SAMPLE_1, SAMPLE_2, load, report

from runner.report import svg
from runner.report.machines import fingerprint
from runner.results import load_results


class _Page(HTMLParser):
    """Collects the elements the tests look at."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def all(self, tag: str, **attrs) -> list[dict]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    code = report("--from-results", SAMPLE_1, "--out", out)
    return code, out


def test_exit_code_follows_the_expectations_of_the_first_run(rendered):
    code, _ = rendered
    doc = load(SAMPLE_1)
    assert doc["summary"]["failed"] == 3  # what that real run showed
    assert code == 1


def test_results_json_is_the_input(rendered):
    _, out = rendered
    # the same document, in the current schema (SAMPLE_1 was written by schema version 1)
    written = json.loads((out / "results.json").read_text())
    assert written["schema_version"] == 2
    assert load_results(out / "results.json") == load_results(SAMPLE_1)


def test_html_has_both_plots_with_every_run_as_a_series(rendered):
    _, out = rendered
    doc = load(SAMPLE_1)
    page = parse((out / "report.html").read_text())
    plots = page.all("svg")
    fp = fingerprint(doc["provenance"])
    assert [p["id"] for p in plots] == [f"steps-p10_ema-{fp}", f"rss-p10_ema-{fp}"]
    labels = [g["data-series"] for g in page.all("g") if "data-series" in g]
    expected = [
        f"{r['framework']}/{r['mode']}" + ("" if r["outcome"] == "ok" else f" ({r['outcome']})") for r in doc["runs"]
    ]
    assert labels == expected + expected  # step time, then RSS
    steps = [g for g in page.all("g") if "data-series" in g][: len(doc["runs"])]
    for g, run in zip(steps, doc["runs"], strict=True):
        assert int(g["data-samples"]) == len(run["step_ms"])
        assert 1 <= int(g["data-points"]) <= svg.MAX_POINTS
    # burn's detach EMA grows from ~2 ms to ~50 ms per step: a log axis
    assert plots[0]["data-y-scale"] == "log"
    assert len(page.all("polyline")) == 2 * len(doc["runs"]) - 1  # the panicked run has one RSS point


def test_html_tables_expectations_pairs_checkpoints_and_provenance(rendered):
    _, out = rendered
    doc = load(SAMPLE_1)
    html = (out / "report.html").read_text()
    assert "ATTENTION: 3 expectations do not hold" in html
    assert html.count('<span class="fail">FAIL</span>') == 3 + 2  # expectation rows, pair claims
    assert html.count('<span class="pass">PASS</span>') == 42 + 9  # 11 pair claims, 2 fail
    assert 'differ: rss_grows <span class="fail">FAIL</span>' in html
    for pair in (
        "torch/detach vs burn/detach",
        "torch/detach vs burn/without",
        "torch/target vs burn/target",
        "torch/target vs burn/target-without",
    ):
        assert f'<h4 class="pair">{pair}</h4>' in html
    panic = next(r for r in doc["runs"] if r["outcome"] == "panic")["panic"]
    assert f"step {panic['step']}: Cannot run backward: graph tape has already been consumed" in html
    for step in doc["runs"][0]["params"]["checkpoints"]:
        assert f"<th>step {step}</th>" in html
    footer = html[html.index("<footer>") :]
    for key in ("burn", "torch", "rustc", "cpu", "git_commit", "started"):
        assert str(doc["provenance"][key]) in footer


def test_html_is_self_contained(rendered):
    _, out = rendered
    html = (out / "report.html").read_text()
    assert "<script" not in html and "<link" not in html and "src=" not in html
    assert "@import" not in html and "url(" not in html
    urls = set(re.findall(r"https?://[^\s\"'<>]+", html))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace name, never fetched


def test_markdown_summary_is_short_and_says_what_holds(rendered):
    _, out = rendered
    doc = load(SAMPLE_1)
    md = (out / "report.md").read_text()
    assert md.startswith("# burn-torch-diff nightly report\n")
    assert "**ATTENTION: 3 expectations do not hold**" in md
    assert "p10_ema torch/detach rss_growth_mib_per_1000: expected <= 1, observed 1.96" in md
    assert "| p10_ema | burn/detach | ok | 20.70 |" in md
    assert "| p10_ema | burn/target | panic at step 3 (backward) |" in md
    assert (
        "| p10_ema | torch/detach ~ burn/detach | differ: tracked, grows, rss_grows | 2/3 hold (not: rss_grows) |" in md
    )
    assert "no earlier run of this machine" in md
    assert "Mann-Whitney U" in md  # the rule is stated
    assert f"burn {doc['provenance']['burn']}, torch {doc['provenance']['torch']}" in md
    assert len(md.encode()) < 8000 and md.count("\n") < 60


def test_a_run_where_everything_holds_says_ok(tmp_path):
    assert report("--from-results", SAMPLE_2, "--out", tmp_path) == 0
    md = (tmp_path / "report.md").read_text()
    assert "**OK: every expectation holds; this machine has no previous run to compare with**" in md
    # the second sample has dense RSS samples (every 25 steps): the RSS plot draws them
    doc = load(SAMPLE_2)
    page = parse((tmp_path / "report.html").read_text())
    rss = [g for g in page.all("g") if "data-series" in g][len(doc["runs"]) :]
    detach = next(r for r in doc["runs"] if (r["framework"], r["mode"]) == ("burn", "detach"))
    steps = {s for s, _ in detach["rss_samples"]} | {c["step"] for c in detach["checkpoints"]}
    assert len(detach["rss_samples"]) == 80
    assert int(next(g for g in rss if g["data-series"] == "burn/detach")["data-samples"]) == len(steps)


@pytest.mark.parametrize(
    "values, log",
    [([1.0, 2.0, 5.0], False), ([1.0, 50.0] * 10, True), ([-1.0, 100.0], False), ([1.0] * 98 + [500.0], False)],
)
def test_log_scale_when_the_values_span_more_than_ten_times(values, log):
    assert svg.use_log_scale(values) is log  # a single outlier (last case) does not count


def test_long_series_are_drawn_through_group_medians():
    points = [(i + 1, 1.0 if i % 2 else 3.0) for i in range(2000)]
    thinned = svg.thin(points)
    assert len(thinned) == 500 and svg.group_size(2000) == 4
    assert {y for _, y in thinned} == {2.0}
    assert svg.thin(points[:10]) == points[:10]
