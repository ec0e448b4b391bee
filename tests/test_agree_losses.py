"""Agreement of the losses family (`runner/contract/ops/losses.py`): every operation run by
both interpreters on shared data, with shapes and edge values; values and gradients agree
within the default tolerance unless a wider one is explained next to its program."""

from __future__ import annotations

import pytest
from agreement import check

PROGRAMS: dict[str, list[str]] = {
    "cross_entropy": [
        'lin = Linear(6, 4)\nh = input(5, 6)\nt = input(5, dtype="int", high=4)\nloss = cross_entropy(lin(h), t)\nbackward(loss)\nobserve(loss)\nobserve(lin.weight)',
        'lin = Linear(6, 4)\nh = input(5, 6)\nt = input(5, dtype="int", high=4)\nloss = cross_entropy(lin(h), t, label_smoothing=0.2)\nbackward(loss)\nobserve(loss)\nobserve(lin.weight)',
    ],
}
"""op -> programs that use it (each observes the op's result, and a param when it has a gradient)."""


@pytest.mark.parametrize(("op", "index"), [(op, i) for op, sources in PROGRAMS.items() for i in range(len(sources))])
def test_the_operation_agrees_on_shared_data(op: str, index: int) -> None:
    check(op, PROGRAMS[op][index])
