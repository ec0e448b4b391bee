"""Agreement of the layers family (`runner/contract/ops/layers.py`): every operation run by
both interpreters on shared data, with shapes and edge values; values and gradients agree
within the default tolerance unless a wider one is explained next to its program."""

from __future__ import annotations

import pytest
from agreement import check

PROGRAMS: dict[str, list[str]] = {
    "conv2d": [
        "conv = Conv2d(2, 4, 3, padding=1)\nx = input(2, 2, 5, 5)\ny = conv(x)\nbackward(sum(y * y))\nobserve(y)\nobserve(conv.weight)\nobserve(conv.bias)",
        "conv = Conv2d(4, 4, 3, stride=2, dilation=2, groups=2, bias=False)\nx = input(1, 4, 9, 9)\ny = conv(x)\nbackward(sum(y * y))\nobserve(y)\nobserve(conv.weight)",
    ],
    "gelu": [
        "a = param(3, 4)\ny = gelu(a * 3.0)\nbackward(sum(y))\nobserve(y)\nobserve(a)",
        'a = param(3, 4)\ny = gelu(a * 3.0, approximate="tanh")\nbackward(sum(y))\nobserve(y)\nobserve(a)',
    ],
}
"""op -> programs that use it (each observes the op's result, and a param when it has a gradient)."""


@pytest.mark.parametrize(("op", "index"), [(op, i) for op, sources in PROGRAMS.items() for i in range(len(sources))])
def test_the_operation_agrees_on_shared_data(op: str, index: int) -> None:
    check(op, PROGRAMS[op][index])
