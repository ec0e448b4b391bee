"""`report.md`: the summary, short enough for a CI job summary: status, then
the known differences by kind of harm, most harmful first (what PyTorch does,
what burn does, the evidence, the fix, the burn versions seen on), the cases
where both frameworks agree, expectations, changes, one line per run,
provenance."""

from __future__ import annotations

import re

from ..harm import Harm
from ..wording import gflops_text, measurement_text, observed_text, outcome_text, rate_text, repeated, short, value_text
from . import fuzzing, operations
from .changes import expectation_name
from .curves import checkpoint_text, curves, finals_text, first_apart_text, mflop_text, origin_text
from .differences import ROLE_DIFFERENCE, Difference, PairEvidence
from .fuzzing import FuzzSection
from .model import RSS_NOTE, Report, previous_text
from .pairs import claim_text

# A `<` that could open an HTML tag or comment (`<script`, `</`, `<!--`); `<= 1` stays as it is.
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def _cell(text: str) -> str:
    """Markdown table text: pipes escaped, one line, no raw HTML (a CI job
    summary renders HTML: `<script>` from a results file must stay text), and
    no inline link or image (`![x](http://...)` would load it: `](` is escaped)."""
    return _TAG_START.sub("&lt;", str(text)).replace("|", "\\|").replace("\n", " ").replace("](", "]\\(")


def _code(text: str) -> str:
    """A value as inline code; one holding a backtick (it would end the code
    span and let what follows through as raw HTML), a `<`, a pipe or a line
    break is written as escaped plain text instead."""
    text = str(text)
    if any(ch in text for ch in "`<|\n\r"):
        return _cell(text)
    return f"`{text}`"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]  # cells: plain text
    return out


def _short(text: str, limit: int = 160) -> str:
    return _cell(short(text, limit))


def _mark(passed: bool | None) -> str:
    return "" if passed is None else (" ✓" if passed else " ✗ (does not hold)")


def _pair_line(ev: PairEvidence) -> str:
    head = f"{ev.pair.a} vs {ev.pair.b}"
    if not ev.ran:
        return f"  - {_cell(head)}: not run"
    if ev.role != ROLE_DIFFERENCE:
        return f"  - {ev.role}: {_cell(head)}: {_cell(claim_text(ev.pair))}{_mark(ev.verdict)}"
    facts = "; ".join(
        f"{f.label.split(' (')[0]} {f.short_a} vs {f.short_b}{_mark(f.verdict)}"
        + (f" ({short(f.detail, 200)})" if f.detail else "")
        for f in ev.facts
    )
    return f"  - {_cell(head)}: {_cell(facts)}"


def _difference(diff: Difference) -> list[str]:
    out = ["", f"### {_cell(diff.title)} ({_code(diff.case)})", ""]
    if diff.awaits_judgement:
        out.append(
            "- **Awaits a judgement:** the fuzzer found this divergence; no one has yet said whether it is "
            "a burn bug, a torch quirk or a documented difference. The evidence below is what the runs showed."
        )
    elif diff.documented:
        out += [f"- **PyTorch:** {_cell(diff.torch)}", f"- **burn:** {_cell(diff.burn)}"]
    shown = next((ev.machine for ev in diff.evidence if ev.ran), "")
    out.append(f"- **Evidence** ({_code(shown)}):" if shown else "- **Evidence:** not run")
    out += [_pair_line(ev) for ev in diff.evidence]
    label = "In burn" if diff.agrees else "Fix"
    if diff.awaits_judgement:
        out.append(f"- **{label}:** none yet: it awaits a judgement")
    else:
        out.append(f"- **{label}:** {_cell(diff.fix)}" if diff.fix else f"- **{label}:** none declared")
    seen = "; ".join(f"burn {s.burn}: {s.text()}" for s in diff.sightings) or "no run with its pair verdicts"
    out.append(f"- **{'Held on' if diff.agrees else 'Seen on'}:** {_cell(seen)}")
    return out


