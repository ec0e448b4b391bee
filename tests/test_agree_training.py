"""Agreement of the training family (`runner/contract/ops/training.py`): every operation run by
both interpreters on shared data, with shapes and edge values; values and gradients agree
within the default tolerance unless a wider one is explained next to its program."""

from __future__ import annotations

import pytest
from agreement import check

PROGRAMS: dict[str, list[str]] = {
    "train": ["conv = Conv2d(1, 2, 3)\nx = input(1, 1, 4, 4)\neval()\ntrain()\ny = conv(x)\nobserve(y)"],
    "eval": ["conv = Conv2d(1, 2, 3)\nx = input(1, 1, 4, 4)\neval()\ny = conv(x)\nobserve(y, values=True)"],
}
"""op -> programs that use it (each observes the op's result, and a param when it has a gradient)."""


@pytest.mark.parametrize(("op", "index"), [(op, i) for op, sources in PROGRAMS.items() for i in range(len(sources))])
def test_the_operation_agrees_on_shared_data(op: str, index: int) -> None:
    check(op, PROGRAMS[op][index])
