"""The details of one case in `report.html`: per machine, small multiples (one
panel per pair, both runs on the same axes: step time, and memory as growth
since the end of warm-up); the full step series of every run behind a
disclosure; the runs (sortable); a program case's code side by side and its
observations; the pair tables and checkpoints behind disclosures."""

from __future__ import annotations

from ..model.results import CaseInfo, RunRecord
from ..wording import gflops_text, outcome_text, repeated, slope_text, value_text
from . import html_curves, svg
from .code import program_code
from .differences import slug, summarize
from .html_base import code_pair, esc, mode_style, num, pair_styles, prose, table, verdict
from .machines import MachineResults
from .model import PAIR_ROWS, Report, run_cell
from .pairs import Pair, claim_text, side_key

PANEL_POINTS = 200  # points per series in a small panel (each about 2 px wide)


def series_label(run: RunRecord) -> str:
    label = f"{run.framework}/{run.mode}"
    return label if run.outcome == "ok" else f"{label} ({run.outcome})"


def rss_points(run: RunRecord) -> list[tuple[float, float]]:
    """RSS delta against step: the checkpoints and the dense samples (`rss_samples`)."""
    points = {float(c.step): c.rss_delta_mib for c in run.checkpoints if c.rss_delta_mib is not None}
    points.update({float(step): delta for step, delta in run.rss_samples})
    return sorted(points.items())


def warmup_end(run: RunRecord) -> int:
    """The last warm-up step: the step before the reference window."""
    window = run.metrics.reference_window
    return window[0] - 1 if window is not None else 0


def growth_points(run: RunRecord) -> list[tuple[float, float]]:
    """RSS growth since the end of warm-up: each sample minus the last sample at
    or before that step; nothing for a run that stopped before it."""
    end = warmup_end(run)
    points = rss_points(run)
    before = [p for p in points if p[0] <= end]
    if not before or run.metrics.steps_completed < end:
        return []
    base_step, base = before[-1]
    return [(x, y - base) for x, y in points if x >= base_step]


def stop_step(run: RunRecord) -> float | None:
    """Where a run that did not finish stopped (None for one that did)."""
    if run.outcome == "ok":
        return None
    if run.panic is not None and run.panic.step is not None:
        return float(run.panic.step)
    if run.failure is not None and run.failure.iteration is not None:
        return float(run.failure.iteration)
    return float(len(run.step_ms) + 1)


def _planned(runs: list[RunRecord]) -> float:
    return float(max(max(r.metrics.last_window[1] if r.metrics.last_window else 0, len(r.step_ms)) for r in runs))


def _pair_panels(report: Report, case: str, machine: MachineResults, pairs: list[Pair]) -> str:
    panels = []
    for pair in pairs:
        present = [(ref, r) for ref in (pair.a, pair.b) if (r := machine.run(side_key(case, ref))) is not None]
        if not any(r.step_ms for _, r in present):
            continue  # no timed loop (a program without one): nothing to plot
        styles = dict(zip((str(pair.a), str(pair.b)), pair_styles(pair.a, pair.b)))
        steps = [
            svg.Series(series_label(r), [(float(k + 1), v) for k, v in enumerate(r.step_ms)], styles[str(ref)])
            for ref, r in present
        ]
        growth = [svg.Series(series_label(r), growth_points(r), styles[str(ref)]) for ref, r in present]
        panels.append((pair, present, steps, growth))
    if not panels:
        return ""
    steps_y, steps_log = svg.shared_y([p[2] for p in panels], PANEL_POINTS)
    growth_y, _ = svg.shared_y([p[3] for p in panels], PANEL_POINTS)
    steps_figs, growth_figs = [], []
    base = f"{slug(case)}-{machine.fingerprint}"
    for i, (pair, present, steps, growth) in enumerate(panels):
        marks = [svg.Mark(at, f"{ref} {outcome_text(r)}") for ref, r in present if (at := stop_step(r)) is not None]
        title = f"{pair.a} vs {pair.b}"
        x_range = (1.0, _planned([r for _, r in present]))
        known = [v for p in pair.claims if (v := report.claim_verdict(machine, pair, p)) is not None]
        caption = f"<figcaption>{esc(claim_text(pair))} {verdict(all(known) if known else None)}</figcaption>"
        steps_plot = svg.plot(
            steps,
            title=title,
            x_label="step",
            y_label="ms per step",
            plot_id=f"pair-steps-{base}-{i}",
            marks=marks,
            x_range=x_range,
            max_points=PANEL_POINTS,
            y_range=steps_y,
            log=steps_log,
            note="no step finished",
        )
        end = max(warmup_end(r) for _, r in present)
        growth_plot = svg.plot(
            growth,
            title=title,
            x_label="step",
            y_label="MiB since warm-up",
            plot_id=f"pair-mem-{base}-{i}",
            marks=marks,
            x_range=x_range,
            max_points=PANEL_POINTS,
            y_floor_zero=False,
            y_range=growth_y,
            log=False,
            note=f"no run reached the end of warm-up (step {end})",
        )
        steps_figs.append(f"<figure>{steps_plot}{caption}</figure>")
        growth_figs.append(f"<figure>{growth_plot}{caption}</figure>")
    case_runs = machine.runs_of(case)
    end = warmup_end(case_runs[0])
    group = svg.group_size(max(len(r.step_ms) for r in case_runs), PANEL_POINTS)
    thinned = f"each point the median of {group} consecutive steps" if group > 1 else "every step"
    return (
        f'<h4>Step time, pair by pair ({esc(machine.label)})</h4><div class="multiples">{"".join(steps_figs)}</div>'
        f'<p class="note">Wall time per training step ({thinned}); the panels share their axes. Torch: solid, blue, circles; burn: dashed, '
        "vermillion, squares (a pair within one framework: its first run in green, dotted, diamonds). "
        "A cross on the axis: where a run stopped.</p>"
        f'<h4>Memory growth since the end of warm-up ({esc(machine.label)})</h4><div class="multiples">{"".join(growth_figs)}</div>'
        f'<p class="note">Resident set size minus its value at the end of warm-up (step {end}; the panels share their axes), so that the '
        "frameworks' start-up allocations (torch's ~160 MiB) do not hide a growth of a few MiB.</p>"
    )