def differences(report: Report) -> list[str]:
    """`## What differs`, one group per kind of harm (most harmful first), and `## Where both frameworks agree`."""
    diffs = report.differing
    out = [f"## What differs: {_cell(report.headline())}" if diffs else "## What differs"]
    if not diffs:
        out += ["", "No case of this report claims a difference between PyTorch and burn."]
    for harm in Harm:
        mine = [d for d in diffs if d.standing.harm == harm]
        if mine:
            out += ["", f"**{harm.text.capitalize()} ({len(mine)})**"]
            for diff in mine:
                out += _difference(diff)
    same = report.agreeing
    if same:
        n = len(same)
        out += ["", f"## Where both frameworks agree: {n} case{'s' * (n != 1)}"]
        for diff in same:
            out += _difference(diff)
    return out


def _fuzz(fuzz: FuzzSection | None) -> list[str]:
    """The fuzz section: every string from the summary bounded (`fuzzing.text`) and escaped."""
    if fuzz is None:
        return []
    out = ["", "## Fuzzing", ""]
    if fuzz.doc is None:
        return [*out, f"The fuzz summary could not be read: {_cell(fuzz.error or '')}"]
    doc = fuzz.doc
    facts = dict(fuzzing.facts(doc))
    out += [
        f"{_cell(fuzzing.run_text(doc))}, {_cell(facts['burn'])} ({_code(fuzz.source)}).",
        "",
        *(f"- {name}: {_cell(value)}" for name, value in fuzzing.facts(doc)[2:]),
    ]
    shown, more = fuzzing.found(doc)
    for f in shown:
        out.append(
            f"- written: {_code(fuzzing.text(f.signature))}: {_code(fuzzing.text(f.case))} "
            f"(PyTorch {_code(fuzzing.text(f.torch))}, Rust {_code(fuzzing.text(f.rust))})"
        )
    if more:
        out.append(f"- ... and {more} more written (see the summary file)")
    return out


def models(report: Report) -> list[str]:
    """The models trained side by side (`curves`): one row per pair whose runs collected their losses."""
    infos = {info.name: info for m in report.machines for info in m.doc.cases}
    rows = []
    for m in report.machines:
        for case in report.cases():
            if case not in infos:
                continue
            for c in curves(m, infos[case]):
                ms = [value_text(v, ".3g") for v in (c.ms_per_step_a, c.ms_per_step_b)]
                rates = [rate_text(v, m.provenance.peak_gflops) for v in (c.gflops_a, c.gflops_b)]
                rows.append(
                    [
                        *([m.label] if len(report.machines) > 1 else []),
                        c.case,
                        f"{c.a} vs {c.b}",
                        {"same": "agree", "differ": "differ"}.get(c.claim, "no claim"),
                        str(len(c.losses_a)),
                        f"{c.max_rel:.2g} (step {c.max_rel_step})",
                        f"{value_text(c.tolerance.abs)}, {value_text(c.tolerance.rel)}",
                        first_apart_text(c),
                        checkpoint_text(c),
                        origin_text(c, report.origins),
                        finals_text(c),
                        f"{ms[0]} / {ms[1]}",
                        mflop_text(c),
                        f"{rates[0]} / {rates[1]}",
                    ]
                )
    if not rows:
        return []
    header = [
        *(["machine"] if len(report.machines) > 1 else []),
        "case",
        "pair",
        "the case claims",
        "steps",
        "largest rel. loss difference (step)",
        "tolerance (abs, rel)",
        "first step apart",
        "weights, grads: first checkpoint apart",
        "where they start to part",
        "final weights: largest abs. difference (rel to their largest magnitude)",
        "ms/step a / b",
        "MFLOP/step",
        "GFLOP/s a / b (of peak)",
    ]
    return ["", "## Models trained side by side", "", *_table(header, rows)]


