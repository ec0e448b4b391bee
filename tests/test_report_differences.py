"""The report answers "what differs": difference cards (from a case's [about],
or from the pairs), the burn versions each was seen on (history entries and
upgrade checks), the history view, and a program case rendered from its
observations and value verdicts. Fixtures are derived from the committed real
results (see report_fixtures) or, for the program case, written by hand."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from report_fixtures import (
    SAMPLE_2,
    load,
    program_results,
    report,
    save,
    shifted,
    with_burn,
    with_case_info,
)

from runner.model.results import Metrics
from runner.model.upgrade import Build, Classified, Side, UpgradeReport
from runner.report import upgrades


def section(html: str, ident: str) -> str:
    start = html.index(f'id="{ident}"')
    return html[start : html.index("</section>", start)]


@pytest.fixture(scope="module")
def documented(tmp_path_factory) -> Path:
    """SAMPLE_2 with today's case info (TEST fixture), as a results file."""
    return save(tmp_path_factory.mktemp("doc") / "documented.json", with_case_info(load(SAMPLE_2)))


def test_a_case_with_about_gives_one_card_with_its_text_evidence_and_fix(documented, tmp_path):
    assert report("--from-results", documented, "--out", tmp_path, "--upgrades") == 0
    html = (tmp_path / "report.html").read_text()
    cards = section(html, "differences")
    assert cards.count('<article class="card') == 1
    assert "detach() of a parameter keeps recording the autodiff graph" in cards
    assert "<code>weight.detach()</code> is a constant" in cards  # PyTorch, with code spans
    assert "graph tape has already been consumed" in cards  # burn
    assert "<code>weight.val().without_autodiff()</code>" in cards  # the fix
    assert "<code>tracel-ai/burn#3957</code>" in cards  # sources, as text: no link leaves the page
    # the evidence: every pair of the case, differences first, with this run's numbers
    assert cards.index("torch/detach vs burn/detach") < cards.index("torch/target vs burn/target")
    assert cards.index("torch/target vs burn/target ") < cards.index("torch/detach vs burn/without")
    assert "×24.3 (1.9 → 46.3 ms)" in cards  # burn/detach's slowdown in SAMPLE_2
    assert "burn/target panicked at step 3: Cannot run backward" in cards
    assert cards.count('<span class="fail">') == 0
    md = (tmp_path / "report.md").read_text()
    assert "### detach() of a parameter keeps recording the autodiff graph (`p10_ema`)" in md
    assert "- **PyTorch:** `weight.detach()` is a constant" in md
    assert "- **Fix:** Take the snapshot with `weight.val().without_autodiff()`" in md
    assert len(md.encode()) < 8000 and md.count("\n") < 60


def test_seen_on_counts_history_entries_per_burn_version(documented, tmp_path):
    """Two earlier nights (one of them as if on burn 0.21.0: TEST fixture), then this run."""
    base = with_case_info(load(SAMPLE_2))
    old = save(tmp_path / "old.json", with_burn(shifted(base, days=-2), "0.21.0"))
    yesterday = save(tmp_path / "yesterday.json", shifted(base, days=-1))
    history = tmp_path / "history"
    for path in (old, yesterday):
        report("--from-results", path, "--out", tmp_path / "o", "--history", history, "--upgrades")
    assert report("--from-results", documented, "--out", tmp_path / "out", "--history", history, "--upgrades") == 0
    html = (tmp_path / "out" / "report.html").read_text()
    chips = re.findall(r'<span class="chip ([^"]+)">([^<]+)</span>', section(html, "differences"))
    assert chips == [
        ("seen", "burn 0.21.0: seen in 1 of 1 run: history"),
        ("seen", "burn 0.22.1: seen in 2 of 2 runs: history, this run"),
    ]
    # the history view: three runs, one version change, this run's value written
    hist = section(html, "history")
    assert "3 runs, 2026-11-27 07:08 to 2026-11-29 07:08 UTC" in hist
    assert "burn 0.21.0 (1 run), burn 0.22.1 (2 runs)" in hist
    row = next(r for r in hist.split("<tr>") if "burn/detach</td>" in r)
    sparks = re.findall(r'<svg class="spark" [^>]*data-points="(\d+)"', row)
    assert sparks == ["3", "3", "3"]  # ratio, last-window median, RSS growth
    assert row.count('class="version"') == 3  # the version change, marked on each
    assert "<span>24.31</span>" in row and "ok ×3" in row
    target = next(r for r in hist.split("<tr>") if "burn/target</td>" in r)
    assert "panic at step 3 (backward) ×3" in target
    assert "Every run of every entry" in hist


