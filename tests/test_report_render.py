"""`python3 -m runner report --from-results`: the HTML page, the Markdown
summary and results.json rendered from committed real results."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from report_fixtures import SAMPLE_1, SAMPLE_2, load, report, save

from runner.report import html_details, svg
from runner.report.machines import fingerprint
from runner.results import load_results


class _Page(HTMLParser):
    """Collects the elements the tests look at; each knows the plot (`svg` id)
    it sits in."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.svg: str | None = None

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        if tag == "svg":
            self.svg = found.get("id")
        found["_svg"] = self.svg
        self.tags.append((tag, found))

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None

    def all(self, tag: str, **attrs) -> list[dict]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]

    def series(self, plot_id: str) -> list[dict]:
        return [g for g in self.all("g", _svg=plot_id) if "data-series" in g]


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


def section(html: str, ident: str) -> str:
    """The HTML of one `<section id=...>` (sections do not nest)."""
    start = html.index(f'<section id="{ident}"') if f'<section id="{ident}"' in html else html.index(f'id="{ident}"')
    return html[start : html.index("</section>", start)]


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


def test_the_full_plots_have_every_run_as_a_series(rendered):
    _, out = rendered
    doc = load(SAMPLE_1)
    page = parse((out / "report.html").read_text())
    fp = fingerprint(doc["provenance"])
    full = [p for p in page.all("svg") if p.get("id", "").startswith(("steps-", "rss-"))]
    assert [p["id"] for p in full] == [f"steps-p10_ema-{fp}", f"rss-p10_ema-{fp}"]
    expected = [
        f"{r['framework']}/{r['mode']}" + ("" if r["outcome"] == "ok" else f" ({r['outcome']})") for r in doc["runs"]
    ]
    for plot in full:
        assert [g["data-series"] for g in page.series(plot["id"])] == expected
    for g, run in zip(page.series(f"steps-p10_ema-{fp}"), doc["runs"], strict=True):
        assert int(g["data-samples"]) == len(run["step_ms"])
        assert 1 <= int(g["data-points"]) <= svg.MAX_POINTS
    # burn's detach EMA grows from ~2 ms to ~50 ms per step: a log axis
    assert full[0]["data-y-scale"] == "log"
    polylines = [p for p in page.all("polyline") if p["_svg"] in (f"steps-p10_ema-{fp}", f"rss-p10_ema-{fp}")]
    assert len(polylines) == 2 * len(doc["runs"]) - 1  # the panicked run has one RSS point


def test_small_multiples_one_panel_per_pair_with_both_runs_on_shared_axes(rendered):
    _, out = rendered
    doc = load(SAMPLE_1)
    html = (out / "report.html").read_text()
    page = parse(html)
    fp = fingerprint(doc["provenance"])
    pairs = list(dict.fromkeys(e["pair"] for e in doc["expectations"] if "pair" in e))
    assert len(pairs) == 4
    for kind in ("steps", "mem"):
        panels = [p for p in page.all("svg") if p.get("id", "").startswith(f"pair-{kind}-p10_ema-{fp}-")]
        assert len(panels) == len(pairs), kind
        for panel, pair in zip(panels, pairs):
            a, b = (side.strip() for side in pair.split("~"))
            assert panel["aria-label"] == f"{a} vs {b}"
            labels = [g["data-series"].split(" (")[0] for g in page.series(panel["id"])]
            if kind == "mem" and b == "burn/target":
                assert labels == [a]  # panicked at step 3, before the end of warm-up: no growth to draw
            else:
                assert labels == [a, b]
        # the panels share their y axis (one range, one scale)
        assert len({p["data-y-scale"] for p in panels}) == 1
    assert page.all("svg", **{"class": "plot"})[0]["id"].startswith(
        "pair-steps-"
    )  # the panels come before the full plots
    # where burn/target stopped is marked on both of its panels
    assert html.count("burn/target panic at step 3 (backward)</text>") == 2
    assert "The full step series: every run of p10_ema on one plot" in html
    assert html.index("<details><summary>The full step series") < html.index(f'id="steps-p10_ema-{fp}"')


