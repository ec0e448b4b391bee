"""Training curves: where a model trained side by side parts between the two runs of a pair.

A program that collects its loss at every step into a tensor observed after the loop with
the label `losses` (the reference models, `cases/model_*.toml`: a one-element placeholder,
then `losses = cat(losses, reshape(detach(loss), [1]))` each step) gets, for each pair of the
case whose two runs both observed it: both loss curves, their relative difference at every
step, the first step at which it is beyond the case's tolerance (None: never), the first
checkpoint of the timed loop at which a weight or a gradient observed inside it (`observe(w,
every_checkpoint=True)`, or at the loop's last step) is beyond the case's weights tolerance
(`[program] weights_tolerance` for values, `grads_tolerance` for gradients, as the oracles
apply them: `Tolerances.of`; the loss tolerance where the case has neither), the largest
absolute difference of every other observation made after the loop (the final weights), and
each run's time per training step, with its FLOPs per training step and its achieved GFLOP/s
(`metrics.gflops`: the run's `step_mflop`, torch's count of its variant, over its median
iteration).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from ..model.case import ObservedWhat, RunRef, Tolerance, Tolerances
from ..model.results import CaseInfo, Observation, RunRecord
from .machines import MachineResults

LOSSES = "losses"
MAX_ORIGIN_STEPS = 8  # `runner.fuzz.origins.MAX_STEPS`


@dataclass(frozen=True)
class Curve:
    case: str
    a: RunRef
    b: RunRef
    # What the case claims about the losses of this pair: "same", "differ" or "" (nothing).
    claim: str
    reason: str
    tolerance: Tolerance
    losses_a: list[float]  # the loss of step 1, 2, ... (the placeholder left out)
    losses_b: list[float]
    rel: list[float]  # |a - b| / max(|a|, |b|) at each step (0 where both are 0; NaN where either is not finite)
    first_apart: int | None  # the first step beyond the tolerance, None: never
    max_rel: float
    max_rel_step: int
    # Of each observation after the loop (the final weights): (label, the largest absolute
    # difference, that divided by the largest magnitude of run a's values).
    finals: list[tuple[str, float, float]]
    ms_per_step_a: float | None
    ms_per_step_b: float | None
    # The training steps of the checkpoints at which both runs observed values inside the timed
    # loop (a weight and its gradient), and the first at which one of them is beyond the
    # tolerance: (step, what parted: `fc1.weight grad`, its largest absolute difference there;
    # NaN: only one run has it), None: never.
    checkpoints: tuple[int, ...] = ()
    first_checkpoint_apart: tuple[int, str, float] | None = None
    # The tolerances the checkpoints were compared with (the case's; `Tolerances.of`).
    tolerances: Tolerances = field(default_factory=Tolerances)
    # The cost of a step: MFLOP per training step (`step_mflop` over the steps an iteration runs)
    # and the achieved rate (`metrics.gflops`); None without a count.
    mflop_per_step_a: float | None = None
    mflop_per_step_b: float | None = None
    gflops_a: float | None = None
    gflops_b: float | None = None


def _losses(run: RunRecord) -> list[float] | None:
    found = [o for o in run.observations if o.label == LOSSES and o.iteration is None and o.values is not None]
    if not found or found[-1].values is None or len(found[-1].values) < 2:
        return None
    return [float(v) for v in found[-1].values[1:]]


def relative(a: float, b: float) -> float:
    if not (math.isfinite(a) and math.isfinite(b)):
        return 0.0 if a == b or (math.isnan(a) and math.isnan(b)) else math.nan
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale > 0 else 0.0


def apart(a: float, b: float, tolerance: Tolerance, absolute: float | None = None) -> bool:
    """The oracle's rule (`Tolerance.close`): beyond `absolute + rel * max(|a|, |b|)` (`absolute`:
    the tolerance's abs, or its `absolute()` of the arrays `a` and `b` belong to); NaN equals NaN."""
    return not tolerance.close(a, b, tolerance.abs if absolute is None else absolute)


def ms_per_step(run: RunRecord, steps: int) -> float | None:
    """The median time of an iteration of the timed loop, divided by the training steps each
    iteration runs (a loop of 20 blocks of 10 steps: a tenth of a block)."""
    if not run.step_ms or steps < 1:
        return None
    per_iteration = steps / len(run.step_ms)
    return statistics.median(run.step_ms) / per_iteration if per_iteration > 0 else None


