"""Agreement of the losses family (`runner/contract/ops/losses.py`): every operation run by
both interpreters on shared data, with shapes and edge values; values and gradients agree
within the default tolerance unless a wider one is explained next to its program.

The differences the family has are catalogue cases, measured there and pinned here by focused
tests: `cases/bce_soft_targets.toml`, `cases/smooth_l1_beta_zero.toml`; where a suspicion
was wrong, `cases/cross_entropy_label_smoothing.toml`."""

from __future__ import annotations

import pytest
from agreement import check, run_both

# A Linear's output against targets: the gradient reaches a param through the loss.
_LIN = 'lin = Linear(6, 4)\nh = input(5, 6)\nt = input(5, 4)\nc = input(5, dtype="int", high=4)\n'
# Residuals on both sides of 1 (Huber's and smooth L1's default threshold), zeros, large ones.
_EDGE_INPUT = "[0.0, 0.5, -0.5, 2.0, -3.0, 100.0, -100.0, 1e-3, 0.25, -0.25, 7.0, 0.0]"

PROGRAMS: dict[str, list[str]] = {
    "cross_entropy": [
        'lin = Linear(6, 4)\nh = input(5, 6)\nt = input(5, dtype="int", high=4)\nloss = cross_entropy(lin(h), t)\nbackward(loss)\nobserve(loss)\nobserve(lin.weight)',
        'lin = Linear(6, 4)\nh = input(5, 6)\nt = input(5, dtype="int", high=4)\nloss = cross_entropy(lin(h), t, label_smoothing=0.2)\nbackward(loss)\nobserve(loss)\nobserve(lin.weight)',
    ],
    "mse_loss": [
        f"{_LIN}loss = mse_loss(lin(h), t)\nbackward(loss)\nobserve(loss)\nobserve(lin.weight)\nobserve(lin.bias)",
        f'{_LIN}s = mse_loss(lin(h), t, reduction="sum")\nn = mse_loss(lin(h), t, reduction="none")\n'
        "backward(s + sum(n * 2.0))\nobserve(s)\nobserve(n)\nobserve(lin.weight)",
        # input equal to the target where the values are 0, large residuals; rank 3
        f'x = param(3, 4, values={_EDGE_INPUT})\nz = input(3, 4, init="zeros")\nw = param(2, 2, 3)\nv = input(2, 2, 3)\n'
        "a = mse_loss(x, z)\nb = mse_loss(w, v)\nbackward(a + b)\nobserve(a)\nobserve(b)\nobserve(x)\nobserve(w)",
    ],
    "huber_loss": [
        f"{_LIN}loss = huber_loss(lin(h) * 3.0, t)\nbackward(loss)\nobserve(loss)\nobserve(lin.weight)",
        # delta given; 'sum' and 'none'; residuals on both sides of delta, zeros, large
        f'x = param(3, 4, values={_EDGE_INPUT})\nz = input(3, 4, init="zeros")\n'
        'a = huber_loss(x, z, delta=0.5)\nb = huber_loss(x, z, reduction="sum", delta=2.0)\n'
        'n = huber_loss(x, z, reduction="none")\nbackward(a + b + sum(n))\n'
        "observe(a)\nobserve(b)\nobserve(n)\nobserve(x)",
    ],
    "smooth_l1_loss": [
        # beta omitted: torch's 1.0 and SmoothL1LossConfig's 1.0
        f"{_LIN}loss = smooth_l1_loss(lin(h) * 3.0, t)\nbackward(loss)\nobserve(loss)\nobserve(lin.weight)",
        f'x = param(3, 4, values={_EDGE_INPUT})\nz = input(3, 4, init="zeros")\n'
        'a = smooth_l1_loss(x, z, beta=0.3)\nb = smooth_l1_loss(x, z, reduction="sum", beta=4.0)\n'
        'n = smooth_l1_loss(x, z, reduction="none")\nbackward(a + b + sum(n))\n'
        "observe(a)\nobserve(b)\nobserve(n)\nobserve(x)",
    ],
    "binary_cross_entropy_with_logits": [
        # hard targets (0 and 1): the port's `target.int()` keeps them
        'lin = Linear(6, 4)\nh = input(5, 6)\nm = input(5, 4, dtype="bool")\nt = input(5, 4, init="zeros")\n'
        "y = where(m, t + 1.0, t)\nloss = binary_cross_entropy_with_logits(lin(h), y)\nbackward(loss)\n"
        "observe(loss)\nobserve(lin.weight)",
        # large logits of both signs, with targets that agree and disagree; zero logits; rank 1
        f"x = param(12, values={_EDGE_INPUT})\n"
        "t = input(12, values=[1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0])\n"
        "loss = binary_cross_entropy_with_logits(x * 0.3, t)\nbackward(loss)\nobserve(loss)\nobserve(x)",
    ],
    "nll_loss": [
        f"{_LIN}loss = nll_loss(lin(h), c)\nbackward(loss)\nobserve(loss)\nobserve(lin.weight)",
        f'{_LIN}s = nll_loss(lin(h) * 5.0, c, reduction="sum")\nn = nll_loss(lin(h), c, reduction="none")\n'
        "backward(s + sum(n * n))\nobserve(s)\nobserve(n)\nobserve(lin.weight)",
    ],
}
"""op -> programs that use it (each observes the op's result, and a param when it has a gradient)."""


