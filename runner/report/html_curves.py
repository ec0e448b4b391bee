"""The training curves in `report.html` (`curves`): a summary table of every model trained side
by side, and in each such case's details, per pair, both loss curves on one plot and their
relative difference at every step against the case's tolerance, with the first step at which
they part. Every text from a case or results file is escaped (`esc`, `prose`)."""

from __future__ import annotations

from ..model.results import CaseInfo
from ..wording import rate_text, value_text
from . import svg
from .browser import CURVES_PREFIX
from .curves import Curve, checkpoint_text, curves, finals_text, first_apart_text, mflop_text, origin_text
from .differences import slug
from .html_base import esc, num, pair_styles, prose, table
from .model import Report

TOLERANCE = svg.Style("#555555", "4 3", "ring")
INTRO = (
    "Each reference model is trained from the same initial weights on the same seeded data by both "
    "frameworks; its program collects the loss of every step. The relative difference of a step's "
    "loss is |a − b| / max(|a|, |b|); the two curves part at the first step where |a − b| exceeds "
    "the case's tolerance (abs + rel · max(|a|, |b|), derived from measurement: see each case). "
    "Weights and gradients at checkpoints: the first checkpoint of the training loop at which a weight "
    "or its gradient observed there (at steps such as 1, 50, 100, 150, 200) is beyond the case's "
    "weights tolerance (its gradients' where they have their own; derived from measurement as the "
    "loss's, element by element as the case's claims are judged, an abs written \"x the tensor's max\" being a "
    "fraction of that tensor's largest magnitude in either run, so that a gradient near zero is "
    "judged against its tensor's scale), and which; a case without one uses the loss tolerance, and "
    "the cell says which it used. "
    "Final weights: the largest absolute difference of each observation made after the loop, and "
    "(rel) that divided by the observation's largest magnitude. "
    "ms/step: the median time of an iteration of the timed loop per training step. "
    "MFLOP/step: torch's count of a training step's matrix products and convolutions, forward and "
    "backward (torch.utils.flop_counter; the elementwise work, norms, softmax and the optimizer's "
    "update are not counted), one count per program, the same for torch's and burn's run of it. "
    "GFLOP/s: those FLOPs over the run's median iteration (its reference window's where the case's "
    "windows fit), with their share of one core's float32 peak."
)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _steps(c: Curve) -> str:
    return "steps " + ", ".join(str(s) for s in c.checkpoints) if c.checkpoints else "none observed"


def _peak(report: Report, label: str) -> float | None:
    return next((m.provenance.peak_gflops for m in report.machines if m.label == label), None)


def _claim(c: Curve) -> str:
    return {"same": "agree", "differ": "differ"}.get(c.claim, "no claim")


def _largest_final(c: Curve) -> str:
    """The observation after the loop that differs most (the case's details list them all)."""
    if not c.finals:
        return "-"
    label, value, rel = max(c.finals, key=lambda item: (item[2] == item[2], item[2]))
    return f"{label} {value:.2g} (rel {rel:.2g})" + (f", the largest of {len(c.finals)}" if len(c.finals) > 1 else "")


def all_curves(report: Report, infos: dict[str, CaseInfo]) -> list[tuple[str, list[Curve]]]:
    """(machine label, its curves) for every machine that has any."""
    out = []
    for m in report.machines:
        found = [c for case in report.cases() if case in infos for c in curves(m, infos[case])]
        if found:
            out.append((m.label, found))
    return out


def summary(report: Report, infos: dict[str, CaseInfo]) -> str:
    """The section listing every model trained side by side ("" when there is none)."""
    per_machine = all_curves(report, infos)
    if not per_machine:
        return ""
    header = [
        "case",
        "pair",
        "the case claims",
        "steps",
        "first step apart",
        "weights, grads: first checkpoint apart",
        "where they start to part",
        "largest rel. loss difference (step)",
        "tolerance (abs, rel)",
        "ms/step a",
        "ms/step b",
        "MFLOP/step",
        "GFLOP/s a (of peak)",
        "GFLOP/s b (of peak)",
        "final weights: largest difference (rel)",
    ]
    parts = ['<section id="models"><h2>Models trained side by side</h2>', f'<p class="note">{esc(INTRO)}</p>']
    for label, found in per_machine:
        rows = []
        peak = _peak(report, label)
        for c in found:
            rows.append(
                [
                    f'<a href="#case-{slug(c.case)}">{esc(c.case)}</a>',
                    f"{esc(c.a)} vs {esc(c.b)}",
                    esc(_claim(c)),
                    num(str(len(c.losses_a)), len(c.losses_a)),
                    num(first_apart_text(c), c.first_apart if c.first_apart is not None else 1e9),
                    num(
                        checkpoint_text(c),
                        c.first_checkpoint_apart[0] if c.first_checkpoint_apart is not None else 1e9,
                    ),
                    prose(origin_text(c, report.origins)),
                    num(f"{c.max_rel:.2g} (step {c.max_rel_step})", c.max_rel),
                    esc(f"{value_text(c.tolerance.abs)}, {value_text(c.tolerance.rel)}"),
                    num(_ms(c.ms_per_step_a), c.ms_per_step_a),
                    num(_ms(c.ms_per_step_b), c.ms_per_step_b),
                    num(mflop_text(c), c.mflop_per_step_a if c.mflop_per_step_a is not None else c.mflop_per_step_b),
                    num(rate_text(c.gflops_a, peak), c.gflops_a),
                    num(rate_text(c.gflops_b, peak), c.gflops_b),
                    esc(_largest_final(c)),
                ]
            )
        if len(per_machine) > 1:
            parts.append(f"<h3>{esc(label)}</h3>")
        parts.append(table(header, rows, "models sortable", "models"))
    parts.append("</section>")
    return "".join(parts)


