"""Every operation of the table, run by both interpreters on shared data: the
values (and the gradients, where the operation has them) agree within the
default tolerance, and an operation one framework lacks is `unsupported` there.

Real torch and the real probe, in this process (the runner's workers are
tested elsewhere); tensors are tiny, so the whole module takes seconds."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from runner import _probe
from runner.contract.ops import OPS
from runner.model.case import Tolerance
from runner.model.results import RawRun, from_data
from runner.oracles import compare_observations
from runner.program import data, syntax, torch_interp
from runner.program.ir import Settings

# op -> a program that uses it, observing its result (and, when it has a gradient, the params').
PROGRAMS: dict[str, str] = {
    "detach": "a = param(2, 3)\nb = detach(a * 2.0)\nobserve(b)",
    "require_grad": "x = input(2, 3)\ny = x * 2.0\nrequire_grad(y)\nloss = sum(y * y)\nbackward(loss)\nobserve(y)",
    "clone": "a = param(2, 3)\nb = clone(a)\nbackward(sum(b * b))\nobserve(b)\nobserve(a)",
    "add": "a = param(2, 3)\nb = param(2, 3)\nc = a + b\nbackward(sum(c * c))\nobserve(c)\nobserve(a)\nobserve(b)",
    "sub": "a = param(2, 3)\nb = param(2, 3)\nc = a - b\nbackward(sum(c * c))\nobserve(c)\nobserve(a)\nobserve(b)",
    "mul": "a = param(2, 3)\nb = param(2, 3)\nc = a * b\nbackward(sum(c))\nobserve(c)\nobserve(a)\nobserve(b)",
    "div": 'a = param(2, 3)\nb = param(2, 3, init="positive")\nc = a / b\nbackward(sum(c))\nobserve(c)\nobserve(a)\nobserve(b)',
    "neg": "a = param(2, 3)\nc = -a\nbackward(sum(c * c))\nobserve(c)\nobserve(a)",
    "matmul": "a = param(2, 3)\nb = param(3, 4)\nc = a @ b\nbackward(sum(c))\nobserve(c)\nobserve(a)\nobserve(b)",
    "transpose": "a = param(2, 3)\nc = transpose(a)\nbackward(sum(c * c))\nobserve(c)\nobserve(a)",
    "add_scalar": "a = param(2, 3)\nc = a + 1.5\nbackward(sum(c * c))\nobserve(c)\nobserve(a)",
    "mul_scalar": "a = param(2, 3)\nc = a * -0.5\nbackward(sum(c * c))\nobserve(c)\nobserve(a)",
    "powi": "a = param(2, 3)\nc = a ** 3\nbackward(sum(c))\nobserve(c)\nobserve(a)",
    "exp": "a = param(2, 3)\nc = exp(a)\nbackward(sum(c))\nobserve(c)\nobserve(a)",
    "log": 'a = param(2, 3, init="positive")\nc = log(a)\nbackward(sum(c))\nobserve(c)\nobserve(a)',
    "sqrt": 'a = param(2, 3, init="positive")\nc = sqrt(a)\nbackward(sum(c))\nobserve(c)\nobserve(a)',
    "abs": "a = param(2, 3)\nc = abs(a)\nbackward(sum(c))\nobserve(c)\nobserve(a)",
    "tanh": "a = param(2, 3)\nc = tanh(a)\nbackward(sum(c))\nobserve(c)\nobserve(a)",
    "relu": "a = param(2, 3)\nc = relu(a)\nbackward(sum(c))\nobserve(c)\nobserve(a)",
    "sigmoid": "a = param(2, 3)\nc = sigmoid(a)\nbackward(sum(c))\nobserve(c)\nobserve(a)",
    "sum": "a = param(2, 3)\nc = sum(a * a)\nbackward(c)\nobserve(c)\nobserve(a)",
    "mean": "a = param(2, 3)\nc = mean(a * a)\nbackward(c)\nobserve(c)\nobserve(a)",
    "sum_dim": "a = param(2, 3)\nc = sum_dim(a, 1)\nbackward(sum(c * c))\nobserve(c)\nobserve(a)",
    "reshape": "a = param(2, 3)\nc = reshape(a, [3, 2])\nbackward(sum(c * c))\nobserve(c)\nobserve(a)",
    "item": "a = param(2, 3)\nitem(sum(a))\nobserve(a)",
    "add_scalar_": "x = input(2, 3)\nb = clone(x)\nadd_scalar_(b, 2.0)\nobserve(b)",
    "linear": "lin = Linear(3, 2)\nx = input(4, 3)\ny = lin(x)\nbackward(sum(y * y))\nobserve(y)\nobserve(lin.weight)\nobserve(lin.bias)",
    "backward": "a = param(2, 3)\nbackward(sum(a * a))\nobserve(a)",
    "grad": "a = param(2, 3)\nbackward(sum(a * a))\ng = grad(a)\nobserve(g)",
    "sgd": (
        "a = param(2, 3)\nopt = sgd(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.01, nesterov=True)\n"
        "for i in range(5):\n    zero_grad(opt)\n    backward(sum(a * a))\n    step(opt)\nobserve(a)"
    ),
    "adam": (
        "a = param(2, 3)\nopt = adam(lr=0.05, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.01)\n"
        "for i in range(5):\n    zero_grad(opt)\n    backward(sum(a * a))\n    step(opt)\nobserve(a)"
    ),
    "step": "a = param(2, 3)\nopt = sgd(lr=0.5)\nbackward(sum(a * a))\nstep(opt)\nobserve(a, values=True)",
    "zero_grad": "a = param(2, 3)\nopt = sgd(lr=0.5)\nbackward(sum(a * a))\nzero_grad(opt)\nobserve(a)",
    "freeze": "a = param(2, 3)\nb = param(2, 3)\nopt = sgd(lr=0.5)\nfreeze(b)\nbackward(sum(a * b))\nstep(opt)\nobserve(a)\nobserve(b)",
    "observe": 'a = param(2, 3)\nobserve(a, "the label")',
    "repeat": "a = param(2, 3)\nfor i in range(3):\n    a2 = a * 2.0\nobserve(a2)",
    "without_autodiff": "a = param(2, 3)\nb = without_autodiff(a) * 2.0\nobserve(b)",
    "retain_grad": "a = param(2, 3)\nh = a * 2.0\nretain_grad(h)\nbackward(sum(h * h))\nobserve(h)",
    "no_grad": "a = param(2, 3)\nwith no_grad():\n    b = a * 2.0\nobserve(b)",
}

# For an operation one framework lacks: the same computation as the other framework writes it (the
# same declarations, so the same initial data), to check the values of the side that has it.
STAND_IN = {
    "without_autodiff": "a = param(2, 3)\nb = detach(a) * 2.0\nobserve(b)",
    "retain_grad": "a = param(2, 3)\nh = a * 2.0\nbackward(sum(h * h))\nobserve(h)",
    "no_grad": "a = param(2, 3)\nb = without_autodiff(a) * 2.0\nobserve(b)",
}


FAMILIES = ("layers", "tensors", "losses", "training")


def test_every_operation_has_a_program():
    """The first operations here; each family's in `tests/test_agree_FAMILY.py`."""
    covered = set(PROGRAMS)
    for family in FAMILIES:
        programs = importlib.import_module(f"test_agree_{family}").PROGRAMS
        assert not covered & set(programs), f"{family}: programs of another family's ops"
        assert {op for op in programs if OPS[op].category not in ("layer", "tensor", "loss", "training")} == set()
        covered |= set(programs)
    assert covered == set(OPS), sorted(set(OPS) ^ covered)
    one_sided = {op for op, spec in OPS.items() if not (spec.supports("torch") and spec.supports("burn"))}
    assert set(STAND_IN) == one_sided


