"""`report.md`: the summary, short enough for a CI job summary: status,
expectations, changes, one line per run and pair, provenance."""

from __future__ import annotations

import re

from ..fmt import fmt, gflops_text, measurement_text, observed_text, outcome_text, repeated, short
from .changes import expectation_name
from .model import RSS_NOTE, Report, claim_text, previous_text, side_key

# A `<` that could open an HTML tag or comment (`<script`, `</`, `<!--`); `<= 1` stays as it is.
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def _cell(text: str) -> str:
    """Markdown table text: pipes escaped, one line, and no raw HTML (a CI job
    summary renders HTML: `<script>` from a results file must stay text)."""
    return _TAG_START.sub("&lt;", str(text)).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]  # cells: plain text
    return out


def _short(text: str, limit: int = 160) -> str:
    return _cell(short(text, limit))


def render(report: Report) -> str:
    machines = report.machines
    out = [
        "# burn-torch-diff nightly report",
        "",
        f"**{report.status()}**",
        "",
        f"Generated {report.generated}; machines: "
        + ", ".join(f"`{m.label}` (burn {_cell(m.provenance.burn or '?')})" for m in machines),
        "",
    ]

    out += ["## Expectations", ""]
    out += _table(
        ["machine", "hold", "do not hold"],
        [
            [
                m.label,
                str(sum(e.passed for e in m.doc.expectations)),
                str(sum(not e.passed for e in m.doc.expectations)),
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
                f"`{m.label}` {_cell(i.case)} {_cell(i.subject)} ({_cell(i.burn_versions)})" for m, i in skipped
            ),
        ]
    failing = [(m, e) for m in machines for e in m.doc.expectations if not e.passed]
    if failing:
        out += ["", "Do not hold:"]
        out += [
            f"- `{m.label}` {_cell(expectation_name(e))}: expected {_cell(fmt(e.expected))}, "
            f"observed {_short(observed_text(e))}"
            for m, e in failing
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
            out.append(f"- `{m.label}`: {_cell(comparison.note)}")
            continue
        prev = comparison.previous
        head = f"- `{m.label}` compared with `{_cell(prev.name)}` ({_cell(previous_text(comparison))})"
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
                fmt(mt.rss_growth_mib_per_1000, ".2f"),
                fmt(mt.tracked),
            ]
        rows.append(row)
    out += _table(header, rows)

    out += ["", "## Pairs", ""]
    rows = []
    for case in report.cases():
        for pair in report.pairs(case):
            row = [case, pair.subject, claim_text(pair)]
            for m in machines:
                verdicts = {p: report.claim_verdict(m, pair, p) for p in pair.claims}
                known = [v for v in verdicts.values() if v is not None]
                if not known or m.run(side_key(case, pair.a)) is None:
                    row.append("not run")
                    continue
                bad = [p for p, v in verdicts.items() if v is False]
                row.append(f"{sum(known)}/{len(known)} hold" + (f" (not: {', '.join(bad)})" if bad else ""))
            rows.append(row)
    out += _table(["case", "pair", "claim"] + [m.label for m in machines], rows)

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
