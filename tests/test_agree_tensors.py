"""Agreement of the tensors family (`runner/contract/ops/tensors.py`): every operation run by
both interpreters on shared data, with shapes and edge values; values and gradients agree
within the default tolerance unless a wider one is explained next to its program."""

from __future__ import annotations

import pytest
from agreement import check

PROGRAMS: dict[str, list[str]] = {
    "cat": [
        "a = param(2, 3)\nb = param(2, 3)\nc = cat(a, b, dim=1)\nbackward(sum(c * c))\nobserve(c)\nobserve(a)\nobserve(b)",
        "a = param(2, 3)\nb = param(1, 3)\nd = param(3, 3)\nc = cat(a, b, d)\nbackward(sum(c * c))\nobserve(c)\nobserve(d)",
    ],
    "argmax": [
        "x = input(4, 5)\ni = argmax(x, 1)\nj = argmax(x, -1, keepdim=True)\nobserve(i)\nobserve(j)",
    ],
}
"""op -> programs that use it (each observes the op's result, and a param when it has a gradient)."""


@pytest.mark.parametrize(("op", "index"), [(op, i) for op, sources in PROGRAMS.items() for i in range(len(sources))])
def test_the_operation_agrees_on_shared_data(op: str, index: int) -> None:
    check(op, PROGRAMS[op][index])