def _plots(c: Curve, machine: str, index: int) -> str:
    style_a, style_b = pair_styles(c.a, c.b)
    steps = range(1, len(c.losses_a) + 1)
    loss = svg.plot(
        [
            svg.Series(str(c.a), [(float(s), v) for s, v in zip(steps, c.losses_a, strict=True)], style_a),
            svg.Series(str(c.b), [(float(s), v) for s, v in zip(steps, c.losses_b, strict=True)], style_b),
        ],
        title="loss at every step",
        x_label="step",
        y_label="loss",
        plot_id=f"curve-{slug(c.case)}-{index}-{slug(machine)}",
        y_floor_zero=False,
    )
    # Steps where both losses are equal have no place on a log axis: they are left out.
    points = [(float(s), r) for s, r in zip(steps, c.rel, strict=True) if r > 0]
    bound = [(1.0, c.tolerance.rel), (float(len(c.rel)), c.tolerance.rel)]
    marks = [] if c.first_apart is None else [svg.Mark(float(c.first_apart), f"apart at step {c.first_apart}")]
    diff = svg.plot(
        [svg.Series("|a − b| / max", points, style_b), svg.Series("tolerance rel", bound, TOLERANCE)],
        title="relative difference of the loss",
        x_label="step",
        y_label="relative difference",
        plot_id=f"curve-diff-{slug(c.case)}-{index}-{slug(machine)}",
        marks=marks,
        x_range=(1.0, float(max(len(c.rel), 2))),
        y_floor_zero=False,
        log=True if points else None,
        note="the losses are equal at every step",
    )
    return f'<div class="multiples">{loss}{diff}</div>'


def case_block(report: Report, info: CaseInfo) -> str:
    """A model case's curves, per machine and pair ("" for a case without any)."""
    parts = []
    for m in report.machines:
        for index, c in enumerate(curves(m, info)):
            machine = f" ({m.label})" if len(report.machines) > 1 else ""
            parts.append(
                f'<h4 class="pair">Training curves: {esc(c.a)} vs {esc(c.b)}{esc(machine)}</h4>'
                f"<p>{len(c.losses_a)} steps; the case claims the losses {esc(_claim(c))}"
                f"{': ' + prose(c.reason) if c.reason else ''}. Largest relative difference "
                f"{esc(f'{c.max_rel:.2g}')} (step {c.max_rel_step}); apart beyond the tolerance: "
                f"<b>{esc(first_apart_text(c))}</b>"
                + (f" (where they start to part: {prose(origin_text(c, report.origins))})" if c.first_apart else "")
                + f"; weights and gradients at the checkpoints ({esc(_steps(c))}): first apart "
                f"<b>{esc(checkpoint_text(c))}</b>; final weights, largest absolute difference: "
                f"{esc(finals_text(c))}; ms/step {esc(_ms(c.ms_per_step_a))} ({esc(c.a.framework)}), "
                f"{esc(_ms(c.ms_per_step_b))} ({esc(c.b.framework)}); {esc(mflop_text(c))} MFLOP a step, "
                f"GFLOP/s (of peak) {esc(rate_text(c.gflops_a, m.provenance.peak_gflops))} ({esc(c.a.framework)}), "
                f"{esc(rate_text(c.gflops_b, m.provenance.peak_gflops))} ({esc(c.b.framework)}).</p>"
                + _plots(c, m.label, index)
            )
    if not parts:
        return ""
    # One block per case, with an id: `report --screenshots` photographs each.
    return f'<div class="curves" id="{CURVES_PREFIX}{slug(info.name)}">' + "".join(parts) + "</div>"
