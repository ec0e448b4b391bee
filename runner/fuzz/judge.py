"""Divergences between a program's torch run and its burn run, with the
false-positive filters stated and counted. The campaign compares label by label
with the same tolerance and filters (`localize.compare`); the `chaotic` and
`amplified` filters below are what its replays now settle (a statement replayed
alone on identical inputs agrees when a program only amplified float32 noise),
and the float64 gradient check (`gradcheck`) is kept for programs judged one by one.

Classes:

- `status`: the outcomes differ (ok against panic, error or unsupported; an
  error against a panic);
- `values`, `grads`, `flags`: an observation differs (`runner.oracles`, the
  case tolerance: |a - b| <= 1e-5 + 1e-4 * max(|a|, |b|));
- `gradcheck`: a framework's float32 gradient of the loss disagrees with the
  float64 gradient that finite differences confirm (torch, float64, central
  differences along a random direction, eps 1e-6).

Filters (each counted, so a campaign says what it left out):

- `nonfinite`: NaN or an infinity in either run's tensor: not compared;
- `overflow`: the float64 reference exceeds 1e30 in magnitude: not compared;
- `accumulation`: both float32 runs lie within 1e-4 (relative to the tensor's
  largest float64 magnitude) of the float64 reference: the difference is the
  order of float32 sums, not semantics;
- `conditioning`: burn's float32 result is no further from the float64
  reference than 10x torch's own float32 result is: the program amplifies
  rounding (1 / x**2 near 0, exp(exp(x)), long training) and burn rounds no
  worse than torch;
- `kink`: the directional derivative jumps between the neighbours x +- 1e-4 v
  (relu or abs at 0, ...): the gradient is not defined there, not compared, as
  ∇Fuzz does;
- `chaotic`: in a program that trains (an optimizer step, a loop), a value
  that also differs between torch and torch started from parameters nudged by
  one part in 1e6: the dynamics amplify float32 noise (a parameter oscillating
  at the kink of abs, say), so the difference says nothing about burn;
- `amplified`: a parameter after an optimizer step differs although its
  gradient before the step agreed and was tiny (< 1e-4): Adam turns float32
  noise in a near-zero gradient into a full step;
- `growth` (a class, not a filter) needs the loop's step time to grow above 3x
  on one side and stay below 1.5x on the other, the same thresholds in both
  directions, so that machine noise (1.3x here) does not count.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.case import Tolerance
from ..model.results import InterpreterResult, Observation, RawRun, from_data
from ..oracles import compare_observations

FD_EPS = 1e-6
KINK_STEP = 1e-4
OVERFLOW = 1e30
ACCUMULATION_REL = 1e-4
GRADCHECK_REL = 1e-3
CONDITIONING = 10.0
CUTS = {"detach", "without_autodiff", "require_grad", "item", "no_grad", "freeze"}


@dataclass
class Divergence:
    cls: str  # status, values, grads, flags, gradcheck
    label: str | None
    detail: dict[str, Any]
    known: str | None = None  # the registry's id, when it matches a documented difference

    def key(self) -> tuple[str, str | None]:
        return self.cls, self.label


@dataclass
class Findings:
    """What comparing one program's torch run with its burn run found: the divergences,
    and how many comparisons each filter left out (not a `runner.model.results.Verdict`,
    which is one expectation checked)."""

    divergences: list[Divergence] = field(default_factory=list)
    filtered: dict[str, int] = field(default_factory=dict)

    def filter(self, reason: str) -> None:
        self.filtered[reason] = self.filtered.get(reason, 0) + 1


def record_of(result: dict[str, Any], framework: str) -> RawRun:
    """An interpreter's result (or the pool's crash or timeout) as a run record."""
    fields = {k: v for k, v in result.items() if k in InterpreterResult.model_fields}
    data = {"case": "fuzz", "framework": framework, "mode": "generated", **fields}
    if data["outcome"] in ("crash", "timeout"):
        data.pop("failure", None)
        data["crash"] = {"signal": None, "exit_code": None, "stderr_tail": result["failure"]["message"]}
        if data["outcome"] == "timeout":
            data.pop("crash")
    return from_data(RawRun, data)


def _by_label(run: RawRun) -> dict[str, Observation]:
    return {o.label: o for o in run.observations}


def _finite(values: Sequence[float] | None) -> bool:
    return values is None or all(math.isfinite(v) for v in values)


def _status(torch_run: RawRun, burn_run: RawRun) -> dict[str, Any] | None:
    if torch_run.outcome == burn_run.outcome:
        return None

    def stopped(run: RawRun) -> str:
        f = run.failure
        return f"{run.outcome}" + (f" at {f.op} (op {f.op_index}): {f.message[:300]}" if f is not None else "")

    failed = burn_run.failure or torch_run.failure
    return {
        "torch": stopped(torch_run),
        "burn": stopped(burn_run),
        "torch_outcome": torch_run.outcome,
        "burn_outcome": burn_run.outcome,
        "torch_message": torch_run.failure.message if torch_run.failure else None,
        "burn_message": burn_run.failure.message if burn_run.failure else None,
        "op": failed.op if failed is not None else None,
        # where each stopped: (statement index, loop iteration)
        "torch_at": _at(torch_run),
        "burn_at": _at(burn_run),
    }


def _at(run: RawRun) -> list[int | None] | None:
    f = run.failure
    return None if f is None else [f.op_index, f.iteration]


def _amplified(ta: dict[str, Observation], ba: dict[str, Observation], label: str, tol: Tolerance) -> bool:
    """A parameter after an optimizer step differs, but its gradient before the step agrees and is
    tiny (|g| < 1e-4): Adam scales such a gradient up to a full step, so float32 noise in it (the
    gradient of p / p, say) becomes a visible difference that says nothing about semantics."""
    before = label.removesuffix(" after step")
    gt, gb = ta.get(before), ba.get(before)
    if gt is None or gb is None or gt.grad is None or gb.grad is None or len(gt.grad) != len(gb.grad):
        return False
    small = max((abs(v) for v in [*gt.grad, *gb.grad]), default=0.0) < 1e-4
    agree = all(abs(x - y) <= tol.abs + tol.rel * max(abs(x), abs(y)) for x, y in zip(gt.grad, gb.grad))
    return small and agree


GROWS, FLAT = 3.0, 1.5
# The windows of a generated loop's step times (a found case's [windows] says the same).
GROWTH_WARMUP, GROWTH_WINDOW = 20, 50


def growth(torch_run: RawRun, burn_run: RawRun) -> Divergence | None:
    """`step_growth` of two recorded runs."""
    return step_growth((torch_run.outcome, torch_run.step_ms), (burn_run.outcome, burn_run.step_ms))


def step_growth(torch: tuple[str, Sequence[float]], burn: tuple[str, Sequence[float]]) -> Divergence | None:
    """Step time of a generated loop, from each side's (outcome, step times): grows (last 50
    iterations over iterations 21-70 above 3x) on one side and stays flat (below 1.5x) on the other."""

    def ratio(outcome: str, ms: Sequence[float]) -> float | None:
        if outcome != "ok" or len(ms) < GROWTH_WARMUP + 2 * GROWTH_WINDOW:
            return None
        ref = sorted(ms[GROWTH_WARMUP : GROWTH_WARMUP + GROWTH_WINDOW])
        last = sorted(ms[-GROWTH_WINDOW:])
        mid_ref, mid_last = ref[len(ref) // 2], last[len(last) // 2]
        return mid_last / mid_ref if mid_ref > 0 else None

    rt, rb = ratio(*torch), ratio(*burn)
    if rt is None or rb is None:
        return None
    if (rb > GROWS and rt < FLAT) or (rt > GROWS and rb < FLAT):
        return Divergence("growth", None, {"torch_ratio": rt, "burn_ratio": rb, "a": f"x{rt:.2f}", "b": f"x{rb:.2f}"})
    return None


def _conditioning(t32: Sequence[float], b32: Sequence[float], ref: Sequence[float]) -> bool:
    """burn's float32 error (against torch's float64 run) is no larger than 10x torch's own float32
    error: the program amplifies rounding (1 / x**2 near 0, exp(exp(x)), long training), and burn
    rounds no worse than torch does."""
    err_t = max((abs(x - r) for x, r in zip(t32, ref)), default=0.0)
    err_b = max((abs(x - r) for x, r in zip(b32, ref)), default=0.0)
    return err_t > 0 and err_b <= CONDITIONING * err_t


def _within(a: Sequence[float], ref: Sequence[float]) -> bool:
    scale = max((abs(v) for v in ref), default=0.0) or 1.0
    return all(abs(x - r) <= ACCUMULATION_REL * scale for x, r in zip(a, ref))


def compare(torch_run: RawRun, burn_run: RawRun, reference: RawRun | None, tol: Tolerance | None = None) -> Findings:
    """Divergences of the two float32 runs (the float64 `reference` is torch's run in float64)."""
    tol = tol or Tolerance()
    findings = Findings()
    status = _status(torch_run, burn_run)
    if status is not None:
        findings.divergences.append(Divergence("status", None, status))
    ta, ba = _by_label(torch_run), _by_label(burn_run)
    ref = _by_label(reference) if reference is not None and reference.outcome == "ok" else {}
    for label in [k for k in ta if k in ba]:
        ot, ob = ta[label], ba[label]
        flags = compare_observations(torch_run, burn_run, "flags", label, tol)
        if flags.same is False:
            findings.divergences.append(Divergence("flags", label, flags.observed))
        for what in ("values", "grads"):
            xt = ot.values if what == "values" else ot.grad
            xb = ob.values if what == "values" else ob.grad
            if not (_finite(xt) and _finite(xb)):
                findings.filter("nonfinite")
                continue
            r = ref.get(label)
            xr = (r.values if what == "values" else r.grad) if r is not None else None
            if xr is not None and any(abs(v) > OVERFLOW for v in xr if math.isfinite(v)):
                findings.filter("overflow")
                continue
            found = compare_observations(torch_run, burn_run, what, label, tol)
            if found.same is not False:
                continue
            if what == "values" and label.endswith(" after step") and _amplified(ta, ba, label, tol):
                findings.filter("amplified")
                continue
            if xt is not None and xb is not None and xr is not None and len(xt) == len(xb) == len(xr):
                if _within(xt, xr) and _within(xb, xr):
                    findings.filter("accumulation")
                    continue
                if _conditioning(xt, xb, xr):
                    findings.filter("conditioning")
                    continue
            findings.divergences.append(Divergence(what, label, found.observed))
    return findings


# ---- float64 gradient check -----------------------------------------------------------------------

Runner = Callable[[dict[str, Any]], dict[str, Any]]


def _loss(result: dict[str, Any]) -> float | None:
    for o in result.get("observations") or []:
        if o["label"] == "loss" and o.get("values"):
            return float(o["values"][0])
    return None


def _perturbed(program: dict[str, Any], direction: dict[str, list[float]], step: float) -> dict[str, Any]:
    tensors = []
    for t in program["tensors"]:
        d = direction.get(t["name"])
        if d is not None:
            t = {**t, "data": [x + step * v for x, v in zip(t["data"], d)]}
        tensors.append(t)
    return {**program, "tensors": tensors}


def gradcheck(
    program: dict[str, Any], reference: RawRun, runs: dict[str, RawRun], run64: Runner, seed: int = 0
) -> tuple[list[Divergence], str | None]:
    """Each framework's float32 gradient against the float64 one, where finite
    differences confirm the float64 gradient and no kink is near.

    Only for programs whose loss is observed before any optimizer step and that
    run one backward. Returns the divergences and, if the check was skipped, why."""
    body_ops = [s["op"] for s in program["body"]]
    if body_ops.count("backward") != 1 or "step" in body_ops[: body_ops.index("backward")]:
        return [], "not one backward"
    if CUTS & set(body_ops):
        # detach() and friends cut the graph: finite differences see through the cut, autodiff does not
        return [], "graph cut"
    params = [t for t in program["tensors"] if t["role"] == "param"]
    obs = _by_label(reference)
    grads = {t["name"]: obs[t["name"]].grad for t in params if t["name"] in obs and obs[t["name"]].grad}
    if not grads or _loss({"observations": [o.model_dump() for o in reference.observations]}) is None:
        return [], "no loss or gradient"
    rng = random.Random(seed)
    direction = {name: [rng.gauss(0.0, 1.0) for _ in g] for name, g in grads.items() if g is not None}

    def slope(at: float) -> float | None:
        up = _loss(run64(_perturbed(program, direction, at + FD_EPS)))
        down = _loss(run64(_perturbed(program, direction, at - FD_EPS)))
        return None if up is None or down is None else (up - down) / (2 * FD_EPS)

    analytic = sum(g * v for name, d in direction.items() for g, v in zip(grads[name] or [], d))
    numeric = slope(0.0)
    if numeric is None or not math.isfinite(numeric) or not math.isfinite(analytic):
        return [], "nonfinite"
    left, right = slope(-KINK_STEP), slope(KINK_STEP)
    if left is None or right is None or abs(left - right) > 1e-3 * max(1.0, abs(numeric)):
        return [], "kink"
    if abs(numeric - analytic) > 1e-4 * max(1.0, abs(numeric)):
        # torch's own float64 gradient disagrees with the finite difference: a finding about torch
        return [Divergence("gradcheck", "torch float64", {"analytic": analytic, "numeric": numeric})], None
    errors: dict[tuple[str, str], tuple[float, float]] = {}  # (framework, param) -> (worst error, scale)
    for fw, run in runs.items():
        mine = _by_label(run)
        for name, g64 in grads.items():
            o = mine.get(name)
            g32 = o.grad if o is not None else None
            if g32 is None or g64 is None or len(g32) != len(g64):
                continue
            scale = max((abs(v) for v in g64), default=0.0) or 1.0
            errors[(fw, name)] = (max((abs(a - b) for a, b in zip(g32, g64)), default=0.0), scale)
    found = []
    for (fw, name), (worst, scale) in errors.items():
        if worst <= GRADCHECK_REL * scale + 1e-6:
            continue
        others = [error for (other, n), (error, _) in errors.items() if n == name and other != fw]
        if others and all(0 < error and worst <= CONDITIONING * error for error in others):
            # the other framework's float32 gradient is off by as much: the program's rounding
            # (terms that cancel, p**2 / p**2 say), not a difference between the frameworks
            continue
        found.append(
            Divergence(
                "gradcheck",
                f"{fw} {name}",
                {
                    "framework": fw,
                    "param": name,
                    "max_abs_error": worst,
                    "scale": scale,
                    "finite_difference": numeric,
                    "float64_analytic": analytic,
                },
            )
        )
    return found, None