def mflop_per_step(run: RunRecord, steps: int) -> float | None:
    """The run's `step_mflop` (one iteration of the timed loop) per training step."""
    mflop = run.metrics.step_mflop
    if mflop is None or not run.step_ms or steps < 1:
        return None
    return mflop * len(run.step_ms) / steps


def _finals(a: RunRecord, b: RunRecord) -> list[tuple[str, float, float]]:
    after = {o.label: o for o in b.observations if o.iteration is None and o.values is not None}
    out = []
    for obs in a.observations:
        other: Observation | None = after.get(obs.label)
        if obs.label == LOSSES or obs.iteration is not None or obs.values is None or other is None:
            continue
        if other.values is None or len(other.values) != len(obs.values):
            continue
        diffs = [abs(float(x) - float(y)) for x, y in zip(obs.values, other.values, strict=True)]
        finite = [d for d in diffs if math.isfinite(d)]
        largest = max(finite) if finite else math.nan
        scale = max((abs(float(x)) for x in obs.values if math.isfinite(float(x))), default=0.0)
        out.append((obs.label, largest, largest / scale if scale > 0 else math.nan))
    return out


def _parted(a: list[float] | None, b: list[float] | None, tolerance: Tolerance) -> float | None:
    """Where two observed arrays part (one side only has it, their lengths differ, or an element
    is beyond the tolerance: the oracle's rule), their largest absolute difference (NaN when it
    has none); None: they do not."""
    if a is None or b is None:
        return None if (a is None) == (b is None) else math.nan
    if len(a) != len(b):
        return math.nan
    absolute = tolerance.absolute(a, b)
    if not any(apart(float(x), float(y), tolerance, absolute) for x, y in zip(a, b, strict=True)):
        return None
    finite = [abs(float(x) - float(y)) for x, y in zip(a, b, strict=True) if math.isfinite(float(x) - float(y))]
    return max(finite, default=math.nan)


def _checkpoints(
    a: RunRecord, b: RunRecord, tolerances: Tolerances, steps_per_iteration: int
) -> tuple[tuple[int, ...], tuple[int, str, float] | None]:
    """The checkpoints at which both runs observed values inside the timed loop, as training steps,
    and the first one at which an observation's values or gradient part (matched by label and
    iteration, the newest of each, as the oracles match them; within the tolerance the oracles
    give it, `Tolerances.of`)."""
    inside_a = {(o.label, o.iteration): o for o in a.observations if o.iteration is not None and o.values is not None}
    inside_b = {(o.label, o.iteration): o for o in b.observations if o.iteration is not None and o.values is not None}
    both = [key for key in inside_a if key in inside_b]
    iterations = sorted({it for _, it in both if it is not None})
    first: tuple[int, str, float] | None = None
    for iteration in iterations:
        for label, it in both:
            if it != iteration:
                continue
            oa, ob = inside_a[(label, it)], inside_b[(label, it)]
            sides: tuple[tuple[ObservedWhat, str, list[float] | None, list[float] | None], ...] = (
                ("values", "values", oa.values, ob.values),
                ("grads", "grad", oa.grad, ob.grad),
            )
            for what, name, va, vb in sides:
                largest = _parted(va, vb, tolerances.of(what, iteration))
                if largest is not None:
                    first = (iteration * steps_per_iteration, f"{label} {name}", largest)
                    break
            if first is not None:
                break
        if first is not None:
            break
    return tuple(it * steps_per_iteration for it in iterations), first


def _steps_per_iteration(run: RunRecord, steps: int) -> int:
    """Training steps per iteration of the timed loop (10 for a loop of 20 blocks of 10 steps)."""
    if run.step_ms and steps % len(run.step_ms) == 0:
        return steps // len(run.step_ms)
    return 1


def checkpoint_tolerance_text(tolerances: Tolerances) -> str:
    """Which tolerance the checkpoints are compared with: `the weights tolerance (abs 6e-05 x
    the tensor's max, rel 0)`, with the gradients' where it differs, or `the loss tolerance (...)`
    for a case without one."""
    values, grads = tolerances.inside("values"), tolerances.inside("grads")
    if tolerances.weights is None and tolerances.grads is None:
        return f"the loss tolerance ({values.describe()})"
    if values == grads:
        return f"the weights tolerance ({values.describe()})"
    return f"the weights tolerance ({values.describe()}; gradients {grads.describe()})"


