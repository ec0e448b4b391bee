"""Property tests of the renderers: whatever a results file that validates
holds, the plots, the report (HTML and Markdown), the change list and the
upgrade classifier render or compare it without an exception.

The documents are the real results files (`tests/data/*.json`, two of schema
1 and one of schema 2) and a v2 document whose runs end every way a run can,
mutated by hypothesis at random places with hostile values: huge and
tiny numbers, negative zero, deep or odd JSON, markup, long text. A mutation
that does not validate must be refused with `BadInput`; one that validates
must render."""

from __future__ import annotations

import copy
import json
import re

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from report_fixtures import SAMPLE_1, SAMPLE_2, SAMPLE_V2

from runner.report import svg

FINITE = st.floats(allow_nan=False, allow_infinity=False)
NUMBER = re.compile(r"(?:nan|inf)", re.IGNORECASE)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(FINITE, FINITE), max_size=30),
        min_size=1,
        max_size=4,
    )
)
def test_a_plot_of_any_finite_values_renders(point_lists):
    series = [svg.Series(f"s{i}", points, svg.Style("#000")) for i, points in enumerate(point_lists)]
    out = svg.line_plot(series, title="t", x_label="x", y_label="y")
    coordinates = " ".join(re.findall(r'(?:points|cx|cy|x|y|x1|x2|y1|y2)="([^"]*)"', out))
    assert not NUMBER.search(coordinates), coordinates[:300]
    assert out.endswith("</svg>")


# ---------------------------------------------------------------- whole documents

from runner import terminal  # noqa: E402
from runner.cases import load_case  # noqa: E402
from runner.errors import BadInput  # noqa: E402
from runner.model.results import ResultsDocument  # noqa: E402
from runner.paths import CASES_DIR  # noqa: E402
from runner.report import html_page, markdown  # noqa: E402
from runner.report.changes import changes  # noqa: E402
from runner.report.machines import group  # noqa: E402
from runner.report.model import Comparison, Report  # noqa: E402
from runner.results import dump, parse_results  # noqa: E402
from runner.upgrade.classify import classify_run  # noqa: E402

CASE = load_case(CASES_DIR / "p10_ema.toml")
STEPS = 400  # the default run trims the real documents to this many steps (fast); the slow one does not


def trimmed(doc: dict, steps: int) -> dict:
    """The real document with each run cut to its first `steps` steps (the metrics kept as recorded)."""
    out = copy.deepcopy(doc)
    for run in out["runs"]:
        run["step_ms"] = run["step_ms"][:steps]
        run["checkpoints"] = [c for c in run["checkpoints"] if c["step"] <= steps]
        run["rss_samples"] = [s for s in run.get("rss_samples", []) if s[0] <= steps]
    return out


def v2_with_every_outcome() -> dict:
    """A v2 document (the sample migrated) whose runs end every way a run can,
    marked partial: what the runner writes now, not only what it wrote then."""
    doc = json.loads(dump(parse_results(SAMPLE_2.read_text(), "sample")[0]))
    runs = doc["runs"]
    runs[6].update(outcome="oom", oom={"limit_mib": 8192, "peak_mib": 8191.5, "detail": "MemoryError"}, memory_mib=8192)
    runs[7].update(outcome="crash", crash={"signal": "SIGSEGV", "exit_code": None, "stderr_tail": "Segmentation"})
    runs[8].update(outcome="timeout", timeout_s=600.0, stderr_tail="")
    runs[9].update(outcome="error", error={"type": "ValueError", "message": "boom", "traceback": None})
    doc.update(partial=True, partial_reason="interrupted by SIGTERM after 10 of 12 runs")
    return doc


def bases(steps: int | None) -> list[dict]:
    docs = [json.loads(p.read_text()) for p in (SAMPLE_1, SAMPLE_2, SAMPLE_V2)] + [v2_with_every_outcome()]
    return [trimmed(d, steps) for d in docs] if steps else docs


HOSTILE_SCALARS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**53, 2**53 + 1, 2**63, 2**64, "__BIGINT__"]),
    FINITE,
    st.sampled_from([-0.0, 5e-324, 1e-300, 1.7e308, -1.7e308, 1e15, 1e16, "__INF__", "__NEG_INF__"]),
    st.text(max_size=40),
    st.sampled_from(
        [
            "<script>alert(1)</script>",
            "x`<img src=x onerror=alert(1)>`",
            "| a | b |",
            "line\nbreak",
            "NaN",
            "Infinity",
            "-Infinity",
            "",
            "ok",
            "panic",
            "crash",
            "oom",
            "burn/detach",
            "torch ~ burn",
            "1970-01-01T00:00:00Z",
            "0001-01-01T00:00:00+14:00",
            "9999-12-31T23:59:59-12:00",
            "2026-11-29T07:08:29",
        ]
    ),
    st.booleans(),
    st.none(),
)
HOSTILE = st.recursive(
    HOSTILE_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "step", "x", "value"]), inner)
    ),
    max_leaves=8,
)
SAME_KIND_TEXT = st.one_of(st.text(max_size=40), st.sampled_from(["<script>alert(1)</script>", "`|<!--", "a\nb", ""]))