def render(report: Report) -> str:
    machines = report.machines
    out = [
        "# burn-torch-diff nightly report",
        "",
        f"**{_cell(report.status())}**",
        "",
        f"Generated {report.generated}; machines: "
        + ", ".join(f"{_code(m.label)} (burn {_cell(m.provenance.burn or '?')})" for m in machines),
        "",
    ]

    out += differences(report)

    out += models(report)

    out += _fuzz(report.fuzz)

    infos = {info.name: info for m in machines for info in m.doc.cases}
    out += ["", f"**Operations**: {_cell(operations.summary(operations.rows(list(infos.values()))))}."]

    out += ["", "## Expectations", ""]
    out += _table(
        ["machine", "hold", "do not hold"],
        [
            [
                m.label,
                str(sum(verdict.passed for verdict in m.doc.expectations)),
                str(sum(not verdict.passed for verdict in m.doc.expectations)),
            ]
            for m in machines
        ],
    )
    skipped = [(m, i) for m in machines for i in m.doc.not_applicable]
    if skipped:
        out += [
            "",
            "Not checked (limited to other burn versions): "
            + "; ".join(
                f"{_code(m.label)} {_cell(i.case)} {_cell(i.subject)} ({_cell(i.burn_versions)})" for m, i in skipped
            ),
        ]
    failing = [(m, verdict) for m in machines for verdict in m.doc.expectations if not verdict.passed]
    if failing:
        out += ["", "Do not hold:"]
        out += [
            f"- {_code(m.label)} {_cell(expectation_name(verdict))}: expected {_cell(value_text(verdict.expected))}, "
            f"observed {_short(observed_text(verdict))}"
            for m, verdict in failing
        ]

    out += [
        "",
        "## Changes since the previous run",
        "",
        f"Step times moved beyond noise when, {report.rule}. {RSS_NOTE}",
        "",
    ]
    for m, comparison in zip(machines, report.comparisons, strict=True):
        if comparison.previous is None:
            out.append(f"- {_code(m.label)}: {_cell(comparison.note)}")
            continue
        prev = comparison.previous
        head = f"- {_code(m.label)} compared with {_code(prev.name)} ({_cell(previous_text(comparison))})"
        if not comparison.changes:
            out.append(head + ": nothing changed")
            continue
        out.append(head + f": {len(comparison.changes)} change(s)")
        for c in comparison.changes:
            detail = f" ({_short(c.detail, 240)})" if c.detail else ""
            out.append(f"  - {c.kind}: {_cell(c.subject)}: {_short(c.before)} -> {_short(c.after)}{detail}")

    out += ["", "## Runs", ""]
    header = ["case", "run"]
    for m in machines:
        prefix = f"{m.label}: " if len(machines) > 1 else ""
        header += [f"{prefix}outcome", "ratio", "last ms", "GFLOP/s (of peak)", "RSS MiB/1k", "tracked"]
    rows = []
    for key in report.run_keys():
        row = [key[0], f"{key[1]}/{key[2]}"]
        for m in machines:
            run = m.run(key)
            if run is None:
                row += ["not run", "", "", "", "", ""]
                continue
            mt = run.metrics
            row += [
                outcome_text(run),
                repeated(mt, "slowdown_ratio", ".2f"),
                repeated(mt, "last_median_ms", "#.3g"),
                gflops_text(mt, m.provenance.peak_gflops),
                value_text(mt.rss_growth_mib_per_1000, ".2f"),
                value_text(mt.tracked),
            ]
        rows.append(row)
    out += _table(header, rows)

    out += [""]
    for m in machines:
        p = m.provenance
        commit = (p.git_commit or "unknown")[:10]
        out.append(
            _cell(
                f"`{m.label}`: burn {p.burn}, torch {p.torch}, {p.rustc}, Python {p.python}; "
                f"{p.cpu}, {p.cores} cores, {p.machine}, {p.system}; commit {commit}; "
                f"started {p.started.isoformat()}" + (f"; {measurement_text(p)}" if measurement_text(p) else "")
            ).join(("<sub>", "</sub>  "))
        )
    return "\n".join(out) + "\n"