def checkpoint_text(c: Curve) -> str:
    """`step 50 (fc2.weight grad, up to 3.1e-07 apart; the weights tolerance (...))`, `never (5
    checkpoints; the weights tolerance (...))`, or `-` without such observations."""
    if not c.checkpoints:
        return "-"
    within = checkpoint_tolerance_text(c.tolerances)
    if c.first_checkpoint_apart is None:
        count = len(c.checkpoints)
        return f"never ({count} checkpoint{'s' if count != 1 else ''}; {within})"
    step, what, largest = c.first_checkpoint_apart
    how = "in one run only" if math.isnan(largest) else f"up to {largest:.2g} apart"
    return f"step {step} ({what}, {how}; {within})"


def finals_text(c: Curve) -> str:
    """`fc1.bias 1.4e-05 (rel 1e-04); ...`: rel is against the largest magnitude of run a's values."""
    return "; ".join(f"{label} {value:.2g} (rel {rel:.2g})" for label, value, rel in c.finals) or "-"


def curve(case: CaseInfo, pair_index: int, a: RunRecord, b: RunRecord) -> Curve | None:
    """The curve of one pair, or None when either run did not observe `losses`."""
    losses_a, losses_b = _losses(a), _losses(b)
    if losses_a is None or losses_b is None:
        return None
    pair = case.pairs[pair_index]
    prop = f"values:{LOSSES}"
    claim = "same" if prop in pair.same else "differ" if prop in pair.differ else ""
    tolerances = case.tolerances
    tolerance = tolerances.loss
    steps = min(len(losses_a), len(losses_b))
    rel = [relative(x, y) for x, y in zip(losses_a[:steps], losses_b[:steps], strict=True)]
    absolute = tolerance.absolute(losses_a[:steps], losses_b[:steps])
    first = next((i + 1 for i in range(steps) if apart(losses_a[i], losses_b[i], tolerance, absolute)), None)
    finite = [(r, i) for i, r in enumerate(rel) if not math.isnan(r)]
    max_rel, at = max(finite) if finite else (math.nan, 0)
    checkpoints, first_checkpoint = _checkpoints(a, b, tolerances, _steps_per_iteration(a, len(losses_a)))
    return Curve(
        case=case.name,
        a=pair.a,
        b=pair.b,
        claim=claim,
        reason=pair.reason,
        tolerance=tolerance,
        losses_a=losses_a,
        losses_b=losses_b,
        rel=rel,
        first_apart=first,
        max_rel=max_rel,
        max_rel_step=at + 1,
        finals=_finals(a, b),
        ms_per_step_a=ms_per_step(a, len(losses_a)),
        ms_per_step_b=ms_per_step(b, len(losses_b)),
        checkpoints=checkpoints,
        first_checkpoint_apart=first_checkpoint,
        tolerances=tolerances,
        mflop_per_step_a=mflop_per_step(a, len(losses_a)),
        mflop_per_step_b=mflop_per_step(b, len(losses_b)),
        gflops_a=a.metrics.gflops,
        gflops_b=b.metrics.gflops,
    )


def curves(machine: MachineResults, case: CaseInfo) -> list[Curve]:
    """Every pair of `case` whose runs on `machine` both observed `losses`."""
    out = []
    for index, pair in enumerate(case.pairs):
        a = machine.run((case.name, pair.a.framework, pair.a.mode))
        b = machine.run((case.name, pair.b.framework, pair.b.mode))
        if a is None or b is None:
            continue
        found = curve(case, index, a, b)
        if found is not None:
            out.append(found)
    return out


def mflop_text(c: Curve) -> str:
    """MFLOP per training step: one number when both runs have the same count (a variant's
    count is both of its runs'), else `a / b`; `-` without a count."""
    a, b = c.mflop_per_step_a, c.mflop_per_step_b
    if a is None and b is None:
        return "-"
    if a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9):
        return f"{a:.3g}"
    return " / ".join("-" if v is None else f"{v:.3g}" for v in (a, b))


def first_apart_text(c: Curve) -> str:
    return "never" if c.first_apart is None else f"step {c.first_apart}"


def origin_text(c: Curve, found: dict[tuple[str, str, str], str | None] | None) -> str:
    """Where the curves of `c` start to part (`runner.report.origins`), as the report says it."""
    if c.first_apart is None:
        return "-"
    if found is None:
        return "not localized (the report was made from results files)"
    key = (c.case, str(c.a), str(c.b))
    if key not in found:
        return "not localized (the two runs are different programs)"
    origin = found[key]
    if origin is None:
        return f"no single statement in the first {min(c.first_apart, MAX_ORIGIN_STEPS)} steps"
    return origin
