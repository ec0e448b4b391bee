"""What `check` prints on stdout when it is done: the cases that document a
difference by kind of harm (in the report's order and counts, `runner.harm`)
and those where both frameworks agree, a table of runs and a verdict per
expectation. Every cell and line is shown through `escape.terminal`: a case's
name or text cannot drive the terminal or start a line of its own (a forged
PASS, a cleared FAIL)."""

from __future__ import annotations

from typing import Any

from .escape import terminal
from .harm import case_standing, headline
from .model.results import CaseInfo, ResultsDocument
from .wording import (
    flag,
    gflops_text,
    measurement_text,
    observed_text,
    outcome_text,
    repeated,
    short,
    slope_text,
    value_text,
)


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


def _row(doc: ResultsDocument, info: CaseInfo, kind: str, width: int) -> list[str]:
    assert info.about is not None
    verdicts = [v for v in doc.expectations if v.case == info.name]
    held = sum(v.passed for v in verdicts)
    verdict = f"{held}/{len(verdicts)} hold" if verdicts else "not run"
    if info.about.awaits_judgement:
        torch, burn = "awaits a judgement (found by the fuzzer)", short(info.about.title, width)
    else:
        torch, burn = short(info.about.torch, width), short(info.about.burn, width)
    return [info.name, kind, torch, burn, verdict]


def catalogue(doc: ResultsDocument, width: int = 60) -> list[str]:
    """The cases that say what they are about ([about]), as the report orders them: the
    differences by harm (kind, PyTorch's behaviour, burn's, the verdicts), then the agreements."""
    documented = [(info, case_standing(info)) for info in doc.cases if info.about is not None]
    if not documented:
        return []
    documented.sort(key=lambda item: item[1].order(item[0].name))
    header = ["case", "kind", "PyTorch", f"burn {doc.provenance.burn or '?'}", "verdict"]
    differ = [_row(doc, info, where.harm.word, width) for info, where in documented if where.harm is not None]
    agree = [_row(doc, info, "same", width) for info, where in documented if where.harm is None]
    harms = [where.harm for _, where in documented if where.harm is not None]
    out = [
        f"What differs: {headline(harms, len(agree))} (each case's [about]; verdicts of its expectations and pairs):"
    ]
    if differ:
        out.append(table([header, *differ]))
    if agree:
        out += ["", "Where both frameworks agree:", table([header, *agree])]
    return out


def summary(doc: ResultsDocument) -> str:
    out: list[str] = []
    listed = catalogue(doc)
    if listed:
        out += [*listed, ""]
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
                value_text(m.rss_growth_mib_per_1000, ".2f"),
                flag(m.tracked),
            ]
        )
    out += ["Runs (medians of the reference and last windows; Theil-Sen slopes):", table(rows)]
    measured = measurement_text(doc.provenance)
    if measured:
        out.append(terminal(f"Measured: {measured}"))
    out.append("")

    out.append("Expectations:")
    for verdict in doc.expectations:
        mark = "PASS" if verdict.passed else "FAIL"
        observed = observed_text(verdict) if verdict.b is not None else show(verdict.observed)
        out.append(
            terminal(
                f"  {mark}  {verdict.case} {verdict.subject} {verdict.check}: "
                f"expected {show(verdict.expected)}, observed {observed}"
            )
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