def test_memory_is_growth_since_the_end_of_warm_up():
    doc = load_results(SAMPLE_2)[0]
    runs = {(r.framework, r.mode): r for r in doc.runs}
    torch, burn = runs["torch", "detach"], runs["burn", "detach"]
    assert html_details.warmup_end(burn) == 50  # windows.warmup of p10_ema
    # torch starts ~160 MiB above where the RSS is measured from: gone once the baseline is step 50
    assert max(y for _, y in html_details.rss_points(torch)) > 150
    torch_growth = html_details.growth_points(torch)
    assert torch_growth[0] == (50.0, 0.0) and max(abs(y) for _, y in torch_growth) < 10
    burn_growth = html_details.growth_points(burn)
    assert burn_growth[0] == (50.0, 0.0) and burn_growth[-1][0] == 2000.0
    rss = dict(html_details.rss_points(burn))
    assert burn_growth[-1][1] == pytest.approx(rss[2000.0] - rss[50.0])
    assert html_details.growth_points(runs["burn", "target"]) == []  # stopped at step 3


def test_cards_come_first_one_per_torch_vs_burn_difference(rendered):
    _, out = rendered
    html = (out / "report.html").read_text()
    main = html[html.index("<main>") :]
    assert main.index('<section id="differences">') < main.index('id="changes"') < main.index('id="history"')
    assert main.index('id="history"') < main.index('id="case-p10_ema"') < main.index('id="expectations"')
    cards = section(html, "differences")
    # results from before case info was recorded: one card per torch-vs-burn pair that claims a difference
    assert cards.count('<article class="card') == 2
    # counted by kind, and ordered by harm: the panic first, then the values (and growth) that differ silently
    assert (
        "<h2>What differs: 2 differences</h2>" in cards
        and '<a href="#kind-crash">1 a panic or error on one side</a>' in cards
        and '<a href="#kind-values">1 silently different values or gradients</a>' in cards
    )
    assert cards.index("burn/target panicked at step 3") < cards.index("burn&#x27;s detach() on a parameter keeps")
    assert "burn&#x27;s detach() on a parameter keeps require_grad" in cards
    assert "torch/target vs burn/target" in cards and "burn/target panicked at step 3: Cannot run backward" in cards
    # the fix: the same pairs from the same torch run
    assert "burn/target-without matches torch/target" in cards
    # evidence: the values and verdicts; SAMPLE_1's RSS claim failed, so that difference shows partly
    assert "×20.7 (2.33 → 48.1 ms)" in cards
    assert "Partly seen in this run" in cards
    assert "burn 0.22.1: seen in 1 of 1 run: this run" in cards


def test_html_tables_expectations_pairs_checkpoints_and_provenance(rendered):
    _, out = rendered
    doc = load(SAMPLE_1)
    html = (out / "report.html").read_text()
    assert "ATTENTION: 3 expectations do not hold" in html
    failing = section(html, "failing")
    assert failing.count('<span class="fail">FAIL</span>') == 3
    expectations = section(html, "expectations")
    assert expectations.count('<span class="fail">FAIL</span>') == 3
    assert expectations.count('<span class="pass">PASS</span>') == 42
    assert '<table class="expectations sortable filterable"' in expectations
    details = section(html, "case-p10_ema")
    pairs = details[details.index("<summary>Pairs:") :]
    assert pairs.count('<span class="fail">FAIL</span>') == 2 and pairs.count('<span class="pass">PASS</span>') == 9
    assert 'differ: rss_grows <span class="fail">FAIL</span>' in pairs
    for pair in (
        "torch/detach vs burn/detach",
        "torch/detach vs burn/without",
        "torch/target vs burn/target",
        "torch/target vs burn/target-without",
    ):
        assert f'<h4 class="pair">{pair}</h4>' in pairs
    panic = next(r for r in doc["runs"] if r["outcome"] == "panic")["panic"]
    assert f"step {panic['step']}: Cannot run backward: graph tape has already been consumed" in pairs
    for step in doc["runs"][0]["params"]["checkpoints"]:
        assert f'<th scope="col">step {step}</th>' in details
    footer = html[html.index("<footer") :]
    for key in ("burn", "torch", "rustc", "cpu", "git_commit", "started"):
        assert str(doc["provenance"][key]) in footer