@pytest.mark.parametrize(("op", "index"), [(op, i) for op, sources in PROGRAMS.items() for i in range(len(sources))])
def test_the_operation_agrees_on_shared_data(op: str, index: int) -> None:
    check(op, PROGRAMS[op][index])


# ---- the documented differences (catalogue cases), pinned ---------------------------------------


def test_soft_bce_targets_become_integers_in_the_burn_port() -> None:
    """burn's BinaryCrossEntropyLoss takes Int targets: 0.3 and 0.7 become 0, and the loss
    differs; the hard targets (0 and 1) give the same loss."""
    soft = "x = param(4)\nt = input(4, values=[0.3, 0.7, 1.0, 0.0])\ny = binary_cross_entropy_with_logits(x, t)\nobserve(y)"
    torch_run, burn_run = run_both(soft)
    assert (torch_run.outcome, burn_run.outcome) == ("ok", "ok")
    (a,), (b,) = torch_run.observations[0].values or [], burn_run.observations[0].values or []
    assert abs(a - b) > 0.1
    hard = soft.replace("0.3, 0.7", "0.0, 1.0")
    torch_run, burn_run = run_both(hard)
    (a,), (b,) = torch_run.observations[0].values or [], burn_run.observations[0].values or []
    assert abs(a - b) <= 1e-6 * max(1.0, abs(a))


def test_smooth_l1_with_beta_0_is_l1_in_torch_and_panics_in_burn() -> None:
    torch_run, burn_run = run_both(
        "x = param(2, 3)\nt = input(2, 3)\ny = smooth_l1_loss(x, t, beta=0.0)\nobserve(y)\nobserve(x)"
    )
    assert torch_run.outcome == "ok"
    assert burn_run.outcome == "panic" and burn_run.failure is not None
    assert "The parameter beta must be positive." in (burn_run.failure.message or "")


@pytest.mark.parametrize("reduction", ["sum", "none"])
def test_a_reduction_burns_module_lacks_is_unsupported(reduction: str) -> None:
    source = f'x = param(4)\nt = input(4, init="ones")\ny = binary_cross_entropy_with_logits(x, t, reduction="{reduction}")\nobserve(y)'
    torch_run, burn_run = run_both(source)
    assert torch_run.outcome == "ok"
    assert burn_run.outcome == "unsupported" and burn_run.failure is not None
    assert "returns the mean" in (burn_run.failure.message or "")


@pytest.mark.filterwarnings("ignore:Using a target size:UserWarning")
def test_an_input_and_target_of_different_ranks_are_unsupported_in_burn() -> None:
    torch_run, burn_run = run_both("x = param(3, 4)\nt = input(4)\ny = mse_loss(x, t)\nobserve(y)")
    assert torch_run.outcome == "ok"  # torch broadcasts (with a warning)
    assert burn_run.outcome == "unsupported" and burn_run.failure is not None
    assert "one rank" in (burn_run.failure.message or "")
