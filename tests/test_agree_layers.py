"""Agreement of the layers family (`runner/contract/ops/layers.py`): every operation run by
both interpreters on shared data, with shapes and edge values; values and gradients agree
within the default tolerance unless a wider one is explained next to its program.

Where the frameworks differ by design the difference is a catalogue case (`cases/`), and the
programs here stay where they agree: BatchNorm's running variance (`cases/batch_norm_running_var.toml`)
is not observed in training, MultiheadAttention is given `dropout=0.0` (burn's default is 0.1:
`cases/mha_dropout_default.toml`), an Embedding's padding row gets no gradient in torch only
(`cases/embedding_padding_idx.toml`). Dropout in training mode draws from two generators: its
statistics are checked below instead of its values."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from agreement import check, run_both

from runner.errors import BadInput
from runner.model.case import Tolerance
from runner.oracles import compare_observations
from runner.program import torch_interp
from runner.program.data import materialize
from runner.program.ir import same_values
from runner.program.render_torch import render
from runner.program.syntax import parse

_EDGES = "values=[0.0, -0.0, 1e-3, -1e-3, 4.0, -4.0, 30.0, -30.0, 1.5, -2.5, 0.25, -0.75]"
"""Zeros (both signs), tiny, moderate and saturating values of both signs (3 x 4)."""

PROGRAMS: dict[str, list[str]] = {
    "conv2d": [
        "conv = Conv2d(2, 4, 3, padding=1)\nx = input(2, 2, 5, 5)\ny = conv(x)\nbackward(sum(y * y))\nobserve(y)\nobserve(conv.weight)\nobserve(conv.bias)",
        "conv = Conv2d(4, 4, 3, stride=2, dilation=2, groups=2, bias=False)\nx = input(1, 4, 9, 9)\ny = conv(x)\nbackward(sum(y * y))\nobserve(y)\nobserve(conv.weight)",
    ],
    "conv1d": [
        "conv = Conv1d(2, 4, 3, padding=1)\nx = input(2, 2, 7)\ny = conv(x)\nbackward(sum(y * y))\nobserve(y)\nobserve(conv.weight)\nobserve(conv.bias)",
        "conv = Conv1d(4, 6, 3, stride=2, dilation=2, groups=2, bias=False)\nx = param(1, 4, 11)\ny = conv(x * 100.0)\nbackward(sum(y * y))\nobserve(y)\nobserve(conv.weight)\nobserve(x)",
        # zeros in, a kernel as long as the input: one output per channel
        'conv = Conv1d(1, 2, 5)\nx = param(3, 1, 5, init="zeros")\ny = conv(x)\nbackward(sum(y * y))\nobserve(y)\nobserve(conv.weight)\nobserve(conv.bias)\nobserve(x)',
    ],
    "batch_norm1d": [
        # training mode: the batch's statistics; a large offset; the running mean (not the running var)
        "bn = BatchNorm1d(3)\nx = input(8, 3)\nr = input(8, 3)\ny = bn(x * 10.0 + 100.0)\nbackward(sum(y * r))\nobserve(y)\nobserve(bn.weight)\nobserve(bn.bias)\nobserve(bn.running_mean)",
        # [N, C, L], eps and momentum given, a channel that is constant (zero variance)
        "bn = BatchNorm1d(2, eps=1e-3, momentum=0.5, weight_values=[2.0, -1.0], bias_values=[0.5, 0.0])\nx = param(4, 2, 3, values=[0,1,0,-2,0,3, 0,4,0,5,0,-6, 0,7,0,8,0,9, 0,-1,0,2,0,3])\nr = input(4, 2, 3)\ny = bn(x)\nbackward(sum(y * r))\nobserve(y)\nobserve(bn.weight)\nobserve(bn.bias)\nobserve(bn.running_mean)\nobserve(x)",
    ],
    "batch_norm2d": [
        "bn = BatchNorm2d(3)\nx = param(2, 3, 4, 4)\nr = input(2, 3, 4, 4)\ny = bn(x)\nbackward(sum(y * r))\nobserve(y)\nobserve(bn.weight)\nobserve(bn.bias)\nobserve(bn.running_mean)\nobserve(x)",
    ],
    "layer_norm": [
        "ln = LayerNorm(5)\nx = param(2, 3, 5)\nr = input(2, 3, 5)\ny = ln(x * 1000.0 - 50.0)\nbackward(sum(y * r))\nobserve(y)\nobserve(ln.weight)\nobserve(ln.bias)\nobserve(x)",
        "ln = LayerNorm(4, eps=1e-2, elementwise_affine=False)\nx = param(3, 4, "
        + _EDGES
        + ")\nr = input(3, 4)\ny = ln(x)\nbackward(sum(y * r))\nobserve(y)\nobserve(x)",
    ],
    "group_norm": [
        "gn = GroupNorm(2, 4)\nx = param(2, 4, 3)\nr = input(2, 4, 3)\ny = gn(x)\nbackward(sum(y * r))\nobserve(y)\nobserve(gn.weight)\nobserve(gn.bias)\nobserve(x)",
        "gn = GroupNorm(3, 6, eps=1e-3, affine=False)\nx = param(2, 6, 2, 2)\nr = input(2, 6, 2, 2)\ny = gn(x * 50.0)\nbackward(sum(y * r))\nobserve(y)\nobserve(x)",
    ],
    "embedding": [
        'emb = Embedding(6, 3)\nids = input(2, 4, dtype="int", values=[0, 5, 5, 2, 1, 0, 3, 5])\nr = input(2, 4, 3)\ny = emb(ids)\nbackward(sum(y * r))\nobserve(y)\nobserve(emb.weight)',
        # rank-1 ids (burn: unsqueezed), a repeated id accumulating its gradient
        'emb = Embedding(4, 2)\nids = input(5, dtype="int", values=[3, 3, 3, 0, 1])\ny = emb(ids)\nbackward(sum(y * y))\nobserve(y)\nobserve(emb.weight)',
    ],
    "dropout": [
        # p = 0 in training mode: the identity on both sides (no random draw)
        "drop = Dropout(p=0.0)\nx = param(3, 4, "
        + _EDGES
        + ")\ny = drop(x * 2.0)\nbackward(sum(y * y))\nobserve(y)\nobserve(x)",
    ],
    "multihead_attention": [
        # torch's layout [L, N, d], a causal mask (True: not attended), dropout given as torch's default
        'mha = MultiheadAttention(4, 2, dropout=0.0)\nq = input(3, 2, 4)\nm = input(3, 3, dtype="bool", init="triu")\nr = input(3, 2, 4)\ny = mha(q, q, q, m)\nbackward(sum(y * r))\nobserve(y)\nobserve(mha.in_proj_weight)\nobserve(mha.in_proj_bias)\nobserve(mha.out_proj_weight)\nobserve(mha.out_proj_bias)',
        # batch first, no biases, keys longer than the queries, large inputs (softmax near one-hot)
        "mha = MultiheadAttention(6, 3, dropout=0.0, batch_first=True, bias=False)\nq = param(2, 3, 6)\nk = input(2, 5, 6)\nv = input(2, 5, 6)\ny = mha(q * 10.0, k, v)\nbackward(sum(y * y))\nobserve(y)\nobserve(mha.in_proj_weight)\nobserve(mha.out_proj_weight)\nobserve(q)",
    ],
    "gelu": [
        "a = param(3, 4)\ny = gelu(a * 3.0)\nbackward(sum(y))\nobserve(y)\nobserve(a)",
        'a = param(3, 4)\ny = gelu(a * 3.0, approximate="tanh")\nbackward(sum(y))\nobserve(y)\nobserve(a)',
        "a = param(3, 4, " + _EDGES + ")\ny = gelu(a)\nbackward(sum(y))\nobserve(y)\nobserve(a)",
    ],
    "silu": [
        "a = param(3, 4, " + _EDGES + ")\ny = silu(a)\nbackward(sum(y))\nobserve(y)\nobserve(a)",
        "a = param(2, 3, 4)\ny = silu(a * 5.0)\nbackward(sum(y * y))\nobserve(y)\nobserve(a)",
    ],
    "leaky_relu": [
        # omitted slope: torch's 0.01 and burn's LeakyReluConfig 0.01; away from the kink at 0,
        # where the gradients differ (`test_leaky_relu_gradient_at_zero_differs`)
        "a = param(3, 4, "
        + _EDGES.replace("[0.0, -0.0", "[1e-6, -1e-6")
        + ")\ny = leaky_relu(a)\nbackward(sum(y * y + y))\nobserve(y)\nobserve(a)",
        "a = param(2, 5)\ny = leaky_relu(a, negative_slope=0.2)\nbackward(sum(y))\nobserve(y)\nobserve(a)",
        "a = param(2, 5)\ny = leaky_relu(a, negative_slope=-1.5)\nbackward(sum(y))\nobserve(y)\nobserve(a)",
    ],
    "softmax": [
        "a = param(3, 4)\nr = input(3, 4)\ny = softmax(a, -1)\nbackward(sum(y * r))\nobserve(y)\nobserve(a)",
        # large logits along dim 0 of a rank-3 tensor: stable on both sides
        "a = param(3, 2, 4)\nr = input(3, 2, 4)\ny = softmax(a * 1000.0, 0)\nbackward(sum(y * r))\nobserve(y)\nobserve(a)",
    ],
    "log_softmax": [
        "a = param(3, 4)\nr = input(3, 4)\ny = log_softmax(a, 1)\nbackward(sum(y * r))\nobserve(y)\nobserve(a)",
        # large logits: finite (no -inf, burn#315), the same on both sides
        "a = param(3, 4, values=[500.0, -500.0, 0.0, 1.0, 100.0, 99.0, -100.0, 0.0, 1e-3, 80.0, -80.0, 2.0])\nr = input(3, 4)\ny = log_softmax(a, -1)\nbackward(sum(y * r))\nobserve(y)\nobserve(a)",
    ],
    "max_pool2d": [
        # omitted stride: kernel_size on both sides
        "x = param(1, 2, 6, 6)\nr = input(1, 2, 3, 3)\ny = max_pool2d(x, 2)\nbackward(sum(y * r))\nobserve(y)\nobserve(x)",
        # dilation (burn#4466: max-pool backward ignored dilation): agrees in burn 0.22.1
        "x = param(2, 2, 7, 7)\nr = input(2, 2, 3, 3)\ny = max_pool2d(x, 3, stride=1, dilation=2)\nbackward(sum(y * r))\nobserve(y)\nobserve(x)",
        # padding with all-negative input: the padding never wins (-inf, not 0)
        "x = param(1, 1, 6, 6)\nr = input(1, 1, 3, 3)\ny = max_pool2d(x * 0.1 - 10.0, 3, stride=2, padding=1)\nbackward(sum(y * r))\nobserve(y)\nobserve(x)",
    ],
    "avg_pool2d": [
        "x = param(1, 2, 6, 6)\nr = input(1, 2, 3, 3)\ny = avg_pool2d(x, 2)\nbackward(sum(y * r))\nobserve(y)\nobserve(x)",
        # padding counted (both defaults: true) and not counted
        "x = param(1, 1, 5, 5)\nr = input(1, 1, 3, 3)\ny = avg_pool2d(x, 3, stride=2, padding=1)\nbackward(sum(y * r))\nobserve(y)\nobserve(x)",
        "x = param(1, 1, 5, 5)\nr = input(1, 1, 3, 3)\ny = avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)\nbackward(sum(y * r))\nobserve(y)\nobserve(x)",
    ],
    "adaptive_avg_pool2d": [
        # 5 -> 3: overlapping windows of unequal size
        "x = param(2, 2, 5, 5)\nr = input(2, 2, 3, 3)\ny = adaptive_avg_pool2d(x, 3)\nbackward(sum(y * r))\nobserve(y)\nobserve(x)",
        "x = param(1, 3, 6, 4)\ny = adaptive_avg_pool2d(x, 1)\nbackward(sum(y * y))\nobserve(y)\nobserve(x)",
    ],
}
"""op -> programs that use it (each observes the op's result, and a param when it has a gradient)."""


@pytest.mark.parametrize(("op", "index"), [(op, i) for op, sources in PROGRAMS.items() for i in range(len(sources))])
def test_the_operation_agrees_on_shared_data(op: str, index: int) -> None:
    check(op, PROGRAMS[op][index])


EVAL_PROGRAMS: dict[str, str] = {
    # running statistics given; eval(): both normalize with them
    "batch_norm1d": "bn = BatchNorm1d(3, running_mean_values=[1.0, -2.0, 0.0], running_var_values=[4.0, 0.25, 1e-4])\nx = input(5, 3)\neval()\ny = bn(x)\nobserve(y)",
    "batch_norm2d": "bn = BatchNorm2d(2, eps=0.1, running_mean_values=[0.5, -0.5], running_var_values=[2.0, 9.0], weight_values=[3.0, -1.0])\nx = input(2, 2, 3, 3)\neval()\ny = bn(x * 100.0)\nobserve(y)",
    # eval(): dropout is the identity on both sides, whatever p
    "dropout": "drop = Dropout()\nx = input(4, 5)\neval()\ny = drop(x)\nobserve(y)",
    # eval(): burn's default attention dropout (0.1) is off, so the defaults agree
    "multihead_attention": 'mha = MultiheadAttention(4, 2)\nq = input(3, 2, 4)\nk = input(5, 2, 4)\nm = input(3, 5, dtype="bool", init="triu")\neval()\ny = mha(q, k, k, m)\nobserve(y)',
}
"""Programs in evaluation mode (`eval()`): the values agree. burn's `valid()` snapshot tracks no
gradient (torch's eval does), so these observe values only."""


@pytest.mark.parametrize("op", sorted(EVAL_PROGRAMS))
def test_the_module_agrees_in_eval_mode(op: str) -> None:
    torch_run, burn_run = run_both(EVAL_PROGRAMS[op])
    assert torch_run.outcome == burn_run.outcome == "ok", (torch_run.failure, burn_run.failure)
    values = compare_observations(torch_run, burn_run, "values", None, Tolerance())
    assert values.same is True, values.observed


def _observed(run: object, label: str) -> list[float]:
    observation = next(o for o in run.observations if o.label == label)  # type: ignore[attr-defined]
    assert observation.values is not None
    return list(observation.values)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_in_training_zeroes_a_share_p_and_scales_the_rest(p: float) -> None:
    """The two random streams differ, so no value agrees; what both must show is the law: each
    element zeroed with probability p, the rest scaled by 1/(1-p), and the gradient through the
    same mask. The share of zeros is held to p within 5 binomial standard deviations
    (sqrt(p(1-p)/n); a false failure once in about 1.7 million runs), the kept values to 1/(1-p)
    within float32 rounding. The run oracles (`runner/oracles.py`) compare two runs element by
    element, which cannot say this, so it is a test of its own."""
    n = 64 * 64
    source = (
        f'drop = Dropout(p={p})\nx = param(64, 64, init="ones")\ny = drop(x)\nbackward(sum(y))\nobserve(y)\nobserve(x)'
    )
    spread = 5 * math.sqrt(p * (1 - p) / n)
    scale = 1 / (1 - p)
    for framework, run in zip(("torch", "burn"), run_both(source)):
        assert run.outcome == "ok", (framework, run.failure)
        y = _observed(run, "y")
        grad = next(o for o in run.observations if o.label == "x").grad
        assert grad is not None, framework
        zeros = sum(1 for v in y if v == 0.0)
        assert abs(zeros / n - p) <= spread, (framework, zeros / n, p, spread)
        kept = [v for v in y if v != 0.0]
        assert all(math.isclose(v, scale, rel_tol=1e-6) for v in kept), (framework, set(kept))
        # d(sum y)/dx is the mask times the scale: zero exactly where y is
        assert [g == 0.0 for g in grad] == [v == 0.0 for v in y], framework


def test_dropout_in_training_draws_different_masks() -> None:
    """The difference itself: the same program, the same data, two masks (a port cannot expect
    torch's dropped elements)."""
    torch_run, burn_run = run_both('drop = Dropout()\nx = input(32, 32, init="ones")\ny = drop(x)\nobserve(y)')
    a, b = _observed(torch_run, "y"), _observed(burn_run, "y")
    assert [v == 0.0 for v in a] != [v == 0.0 for v in b]


def test_an_embedding_padding_row_starts_at_zero_on_both_sides() -> None:
    """torch's init zeroes the `padding_idx` row; the shared data does the same (a negative index
    counts from the end), so both frameworks start from the same weights."""
    torch_run, burn_run = run_both("emb = Embedding(5, 3, padding_idx=-2)\nobserve(emb.weight)")
    for run in (torch_run, burn_run):
        weight = _observed(run, "emb.weight")
        assert weight[9:12] == [0.0, 0.0, 0.0]
        assert any(v != 0.0 for v in weight[:9] + weight[12:])


def test_leaky_relu_gradient_at_zero_differs() -> None:
    """A measured difference at the kink: at exactly 0 torch's gradient is the negative slope
    (its backward takes `x > 0`), burn 0.22.1's is 1 (`x >= 0`); the values (0) agree."""
    torch_run, burn_run = run_both(
        "a = param(4, values=[0.0, -0.0, 1.0, -1.0])\ny = leaky_relu(a)\nbackward(sum(y))\nobserve(y)\nobserve(a)"
    )
    grads = {}
    for framework, run in (("torch", torch_run), ("burn", burn_run)):
        assert run.outcome == "ok", (framework, run.failure)
        assert [round(v, 6) for v in _observed(run, "y")] == [0.0, 0.0, 1.0, -0.01], framework
        grads[framework] = next(o for o in run.observations if o.label == "a").grad
    assert grads["torch"] is not None and grads["burn"] is not None
    assert [round(g, 6) for g in grads["torch"]] == [0.01, 0.01, 1.0, 0.01]
    assert [round(g, 6) for g in grads["burn"]] == [1.0, 1.0, 1.0, 0.01]


_RENDERED = """
conv = Conv1d(2, 3, 3, padding=1)
bn = BatchNorm1d(3)
ln = LayerNorm(5)
gn = GroupNorm(1, 3)
emb = Embedding(4, 5, padding_idx=1)
drop = Dropout(p=0.0)
mha = MultiheadAttention(5, 1, dropout=0.0)
x = param(2, 2, 5)
ids = input(2, 3, dtype="int", high=4)
m = input(2, 2, dtype="bool", init="triu")
img = param(1, 2, 6, 6)
h = ln(gn(bn(conv(x))))
e = drop(emb(ids))
a = mha(e, e, e, m)
p = max_pool2d(img, 2) + avg_pool2d(img, 2) + adaptive_avg_pool2d(img, 3)
s = softmax(silu(h), -1) + log_softmax(leaky_relu(h, negative_slope=0.1), 1) + gelu(h)
backward(sum(s * s) + sum(a * a) + sum(p * p))
observe(s)
observe(a)
observe(p)
observe(x)
observe(emb.weight)
observe(mha.in_proj_weight)
eval()
observe(bn(conv(x)))
"""


def test_the_rendered_torch_script_prints_the_interpreters_observations(tmp_path: Path) -> None:
    """The torch renderer writes every layer the way the interpreter runs it (the module
    constructors, MultiheadAttention's `attn_mask=` call and `[0]`, Dropout without `dtype`)."""
    program = materialize(parse(_RENDERED, where="layers"), 5)
    script = tmp_path / "layers.py"
    script.write_text(render(program, title="layers"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    printed = [json.loads(line) for line in done.stdout.splitlines()]
    result = torch_interp.run(program)
    assert result["outcome"] == "ok", result["failure"]
    assert len(printed) == len(result["observations"])
    for got, want in zip(printed, result["observations"]):
        for key in ("values", "grad"):
            assert same_values(got[key], want[key]), (want["label"], key)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("gn = GroupNorm(2, 3)", "`num_groups` (2) must divide `num_channels` (3)"),
        ("mha = MultiheadAttention(5, 2)", "`num_heads` (2) must divide `embed_dim` (5)"),
        ("conv = Conv1d(4, 6, 3, groups=4)", "`groups` (4) must divide `out_channels` (6)"),
        ("emb = Embedding(4, 2, padding_idx=4)", "`padding_idx` must be a row of its weight (-4 to 3), not 4"),
    ],
)
def test_a_declaration_torch_would_refuse_is_bad_input(source: str, message: str) -> None:
    """Caught when the program is read (exit code 2, the line named), not as a crash of one side."""
    with pytest.raises(BadInput, match=re.escape(message)):
        parse(source, where="t")


def test_dropout_of_probability_one_panics_in_burn_only() -> None:
    """torch zeroes everything at p = 1; burn's `DropoutConfig::init` refuses p outside [0, 1)."""
    torch_run, burn_run = run_both("drop = Dropout(p=1.0)\nx = input(2, 3)\ny = drop(x)\nobserve(y)")
    assert torch_run.outcome == "ok" and _observed(torch_run, "y") == [0.0] * 6
    assert burn_run.outcome == "panic" and burn_run.failure is not None
    assert "range [0, 1)" in burn_run.failure.message


def test_batch_norm_of_one_sample_in_training_is_an_error_in_torch_only() -> None:
    """torch refuses a training batch with one value per channel; burn normalizes it (variance 0)."""
    torch_run, burn_run = run_both("bn = BatchNorm1d(3)\nx = input(1, 3)\ny = bn(x)\nobserve(y)")
    assert torch_run.outcome == "error" and torch_run.failure is not None
    assert "more than 1 value per channel" in torch_run.failure.message
    assert burn_run.outcome == "ok" and _observed(burn_run, "y") == [0.0, 0.0, 0.0]


def test_a_fully_masked_attention_row_is_nan_in_torch_and_uniform_in_burn() -> None:
    """torch fills a masked score with -inf, so a row with every key masked is NaN; burn fills it
    with `min_float` (-1e4), so the row attends uniformly and stays finite."""
    source = (
        "mha = MultiheadAttention(4, 2, dropout=0.0)\nx = input(3, 1, 4)\n"
        'm = input(3, 3, dtype="bool", init="ones")\ny = mha(x, x, x, m)\nobserve(y)'
    )
    torch_run, burn_run = run_both(source)
    assert torch_run.outcome == burn_run.outcome == "ok"
    assert all(math.isnan(v) for v in _observed(torch_run, "y"))
    assert all(math.isfinite(v) for v in _observed(burn_run, "y"))