def test_html_is_self_contained_and_reads_without_its_script(rendered):
    _, out = rendered
    html = (out / "report.html").read_text()
    assert "<link" not in html and "src=" not in html
    assert "@import" not in html and "url(" not in html
    assert "fetch(" not in html and "XMLHttpRequest" not in html and "import(" not in html
    urls = set(re.findall(r"https?://[^\s\"'<>]+", html))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace name, never fetched
    # one inline script, at the end; without it every row is in the page already
    assert html.count("<script") == 1 and html.index("<script>") > html.index("</footer>")
    without = re.sub(r"<script>.*?</script>", "", html, flags=re.S)
    page = parse(without)
    rows = [t for t in page.all("table") if "runs" in t.get("class", "")]
    assert rows and "<tbody><tr>" in without
    assert without.count("torch/detach") == html.count("torch/detach")
    # the tables the script sorts and filters say so by class
    assert len([t for t in page.all("table") if "sortable" in t.get("class", "")]) >= 4
    assert "@media print" in html and "details::details-content" in html


def test_colours_are_okabe_ito_and_every_series_has_its_own_dash_and_marker(rendered):
    _, out = rendered
    html = (out / "report.html").read_text()
    okabe_ito = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#000", "#F0E442"}
    strokes = set(re.findall(r'<polyline [^>]*stroke="(#[0-9A-Fa-f]+)"', html))
    assert strokes and strokes <= okabe_ito
    page = parse(html)
    for plot in page.all("svg", **{"class": "plot"}):
        lines = [p for p in page.all("polyline") if p["_svg"] == plot["id"]]
        looks = [(p["stroke"], p.get("stroke-dasharray", "")) for p in lines]
        assert len(set(looks)) == len(looks), plot["id"]  # no two lines alike
        dashes = {p.get("stroke-dasharray", "") for p in lines}
        if plot["id"].startswith("pair-") and len(lines) == 2:
            assert len(dashes) == 2, plot["id"]  # tells the two runs apart in grayscale too


def test_markdown_summary_is_short_and_says_what_holds(rendered):
    _, out = rendered
    doc = load(SAMPLE_1)
    md = (out / "report.md").read_text()
    assert md.startswith("# burn-torch-diff nightly report\n")
    assert "**ATTENTION: 3 expectations do not hold**" in md
    assert "p10_ema torch/detach rss_growth_mib_per_1000: expected <= 1, observed 1.96" in md
    assert "| p10_ema | burn/detach | ok | 20.70 |" in md
    assert "| p10_ema | burn/target | panic at step 3 (backward) |" in md
    # differences first: before the expectations, with their evidence
    assert md.index("## What differs") < md.index("## Expectations") < md.index("## Runs")
    assert (
        "  - torch/detach vs burn/detach: tracked false vs true ✓; slowdown ×0.998 vs ×20.7 ✓; "
        "RSS growth +1.96 MiB vs +2.17 MiB ✗ (does not hold)"
    ) in md
    assert "burn/target panicked at step 3: Cannot run backward: graph tape has already been consumed" in md
    assert "- **Fix:** burn/target-without matches torch/target" in md
    assert "no earlier run of this machine" in md
    assert "Mann-Whitney U" in md  # the rule is stated
    assert f"burn {doc['provenance']['burn']}, torch {doc['provenance']['torch']}" in md
    # short enough for a CI job summary (a heading per kind of difference included)
    assert len(md.encode()) < 8000 and md.count("\n") < 66


