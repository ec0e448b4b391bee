"""What the report counts and orders: differences by kind of harm (a crash or
panic, then silently different values, then growth, then a different
default), the case showing most kinds first among equals; the cases where
both frameworks agree in their own section; the same order and counts in
`check`'s summary, report.md and report.html; a found case not judged yet
named by what it shows."""

from __future__ import annotations

import json
import re

import pytest
from report_fixtures import report, save

from runner.harm import Harm, harm_of, headline, standing
from runner.results import validate
from runner.terminal import summary

# TEST fixture, written by hand: one case per kind (name, claims differ, claims same, declared kind, judged).
CASES = [
    ("a_values", ["values:y"], ["outcome"], None, True),
    ("b_growth", ["grows"], ["outcome"], None, True),
    ("c_default", ["values"], ["outcome"], "default", True),
    ("d_crash", ["outcome"], [], None, True),
    ("e_agree", [], ["outcome", "values"], None, True),
    ("f_found", ["values:v3"], [], None, False),
    ("p10_anchor", ["outcome", "tracked", "grows"], [], None, True),
]
ORDER = ["p10_anchor", "d_crash", "a_values", "f_found", "b_growth", "c_default", "e_agree"]
HEADLINE = (
    "6 differences (2 a panic or error on one side, 2 silently different values or gradients, "
    "1 slowdown or memory growth, 1 a different default); 1 case where both frameworks agree"
)


def _run(case: str, framework: str, outcome: str = "ok", value: float = 1.0) -> dict:
    return {
        "case": case,
        "framework": framework,
        "mode": "main",
        "outcome": outcome,
        "versions": {"burn": "0.22.1"} if framework == "burn" else {"torch": "2.15.0"},
        "failure": None
        if outcome == "ok"
        else {"op_index": 1, "op": "backward", "line": 3, "message": "graph consumed", "type": "panic"},
        "panic": None if outcome != "panic" else {"message": "graph consumed", "step": 3},
        "observations": [
            {
                "label": "v3",
                "tensor": "v3",
                "op_index": 2,
                "shape": [1],
                "values": [value],
                "flags": {"tracked": True, "requires_grad": False},
            }
        ],
        "metrics": {"steps_completed": 10, "reference_window": [1, 2], "last_window": [9, 10], "tracked": False},
    }


def _verdict(case: str, relation: str, prop: str) -> dict:
    observed: dict = {"a": 1.0, "b": 2.0 if relation == "differ" else 1.0}
    if prop.startswith("values:"):  # as the value oracle records it
        b = 82076296.0 if relation == "differ" else 82092264.0
        error = abs(82092264.0 - b)
        observed = {"label": prop.split(":")[1], "max_abs_error": error, "max_rel_error": error / b, "first_index": 0}
        observed |= {"a": [82092264.0], "b": [b]}
    return {
        "case": case,
        "a": {"framework": "torch", "mode": "main"},
        "b": {"framework": "burn", "mode": "main"},
        "relation": relation,
        "property": prop,
        "expected": relation,
        "observed": observed,
        "passed": True,
    }


def catalogue() -> dict:
    cases, runs, verdicts = [], [], []
    for name, differ, same, declared, judged in CASES:
        about = {
            "title": f"{name}: what it documents",
            "torch": f"{name}: what torch does",
            "burn": f"{name}: what burn does",
            "fix": f"{name}: the idiom",
        }
        if declared:
            about["difference"] = declared
        if not judged:  # as the fuzzer writes it
            about |= {"title": "Found by the fuzzer: values:exp-sum", "fix": "Not judged yet.", "judged": False}
            about["torch"] = "torch: {'outcome': 'ok', 'failure': None}"
        pair = {"a": {"framework": "torch", "mode": "main"}, "b": {"framework": "burn", "mode": "main"}}
        cases.append(
            {"name": name, "kind": "program", "about": about, "pairs": [pair | {"same": same, "differ": differ}]}
        )
        crash = "outcome" in differ
        runs += [_run(name, "torch"), _run(name, "burn", "panic" if crash else "ok", 82076296.0)]
        verdicts += [_verdict(name, "differ", p) for p in differ] + [_verdict(name, "same", p) for p in same]
    doc = {
        "schema_version": 2,
        "provenance": {
            "burn": "0.22.1",
            "torch": "2.15.0",
            "cpu": "test fixture",
            "machine": "x86_64",
            "system": "Linux",
            "cores": 2,
            "started": "2026-11-30T07:00:00+00:00",
        },
        "summary": {"runs": len(runs), "expectations": len(verdicts), "passed": len(verdicts), "failed": 0},
        "cases": cases,
        "runs": runs,
        "expectations": verdicts,
    }
    validate(doc, "catalogue")  # the fixture is a valid results document
    return doc


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("order")
    path = save(tmp / "catalogue.json", catalogue())
    assert report("--from-results", path, "--out", tmp / "out", "--upgrades") == 0
    return (tmp / "out" / "report.md").read_text(), (tmp / "out" / "report.html").read_text()


