"""`report.html`: one self-contained page (inline CSS and SVG, no script, no
network). Top: status, expectations, changes. Then per case and machine: step
time and RSS plots, the runs, the checkpoints, and one torch-vs-burn table per
pair. Footer: provenance of every machine."""

from __future__ import annotations

import re
from html import escape
from typing import Any

from ..fmt import fmt, observed_text, outcome_text
from ..frameworks import P10_MODES
from ..model.results import RunRecord
from . import svg
from .machines import Machine
from .model import PAIR_ROWS, RSS_NOTE, Report, claim_text, previous_text, run_cell, side_key

# One colour per p10 mode, in the order of `P10_MODES`; other modes take the spare ones.
PALETTE = ("#1f77b4", "#d62728", "#ff7f0e", "#8c564b", "#2ca02c", "#9467bd")
MODE_COLORS = dict(zip(P10_MODES, PALETTE, strict=True))
SPARE_COLORS = ("#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
DASHED_FRAMEWORKS = ("burn",)

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 1280px; padding: 0 1em; color: #222; }
h1 { margin-bottom: .2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 1.6em; }
.status { font-size: 1.15em; font-weight: bold; padding: .4em .6em; border-radius: 4px; }
.status.ok { background: #e3f6e3; } .status.attention { background: #fde8d8; }
table { border-collapse: collapse; margin: .6em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #116611; font-weight: bold; } .fail { color: #b00000; font-weight: bold; }
.plots { display: flex; flex-wrap: wrap; gap: 8px; } .note { color: #555; font-size: 12px; }
.panic { font-family: monospace; font-size: 12px; max-width: 34em; }
footer { margin-top: 2em; border-top: 1px solid #ccc; font-size: 12px; color: #444; }
"""


def _e(value: Any) -> str:
    return escape(str(value))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text)


def _table(header: list[str], rows: list[list[str]], cls: str = "") -> str:
    """Cells are HTML already (escape before)."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in row) + "</tr>" for row in rows
    )
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _num(text: str) -> str:
    return f'<td class="num">{_e(text)}</td>'


def _verdict(passed: bool | None) -> str:
    if passed is None:
        return "-"
    return '<span class="pass">PASS</span>' if passed else '<span class="fail">FAIL</span>'


def _color(mode: str, modes: list[str]) -> str:
    if mode in MODE_COLORS:
        return MODE_COLORS[mode]
    extra = [m for m in modes if m not in MODE_COLORS]
    return SPARE_COLORS[extra.index(mode) % len(SPARE_COLORS)]


def _series_label(run: RunRecord) -> str:
    label = f"{run.framework}/{run.mode}"
    return label if run.outcome == "ok" else f"{label} ({run.outcome})"


def rss_points(run: RunRecord) -> list[tuple[float, float]]:
    """RSS delta against step: the checkpoints and the dense samples (`rss_samples`)."""
    points = {float(c.step): c.rss_delta_mib for c in run.checkpoints if c.rss_delta_mib is not None}
    points.update({float(step): delta for step, delta in run.rss_samples})
    return sorted(points.items())


def _plots(report: Report, case: str, machine: Machine) -> str:
    runs = machine.runs_of(case)
    modes = [r.mode for r in runs]
    step_series, rss_series = [], []
    for r in runs:
        color, dashed = _color(r.mode, modes), r.framework in DASHED_FRAMEWORKS
        step_series.append(
            svg.Series(_series_label(r), [(float(i + 1), v) for i, v in enumerate(r.step_ms)], color, dashed)
        )
        rss_series.append(svg.Series(_series_label(r), rss_points(r), color, dashed))
    slug = f"{_slug(case)}-{machine.fingerprint}"
    group = svg.group_size(max((len(s.points) for s in step_series), default=0))
    caption = (
        f"Step time: each point is the median wall time of {group} consecutive steps (all steps are in results.json). "
        if group > 1
        else "Step time: every step's wall time. "
    )
    return (
        '<div class="plots">'
        + svg.line_plot(
            step_series,
            title=f"{case}: step time ({machine.label})",
            x_label="step",
            y_label="ms per step",
            plot_id=f"steps-{slug}",
        )
        + svg.line_plot(
            rss_series,
            title=f"{case}: RSS ({machine.label})",
            x_label="step",
            y_label="RSS delta MiB",
            plot_id=f"rss-{slug}",
            height=260,
        )
        + f'</div><p class="note">{caption}RSS: the worker\'s resident set size at each checkpoint '
        "(and every few steps where the run sampled it), minus its value before the loop. Solid: torch; dashed: burn. A dot marks each run's "
        "last step.</p>"
    )


def _runs_table(report: Report, case: str) -> str:
    header = ["run"]
    multi = len(report.machines) > 1
    for m in report.machines:
        prefix = f"{_e(m.label)}<br>" if multi else ""
        header += [
            f"{prefix}outcome",
            "ref median ms",
            "last median ms",
            "slowdown ratio",
            "slope ms/1000 steps (95% CI)",
            "RSS MiB/1000 steps",
            "tracked",
            "wall s",
        ]
    rows = []
    for key in report.run_keys(case):
        row = [_e(f"{key[1]}/{key[2]}")]
        for m in report.machines:
            run = m.run(key)
            if run is None:
                row += ["not run"] + ["-"] * 7
                continue
            mt = run.metrics
            slope = mt.slope_ms_per_1000
            slope_text = "-" if not slope else f"{slope.value:.3f} ({slope.ci95[0]:.3f}..{slope.ci95[1]:.3f})"
            row += [
                _e(outcome_text(run)),
                _num(fmt(mt.reference_median_ms, ".3f")),
                _num(fmt(mt.last_median_ms, ".3f")),
                _num(fmt(mt.slowdown_ratio, ".2f")),
                _num(slope_text),
                _num(fmt(mt.rss_growth_mib_per_1000, ".2f")),
                _e(fmt(mt.tracked)),
                _num(fmt(run.wall_s, ".1f")),
            ]
        rows.append(row)
    return _table(header, rows, "runs")


def _checkpoint_table(case: str, machine: Machine) -> str:
    runs = machine.runs_of(case)
    steps = sorted({c.step for r in runs for c in r.checkpoints})
    header = ["run"] + [f"step {s}" for s in steps] + ["tracked", "flags at the last checkpoint"]
    rows = []
    for r in runs:
        by_step = {c.step: c for c in r.checkpoints}
        row = [_e(f"{r.framework}/{r.mode}")]
        for s in steps:
            c = by_step.get(s)
            if c is None:
                row.append("-")
                continue
            delta = c.rss_delta_mib
            rss = "rss n/a" if delta is None else f"{delta:+.1f} MiB"
            row.append(f'<td class="num">{c.ms_per_step:.3f} ms<br>{_e(rss)}</td>')
        flags = ", ".join(f"{k}={fmt(v)}" for k, v in r.checkpoints[-1].flags.items()) if r.checkpoints else ""
        row += [_e(fmt(r.metrics.tracked)), _e(flags or "-")]
        rows.append(row)
    return (
        f'<h4>Checkpoints ({_e(machine.label)})</h4><p class="note">Mean ms per step over the '
        "segment ending at the checkpoint, and RSS delta.</p>" + _table(header, rows, "checkpoints")
    )


def _pair_tables(report: Report, case: str) -> str:
    out = []
    for pair in report.pairs(case):
        header = ["property"]
        for m in report.machines:
            prefix = f"{_e(m.label)}<br>" if len(report.machines) > 1 else ""
            header += [f"{prefix}{_e(pair.a)}", _e(pair.b), "claim"]
        rows = []
        for label, prop in PAIR_ROWS:
            row = [_e(label)]
            for m in report.machines:
                ra, rb = m.run(side_key(case, pair.a)), m.run(side_key(case, pair.b))
                cls = ' class="panic"' if label == "panic" else ""
                row += [f"<td{cls}>{_e(run_cell(ra, label))}</td>", f"<td{cls}>{_e(run_cell(rb, label))}</td>"]
                if prop in pair.claims:
                    row.append(f"{_e(pair.claims[prop])}: {_e(prop)} {_verdict(report.claim_verdict(m, pair, prop))}")
                else:
                    row.append("-")
            rows.append(row)
        out.append(
            f'<h4 class="pair">{_e(pair.a)} vs {_e(pair.b)}</h4>'
            f"<p>Claim: {_e(claim_text(pair))}. {_e(pair.reason)}</p>" + _table(header, rows, "pair")
        )
    return "".join(out)


def _expectations(report: Report) -> str:
    header = ["case", "subject", "check", "expected"]
    for m in report.machines:
        prefix = f"{_e(m.label)}<br>" if len(report.machines) > 1 else ""
        header += [f"{prefix}observed", "verdict"]
    rows = []
    for first, per_machine in report.expectation_rows():
        row = [_e(first.case), _e(first.subject), _e(first.check), _e(fmt(first.expected))]
        for e in per_machine:
            row += ["-", "-"] if e is None else [_e(observed_text(e)), _verdict(e.passed)]
        rows.append(row)
    counts = "; ".join(
        f"{_e(m.label)}: {sum(e.passed for e in m.doc.expectations)} hold, "
        f"{sum(not e.passed for e in m.doc.expectations)} do not hold"
        for m in report.machines
    )
    skipped = [(m, item) for m in report.machines for item in m.doc.not_applicable]
    note = ""
    if skipped:
        note = (
            "<p>Not checked (limited to other burn versions): "
            + "; ".join(
                f"{_e(m.label)} {_e(i.case)} {_e(i.subject)} (burn_versions {_e(i.burn_versions)}, ran {_e(i.burn)})"
                for m, i in skipped
            )
            + "</p>"
        )
    return (
        f'<section id="expectations"><h2>Expectations</h2><p>{counts}</p>{note}'
        f"{_table(header, rows, 'expectations')}</section>"
    )


def _changes(report: Report) -> str:
    out = [
        f'<section id="changes"><h2>What changed since the previous run</h2>'
        f'<p class="note">Step times moved beyond noise when, {_e(report.rule)}. {_e(RSS_NOTE)}</p>'
    ]
    for m, comparison in zip(report.machines, report.comparisons, strict=True):
        if comparison.previous is None:
            out.append(f"<p><b>{_e(m.label)}</b>: {_e(comparison.note)}</p>")
            continue
        prev = comparison.previous
        head = f"<p><b>{_e(m.label)}</b> compared with <code>{_e(prev.name)}</code> ({_e(previous_text(comparison))})"
        if not comparison.changes:
            out.append(head + ": nothing changed.</p>")
            continue
        out.append(head + f": {len(comparison.changes)} change(s).</p>")
        rows = [[_e(c.kind), _e(c.subject), _e(c.before), _e(c.after), _e(c.detail)] for c in comparison.changes]
        out.append(_table(["change", "what", "before", "now", "detail"], rows, "changes"))
    out.append("</section>")
    return "".join(out)


PROVENANCE_FIELDS = (
    "burn",
    "probe_profile",
    "torch",
    "rustc",
    "python",
    "cpu",
    "machine",
    "system",
    "cores",
    "git_commit",
    "started",
    "finished",
)


def _footer(report: Report) -> str:
    header = ["", *(_e(m.label) for m in report.machines)]
    rows = [[_e(k), *(_e(fmt(getattr(m.provenance, k))) for m in report.machines)] for k in PROVENANCE_FIELDS]
    rows.append(["fingerprint", *(_e(m.fingerprint) for m in report.machines)])
    rows.append(["results from", *(_e(", ".join(m.sources)) for m in report.machines)])
    return (
        f"<footer><h2>Provenance</h2>{_table(header, rows, 'provenance')}"
        f"<p>Report generated {_e(report.generated)} by <code>burn-torch-diff report</code>.</p></footer>"
    )


def render(report: Report) -> str:
    status_cls = "ok" if report.exit_code == 0 else "attention"
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>burn-torch-diff nightly report</title>",
        f"<style>{CSS}</style></head><body>",
        "<header><h1>burn-torch-diff nightly report</h1>",
        f'<p class="status {status_cls}">{_e(report.status())}</p></header>',
        _expectations(report),
        _changes(report),
    ]
    for case in report.cases():
        parts.append(f'<section class="case" id="case-{_slug(case)}"><h2>Case {_e(case)}</h2>')
        for m in report.machines:
            if m.runs_of(case):
                parts.append(f"<h3>{_e(m.label)}</h3>" + _plots(report, case, m))
        parts.append("<h3>Runs</h3>" + _runs_table(report, case))
        for m in report.machines:
            if m.runs_of(case):
                parts.append(_checkpoint_table(case, m))
        parts.append(
            "<h3>Pairs (torch vs burn, and burn against its own fix)</h3>" + _pair_tables(report, case) + "</section>"
        )
    parts.append(_footer(report))
    parts.append("</body></html>\n")
    return "\n".join(parts)
