"""Agreement of the training family (`runner/contract/ops/training.py`): every operation run by
both interpreters on shared data, with shapes and edge values; values and gradients agree
within the default tolerance unless a wider one is explained next to its program.

An optimizer's programs give every hyperparameter whose defaults differ (eps, AdamW's weight
decay, RMSprop's momentum): the defaults themselves are catalogue cases
(`cases/adamw_defaults.toml`, `cases/optimizers_100_steps.toml`). The programs step an
optimizer 10 times: RMSprop divides by the root of a running mean of squared gradients, so
near a minimum (after ~50 steps here) each step is about `lr` whatever the gradient's size and
float32 rounding differences grow without bound while the loss still agrees; 10 steps stay
before that regime.

A schedule's `sched_step` lags one step behind torch when written where torch's
`sched.step()` is (after the optimizer's step; `cases/cosine_schedule.toml`): the schedules
agree when burn's step is written first, as burn's own training loop does, which
`test_the_schedule_agrees_in_burns_order` checks."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from agreement import Agreement, _errors, check, record, run_both

from runner import _probe
from runner.model.case import Tolerance
from runner.oracles import compare_observations
from runner.program import data, syntax, torch_interp
from runner.program.ir import Settings

_REGRESSION = "lin = Linear(8, 4)\nx = input(16, 8)\ny = input(16, 4)\n"
_LOOP = (
    "for i in range(10):\n    loss = mean((lin(x) - y) ** 2)\n    zero_grad(opt)\n    backward(loss)\n    step(opt)\n"
    "observe(lin.weight)\nobserve(lin.bias)\nobserve(loss)"
)
_LARGE = 'p = param(3, 4)\nx = input(3, 4, init="positive")\n'
_LARGE_LOOP = (
    "for i in range(10):\n    loss = sum((p * x * 100.0) ** 2)\n    zero_grad(opt)\n    backward(loss)\n"
    "    step(opt)\nobserve(p)\nobserve(loss)"
)
_ZERO = 'p = param(2, 3, init="zeros")\nq = param(2, 3)\n'
_ZERO_LOOP = (
    "for i in range(10):\n    loss = sum(q * q) + sum(p * 0.0)\n    zero_grad(opt)\n    backward(loss)\n"
    "    step(opt)\nobserve(p)\nobserve(q)"
)
_TARGET = "online = Linear(4, 3)\ntarget = Linear(4, 3)\nx = input(8, 4)\ny = input(8, 3)\n"
_TARGET_LOOP = (
    "for i in range(5):\n    loss = mean((online(x) - y) ** 2) + mean(detach(target(x)) ** 2)\n"
    "    zero_grad(opt)\n    backward(loss)\n    step(opt)\n"
)
# A param whose gradient is 1: each step lowers it by exactly the step's learning rate, so it
# records the sum of the schedule's learning rates (`lr`: the optimizer's).
_UNIT = 'p = param(1, init="zeros")\n'


def _schedule(scheduler: str, steps: int, *, burn_order: bool, lr: float = 0.1) -> str:
    """`scheduler`: the schedule's expression, after the statements that make what it composes
    (`warm = linear_lr(opt)`, one per line, then `sequential_lr(opt, warm, ...)`)."""
    *made, expr = scheduler.split("\n")
    body = "    step(opt)\n    sched_step(sched)\n" if not burn_order else "    sched_step(sched)\n    step(opt)\n"
    return (
        f"{_UNIT}opt = sgd(lr={lr})\n{''.join(m + chr(10) for m in made)}sched = {expr}\nfor i in range({steps}):\n"
        f"    zero_grad(opt)\n    backward(sum(p))\n{body}observe(p)"
    )


# A linear warm-up over 5 steps from a tenth of the learning rate, then a cosine decay over 25.
WARM_COSINE = (
    "warm = linear_lr(opt, start_factor=0.1, total_iters=5)\ncos = cosine_lr(opt, 25)\n"
    "sequential_lr(opt, warm, cos, milestones=[5])"
)


PROGRAMS: dict[str, list[str]] = {
    "train": ["conv = Conv2d(1, 2, 3)\nx = input(1, 1, 4, 4)\neval()\ntrain()\ny = conv(x)\nobserve(y)"],
    "eval": ["conv = Conv2d(1, 2, 3)\nx = input(1, 1, 4, 4)\neval()\ny = conv(x)\nobserve(y, values=True)"],
    "adamw": [
        _REGRESSION + "opt = adamw(lr=0.01, eps=1e-8, weight_decay=0.01)\n" + _LOOP,
        _REGRESSION + "opt = adamw(lr=0.05, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.0, amsgrad=True)\n" + _LOOP,
        _LARGE + "opt = adamw(lr=0.1, eps=1e-8, weight_decay=0.5)\n" + _LARGE_LOOP,
        _ZERO + "opt = adamw(lr=0.1, eps=1e-8, weight_decay=0.1)\n" + _ZERO_LOOP,
        _REGRESSION + "opt = adamw(lr=0.01, eps=1e-8, weight_decay=0.01, clip_grad_value=0.05)\n" + _LOOP,
    ],
    "rmsprop": [
        _REGRESSION + "opt = rmsprop(lr=0.01, eps=1e-8, momentum=0.0)\n" + _LOOP,
        _REGRESSION
        + "opt = rmsprop(lr=0.01, alpha=0.9, eps=1e-8, weight_decay=0.01, momentum=0.5, centered=True)\n"
        + _LOOP,
        _LARGE + "opt = rmsprop(lr=0.01, eps=1e-8, momentum=0.9)\n" + _LARGE_LOOP,
        _ZERO + "opt = rmsprop(lr=0.01, eps=1e-8, momentum=0.0, weight_decay=0.1)\n" + _ZERO_LOOP,
        # One param: torch's one global norm and burn's per-param norm are the same norm.
        _LARGE + "opt = rmsprop(lr=0.01, eps=1e-8, momentum=0.0, clip_grad_norm=1.0)\n" + _LARGE_LOOP,
    ],
    # One program text cannot hold a schedule's agreement (burn lags one step where torch's
    # `sched.step()` is written): these hold what one text can, the first step's learning rate
    # (LinearLR's from a start factor of 1: torch applies the factor when it builds the schedule,
    # burn at its first step); `test_the_schedule_agrees_in_burns_order` holds the schedules.
    "step_lr": [_schedule("step_lr(opt, 3, gamma=0.5)", 1, burn_order=False)],
    "cosine_lr": [_schedule("cosine_lr(opt, 10, eta_min=0.01)", 1, burn_order=False)],
    "linear_lr": [_schedule("linear_lr(opt, start_factor=1.0, end_factor=0.5, total_iters=4)", 1, burn_order=False)],
    # The first step's learning rate (the warm-up's start factor 1: the optimizer's lr on both sides).
    "sequential_lr": [
        _schedule(
            "warm = linear_lr(opt, start_factor=1.0, end_factor=0.5, total_iters=2)\ncos = cosine_lr(opt, 10)\n"
            "sequential_lr(opt, warm, cos, milestones=[2])",
            1,
            burn_order=False,
        )
    ],
    "sched_step": [_schedule("step_lr(opt, 100)", 3, burn_order=False)],
    "copy_module": [
        _TARGET
        + "copy_module(target, online)\nopt = sgd(lr=0.1)\n"
        + _TARGET_LOOP
        + "observe(online.weight)\nobserve(target.weight)\nobserve(target.bias)\nobserve(loss)",
        "a = Conv2d(2, 3, 3, padding=1)\nb = Conv2d(2, 3, 3, padding=1)\nx = input(1, 2, 5, 5)\ncopy_module(b, a)\n"
        "y = b(x)\nobserve(y)\nobserve(b.weight)\nobserve(b.bias)",
    ],
    "soft_update": [
        _TARGET
        + "module_no_grad(target)\nopt = sgd(lr=0.1)\n"
        + _TARGET_LOOP
        + "    soft_update(target, online, 0.1)\nobserve(online.weight)\nobserve(target.weight)\nobserve(loss)",
        _TARGET + "soft_update(target, online, 0.0)\nobserve(target.weight)\nobserve(target.bias)",
        _TARGET + "soft_update(target, online, 1.0)\nobserve(target.weight)\nobserve(target.bias)",
        "a = Conv2d(2, 3, 3)\nb = Conv2d(2, 3, 3)\nx = input(1, 2, 4, 4)\nsoft_update(b, a, 0.25)\ny = b(x)\n"
        "observe(y)\nobserve(b.weight)",
    ],
    "module_no_grad": [
        _TARGET + "module_no_grad(target)\nopt = sgd(lr=0.1)\nfor i in range(3):\n"
        "    loss = mean((online(x) - y) ** 2) + mean(target(x) ** 2)\n    zero_grad(opt)\n    backward(loss)\n"
        "    step(opt)\nobserve(online.weight)\nobserve(target.weight)\nobserve(loss)",
    ],
}
"""op -> programs that use it (each observes the op's result, and a param when it has a gradient)."""


@pytest.mark.parametrize(("op", "index"), [(op, i) for op, sources in PROGRAMS.items() for i in range(len(sources))])
def test_the_operation_agrees_on_shared_data(op: str, index: int) -> None:
    check(op, PROGRAMS[op][index])


def run_each(torch_source: str, burn_source: str, seed: int = 3) -> Agreement:
    """torch runs one program, burn another with the same declarations (so the same initial data):
    their values agree within the default tolerance; the largest differences."""
    runs = []
    for framework, source in (("torch", torch_source), ("burn", burn_source)):
        program = data.materialize(syntax.parse(source, where="test"), seed=seed)
        if framework == "torch":
            result = torch_interp.run(program)
        else:
            result = _probe.run_program(json.dumps(program.model_dump(mode="json")))
        runs.append(record(result, framework))
    torch_run, burn_run = runs
    assert torch_run.outcome == burn_run.outcome == "ok", (torch_run.failure, burn_run.failure)
    values = compare_observations(torch_run, burn_run, "values", None, Tolerance())
    assert values.same is True, values.observed
    found = Agreement()
    by_label = {o.label: o for o in burn_run.observations}
    for o in torch_run.observations:
        found.max_abs, found.max_rel = (
            max(a, b) for a, b in zip((found.max_abs, found.max_rel), _errors(o.values, by_label[o.label].values))
        )
    return found


SCHEDULES = [
    "step_lr(opt, 3)",
    "step_lr(opt, 2, gamma=0.5)",
    "cosine_lr(opt, 10)",
    "cosine_lr(opt, 10, eta_min=0.01)",
    "cosine_lr(opt, 1)",
    "linear_lr(opt)",
    "linear_lr(opt, start_factor=0.1, end_factor=0.9, total_iters=3)",
    "linear_lr(opt, start_factor=1.0, end_factor=0.0, total_iters=4)",
    WARM_COSINE,
    # LinearLR's omitted factors (torch's, as a port writes them), then a step schedule
    "warm = linear_lr(opt)\ndecay = step_lr(opt, 3, gamma=0.5)\nsequential_lr(opt, warm, decay, milestones=[4])",
    # three schedules, the second's milestone before its warm-up ends; one schedule alone
    "a = linear_lr(opt, start_factor=0.5, total_iters=4)\nb = cosine_lr(opt, 6, eta_min=0.01)\n"
    "c = step_lr(opt, 2)\nsequential_lr(opt, a, b, c, milestones=[2, 9])",
    "only = cosine_lr(opt, 4)\nsequential_lr(opt, only, milestones=[])",
]


@pytest.mark.parametrize("scheduler", SCHEDULES)
@pytest.mark.parametrize("steps", [1, 4, 25])
def test_the_schedule_agrees_in_burns_order(scheduler: str, steps: int) -> None:
    """torch's `opt.step(); sched.step()` and burn's `lr = sched.step(); optim.step(lr, ..)`: the same
    learning rates, step after step (25 steps: past `t_max`, where the cosine turns back up on both
    sides, and past `total_iters`)."""
    run_each(
        _schedule(scheduler, steps, burn_order=False),
        _schedule(scheduler, steps, burn_order=True),
    )


@pytest.mark.parametrize(
    "scheduler", ["cosine_lr(opt, 10)", "step_lr(opt, 2, gamma=0.5)", "linear_lr(opt)", WARM_COSINE]
)
def test_a_schedule_stepped_where_torch_steps_it_lags_one_step_in_burn(scheduler: str) -> None:
    """The same program on both sides: burn's first `sched.step()` gives the initial learning rate,
    so each optimizer step after it uses the previous step's learning rate; the param (the sum of
    the learning rates) differs by the schedule's first value minus its last."""
    torch_run, burn_run = run_both(_schedule(scheduler, 4, burn_order=False))
    assert torch_run.outcome == burn_run.outcome == "ok"
    values = compare_observations(torch_run, burn_run, "values", "p", Tolerance())
    assert values.same is False, values.observed


def _rates(source: str, steps: int) -> tuple[list[float], list[float]]:
    """The learning rate of every step on each side (torch, burn): how far the unit param moved,
    observed after every step (`every_checkpoint`, a checkpoint at every iteration)."""
    source = source.replace("    step(opt)\n", '    step(opt)\n    observe(p, "p", every_checkpoint=True)\n')
    settings = Settings(checkpoints=list(range(1, steps + 1)))
    program = data.materialize(syntax.parse(source, where="test"), seed=3, settings=settings)
    results = [torch_interp.run(program), _probe.run_program(program.to_json())]
    rates = []
    for result in results:
        assert result["outcome"] == "ok", result["failure"]
        seen = [o for o in result["observations"] if o["label"] == "p" and o["iteration"] is not None]
        assert [o["iteration"] for o in seen] == list(range(1, steps + 1))
        values = [0.0] + [o["values"][0] for o in seen]
        rates.append([before - after for before, after in itertools.pairwise(values)])
    return rates[0], rates[1]


def _warm_cosine(step: int) -> float:
    """torch's documented SequentialLR of LinearLR(start_factor=0.1, total_iters=5) and
    CosineAnnealingLR(T_max=25), milestone 5, lr 0.1: the learning rate of optimizer step `step`."""
    epoch = step - 1
    if epoch < 5:
        return 0.1 * (0.1 + 0.9 * epoch / 5)
    return 0.05 * (1 + math.cos(math.pi * (epoch - 5) / 25))


@pytest.mark.filterwarnings(
    "ignore:Detected call of `lr_scheduler.step\\(\\)` before:UserWarning"
)  # torch runs burn's order too
def test_a_warm_up_then_cosine_gives_torchs_rates_in_burns_order() -> None:
    """burn's milestone counts completed `step()` calls and its cosine starts from its own first
    step; stepped before the optimizer (burn's order) that is torch's SequentialLR, step by step:
    the warm-up's 5 rates, the jump to the full rate at step 6, the decay."""
    torch_rates, _ = _rates(_schedule(WARM_COSINE, 30, burn_order=False), 30)
    _, burn_rates = _rates(_schedule(WARM_COSINE, 30, burn_order=True), 30)
    expected = [_warm_cosine(k) for k in range(1, 31)]
    assert torch_rates == pytest.approx(expected, abs=2e-6)
    assert burn_rates == pytest.approx(expected, abs=2e-6)
    assert burn_rates[5] == pytest.approx(0.1, abs=2e-6) and burn_rates[4] == pytest.approx(0.082, abs=2e-6)


def test_a_warm_up_then_cosine_stepped_where_torch_steps_it_starts_at_the_full_rate_in_burn() -> None:
    """Written where torch's `sched.step()` is: burn's first optimizer step takes the optimizer's
    own learning rate (10 times the warm-up's first), every later step the rate torch used one
    step before, so the full rate comes at step 7, not 6."""
    torch_rates, burn_rates = _rates(_schedule(WARM_COSINE, 30, burn_order=False), 30)
    assert burn_rates[0] == pytest.approx(0.1, abs=2e-6) and torch_rates[0] == pytest.approx(0.01, abs=2e-6)
    assert burn_rates[1:] == pytest.approx(torch_rates[:-1], abs=2e-6)
    assert burn_rates[5] == pytest.approx(0.082, abs=2e-6) and burn_rates[6] == pytest.approx(0.1, abs=2e-6)


def test_burn_refuses_a_milestone_of_0_and_torch_starts_with_the_second_schedule() -> None:
    source = _schedule(
        "a = linear_lr(opt)\nb = cosine_lr(opt, 4)\nsequential_lr(opt, a, b, milestones=[0])", 2, burn_order=False
    )
    torch_run, burn_run = run_both(source)
    assert torch_run.outcome == "ok"
    assert burn_run.outcome == "error" and burn_run.failure is not None
    assert burn_run.failure.op == "sequential_lr"
    assert "Milestones must be greater than zero and strictly increasing" in burn_run.failure.message


def test_both_refuse_a_milestone_count_that_is_not_one_less_than_the_schedules() -> None:
    source = _schedule(
        "a = linear_lr(opt)\nb = cosine_lr(opt, 4)\nsequential_lr(opt, a, b, milestones=[1, 2])", 2, burn_order=False
    )
    torch_run, burn_run = run_both(source)
    for run in (torch_run, burn_run):
        assert run.outcome == "error" and run.failure is not None and run.failure.op == "sequential_lr"
    assert burn_run.failure is not None and "one less than the number of schedulers" in burn_run.failure.message


def test_burn_refuses_a_cosine_schedule_from_a_learning_rate_above_1() -> None:
    torch_run, burn_run = run_both(_schedule("cosine_lr(opt, 10)", 2, burn_order=False, lr=2.0))
    assert torch_run.outcome == "ok"
    assert burn_run.outcome == "error" and burn_run.failure is not None
    assert burn_run.failure.op == "cosine_lr"
    assert "Initial learning rate must be greater than 0 and at most 1" in burn_run.failure.message


def test_clipping_by_norm_is_per_param_in_burn_and_global_in_torch() -> None:
    """Two params: torch scales both by one factor from their joint norm; burn clips each by its own."""
    source = (
        'a = param(4, init="ones")\nb = param(4, init="ones")\nopt = sgd(lr=1.0, clip_grad_norm=1.0)\n'
        "zero_grad(opt)\nbackward(sum(a * 3.0) + sum(b * 4.0))\nstep(opt)\nobserve(a)\nobserve(b)"
    )
    torch_run, burn_run = run_both(source)
    torch_a = torch_run.observations[0].values
    burn_a = burn_run.observations[0].values
    assert torch_a is not None and burn_a is not None
    # torch: the joint norm is sqrt(4 * 9 + 4 * 16) = 10, so a moves by 3 / 10 per element;
    # burn: a's own norm is 6, so a moves by 3 / 6.
    assert torch_a[0] == pytest.approx(1 - 0.3, abs=1e-6)
    assert burn_a[0] == pytest.approx(1 - 0.5, abs=1e-6)


def test_an_omitted_sgd_dampening_is_burns_own() -> None:
    """`sgd(lr=, momentum=0.9)`: burn's MomentumConfig dampens by 0.1, torch not at all; with
    `dampening=0.0` given they agree (issue 17's defect: it used to reach burn as torch's 0)."""
    loop = "for i in range(3):\n    zero_grad(opt)\n    backward(sum(a * a))\n    step(opt)\nobserve(a)"
    omitted = run_both(f"a = param(2, 3)\nopt = sgd(lr=0.1, momentum=0.9)\n{loop}")
    given = run_both(f"a = param(2, 3)\nopt = sgd(lr=0.1, momentum=0.9, dampening=0.0)\n{loop}")
    assert compare_observations(*omitted, "values", None, Tolerance()).same is False
    assert compare_observations(*given, "values", None, Tolerance()).same is True


def test_soft_updating_a_target_that_feeds_the_loss_panics_in_burn() -> None:
    """The target's params become tracked non-leaves (`Param::map` with the online's tensor, which
    requires grad); their graph reaches back through the previous update, which the previous
    backward consumed: the third backward panics. torch updates in place under no_grad."""
    source = (
        _TARGET + "module_no_grad(target)\nopt = sgd(lr=0.1)\nfor i in range(4):\n"
        "    loss = mean((online(x) - y) ** 2) + mean(target(x) ** 2)\n    zero_grad(opt)\n    backward(loss)\n"
        "    step(opt)\n    soft_update(target, online, 0.1)\nobserve(target.weight)"
    )
    torch_run, burn_run = run_both(source)
    assert torch_run.outcome == "ok"
    assert burn_run.outcome == "panic" and burn_run.failure is not None
    assert burn_run.failure.op == "backward"
    assert "graph tape has already been consumed" in burn_run.failure.message


def test_a_soft_updated_target_is_tracked_in_burn_only() -> None:
    torch_run, burn_run = run_both(PROGRAMS["soft_update"][0])
    flags = {
        run.framework: next(o for o in run.observations if o.label == "target.weight").flags
        for run in (torch_run, burn_run)
    }
    assert flags["torch"].tracked is False
    assert flags["burn"].tracked is True
