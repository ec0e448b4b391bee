"""Oracles: does a property of two runs agree? The categorical properties
(outcome, tracked, grows, rss_grows) compare as values; a program's
observations compare tensor by tensor:

- `values` / `grads`: every observation (by label and loop iteration) that both
  runs recorded is compared element by element within the case's tolerance,
  |a - b| <= abs + rel * max(|a|, |b|); NaN equals NaN and an infinity equals
  the same infinity. An observation made inside the timed loop (a weight at the
  checkpoints) is compared within `weights_tolerance` (its values) and
  `grads_tolerance` (its gradient) where the case has them (`Tolerances.of`),
  whose abs may be scaled to the tensor (`abs_scale = "tensor"`). Shapes must agree, except that a scalar is `[]` in torch
  and `[1]` in burn (the same thing). A label that only one run recorded
  (it stopped earlier) makes the comparison unknown.
- `flags`: `tracked` of every observation (`requires_grad` is not compared: for a
  non-leaf, torch says True when it is part of the graph and burn says False
  because only leaves require grad; the raw flags are in the results).

`values:LABEL` (and `grads:`, `flags:`) compares one label only. The verdict's
`observed` says where the runs part: the largest absolute and relative error,
the label and the first index that is off.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from .metrics import properties
from .model.case import OBSERVATION_PROPERTIES, Case, ProgramCase, Tolerance, Tolerances
from .model.results import Observation, RawRun, RunRecord


@dataclass(frozen=True)
class Agreement:
    same: bool | None  # None: cannot be judged (missing on one side)
    observed: dict[str, JsonValue]


def _shape(shape: Sequence[int]) -> list[int]:
    return [] if list(shape) == [1] else list(shape)


def compare_arrays(a: Sequence[float], b: Sequence[float], tol: Tolerance) -> dict[str, JsonValue]:
    """Element-wise comparison: largest errors, the first index off, how many are off."""
    max_abs = max_rel = 0.0
    first: int | None = None
    off = 0
    absolute = tol.absolute(a, b)
    for i, (x, y) in enumerate(zip(a, b)):
        close = tol.close(x, y, absolute)
        if not close:
            off += 1
            if first is None:
                first = i
        if math.isfinite(x) and math.isfinite(y):
            err = abs(x - y)
            max_abs = max(max_abs, err)
            if err:
                max_rel = max(max_rel, err / max(abs(x), abs(y)))
        elif not close:
            max_abs = max_rel = math.inf
    return {
        "max_abs_error": _json_float(max_abs),
        "max_rel_error": _json_float(max_rel),
        "first_index": first,
        "off": off,
        "n": len(a),
    }


def _json_float(value: float) -> JsonValue:
    return value if math.isfinite(value) else "Infinity"


def _key(o: Observation) -> tuple[str, int | None]:
    return o.label, o.iteration


def _preview(values: Sequence[float] | None, index: int | None) -> JsonValue:
    if values is None:
        return None
    at = index or 0
    return [v if math.isfinite(v) else str(v) for v in values[at : at + 4]]


def compare_observations(a: RawRun, b: RawRun, what: str, label: str | None, tol: Tolerance | Tolerances) -> Agreement:
    """`what`: values, grads or flags; `label`: one label, or None for all; `tol`: one tolerance
    for every observation, or a case's (`Tolerances.of`: those made inside the timed loop may
    have their own)."""
    tolerances = tol if isinstance(tol, Tolerances) else Tolerances(tol)
    obs_a = {_key(o): o for o in a.observations if label is None or o.label == label}
    obs_b = {_key(o): o for o in b.observations if label is None or o.label == label}
    if not obs_a and not obs_b:
        return Agreement(None, {"a": "no observation", "b": "no observation", "label": label})
    missing = sorted({k[0] for k in set(obs_a) ^ set(obs_b)})
    worst: dict[str, JsonValue] | None = None
    per_label: dict[str, JsonValue] = {}
    compared = 0
    same = True
    for key in [k for k in obs_a if k in obs_b]:
        oa, ob = obs_a[key], obs_b[key]
        name = key[0] if key[1] is None else f"{key[0]}@{key[1]}"
        if what == "flags":
            # `tracked` only: `requires_grad` means "part of the graph" for a torch non-leaf
            # but "a leaf that requires grad" in burn, so it differs by definition there.
            fa = {"tracked": oa.flags.tracked}
            fb = {"tracked": ob.flags.tracked}
            agree = fa == fb
            per_label[name] = {"a": fa, "b": fb, "same": agree}  # type: ignore[dict-item]
            compared += 1
            if not agree:
                same = False
                worst = worst or {"label": name, "a": fa, "b": fb}  # type: ignore[dict-item]
            continue
        va = oa.values if what == "values" else oa.grad
        vb = ob.values if what == "values" else ob.grad
        if va is None and vb is None:
            continue  # neither recorded it (values=False, or no gradient on either side)
        compared += 1
        if va is None or vb is None or _shape(oa.shape) != _shape(ob.shape) or len(va) != len(vb):
            detail: dict[str, JsonValue] = {
                "label": name,
                "a": _summary(va, oa.shape),
                "b": _summary(vb, ob.shape),
                "max_abs_error": "Infinity",
                "max_rel_error": "Infinity",
                "first_index": 0,
                "reason": "only one run has a gradient" if va is None or vb is None else "shapes differ",
            }
            per_label[name] = detail
            same = False
            worst = worst or detail
            continue
        errors = compare_arrays(va, vb, tolerances.of("grads" if what == "grads" else "values", key[1]))
        agree = errors["off"] == 0
        per_label[name] = {**errors, "same": agree}
        if not agree:
            same = False
            first = errors["first_index"]
            candidate = {
                "label": name,
                **errors,
                "a": _preview(va, first if isinstance(first, int) else 0),
                "b": _preview(vb, first if isinstance(first, int) else 0),
            }
            if worst is None or _rank(candidate) > _rank(worst):
                worst = candidate
    if compared == 0:
        if missing:
            only_a = sorted({k[0] for k in set(obs_a) - set(obs_b)})
            only_b = sorted({k[0] for k in set(obs_b) - set(obs_a)})
            found: dict[str, JsonValue] = {
                "a": f"observed {', '.join(only_a) or 'nothing else'}",
                "b": f"observed {', '.join(only_b) or 'nothing else'}",
                "label": label,
                "only_in_one_run": list(missing),
            }
            return Agreement(None, found)
        return Agreement(None, {"a": f"no {what} recorded", "b": f"no {what} recorded", "label": label})
    largest = max((_rank(v) for v in per_label.values() if isinstance(v, dict)), default=0.0)
    largest_rel = max((_rank(v, "max_rel_error") for v in per_label.values() if isinstance(v, dict)), default=0.0)
    observed: dict[str, JsonValue] = (
        dict(worst)
        if worst
        else {
            "a": f"{compared} observation(s)",
            "b": f"{compared} observation(s)",
            "label": label,
            "max_abs_error": _json_float(largest),
            "max_rel_error": _json_float(largest_rel),
            "first_index": None,
        }
    )
    observed["compared"] = compared
    observed["per_label"] = per_label
    if missing:
        observed["only_in_one_run"] = missing  # type: ignore[assignment]
        if same:
            return Agreement(None, observed)
    return Agreement(same, observed)


def _rank(detail: dict[str, JsonValue], key: str = "max_abs_error") -> float:
    value = detail.get(key)
    return math.inf if value == "Infinity" else float(value) if isinstance(value, (int, float)) else 0.0


def _summary(values: Sequence[float] | None, shape: Sequence[int]) -> JsonValue:
    if values is None:
        return "none"
    return f"shape {list(shape)}: {_preview(values, 0)}"


def agreement(prop: str, a: RunRecord, b: RunRecord, case: Case) -> Agreement:
    """Whether runs `a` and `b` agree on `prop` (a pair's property)."""
    base, _, label = prop.partition(":")
    if base in OBSERVATION_PROPERTIES:
        tol = case.program.tolerances if isinstance(case, ProgramCase) else Tolerances()
        return compare_observations(a, b, base, label or None, tol)
    va, vb = properties(a, case)[prop], properties(b, case)[prop]
    same = None if va is None or vb is None else va == vb
    return Agreement(same, {"a": va, "b": vb})


def observed_flags(run: RunRecord) -> dict[str, dict[str, bool]]:
    """Each label's flags at its last observation."""
    out: dict[str, dict[str, bool]] = {}
    for o in run.observations:
        out[o.label] = {"tracked": o.flags.tracked, "requires_grad": o.flags.requires_grad}
    return out
