"""What `check` prints on stdout when it is done: a table of runs and a
verdict per expectation. Every cell and line is shown through
`escape.terminal`: a case's name or text cannot drive the terminal or start a
line of its own (a forged PASS, a cleared FAIL)."""

from __future__ import annotations

from typing import Any

from .escape import terminal
from .fmt import flag, fmt, gflops_text, measurement_text, observed_text, outcome_text, repeated, short, slope_text
from .model.results import ResultsDocument


def table(rows: list[list[str]]) -> str:
    rows = [[terminal(cell) for cell in row] for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool) or value is None:
        return flag(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 90 else value[:87] + "...")
    return str(value)


def catalogue(doc: ResultsDocument, width: int = 60) -> str:
    """One row per case that says what it is about: PyTorch's behaviour, burn's, and the verdict."""
    rows = [["case", "PyTorch", f"burn {doc.provenance.burn or '?'}", "verdict"]]
    for info in doc.cases:
        if info.about is None:
            continue
        verdicts = [e for e in doc.expectations if e.case == info.name]
        held = sum(e.passed for e in verdicts)
        verdict = f"{held}/{len(verdicts)} hold" if verdicts else "not run"
        rows.append([info.name, short(info.about.torch, width), short(info.about.burn, width), verdict])
    return table(rows) if len(rows) > 1 else ""


def summary(doc: ResultsDocument) -> str:
    out: list[str] = []
    listed = catalogue(doc)
    if listed:
        out += ["What differs (each case's [about]; verdicts of its expectations and pairs):", listed, ""]
    rows = [
        [
            "case",
            "framework",
            "mode",
            "outcome",
            "ref ms",
            "last ms",
            "ratio",
            "GFLOP/s (of peak)",
            "slope ms/1k (95% CI)",
            "rss MiB/1k",
            "tracked",
        ]
    ]
    peak = doc.provenance.peak_gflops
    for r in doc.runs:
        m = r.metrics
        rows.append(
            [
                r.case,
                r.framework,
                r.mode,
                outcome_text(r),
                repeated(m, "reference_median_ms", ".3f"),
                repeated(m, "last_median_ms", ".3f"),
                repeated(m, "slowdown_ratio", ".2f"),
                gflops_text(m, peak),
                slope_text(m),
                fmt(m.rss_growth_mib_per_1000, ".2f"),
                flag(m.tracked),
            ]
        )
    out += ["Runs (medians of the reference and last windows; Theil-Sen slopes):", table(rows)]
    measured = measurement_text(doc.provenance)
    if measured:
        out.append(terminal(f"Measured: {measured}"))
    out.append("")

    out.append("Expectations:")
    for e in doc.expectations:
        mark = "PASS" if e.passed else "FAIL"
        observed = observed_text(e) if e.b is not None else show(e.observed)
        out.append(
            terminal(f"  {mark}  {e.case} {e.subject} {e.check}: expected {show(e.expected)}, observed {observed}")
        )
    for skipped in doc.not_applicable:
        out.append(
            terminal(
                f"  n/a   {skipped.case} {skipped.subject}: limited to burn {skipped.burn_versions}, "
                f"ran burn {skipped.burn}"
            )
        )
    s = doc.summary
    out.append("")
    out.append(f"{s.runs} runs; expectations: {s.passed} hold, {s.failed} do not hold")
    return "\n".join(out)