def test_property_kinds():
    assert harm_of("outcome") is Harm.CRASH
    assert harm_of("values:y") is harm_of("grads:w") is harm_of("flags") is harm_of("tracked") is Harm.VALUES
    assert harm_of("grows") is harm_of("rss_grows") is Harm.GROWTH
    # the most harmful claim decides; a declared kind wins; no differ claim is an agreement
    assert standing(["grows", "outcome"]).harm is Harm.CRASH
    assert standing(["values"], "default").harm is Harm.DEFAULT
    assert standing([]).agrees
    assert headline([], 0) == "0 differences; 0 cases where both frameworks agree"


def test_markdown_orders_cards_by_harm_and_counts_them(rendered):
    md, _ = rendered
    assert f"## What differs: {HEADLINE}" in md
    order = [m.group(1) for m in re.finditer(r"^### .*\(`([a-z0-9_]+)`\)$", md, re.M)]
    assert order == ORDER
    groups = re.findall(r"^\*\*(.+) \((\d+)\)\*\*$", md, re.M)
    assert groups == [
        ("A panic or error on one side", "2"),
        ("Silently different values or gradients", "2"),
        ("Slowdown or memory growth", "1"),
        ("A different default", "1"),
    ]
    assert md.index("## Where both frameworks agree: 1 case") < md.index("(`e_agree`)")


def test_html_has_the_same_order_and_counts(rendered):
    _, html = rendered
    assert "<h2>What differs: 6 differences</h2>" in html
    kinds = re.findall(r'<a href="#(kind-[a-z]+|agreements)">([^<]+)</a>', html[html.index('<p class="kinds"') :])
    assert kinds == [
        ("kind-crash", "2 a panic or error on one side"),
        ("kind-values", "2 silently different values or gradients"),
        ("kind-growth", "1 slowdown or memory growth"),
        ("kind-default", "1 a different default"),
        ("agreements", "1 case where both frameworks agree"),
    ]
    assert f'aria-label="{HEADLINE}"' in html  # the same words as report.md and check say
    cards = re.findall(r'<article class="card ([a-z ]+)" id="[^"]+" data-case="([a-z0-9_]+)"', html)
    assert [case for _, case in cards] == ORDER
    assert [kind.split()[0] for kind, _ in cards] == [
        "crash",
        "crash",
        "values",
        "values",
        "growth",
        "default",
        "agreement",
    ]
    assert html.index('<section id="differences">') < html.index('<section id="agreements">')


def test_checks_summary_has_the_same_order_and_counts():
    out = summary(validate(catalogue(), "catalogue"))
    assert f"What differs: {HEADLINE}" in out
    listed = out[: out.index("Runs (")]
    rows = [line.split()[0] for line in listed.splitlines() if line.split() and line.split()[0] in ORDER]
    assert rows == ORDER


def test_an_agreement_says_where_it_held(rendered):
    md, _ = rendered
    card = md[md.index("(`e_agree`)") :]
    assert "- **Held on:** burn 0.22.1: held in 1 of 1 run: this run" in card
    assert "no run with its pair verdicts" not in md


def test_a_found_case_not_judged_is_named_by_what_it_shows(rendered):
    md, html = rendered
    title = next(line for line in md.splitlines() if line.endswith("(`f_found`)"))
    assert title == "### values of v3: PyTorch [8.21e+07], burn [8.21e+07] (`f_found`)"
    assert "Found by the fuzzer: values:exp-sum" not in md  # not the op sequence
    assert "**Awaits a judgement:**" in md and "- **Fix:** none yet: it awaits a judgement" in md
    assert "{'outcome'" not in md and "{&#x27;outcome" not in html
    assert 'class="card values awaits"' in html


def test_a_results_file_with_rendered_code_still_reads():
    """Results written before the report rendered the code kept it in the file: read, and left."""
    doc = catalogue()
    doc["cases"][0]["programs"] = {"main": {"source": "p = param(2)", "torch_code": "x", "burn_code": None}}
    info = validate(json.loads(json.dumps(doc)), "older").cases[0]
    assert info.programs["main"].source == "p = param(2)"