def test_an_unreadable_history_entry_is_listed_and_left_out(documented, tmp_path):
    history = tmp_path / "history"
    base = with_case_info(load(SAMPLE_2))
    for days in (-2, -1):
        path = save(tmp_path / f"d{days}.json", shifted(base, days=days))
        report("--from-results", path, "--out", tmp_path / "o", "--history", history, "--upgrades")
    oldest = sorted(p for p in history.iterdir() if p.name != "HISTORY.json")[0]
    oldest.write_text(oldest.read_text()[:1000])  # truncated; the previous run (yesterday) is fine
    assert report("--from-results", documented, "--out", tmp_path / "out", "--history", history, "--upgrades") == 0
    hist = section((tmp_path / "out" / "report.html").read_text(), "history")
    assert f"<code>{oldest.name}</code>: not valid JSON (truncated?)" in hist
    assert "2 runs, 2026-11-28" in hist


def _metrics(doc: dict, mode: str) -> Metrics:
    run = next(r for r in doc["runs"] if (r["framework"], r["mode"]) == ("burn", mode))
    return Metrics.model_validate_json(json.dumps(run["metrics"]))


def upgrade_dir(folder: Path, to: str = "0.23.0", built: bool = True) -> Path:
    """TEST fixture: an upgrade-check output folder, 0.22.1 -> `to`, made of
    SAMPLE_2 on both sides; on the `to` side burn's detach() no longer tracks
    (its pair verdict flipped): the difference partly gone. Not a real check."""
    folder.mkdir(parents=True)
    before = with_case_info(load(SAMPLE_2))
    after = with_burn(copy.deepcopy(before), to)
    for verdict in after["expectations"]:
        if verdict.get("b") == {"framework": "burn", "mode": "detach"} and verdict["property"] == "tracked":
            verdict["observed"] = {"a": False, "b": False}
            verdict["passed"] = False
    side = Side(outcome="ok", metrics=_metrics(before, "detach"))
    result = UpgradeReport(
        from_=Build(source="0.22.1", ok=True, key="a", folder="/tmp/a", burn="0.22.1"),
        to=Build(source=to, ok=built, key="b", folder="/tmp/b", burn=to if built else None, errors=["error[E0599]"]),
        rule="test rule",
        torch_runs="shared",
        counts={"fixed": 1} if built else {"build-break": 1},
        runs=[
            Classified(
                case="p10_ema",
                run="burn/detach",
                klass="fixed" if built else "build-break",
                findings=["fixed: vs torch/detach: no longer differs in tracked: True -> False"],
                performance={"changed": None, "p_value": 0.125},
                before=side if built else None,
                after=side if built else None,
            )
        ],
    )
    (folder / "upgrade.json").write_text(result.dump_json())
    if built:
        save(folder / "results-from.json", before)
        save(folder / "results-to.json", after)
    return folder


def test_upgrade_checks_count_in_seen_on_and_are_listed(documented, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default: results/upgrade-*/upgrade.json from here
    upgrade_dir(tmp_path / "results" / "upgrade-0.22.1-to-0.23.0")
    upgrade_dir(tmp_path / "results" / "upgrade-0.22.1-to-0.24.0", to="0.24.0", built=False)
    bad = tmp_path / "results" / "upgrade-broken"
    bad.mkdir()
    (bad / "upgrade.json").write_text('{"kind": "upgrade-check", "from": ')
    assert report("--from-results", documented, "--out", tmp_path / "out") == 0  # extra evidence, not a verdict
    html = (tmp_path / "out" / "report.html").read_text()
    chips = re.findall(r'<span class="chip ([^"]+)">([^<]+)</span>', section(html, "differences"))
    assert chips == [
        ("seen", "burn 0.22.1: seen in 2 of 2 runs: this run, upgrade check"),
        ("partly", "burn 0.23.0: seen in 0 of 1 run (partly in 1): upgrade check"),
        ("build-break", "burn 0.24.0: the probe did not build: upgrade check"),
    ]
    hist = section(html, "history")
    assert "burn 0.22.1 → 0.23.0" in hist and "<b>fixed</b>" in hist and "BUILD FAILED" in hist
    assert "burn 0.22.1 → 0.23.0: fixed (ratio ×24.31 → ×24.31)" in hist  # in the run's history row
    assert "upgrade-broken/upgrade.json</code>: not valid JSON (truncated?)" in hist
    md = (tmp_path / "out" / "report.md").read_text()
    assert "burn 0.23.0: seen in 0 of 1 run (partly in 1): upgrade check" in md


def test_upgrade_files_are_read_defensively(tmp_path):
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"name": "left-pad"}')
    nan = upgrade_dir(tmp_path / "nan") / "upgrade.json"  # a window that could not be compared: NaN, read as null
    nan.write_text(nan.read_text().replace('"p_value": 0.125', '"p_value": NaN'))
    unknown = upgrade_dir(tmp_path / "unknown") / "upgrade.json"
    unknown.write_text(unknown.read_text().replace('"runs": [', '"extra": 1, "runs": [', 1))
    missing = tmp_path / "nowhere"
    checks, bad = upgrades.read([foreign, missing, upgrade_dir(tmp_path / "ok"), nan, unknown])
    assert [c.path.parent.name for c in checks] == ["ok", "nan"]
    assert checks[1].report.runs[0].performance == {"changed": None, "p_value": None}
    assert [c.label for c in checks] == ["burn 0.22.1 → 0.23.0"] * 2
    reasons = {u.path.name if u.path.name != "upgrade.json" else u.path.parent.name: u.reason for u in bad}
    assert reasons["foreign.json"] == "not an upgrade-check report (no kind: upgrade-check)"
    assert reasons["nowhere"] == "no such upgrade report"
    assert reasons["unknown"].startswith("extra: unknown key")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("program")
    path = save(tmp / "program.json", program_results())  # TEST fixture, written by hand
    assert report("--from-results", path, "--out", tmp / "out", "--upgrades") == 0
    return (tmp / "out" / "report.html").read_text(), (tmp / "out" / "report.md").read_text()