def _full_plots(case: str, machine: MachineResults) -> str:
    runs = machine.runs_of(case)
    modes = [r.mode for r in runs]
    step_series, rss_series = [], []
    for r in runs:
        style = mode_style(r.framework, r.mode, modes)
        step_series.append(svg.Series(series_label(r), [(float(i + 1), v) for i, v in enumerate(r.step_ms)], style))
        rss_series.append(svg.Series(series_label(r), rss_points(r), style))
    base = f"{slug(case)}-{machine.fingerprint}"
    group = svg.group_size(max((len(s.points) for s in step_series), default=0))
    caption = (
        f"Step time: each point is the median wall time of {group} consecutive steps (every step is in results.json). "
        if group > 1
        else "Step time: every step's wall time. "
    )
    plots = svg.line_plot(
        step_series,
        title=f"{case}: step time ({machine.label})",
        x_label="step",
        y_label="ms per step",
        plot_id=f"steps-{base}",
    ) + svg.line_plot(
        rss_series,
        title=f"{case}: RSS ({machine.label})",
        x_label="step",
        y_label="RSS delta MiB",
        plot_id=f"rss-{base}",
        height=260,
    )
    return (
        f"<details><summary>The full step series: every run of {esc(case)} on one plot ({esc(machine.label)})</summary>"
        f'<div class="plots">{plots}</div><p class="note">{caption}RSS: the worker\'s resident set size at each '
        "checkpoint (and every few steps where the run sampled it), minus its value before the loop. Colour and "
        "marker: the mode; solid: torch, dashed: burn.</p></details>"
    )


def runs_table(report: Report, case: str) -> str:
    header = ["run"]
    multi = len(report.machines) > 1
    for m in report.machines:
        prefix = f"{esc(m.label)}<br>" if multi else ""
        header += [
            f"{prefix}outcome",
            "ref median ms",
            "last median ms",
            "slowdown ratio",
            "GFLOP/s (of peak)",
            "slope ms/1000 steps (95% CI)",
            "RSS MiB/1000 steps",
            "tracked",
            "wall s",
        ]
    rows = []
    for key in report.run_keys(case):
        row = [esc(f"{key[1]}/{key[2]}")]
        for m in report.machines:
            run = m.run(key)
            if run is None:
                row += ["not run"] + ["-"] * 8
                continue
            mt = run.metrics
            slope = mt.slope_ms_per_1000
            row += [
                esc(outcome_text(run)),
                num(repeated(mt, "reference_median_ms", ".3f"), mt.reference_median_ms),
                num(repeated(mt, "last_median_ms", ".3f"), mt.last_median_ms),
                num(repeated(mt, "slowdown_ratio", ".2f"), mt.slowdown_ratio),
                num(gflops_text(mt, m.doc.provenance.peak_gflops), mt.gflops),
                num(slope_text(mt), slope.value if slope else None),
                num(value_text(mt.rss_growth_mib_per_1000, ".2f")),
                esc(value_text(mt.tracked)),
                num(value_text(run.wall_s, ".1f")),
            ]
        rows.append(row)
    return table(header, rows, "runs sortable", f"runs of {case}")


def _checkpoint_table(case: str, machine: MachineResults) -> str:
    runs = machine.runs_of(case)
    steps = sorted({c.step for r in runs for c in r.checkpoints})
    header = ["run"] + [f"step {s}" for s in steps] + ["tracked", "flags at the last checkpoint"]
    rows = []
    for r in runs:
        by_step = {c.step: c for c in r.checkpoints}
        row = [esc(f"{r.framework}/{r.mode}")]
        for s in steps:
            c = by_step.get(s)
            if c is None:
                row.append("-")
                continue
            delta = c.rss_delta_mib
            rss = "rss n/a" if delta is None else f"{delta:+.1f} MiB"
            row.append(f'<td class="num">{c.ms_per_step:.3f} ms<br>{esc(rss)}</td>')
        flags = ", ".join(f"{k}={value_text(v)}" for k, v in r.checkpoints[-1].flags.items()) if r.checkpoints else ""
        row += [esc(value_text(r.metrics.tracked)), esc(flags or "-")]
        rows.append(row)
    return (
        f'<details><summary>Checkpoints ({esc(machine.label)})</summary><p class="note">Mean ms per step over the '
        "segment ending at the checkpoint, and RSS delta.</p>" + table(header, rows, "checkpoints") + "</details>"
    )