def _record(result: dict[str, Any]) -> RawRun:
    return from_data(RawRun, {"case": "ops", "framework": "torch", "mode": "m", **result})


def _run_both(source: str) -> tuple[RawRun, RawRun]:
    program = data.materialize(syntax.parse(source, where="test"), seed=3)
    torch_result = torch_interp.run(program)
    burn_result = _probe.run_program(json.dumps(program.model_dump(mode="json")))
    return _record(torch_result), _record(burn_result)


@pytest.mark.parametrize("op", sorted(PROGRAMS))
def test_the_operation_agrees_on_shared_data(op: str):
    torch_run, burn_run = _run_both(PROGRAMS[op])
    spec = OPS[op]
    lacking = [fw for fw in ("torch", "burn") if not spec.supports(fw)]  # type: ignore[arg-type]
    for framework, run in (("torch", torch_run), ("burn", burn_run)):
        if framework in lacking:
            assert run.outcome == "unsupported" and run.failure is not None and run.failure.op == op, run
        else:
            assert run.outcome == "ok", (framework, run.failure)
    if lacking:
        # one side only: its values against the other framework's way of writing the same thing
        stand_in_torch, stand_in_burn = _run_both(STAND_IN[op])
        if lacking == ["torch"]:
            torch_run = stand_in_torch
        else:
            burn_run = stand_in_burn
        assert torch_run.outcome == burn_run.outcome == "ok", (torch_run.failure, burn_run.failure)
        values = compare_observations(torch_run, burn_run, "values", None, Tolerance())
        assert values.same is True, values.observed
        return
    values = compare_observations(torch_run, burn_run, "values", None, Tolerance())
    assert values.same is True, values.observed
    if spec.differentiable:
        # The params' gradients (leaves): what a non-leaf holds differs by design (torch keeps
        # none without retain_grad; burn's clone() of a param is the same node, holding its gradient).
        params = {o.label for o in torch_run.observations if o.flags.raw.get("is_leaf") and o.flags.requires_grad}
        assert params, "a differentiable op's program must observe a param"
        for label in sorted(params):
            grads = compare_observations(torch_run, burn_run, "grads", label, Tolerance())
            assert grads.same is True, (label, grads.observed)