def test_a_program_case_card_shows_value_errors_flags_and_where_burn_stopped(program):
    html, md = program
    cards = section(html, "differences")
    assert cards.count('<article class="card') == 1
    assert "A Linear weight copied as is lands transposed in burn" in cards
    assert '<td class="prop">values of out</td>' in cards
    assert "max abs error 0.375, max rel error 3, first at index [0, 0]" in cards
    assert '<td class="prop">flags of out</td><td>tracked true, requires_grad false</td><td>tracked false' in cards
    assert "burn/no_grad stopped (op 2 no_grad, line 1): burn has no no_grad scope" in cards
    # the program itself, as PyTorch and as burn code, side by side
    assert "<figcaption>PyTorch</figcaption><pre><code>lin = torch.nn.Linear(4, 3, bias=True)" in cards
    assert "lin: LinearConfig::new(4, 3).with_bias(true).init(&amp;device)" in cards
    assert "values of out shape [2, 3], first [0.5, -1.25, 2] vs shape [2, 3], first [0.25, -1, 1.75] ✓" in md


def test_a_program_case_details_show_code_and_observations_side_by_side(program):
    html, _ = program
    details = section(html, "case-prog_layout")
    assert "<h4>Variant <code>copied</code></h4>" in details and "<h4>Variant <code>no_grad</code></h4>" in details
    # a variant without rendered code shows its source on both sides
    assert details.count("with no_grad():\n    out = lin(x)") == 2
    assert "Observations: torch/copied vs burn/copied" in details
    assert "[0.25, -1, 1.75, 0.5, ...]" in details
    assert "burn/no_grad: unsupported" in details and "(burn has no no_grad scope; use without_autodiff)" in details
    assert '<svg class="plot"' not in details  # no timed loop: nothing to plot


def test_text_from_a_results_file_stays_text(tmp_path):
    """TEST fixture: case text and a panic message carrying markup."""
    doc = with_case_info(load(SAMPLE_2))
    doc["cases"][0]["about"]["title"] = "<script>alert(1)</script> title"
    doc["cases"][0]["about"]["fix"] = "use `<img src=x onerror=alert(2)>`"
    doc["provenance"]["machine"] = "x86_64<b>"
    panic = next(r for r in doc["runs"] if r["outcome"] == "panic")
    panic["panic"]["message"] = "graph tape has already been consumed <iframe src=javascript:alert(3)>"
    path = save(tmp_path / "markup.json", doc)
    report("--from-results", path, "--out", tmp_path / "out", "--upgrades")
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<script>alert" not in html and "<img src=x" not in html and "<iframe" not in html
    assert "x86_64<b>" not in html and "x86_64&lt;b&gt;" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; title" in html
    assert "<code>&lt;img src=x onerror=alert(2)&gt;</code>" in html
    md = (tmp_path / "out" / "report.md").read_text()
    assert "<script" not in md and "<img" not in md and "<iframe" not in md


def test_the_report_renders_the_code_of_the_case_that_ran():
    """The results carry a program's source and settings, not its rendered code: the report
    renders it and gets what the loaded case renders (the settings decide what the loop keeps)."""
    from runner.cases import load_selected
    from runner.model.case import ProgramCase
    from runner.program import render_torch
    from runner.program.rust.source import sketch as rust_sketch
    from runner.report.code import program_code
    from runner.results import case_info

    for case in load_selected(["p10_program", "metrics_item_loop"]):
        assert isinstance(case, ProgramCase)
        info = json.loads(case_info(case).model_dump_json())  # as a results file carries it
        assert not {"torch_code", "burn_code"} & {k for p in info["programs"].values() for k in p}
        for variant, recipe in case.programs.items():
            program = recipe.make()
            code = program_code(case_info(case).programs[variant])
            assert code.torch == render_torch.sketch(program) and code.burn == rust_sketch(program)
            assert code.burn is not None and "let device" in code.burn
