"""Seeded initial tensors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runner.errors import BadInput
from runner.program.data import materialize
from runner.program.ir import Settings
from runner.program.syntax import parse, unparse

SOURCE = """\
a = param(64, 8)
b = input(16, 16, init="uniform")
c = input(1000, init="positive")
lin = Linear(25, 7)
d = input(2, 3, init="arange")
e = input(3, init="ones")
f = input(3, init="zeros")
g = input(2, 2, values=[[0.1, -2], [3, 1e-3]])
for i in range(4):
    h = relu(a)
"""


def data(source: str = SOURCE, seed: int = 0) -> dict[str, np.ndarray]:
    program = materialize(parse(source, where="t"), seed)
    return {t.name: np.array(t.data, dtype=np.float64).reshape(t.shape) for t in program.tensors}


def test_inits():
    d = data()
    assert abs(d["a"].mean()) < 0.2 and 0.8 < d["a"].std() < 1.2
    assert d["b"].min() >= -1 and d["b"].max() < 1 and d["b"].std() > 0.4
    assert d["c"].min() >= 0.5 and d["c"].max() < 2
    bound = 1 / math.sqrt(25)
    assert d["lin.weight"].shape == (7, 25)  # torch layout [d_out, d_in]
    assert d["lin.bias"].shape == (7,)
    for name in ("lin.weight", "lin.bias"):
        assert np.abs(d[name]).max() <= bound and np.abs(d[name]).max() > bound / 2
    assert d["d"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert d["e"].tolist() == [1, 1, 1] and d["f"].tolist() == [0, 0, 0]
    assert d["g"].tolist() == [[float(np.float32(0.1)), -2.0], [3.0, float(np.float32(1e-3))]]


def test_values_are_float32():
    program = materialize(parse(SOURCE, where="t"), 3)
    for t in program.tensors:
        assert np.array_equal(np.array(t.data, dtype=np.float32).astype(np.float64), np.array(t.data))


def test_seeded_and_independent_of_other_declarations():
    one, again, other = data(seed=1), data(seed=1), data(seed=2)
    for name in one:
        assert np.array_equal(one[name], again[name])
    assert not np.array_equal(one["a"], other["a"])
    more = data(SOURCE.replace("for i", "z = input(5)\nfor i"), seed=1)
    for name in one:
        assert np.array_equal(one[name], more[name])


def test_same_shape_tensors_differ():
    d = data("a = input(3, 3)\nb = input(3, 3)\n")
    assert not np.array_equal(d["a"], d["b"])


def test_default_settings_checkpoint_the_timed_loops_last_iteration():
    program = materialize(parse(SOURCE, where="t"), 0)
    assert program.settings == Settings(checkpoints=[4], rss_every=0, track=None)
    no_loop = materialize(parse("a = input(2)\n", where="t"), 0)
    assert no_loop.settings.checkpoints == []
    given = Settings(checkpoints=[2], rss_every=1, track="h")
    assert materialize(parse(SOURCE, where="t"), 0, given).settings == given


@pytest.mark.parametrize("seed", [-1, 1.5, True, 2**63])
def test_bad_seed(seed):
    with pytest.raises(BadInput, match="seed"):
        materialize(parse("a = input(2)\n", where="t"), seed)


def test_bad_settings_for_the_program():
    with pytest.raises(BadInput, match="past the timed loop"):
        materialize(parse(SOURCE, where="t"), 0, Settings(checkpoints=[5]))


def test_unparse_of_a_program_writes_its_data():
    program = materialize(parse(SOURCE, where="t"), 5)
    text = unparse(program)
    assert "lin = Linear(25, 7, weight_values=[" in text
    again = materialize(parse(text, where="unparsed"), 99, program.settings)
    assert again == program