def test_clone_of_a_param_holds_its_gradient_in_burn_only():
    """A finding, kept as a test: burn's clone() of a param is the same graph node."""
    torch_run, burn_run = _run_both(PROGRAMS["clone"])
    b_torch = next(o for o in torch_run.observations if o.label == "b")
    b_burn = next(o for o in burn_run.observations if o.label == "b")
    assert b_torch.grad is None and b_burn.grad is not None


EVERY_CHECKPOINT = """
lin = Linear(3, 2)
x = input(4, 3)
opt = sgd(lr=0.1)
for i in range(6):
    loss = mean(lin(x) ** 2)
    zero_grad(opt)
    backward(loss)
    observe(lin.weight, "w", every_checkpoint=True)
    observe(lin.bias, "b at the last step")
    observe(lin.bias, "b flags", values=False, every_checkpoint=True)
    step(opt)
"""


def test_an_observation_at_every_checkpoint_records_values_and_gradient_at_each_on_both_sides():
    """`every_checkpoint=True`: values and gradient at each of the timed loop's checkpoints (1, 3
    and 6 here), where a plain observation records them at the last iteration only; both sides
    record the same, and the oracle compares each checkpoint on its own (`w@3`)."""
    settings = Settings(checkpoints=[1, 3, 6])
    program = data.materialize(syntax.parse(EVERY_CHECKPOINT, where="test"), seed=3, settings=settings)
    runs = (_record(torch_interp.run(program)), _record(_probe.run_program(program.to_json())))
    for run in runs:
        assert run.outcome == "ok", run.failure
        by_label: dict[str, list[tuple[int | None, bool, bool]]] = {}
        for o in run.observations:
            by_label.setdefault(o.label, []).append((o.iteration, o.values is not None, o.grad is not None))
        assert by_label["w"] == [(1, True, True), (3, True, True), (6, True, True)]
        assert by_label["b at the last step"] == [(1, False, False), (3, False, False), (6, True, True)]
        assert by_label["b flags"] == [(1, False, False), (3, False, False), (6, False, False)]
    torch_run, burn_run = runs
    values = compare_observations(torch_run, burn_run, "values", "w", Tolerance())
    grads = compare_observations(torch_run, burn_run, "grads", "w", Tolerance())
    assert values.same is True and grads.same is True
    per_label = values.observed["per_label"]
    assert isinstance(per_label, dict) and set(per_label) == {"w@1", "w@3", "w@6"}
    # the weights move between checkpoints: each is compared with its own
    w = {o.iteration: o.values for o in torch_run.observations if o.label == "w"}
    assert w[1] != w[3] != w[6]