def pair_tables(report: Report, case: str) -> str:
    out = []
    for pair in report.pairs(case):
        header = ["property"]
        for m in report.machines:
            prefix = f"{esc(m.label)}<br>" if len(report.machines) > 1 else ""
            header += [f"{prefix}{esc(pair.a)}", esc(pair.b), "claim"]
        rows = []
        for label, prop in PAIR_ROWS:
            row = [esc(label)]
            for m in report.machines:
                ra, rb = m.run(side_key(case, pair.a)), m.run(side_key(case, pair.b))
                cls = ' class="panic"' if label == "panic" else ""
                row += [f"<td{cls}>{esc(run_cell(ra, label))}</td>", f"<td{cls}>{esc(run_cell(rb, label))}</td>"]
                if prop in pair.claims:
                    row.append(f"{esc(pair.claims[prop])}: {esc(prop)} {verdict(report.claim_verdict(m, pair, prop))}")
                else:
                    row.append("-")
            rows.append(row)
        out.append(
            f'<h4 class="pair">{esc(pair.a)} vs {esc(pair.b)}</h4>'
            f"<p>Claim: {esc(claim_text(pair))}. {esc(pair.reason)}</p>" + table(header, rows, "pair")
        )
    return "".join(out)


def _programs(info: CaseInfo) -> str:
    if not info.programs:
        return ""
    blocks = []
    for name, p in info.programs.items():
        blocks.append(f"<h4>Variant <code>{esc(name)}</code></h4>" + code_pair(program_code(p)))
    return "<h3>Programs</h3>" + "".join(blocks)


def _observation_cells(run: RunRecord | None, label: str) -> list[str]:
    found = [o for o in run.observations if o.label == label] if run else []
    if not found:
        return ["-", "-", "-", "-"]
    o = found[-1]
    flags = f"tracked {value_text(o.flags.tracked)}, requires_grad {value_text(o.flags.requires_grad)}"
    return [
        esc(o.shape),
        f'<td class="panic">{esc(summarize(o.values) if o.values is not None else "-")}</td>',
        f'<td class="panic">{esc(summarize(o.grad) if o.grad is not None else "-")}</td>',
        esc(flags),
    ]


def _observations(report: Report, case: str, machine: MachineResults) -> str:
    runs = machine.runs_of(case)
    if not any(r.observations for r in runs):
        return ""
    out = []
    for pair in report.pairs(case):
        ra, rb = machine.run(side_key(case, pair.a)), machine.run(side_key(case, pair.b))
        labels = list(dict.fromkeys(o.label for r in (ra, rb) if r for o in r.observations))
        if not labels:
            continue
        header = ["observed"] + [
            f"{esc(ref)}<br>{h}" for ref in (pair.a, pair.b) for h in ("shape", "values", "grad", "flags")
        ]
        rows = [[esc(label), *_observation_cells(ra, label), *_observation_cells(rb, label)] for label in labels]
        stopped = [
            f"{r.framework}/{r.mode}: {outcome_text(r)} ({r.failure.message})" for r in (ra, rb) if r and r.failure
        ]
        note = f'<p class="note">{esc("; ".join(stopped))}</p>' if stopped else ""
        out.append(
            f'<h4 class="pair">Observations: {esc(pair.a)} vs {esc(pair.b)} ({esc(machine.label)})</h4>{note}'
            + table(header, rows, "observations")
        )
    return "".join(out)


def section(report: Report, case: str, info: CaseInfo | None) -> str:
    parts = [f'<section class="case" id="case-{slug(case)}"><h2>Details: case {esc(case)}</h2>']
    if info is not None and info.description:
        parts.append(f"<p>{prose(' '.join(info.description.split()))}</p>")
    if info is not None:
        parts.append(html_curves.case_block(report, info))
    pairs = report.pairs(case)
    for m in report.machines:
        if any(r.step_ms for r in m.runs_of(case)):
            parts.append(_pair_panels(report, case, m, pairs) + _full_plots(case, m))
    if info is not None:
        parts.append(_programs(info))
    for m in report.machines:
        parts.append(_observations(report, case, m))
    parts.append("<h3>Runs</h3>" + runs_table(report, case))
    parts.append(
        "<details><summary>Pairs: every property on every machine (torch vs burn, and burn against its own fix)"
        f"</summary>{pair_tables(report, case)}</details>"
    )
    for m in report.machines:
        if m.runs_of(case):
            parts.append(_checkpoint_table(case, m))
    parts.append("</section>")
    return "".join(parts)