def test_a_run_where_everything_holds_says_ok(tmp_path):
    assert report("--from-results", SAMPLE_2, "--out", tmp_path) == 0
    md = (tmp_path / "report.md").read_text()
    assert "**OK: every expectation holds; this machine has no previous run to compare with**" in md
    # the second sample has dense RSS samples (every 25 steps): the RSS plot draws them
    doc = load(SAMPLE_2)
    page = parse((tmp_path / "report.html").read_text())
    rss = page.series(f"rss-p10_ema-{fingerprint(doc['provenance'])}")
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


def test_a_long_sparkline_stays_light():
    style = svg.Style("#0072B2")

    def spark(n: int, failed_at: int) -> str:
        values = [None if i == failed_at else float(i % 7) for i in range(n)]
        return svg.sparkline(
            values,
            titles=[f"entry {i}" for i in range(n)],
            failed=[i == failed_at for i in range(n)],
            changes=[n // 2],
            style=style,
        )

    short, long = spark(10, 3), spark(120, 30)
    assert short.count("<title>") == 1 + 10  # the line's span, and every entry
    assert long.count("<title>") == 1 + 2  # the span, the version change and this run's entry
    assert long.count('class="version"') == 1 and 'class="marker" d="M' in long  # the run that stopped: a cross
    assert 'data-points="119"' in long and len(long) < 2500


def test_the_html_runs_table_shows_gflops_and_the_range_over_repeats(tmp_path):
    """As the terminal and report.md do: GFLOP/s with its share of the core's peak, and a timing
    measured with --repeat as its median with the range of the repeats."""
    doc = load(SAMPLE_2)
    doc["provenance"]["peak_gflops"] = 166.0
    run = next(r for r in doc["runs"] if (r["framework"], r["mode"]) == ("burn", "without"))
    run["metrics"].update(gflops=93.0, repeats=3, reference_median_ms=0.738)
    run["metrics"]["spread"] = {"reference_median_ms": {"min": 0.731, "max": 0.752, "n": 3}}
    assert report("--from-results", save(tmp_path / "r.json", doc), "--out", tmp_path / "out") == 0
    html = (tmp_path / "out" / "report.html").read_text()
    assert "GFLOP/s (of peak)" in html
    assert ">93 (56%)</td>" in html
    assert ">0.738 (0.731-0.752)</td>" in html


def test_the_operation_table_lists_every_operation_and_the_cases_that_use_it(rendered):
    from runner.contract.ops import OPS
    from runner.model.results import CaseInfo, ProgramInfo
    from runner.report import operations

    _, out = rendered
    html = (out / "report.html").read_text()
    section = html[html.index('<section id="operations">') :]
    section = section[: section.index("</section>")]
    for name in OPS:
        assert f"<code>{name}</code>" in section, name
    assert "**Operations**:" in (out / "report.md").read_text()
    info = CaseInfo(
        name="c",
        kind="program",
        programs={
            "main": ProgramInfo(source="a = param(2)\nb = detach(a)\nobserve(b)"),
            "bad": ProgramInfo(source="("),
        },
    )
    rows = {r.name: r for r in operations.rows([info])}
    assert rows["detach"].cases == ("c",) and rows["observe"].cases == ("c",) and rows["exp"].cases == ()
    assert rows["no_grad"].burn is False


def test_many_case_links_wait_behind_a_disclosure_so_the_headline_stays_on_the_first_screen():
    from runner.report.html_page import CASE_LINKS_INLINE, case_links

    few = [f"c{i}" for i in range(CASE_LINKS_INLINE)]
    assert "<details" not in case_links(few) and 'href="#case-c0"' in case_links(few)
    many = [*few, "p10_ema", "<x>"]
    html = case_links(many)
    assert html.startswith(' <details class="toc-cases"><summary>Cases (10)</summary>')
    assert 'href="#case-p10_ema"' in html and "&lt;x&gt;" in html and "<x>" not in html
