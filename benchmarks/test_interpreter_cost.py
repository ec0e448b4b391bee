"""What one small program costs the torch interpreter, beside the same program written in torch.

The test suite only holds the ratio of the two (`tests/test_program_torch.py`,
`test_per_program_overhead_is_small`); the times themselves are here. Run with the
other benchmarks (`python3 -m pytest benchmarks -n 0 --benchmark-enable --benchmark-only`).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from runner.program import torch_interp
from runner.program.data import materialize
from runner.program.ir import Program, Settings
from runner.program.syntax import parse

SOURCE = """\
w = param(16, 16)
x = input(16, 16)
h = relu(x @ w)
l = mean(tanh(h) * h + 1.0)
backward(l)
observe(w)
"""


def program() -> Program:
    return materialize(parse(SOURCE, where="benchmark"), 0, Settings())


def by_hand() -> Any:
    w = torch.randn(16, 16).requires_grad_()
    x = torch.randn(16, 16)
    h = torch.relu(x @ w)
    loss = (torch.tanh(h) * h + 1.0).mean()
    loss.backward()
    assert w.grad is not None
    return w.detach().numpy().tolist(), w.grad.numpy().tolist()


@pytest.fixture(autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


def test_interpreted_program(benchmark) -> None:
    prog = program()
    result = benchmark(torch_interp.run, prog)
    assert result["outcome"] == "ok"


def test_the_same_program_by_hand(benchmark) -> None:
    benchmark(by_hand)
