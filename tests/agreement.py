"""Running one program on both interpreters from the same data, and what their agreement is:
the helper of every agreement test (`tests/test_program_both.py` for the first operations,
`tests/test_agree_FAMILY.py` for each family of the table)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

from runner import _probe
from runner.contract.ops import OPS
from runner.model.case import Tolerance
from runner.model.results import RawRun, from_data
from runner.oracles import compare_observations
from runner.program import data, syntax, torch_interp


def record(result: dict[str, Any], framework: str) -> RawRun:
    return from_data(RawRun, {"case": "ops", "framework": framework, "mode": "m", **result})


def run_both(source: str, seed: int = 3) -> tuple[RawRun, RawRun]:
    """The program's run on torch and on burn, from the same initial data."""
    program = data.materialize(syntax.parse(source, where="test"), seed=seed)
    torch_result = torch_interp.run(program)
    burn_result = _probe.run_program(json.dumps(program.model_dump(mode="json")))
    return record(torch_result, "torch"), record(burn_result, "burn")


@dataclass
class Agreement:
    """The largest differences between the two runs' observed values and the params' gradients."""

    max_abs: float = 0.0
    max_rel: float = 0.0
    grad_abs: float = 0.0
    grad_rel: float = 0.0


def _errors(a: list[float] | None, b: list[float] | None) -> tuple[float, float]:
    if not a or not b or len(a) != len(b):
        return 0.0, 0.0
    abs_err = max(abs(x - y) for x, y in zip(a, b))
    # relative to the larger magnitude, over the elements of magnitude 1e-3 or more (below that, a
    # relative figure says nothing: the absolute one is what the tolerance holds)
    rel_err = max((abs(x - y) / max(abs(x), abs(y)) for x, y in zip(a, b) if max(abs(x), abs(y)) >= 1e-3), default=0.0)
    return abs_err, rel_err


def check(op: str, source: str, tolerance: Tolerance | None = None, seed: int = 3) -> Agreement:
    """Both frameworks run the program: the values agree within `tolerance` (the default: burn's
    balanced tolerance, relative 0.5 %, absolute 1e-5), and, for a differentiable operation, the
    params' gradients do too. Returns the largest differences seen (for the issue note)."""
    tolerance = tolerance or Tolerance()
    torch_run, burn_run = run_both(source, seed)
    for framework, run in (("torch", torch_run), ("burn", burn_run)):
        assert run.outcome == "ok", (framework, run.failure)
    values = compare_observations(torch_run, burn_run, "values", None, tolerance)
    assert values.same is True, values.observed
    found = Agreement()
    by_label = {o.label: o for o in burn_run.observations}
    for o in torch_run.observations:
        other = by_label.get(o.label)
        if other is None:
            continue
        a, r = _errors(o.values, other.values)
        found.max_abs, found.max_rel = max(found.max_abs, a), max(found.max_rel, r)
    if OPS[op].differentiable:
        params = {o.label for o in torch_run.observations if o.flags.raw.get("is_leaf") and o.flags.requires_grad}
        assert params, "a differentiable op's program must observe a param"
        for label in sorted(params):
            grads = compare_observations(torch_run, burn_run, "grads", label, tolerance)
            assert grads.same is True, (label, grads.observed)
            t = next(o for o in torch_run.observations if o.label == label)
            a, r = _errors(t.grad, by_label[label].grad)
            found.grad_abs, found.grad_rel = max(found.grad_abs, a), max(found.grad_rel, r)
    assert all(math.isfinite(x) for x in (found.max_abs, found.max_rel, found.grad_abs, found.grad_rel))
    _log(op, found)
    return found


def _log(op: str, found: Agreement) -> None:
    """With AGREEMENT_LOG set to a file, each check appends its op and largest differences there
    as a JSON line: `scripts/agreement-errors` tabulates them per family of the table."""
    path = os.environ.get("AGREEMENT_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"op": op, **found.__dict__}) + "\n")