def _same_kind(value: object) -> st.SearchStrategy[object]:
    """A hostile value of the same JSON type as `value`."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.one_of(st.integers(min_value=-(2**60), max_value=2**60), st.sampled_from([0, 1, 2**53, -1]))
    if isinstance(value, float):
        return st.one_of(FINITE, st.sampled_from([-0.0, 0.0, 5e-324, 1e15, 1e-300, 1.7e308]))
    if isinstance(value, str):
        return SAME_KIND_TEXT
    if isinstance(value, list):
        return st.lists(st.one_of(FINITE, st.integers(0, 10**6)), max_size=5)
    return HOSTILE


LITERALS = {'"__BIGINT__"': "1" + "0" * 400, '"__INF__"': "1e999", '"__NEG_INF__"': "-1e999"}


@st.composite
def mutated(draw: st.DrawFn, docs: list[dict]) -> str:
    """A real document with 1 to 3 values replaced by hostile ones (or removed), as JSON text."""
    doc = copy.deepcopy(draw(st.sampled_from(docs)))
    for _ in range(draw(st.integers(1, 3))):
        parent, key = None, None
        node = doc
        while isinstance(node, (dict, list)) and node and (parent is None or draw(st.integers(0, 9)) > 0):
            keys = sorted(node) if isinstance(node, dict) else range(len(node))
            parent, key = node, draw(st.sampled_from(list(keys)))
            node = parent[key]
        if parent is None:
            continue
        if isinstance(parent, dict) and draw(st.integers(0, 5)) == 0:
            del parent[key]
        elif draw(st.booleans()):
            parent[key] = draw(_same_kind(node))  # likelier to validate: the renderers meet it
        else:
            parent[key] = draw(HOSTILE)
    text = json.dumps(doc)
    for marker, literal in LITERALS.items():
        text = text.replace(marker, literal)
    return text


def render_everything(docs: list[ResultsDocument], base: ResultsDocument) -> None:
    """Every reader of a results document: the report (both renderings), the
    change list both ways, the terminal summary and the upgrade classifier."""
    try:
        machines = group([(doc, f"fuzz {i}") for i, doc in enumerate(docs)])
    except BadInput:
        return  # two documents of one machine with the same runs: refused by name
    comparisons = [Comparison(None, changes(base, m.doc) + changes(m.doc, base)) for m in machines]
    report = Report(machines, comparisons, "2026-11-30T00:00:00+00:00")
    assert html_page.render(report).endswith("</body></html>\n")
    md = markdown.render(report)
    assert "<script" not in md.lower() and "<img" not in md.lower()
    for doc in docs:
        terminal.summary(doc)
        before = {r.key: r for r in base.runs}
        torch = {f"{r.framework}/{r.mode}": r for r in doc.runs if r.framework == "torch"}
        for run in doc.runs:
            old = before.get(("p10_ema", run.framework, run.mode))
            if run.framework == "burn" and old is not None:
                classify_run(CASE, f"burn/{run.mode}", old, run, torch)
                classify_run(CASE, f"burn/{run.mode}", run, old, torch)


def check_mutation(text: str, base: ResultsDocument, count: bool = True) -> None:
    try:
        docs = parse_results(text, "fuzz.json")
    except BadInput:
        if count:
            event("refused")
        return
    if count:
        event("validated")
    render_everything(docs, base)


FAST = bases(STEPS)
FAST_BASE = parse_results(json.dumps(FAST[1]), "base")[0]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated(FAST))
def test_a_mutated_results_file_is_refused_or_renders(text):
    check_mutation(text, FAST_BASE)


FULL_BASE = parse_results(SAMPLE_2.read_text(), "base")[0]


# A full-size document renders in ~50 ms: 100 mutations in the default suite, 600 with `-m long`.
@pytest.mark.slow
@pytest.mark.parametrize("examples", [100, pytest.param(600, marks=pytest.mark.long)])
def test_a_mutated_full_results_file_is_refused_or_renders(examples):
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(mutated(bases(None)))
    def mutation_renders(text):
        check_mutation(text, FULL_BASE)

    mutation_renders()


def test_the_bases_validate_and_render():
    """The unmutated documents themselves (the v2 one with every outcome included)."""
    for doc in bases(STEPS):
        check_mutation(json.dumps(doc), FAST_BASE, count=False)
        assert parse_results(json.dumps(doc), "base")
