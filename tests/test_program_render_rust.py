"""Programs rendered as standalone Rust against burn 0.22.1 (`runner.program.rust`).

The fast tests read the rendered text, and hold every operation of the table to have a
rendering or a clean refusal. The cargo test renders a sample of programs (every op family, the
Linear layouts, optimizer loops, the p10 EMA loop at small size, panics and errors, and the
families' operations and module kinds: `FAMILY_SAMPLE`) and a sample of the found cases'
reproducers as the modules of one crate (`write_bundle`), builds it once against the shared target
directory, runs every reproducer (`BUNDLE NAME`) and holds what it prints to what the burn
interpreter (`_probe.run_program`) returns for the same IR."""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from test_agree_layers import EVAL_PROGRAMS as LAYERS_EVAL
from test_agree_layers import PROGRAMS as LAYERS
from test_agree_losses import PROGRAMS as LOSSES
from test_agree_tensors import PROGRAMS as TENSORS
from test_agree_training import PROGRAMS as TRAINING

from runner import _probe
from runner.cases import load_case
from runner.contract.ops import OPS
from runner.paths import CASES_DIR, PROJECT_ROOT, cache_dir, target_dir
from runner.program.data import materialize
from runner.program.ir import Program, Settings
from runner.program.rust import families
from runner.program.rust.crate import (
    BUNDLE_DEPENDENCIES,
    BUNDLE_OPT_LEVEL,
    BURN_DEPENDENCY,
    render,
    write_bundle,
    write_reproducer,
)
from runner.program.rust.output import ReproducerRun, read_run
from runner.program.rust.source import sketch
from runner.program.syntax import parse


def program(source: str, settings: Settings | None = None, seed: int = 3) -> Program:
    return materialize(parse(source, where="test"), seed, settings)


P10 = """\
lin = Linear(16, 16)
x = input(8, 16)
opt = sgd(lr=1e-3)
ema = detach(lin.weight)
for step in range(12):
    out = lin(x)
    loss = mean({loss})
    zero_grad(opt)
    backward(loss)
    step(opt)
    ema = ema * 0.99 + detach(lin.weight) * 0.01
    observe(ema, values=False)
observe(ema)
observe(lin.weight)
"""
P10_SETTINGS = Settings(checkpoints=[1, 2, 6, 12], track="ema")

# name -> (source, settings) or ("case:NAME", variant)
SAMPLE: dict[str, tuple[str, Any]] = {
    "graph-ops": (
        """\
w = param(3, 4, init="uniform")
x = input(2, 3)
d = detach(w)
n = without_autodiff(w)
c = clone(w)
h = x @ c
s = sum(h * h) + sum(d) + sum(n)
item(s)
backward(s)
observe(w)
observe(d)
observe(n)
observe(h, "h, a non-leaf")
""",
        None,
    ),
    "math-ops": (
        """\
a = param(2, 3, init="positive")
b = param(2, 3)
m = param(3, 2)
x = input(2, 3)
e = exp(a) + log(a) - sqrt(a) * abs(b) / tanh(a)
f = relu(b) + sigmoid(b) - -e
g = (f + 2.0) * 0.5 - 1.0
p = g ** 3 + a ** -1
t = transpose(p) @ x
r = reshape(t, [-1, 9])
q = sum_dim(reshape(r, [3, 3]), 1) + sum_dim(p @ m, 0)
loss = mean(q) + sum(r)
backward(loss)
observe(e)
observe(p)
observe(r)
observe(q)
observe(a)
observe(b)
observe(m)
""",
        None,
    ),
    "ranks-1-to-4": (
        """\
a = param(2, 3, 2, init="uniform")
b = input(2, 2, 3)
v = param(4)
z = param(1, 3, 2, 1)
c = a @ b
d = sum_dim(c, 2) * 2.0
e = reshape(d, [2, 3, 1, 1]) + z
loss = sum(e) + sum(v * v)
backward(loss)
observe(c)
observe(e)
observe(v)
observe(z)
""",
        None,
    ),
    "autodiff-ops": (
        """\
w = param(3, 3)
x = input(2, 3)
h = x @ w
k = detach(h)
require_grad(k)
u = sum(k * h)
backward(u)
g = grad(w)
gk = grad(k)
observe(g)
observe(gk)
freeze(w)
observe(w)
add_scalar_(w, 1.5)
observe(w, "w after add_scalar_")
""",
        None,
    ),
    "linear-transposed": ("case:linear_layout", "transposed"),
    "linear-copied": ("case:linear_layout", "copied"),
    "linear-copied-nonsquare": ("case:linear_layout", "copied-nonsquare"),
    "linear-backward": (
        """\
x = input(5, 4)
lin = Linear(4, 3)
y = lin(x)
backward(sum(y * y))
observe(y)
observe(lin.weight)
observe(lin.bias)
""",
        None,
    ),
    "optimizer-loop": (
        """\
lin = Linear(3, 2)
w = param(2, 2)
x = input(4, 3)
sg = sgd(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)
ad = adam(lr=0.01, beta1=0.8, eps=1e-6, weight_decay=0.001)
for i in range(5):
    y = lin(x) @ w
    loss = mean(y ** 2)
    zero_grad(sg)
    backward(loss)
    step(sg)
    zero_grad(ad)
    backward(mean(lin(x) ** 2))
    step(ad)
    observe(loss, values=False)
observe(lin.weight)
observe(lin.bias)
observe(w)
""",
        Settings(checkpoints=[1, 5], track="loss"),
    ),
    "frozen-after-backward": ("case:frozen_after_backward", "default"),
    "grad-accumulation": ("case:grad_accumulation", "accumulate"),
    "grad-accumulation-loop": (
        """\
w = param(4, 2)
x = input(3, 4)
opt = sgd(lr=0.1)
for i in range(4):
    d = detach(w)
    backward(mean((x @ w) ** 2) + sum(d), accumulate=True)
    observe(d)
observe(w, "grad before step")
step(opt)
observe(w)
""",
        None,
    ),
    "grads-held-across-iterations": (
        """\
w = param(3)
x = input(3)
for i in range(3):
    observe(w)
    backward(sum(w * x))
observe(w)
""",
        Settings(checkpoints=[1, 2, 3]),
    ),
    "bound-in-the-loop": (
        """\
w = param(2, 2)
x = input(2, 2)
for i in range(3):
    y = x @ w
    z = y * 2.0
observe(z)
observe(y)
""",
        None,
    ),
    "detach-alias-inplace": ("case:detach_alias_inplace", "default"),
    "p10-detach": (P10.format(loss="out ** 2"), P10_SETTINGS),
    "p10-target-panics": (P10.format(loss="(out - x @ transpose(ema)) ** 2"), P10_SETTINGS),
    "backward-twice-panics": ("case:backward_twice", "plain"),
    "require-grad-nonleaf-panics": ("case:require_grad_nonleaf", "require"),
    "panic-in-the-last-timed-iteration": (
        """\
x = input(2, 2)
w = param(2, 2)
c = sum(x)
for i in range(1):
    h = x @ w
    observe(h)
    b = reshape(c, [2, 2])
    observe(b)
""",
        Settings(checkpoints=[1]),
    ),
    "grad-none-error": ("w = param(2)\nx = input(2)\ny = w * x\ng = grad(w)\nobserve(g)\n", None),
    "log-of-negative": ("a = input(3, values=[-1, 0, 2])\nb = log(a)\nobserve(b)\n", None),
}


# The families' operations and module kinds (`runner/program/rust/families/`): name -> (source,
# settings) or ("case:NAME", variant); a program per operation at least (the `ops` test below holds
# that), built and run with the others.
FAMILY_SAMPLE: dict[str, tuple[str, Any]] = {
    "linear-eval": (
        """\
lin = Linear(3, 2)
x = input(4, 3)
eval()
y = lin(x)
observe(y)
train()
z = lin(x)
backward(sum(z))
observe(z)
observe(lin.weight)
""",
        None,
    ),
    "conv2d": (
        """\
conv = Conv2d(2, 4, 3, padding=1)
c2 = Conv2d(4, 4, 3, stride=2, dilation=2, groups=2, bias=False)
x = input(2, 2, 9, 9)
opt = sgd(lr=0.1, momentum=0.9)
for i in range(3):
    y = c2(conv(x))
    loss = mean(y * y)
    zero_grad(opt)
    backward(loss)
    step(opt)
    observe(loss)
observe(conv.weight)
observe(c2.weight)
freeze(conv.bias)
add_scalar_(c2.weight, 0.5)
y2 = c2(conv(x))
backward(sum(y2))
g = grad(conv.weight)
observe(g)
observe(conv.bias)
observe(y2)
""",
        Settings(checkpoints=[1, 3], track="loss"),
    ),
    "gelu": (
        """\
lin = Linear(3, 4)
a = param(3, 4)
y = gelu(a * 3.0)
t = gelu(a * 3.0, approximate="tanh")
n = gelu(a, approximate="none")
w = gelu(lin.weight)
backward(sum(y) + sum(t * t) + sum(n) + sum(w))
observe(y)
observe(t)
observe(w)
observe(a)
observe(lin.weight)
""",
        None,
    ),
    "cat": (
        """\
lin = Linear(2, 3)
a = param(2, 3)
b = param(1, 3)
c = cat(a, b, transpose(lin.weight), dim=0)
d = cat(a, a, dim=-1)
backward(sum(c * c) + sum(d))
observe(c)
observe(d)
observe(a)
observe(b)
observe(lin.weight)
""",
        None,
    ),
    "argmax": (
        """\
v = input(5)
x = input(4, 5)
z = input(2, 3, 4)
big = input(70, dtype="int", high=9)
mask = input(4, 4, dtype="bool", init="triu")
wide = input(9, 9, dtype="bool")
w = param(4, 5)
i = argmax(v, 0)
j = argmax(x, -1, keepdim=True)
k = argmax(z, 1)
for step in range(3):
    m = argmax(x * w, 0)
    observe(m)
observe(i)
observe(j)
observe(k)
observe(big)
observe(mask)
observe(wide, values=False)
""",
        Settings(checkpoints=[2, 3]),
    ),
    "cross_entropy": (
        """\
lin = Linear(6, 4)
h = input(5, 6)
t = input(5, dtype="int", high=4)
opt = adam(lr=0.05)
for i in range(2):
    plain = cross_entropy(lin(h), t)
    smooth = cross_entropy(lin(h), t, label_smoothing=0.2, reduction="mean")
    zero_grad(opt)
    backward(plain + smooth)
    step(opt)
observe(plain)
observe(smooth)
observe(lin.weight)
observe(t)
""",
        None,
    ),
    "train-eval": (
        """\
conv = Conv2d(1, 2, 3)
lin = Linear(4, 2)
x = input(1, 1, 4, 4)
h = input(3, 4)
opt = sgd(lr=0.1)
eval()
y0 = conv(x)
observe(y0)
train()
for i in range(3):
    y = conv(x)
    loss = mean(y * y) + mean(lin(h))
    zero_grad(opt)
    backward(loss)
    step(opt)
    eval()
    z = conv(x)
    observe(z)
    train()
eval()
eval()
for i in range(2):
    e = conv(x)
    observe(e)
observe(lin(h))
train()
train()
observe(conv(x))
observe(conv.weight)
""",
        Settings(checkpoints=[1, 3]),
    ),
    "mode-changes-in-a-loop": (
        """\
conv = Conv2d(1, 1, 2, bias=False)
x = input(1, 1, 3, 3)
for i in range(4):
    y = conv(x)
    observe(y)
    add_scalar_(conv.weight, 0.25)
    eval()
observe(conv(x))
""",
        Settings(checkpoints=[1, 2, 4]),
    ),
    "int-value-carried-and-tracked": (
        """\
x = input(3, 4)
w = param(3, 4)
lin = Linear(4, 4)
opt = sgd(lr=0.1)
for i in range(3):
    m = argmax(x * w, 1)
    loss = cross_entropy(lin(x * w), m)
    zero_grad(opt)
    backward(loss)
    step(opt)
observe(m)
observe(w)
""",
        Settings(checkpoints=[1, 3], track="m"),
    ),
    "conv-gradients-accumulated": (
        """\
conv = Conv2d(1, 2, 2)
x = input(2, 1, 3, 3)
opt = adam(lr=0.01)
for i in range(2):
    y = conv(x)
    backward(mean(y * y), accumulate=True)
    observe(conv.bias)
observe(conv.weight, "grad summed")
step(opt)
observe(conv.weight)
t = detach(conv.weight)
observe(gelu(t))
""",
        Settings(checkpoints=[1, 2], track="conv.weight"),
    ),
    "backward-in-eval-mode-panics": (
        """\
conv = Conv2d(1, 1, 2, bias=False)
x = input(1, 1, 3, 3)
opt = sgd(lr=0.5)
for i in range(4):
    y = conv(x)
    observe(y)
    backward(sum(y))
    step(opt)
    eval()
observe(conv(x))
""",
        Settings(checkpoints=[1, 2]),
    ),
}


# The agreement programs of the layers, tensors and losses families (`tests/test_agree_*.py`):
# the reproducer is held to the burn interpreter on programs the two interpreters are held to each
# other on. op -> the indices of its programs taken (those whose rendering differs: a module
# without tensors, rank-1 ids, a mask or batch_first, a negative start, int and bool operands...).
_AGREED: dict[str, tuple[dict[str, list[str]], dict[str, list[int]]]] = {
    "layers": (
        LAYERS,
        {
            "conv1d": [1],
            "batch_norm1d": [1],
            "batch_norm2d": [0],
            "layer_norm": [0, 1],  # with beta; elementwise_affine=False (nothing to load)
            "group_norm": [1],
            "embedding": [0, 1],  # ids [N, L]; ids [L]
            "dropout": [0],
            "multihead_attention": [0, 1],  # a mask, [L, N, d]; batch_first, no biases
            "silu": [1],
            "leaky_relu": [0, 1],
            "softmax": [1],
            "log_softmax": [1],
            "max_pool2d": [2],
            "avg_pool2d": [2],
            "adaptive_avg_pool2d": [0],
        },
    ),
    "tensors": (
        TENSORS,
        {
            "stack": [1, 2],
            "narrow": [1],
            "index_select": [1],
            "gather": [1],
            "max_dim": [2],
            "min_dim": [1],
            "mean_dim": [1],
            "square": [0],
            "var": [1],
            "clamp": [1],
            "where": [1],
            "masked_fill": [1],
            "flatten": [1],
            "unsqueeze": [1],
            "squeeze": [1],
            "expand": [1],
            "gt": [0],
            "lt": [0],
            "gt_scalar": [0],
            "lt_scalar": [0],
        },
    ),
    "losses": (
        LOSSES,
        {
            "mse_loss": [1, 2],
            "huber_loss": [1],
            "smooth_l1_loss": [1],
            "binary_cross_entropy_with_logits": [0, 1],
            "nll_loss": [1],
        },
    ),
    # every program of the training family: its optimizers, schedules and target networks
    "training": (TRAINING, {op: list(range(len(sources))) for op, sources in TRAINING.items()}),
}
for _family, (_programs, _taken) in _AGREED.items():
    for _op, _indices in _taken.items():
        for _i in _indices:
            FAMILY_SAMPLE[f"{_op}-{_i}"] = (_programs[_op][_i], None)
for _op, _source in LAYERS_EVAL.items():  # eval(): BatchNorm's running statistics, Dropout off
    FAMILY_SAMPLE[f"{_op}-eval"] = (_source, None)

FAMILY_SAMPLE.update(
    {
        # BatchNorm's buffers (read with value_sync, changed by add_scalar_, untouched by require_grad)
        # and MultiheadAttention's in_proj (three burn Linears: loaded by rows, joined when read,
        # their gradients joined, frozen and changed together), trained by Adam, then eval()
        "module-state": (
            """\
bn = BatchNorm2d(2, momentum=0.3)
plain = BatchNorm1d(3, affine=False)
mha = MultiheadAttention(4, 2, dropout=0.0, batch_first=True)
x = input(2, 2, 3, 3)
h = input(4, 3)
q = input(2, 3, 4)
opt = adam(lr=0.01)
for i in range(3):
    y = bn(x * 2.0)
    a = mha(q, q, q)
    loss = mean(y * y) + mean(a * a) + mean(plain(h) * h)
    zero_grad(opt)
    backward(loss)
    observe(mha.in_proj_weight)
    step(opt)
    observe(bn.running_mean)
observe(bn.running_var)
observe(plain.running_var)
observe(mha.in_proj_bias)
observe(mha.out_proj_weight)
freeze(mha.in_proj_weight)
require_grad(bn.running_var)
add_scalar_(mha.in_proj_bias, 0.5)
add_scalar_(bn.running_mean, 1.0)
a2 = mha(q, q, q)
backward(sum(a2))
observe(mha.in_proj_weight)
observe(mha.in_proj_bias)
eval()
z = bn(x)
observe(z)
observe(bn.running_mean)
""",
            Settings(checkpoints=[1, 3], track="mha.in_proj_weight"),
        ),
        # gradients accumulated into GradientsParams: the in_proj's three parts read from the sum
        "attention-gradients-accumulated": (
            """\
mha = MultiheadAttention(4, 1, dropout=0.0)
x = input(3, 2, 4)
opt = sgd(lr=0.1)
for i in range(2):
    y = mha(x, x, x)
    backward(mean(y * y), accumulate=True)
observe(mha.in_proj_weight, "summed")
observe(mha.out_proj_bias, "summed")
step(opt)
observe(mha.in_proj_weight)
""",
            None,
        ),
        # where(m, y, y): the receiver is the last (moved) operand; a negative narrow start; the
        # interpreter's error for one still negative (a panic with its message in the reproducer)
        "tensor-edges": (
            """\
x = param(3, 4)
m = input(3, 4, dtype="bool")
y = x * 2.0
w = where(m, y, y)
n = narrow(w, 1, -3, 2)
s = stack(n, n, n, dim=-1)
backward(sum(s))
observe(w)
observe(n)
observe(s)
observe(x)
bad = narrow(x, 0, -5, 1)
observe(bad)
""",
            None,
        ),
        # random in training mode: Dropout's mask and MultiheadAttention's default attention dropout
        # (0.1) draw from burn's generator, in another process than the interpreter's (`RANDOM`)
        "dropout-train": (
            """\
drop = Dropout()
mha = MultiheadAttention(4, 2)
x = param(16, 16, init="ones")
q = input(3, 2, 4)
y = drop(x)
a = mha(q, q, q)
backward(sum(y) + sum(a * a))
observe(y)
observe(a)
observe(x)
eval()
observe(drop(x))
""",
            None,
        ),
        # the training family's catalogue cases: AdamW's and RMSprop's defaults (burn's own), a cosine
        # schedule stepped in torch's and in burn's order and refusing a learning rate above 1 (the
        # interpreter's error, a panic with its message), Module::no_grad, a target network copied
        # (one ParamId, two modules) and soft-updated (the third backward panics in burn)
        **{
            f"{case}-{variant}": (f"case:{case}", variant)
            for case, variants in {
                "adamw_defaults": ["defaults", "decay-default", "given"],
                "rmsprop_defaults": ["defaults", "given"],
                "cosine_schedule": ["torch-order", "burn-order", "lr-above-1"],
                "warmup_cosine_schedule": ["torch-order", "burn-order"],
                "module_no_grad": ["module"],  # its `scope` variant is no_grad, which burn lacks
                "target_network_copy": ["online-first", "target-first"],
                "target_soft_update": ["in-loss", "detached"],
            }.items()
            for variant in variants
        },
        # two optimizers with schedules (one stepped before the optimizer, one after, one never),
        # every hyperparameter given, LinearLR's omitted factors (torch's, as a port writes them)
        "schedules": (
            """\
lin = Linear(3, 2)
w = param(2, 2)
x = input(4, 3)
a = adamw(lr=0.05, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.0, amsgrad=True, clip_grad_norm=0.5)
r = rmsprop(lr=0.02, alpha=0.9, eps=1e-7, momentum=0.0, centered=True, weight_decay=0.01, clip_grad_value=0.1)
sa = step_lr(a, 2)
sr = linear_lr(r)
never = cosine_lr(r, 5, eta_min=0.001)
for i in range(5):
    loss = mean((lin(x) @ w) ** 2)
    zero_grad(a)
    backward(loss)
    sched_step(sa)
    step(a)
    zero_grad(r)
    backward(mean(lin(x) ** 2))
    step(r)
    sched_step(sr)
    observe(loss)
observe(lin.weight)
observe(w)
""",
            Settings(checkpoints=[1, 5], track="loss"),
        ),
        # a schedule made again in each iteration, stepped twice; the learning rate it set read
        # after the loop; an optimizer and its schedule made in each iteration (written out: the
        # first iteration binds the learning rate the loop then carries)
        "schedules-in-loops": (
            """\
p = param(1, init="zeros")
q = param(2, init="zeros")
opt = sgd(lr=0.5)
for i in range(3):
    sched = linear_lr(opt, start_factor=0.5, end_factor=1.0, total_iters=2)
    sched_step(sched)
    sched_step(sched)
    zero_grad(opt)
    backward(sum(p))
    step(opt)
    observe(p)
backward(sum(p))
step(opt)
observe(p)
for i in range(3):
    o2 = sgd(lr=0.1)
    s2 = step_lr(o2, 1, gamma=0.5)
    zero_grad(o2)
    backward(sum(q))
    step(o2)
    sched_step(s2)
    sched_step(s2)
    backward(sum(q))
    step(o2)
observe(q)
""",
            None,
        ),
        # observations at every checkpoint (a Linear weight, a free param, an int tensor, flags only)
        # beside one at the last step only; the first iteration written out (the gradients the
        # loop's end holds), a checkpoint there too
        "every-checkpoint": (
            """\
lin = Linear(3, 2)
w = param(2, 2)
x = input(4, 3)
opt = adam(lr=0.01)
for i in range(5):
    loss = mean((lin(x) @ w) ** 2)
    backward(loss)
    observe(lin.weight, "w", every_checkpoint=True)
    observe(w, "free", every_checkpoint=True)
    observe(loss, "loss flags", values=False, every_checkpoint=True)
    observe(argmax(lin(x), 1), "argmax", every_checkpoint=True)
    observe(w, "free at the last step")
    step(opt)
    backward(mean(lin(x) ** 2))
observe(w)
""",
            Settings(checkpoints=[1, 2, 5]),
        ),
        # an optimizer and its schedule made again at the end of each iteration: the loop carries both
        "schedule-remade-with-its-optimizer": (
            """\
p = param(1)
opt = sgd(lr=0.1)
sched = step_lr(opt, 2)
for i in range(3):
    sched_step(sched)
    backward(sum(p))
    step(opt)
    observe(p)
    opt = sgd(lr=0.1)
    sched = step_lr(opt, 2)
""",
            None,
        ),
        # target networks of module kinds: soft updates blend BatchNorm's running statistics too
        # (the ModuleMapper maps every float tensor), MultiheadAttention's three projections, a
        # frozen Conv2d; copy_module in eval mode leaves the snapshot's module as it was
        "target-modules": (
            """\
bn = BatchNorm2d(2)
tb = BatchNorm2d(2)
conv = Conv2d(2, 2, 3, padding=1)
tc = Conv2d(2, 2, 3, padding=1)
mha = MultiheadAttention(4, 2, dropout=0.0)
tm = MultiheadAttention(4, 2, dropout=0.0)
x = input(2, 2, 4, 4)
q = input(3, 2, 4)
module_no_grad(tc)
opt = sgd(lr=0.1)
for i in range(2):
    loss = mean(bn(conv(x)) ** 2) + mean(mha(q, q, q) ** 2)
    zero_grad(opt)
    backward(loss)
    step(opt)
    soft_update(tb, bn, 0.5)
    soft_update(tc, conv, 0.25)
    soft_update(tm, mha, 0.1)
observe(tb.running_mean)
observe(tb.weight)
observe(tc.weight)
observe(tm.in_proj_weight)
eval()
copy_module(tc, conv)
observe(tc(x))
train()
observe(tc(x))
observe(tc.weight)
""",
            None,
        ),
        # burn's own panics, at the same place in burn as the interpreter's
        "squeeze-non-singleton": ("case:squeeze_non_singleton", "batch-4"),
        "smooth-l1-beta-zero": ("case:smooth_l1_beta_zero", "beta-0"),
        "batch-norm-running-var": ("case:batch_norm_running_var", "train"),
    }
)

RANDOM: dict[str, str] = {
    "family:dropout-train": "Dropout in training mode and MultiheadAttention's attention dropout draw their "
    "masks from burn's generator: the reproducer draws in a process of its own, the interpreter in the test's, "
    "so their values differ; the shapes, labels, flags and the outcome are compared",
}
"""Reproducers whose values cannot be the interpreter's (name -> why): compared without values."""


def family_program(name: str) -> Program:
    source, settings = FAMILY_SAMPLE[name]
    if source.startswith("case:"):
        case = load_case(CASES_DIR / f"{source[5:]}.toml")
        made: Program = case.programs[settings].make()  # type: ignore[attr-defined]
        return made
    return program(source, settings)


FOUND = sorted(p.parent.parent.name for p in CASES_DIR.glob("found/*/rust/Cargo.toml"))[:4]
"""Reproducers the fuzzer wrote (`cases/found/NAME/rust/`): a sample is built with the others."""


def found_program(name: str) -> Program:
    """The program a found case holds, with the data its reproducer was written with (seed 0)."""
    from runner.fuzz.record import program_of

    return materialize(program_of(CASES_DIR / "found" / f"{name}.toml"), 0)


def sample_program(name: str) -> Program:
    source, extra = SAMPLE[name]
    if source.startswith("case:"):
        case = load_case(CASES_DIR / f"{source[5:]}.toml")
        recipes = case.programs  # type: ignore[attr-defined]
        recipe = recipes[extra] if extra in recipes else next(iter(recipes.values()))
        made: Program = recipe.make()
        return made
    return program(source, extra)


# ---- the rendered text -----------------------------------------------------------------------


def test_the_p10_loop_is_straight_line_burn():
    files = render(program(P10.format(loss="(out - x @ transpose(ema)) ** 2"), P10_SETTINGS), title="p10 target")
    main = files["src/main.rs"]
    assert set(files) == {"Cargo.toml", "src/main.rs", "src/data.rs"}  # 16 x 16 and 8 x 16 go to data.rs
    for line in [
        "let mut ema = model.lin.weight.val().detach();  // [1] line 4",
        "for it in 1..=12 {  // [2] line 5: the timed loop: observations at iterations 1, 2, 6, 12",
        "let out = model.lin.forward(x.clone());  // [3] line 6",
        # ema holds burn's [d_in, d_out] layout: torch's transpose is no operation
        "let _t1 = ema.clone();  // [4] line 7: no operation:",
        "let _t2 = x.clone().matmul(_t1);  // [5] line 7",
        "let grads = loss.backward();  // [10] line 9",
        "let grads = GradientsParams::from_grads(grads, &model);  // [11] line 10",
        "model = opt.step(0.001, model, grads);",
        "ema = _t5 + _t7;  // [15] line 11",
        'observe_transposed("ema", "ema", 16, Some(it), None, ema.clone(), false);  // [16] line 12',
        'checkpoint(it, "ema", Some(&ema));',
    ]:
        assert line in main, line
    assert "// [9] line 8: zero_grad(opt): burn has nothing to reset" in main
    assert (
        "weight: Param::from_tensor(Tensor::<2>::from_data(TensorData::new(data::LIN_WEIGHT.to_vec(), [16, 16])" in main
    )
    cargo = files["Cargo.toml"]
    assert 'name = "p10-target"' in cargo and BURN_DEPENDENCY in cargo and "\n[workspace]\n" in cargo
    assert "catch_unwind" not in main


def test_every_statement_is_commented_with_its_index_and_line():
    p = sample_program("optimizer-loop")
    main = render(p)["src/main.rs"]
    for st in p.statements():
        assert f"[{st.index}] line {st.line}" in main, st


def test_small_tensors_are_literals_in_main_and_linear_weights_follow_the_layout():
    x = [float(i) for i in range(6)]
    weight = [0.5, 1.5, -2.0, 3.25, 4.0, -0.125]  # torch [d_out=2, d_in=3]
    ir = {
        "tensors": [
            {"name": "x", "role": "input", "shape": [2, 3], "data": x},
            {"name": "a.weight", "role": "param", "shape": [2, 3], "data": weight, "module": "a"},
            {"name": "b.weight", "role": "param", "shape": [2, 3], "data": weight, "module": "b"},
        ],
        "modules": [
            {"name": "a", "kind": "linear", "attrs": {"d_in": 3, "d_out": 2, "bias": False}},
            {"name": "b", "kind": "linear", "attrs": {"d_in": 3, "d_out": 2, "bias": False, "layout": "copied"}},
        ],
        "body": [
            {"index": 0, "line": 1, "op": "linear", "args": ["a", "x"], "out": "ya"},
            {"index": 1, "line": 2, "op": "linear", "args": ["b", "x"], "out": "yb"},
            {"index": 2, "line": 3, "op": "observe", "args": ["ya"]},
            {"index": 3, "line": 4, "op": "observe", "args": ["yb"]},
        ],
    }
    files = render(ir)
    main = files["src/main.rs"]
    assert "src/data.rs" not in files
    assert "let x = Tensor::<2>::from_floats([[0.0f32, 1.0, 2.0], [3.0, 4.0, 5.0]], &device);" in main
    # burn's [d_in, d_out]: the transpose of torch's buffer, or the buffer as is ("copied")
    assert "Tensor::<2>::from_floats([[0.5f32, 3.25], [1.5, 4.0], [-2.0, -0.125]], &device)" in main
    assert "Tensor::<2>::from_floats([[0.5f32, 1.5], [-2.0, 3.25], [4.0, -0.125]], &device)" in main
    assert "bias: None," in main and 'layout "copied"' in main


def test_a_loop_whose_values_change_type_has_its_first_iterations_written_out():
    main = render(sample_program("grads-held-across-iterations"))["src/main.rs"]
    # iteration 1 holds no gradients, the next ones hold the previous backward's
    assert "// iteration 1 of the loop at line 3, written out" in main
    assert 'observe("w", "w", 1, Some(1), None, model.w.val(), true);' in main
    assert "let mut grads = _t2.backward();" in main
    assert "for it in 2..=3 {" in main
    assert 'observe("w", "w", 1, Some(it), model.w.grad(&grads), model.w.val(), true);' in main
    assert "grads = _t2.backward();  // [4] line 5" in main


def test_a_name_bound_in_a_loop_and_read_after_it_is_declared_before_it():
    main = render(sample_program("bound-in-the-loop"))["src/main.rs"]
    assert "let mut y = Tensor::<2>::empty([1, 1], &device);" in main
    assert "y = x.clone().matmul(model.w.val());" in main


def test_accumulated_gradients_use_the_gradients_accumulator():
    main = render(sample_program("grad-accumulation"))["src/main.rs"]
    for line in [
        "let mut fresh = _t6.backward();  // [8] line 6: accumulate=True",
        "let mut acc = GradientsAccumulator::<Model>::new();",
        "acc.accumulate(&model, GradientsParams::from_module(&mut grads, &model));",
        "let grads_sum = acc.grads();",
        'observe("grad before step", "w", 9, grads_sum.get::<2>(model.w.id), model.w.val(), true);',
        "model = opt.step(0.1, model, grads_sum);",
    ]:
        assert line in main, line


def test_names_that_are_rust_keywords_or_the_codes_own_are_renamed():
    source = "type = input(2)\nmodel = param(2)\nW = input(2)\ngrads = type * model + W\nobserve(grads)\n"
    main = render(program(source))["src/main.rs"]
    assert "#![allow(non_snake_case)]" in main
    assert "let type_ = Tensor::<1>::from_floats(" in main and "let W = " in main
    assert "    model: Param<Tensor<1>>," in main  # a field: no clash with the variable `model`
    assert "let _t1 = type_ * model.model.val();" in main and "let grads_ = _t1 + W;" in main
    assert 'observe("grads", "grads", 2, None, grads_, true);' in main


@pytest.mark.parametrize(
    ("source", "refused"),
    [
        ("a = param(2)\nwith no_grad():\n    b = a * 2.0\n", "no `no_grad`"),
        ("a = param(2)\nb = a * 2.0\nretain_grad(b)\n", "no `retain_grad`"),
        ("a = param(2)\nb = sum(a)\nbackward(b, retain_graph=True)\n", "retain_graph=True"),
        ("a = param(2, 2)\nb = param(2)\nc = a + b\n", "`add` of a rank-2 and a rank-1 tensor"),
    ],
)
def test_an_operation_burn_lacks_is_refused_by_name(source, refused):
    p = program(source)
    with pytest.raises(ValueError, match=re.escape(refused)):
        render(p)
    assert sketch(p) is None


def test_every_operation_the_probe_lacks_is_refused_by_the_renderer():
    lacked = {op for op, status in _probe.PROGRAM_OPS.items() if status == "unsupported"}
    sources = {
        "no_grad": "a = param(2)\nwith no_grad():\n    b = a * 2.0\n",
        "retain_grad": "a = param(2)\nb = a * 2.0\nretain_grad(b)\n",
    }
    assert lacked == set(sources)
    for op, source in sources.items():
        with pytest.raises(ValueError, match=f"has no `{op}`"):
            render(program(source))


# ---- the families' operations (runner/program/rust/families/) ----------------------------------


def _sources_by_op() -> dict[str, list[str]]:
    """Every program of the agreement tests (`test_program_both`, `test_agree_FAMILY`) and of
    `FAMILY_SAMPLE`, by the operations it uses."""
    sources: list[str] = list(importlib.import_module("test_program_both").PROGRAMS.values())
    for path in sorted(Path(__file__).parent.glob("test_agree_*.py")):
        for listed in importlib.import_module(path.stem).PROGRAMS.values():
            sources += listed
    sources += [source for source, _ in FAMILY_SAMPLE.values() if not source.startswith("case:")]
    by_op: dict[str, list[str]] = {}
    for source in sources:
        for op in {st.op for st in program(source).statements()}:
            by_op.setdefault(op, []).append(source)
    return by_op


@pytest.fixture(scope="module")
def sources_by_op() -> dict[str, list[str]]:
    return _sources_by_op()


@pytest.mark.parametrize("op", list(OPS))
def test_every_operation_renders_or_is_refused_by_name(op, sources_by_op):
    """Each operation's programs render, or `render` refuses them with a `ValueError` naming it
    (burn lacks it, or the interpreter stops there). An operation without a rendering (a new one
    of the table: add it in runner/program/rust/families/) fails here; never a KeyError or another
    exception, and never broken Rust (the cargo tests build the rendered ones)."""
    sources = sources_by_op.get(op)
    assert sources, f"no program of the agreement tests uses `{op}`"
    missing: list[str] = []
    for source in sources:
        p = program(source)
        try:
            files = render(p)
        except ValueError as err:
            message = str(err)
            if "the Rust reproducer has no rendering of" in message:
                missing.append(message)
                continue
            # refused by name: this operation or another of the program (one burn lacks)
            named = {st.op for st in p.statements()}
            assert any(f"`{o}`" in message or f"`{o}(" in message for o in named), message
            continue
        assert "fn main() {" in files["src/main.rs"]
    assert not missing, "; ".join(sorted(set(missing)))


def test_an_operation_or_module_kind_without_a_rendering_is_refused_by_name(monkeypatch):
    gelu = program("a = param(2, 3)\ny = gelu(a)\nobserve(y)\n")
    monkeypatch.delitem(families.OPS, "gelu")
    with pytest.raises(
        ValueError, match=re.escape("no rendering of `gelu` yet (runner/program/rust/families/layers.py)")
    ):
        render(gelu)
    assert sketch(gelu) is None
    conv = program("conv = Conv2d(1, 2, 3)\nx = input(1, 1, 4, 4)\ny = conv(x)\nobserve(y)\n")
    monkeypatch.delitem(families.MODULES, "conv2d")
    with pytest.raises(
        ValueError,
        match=re.escape("module `conv`: the Rust reproducer has no rendering of the module kind `conv2d` (Conv2d)"),
    ):
        render(conv)


def test_a_module_kind_is_built_from_its_config_with_only_the_attributes_given():
    main = render(family_program("conv2d"))["src/main.rs"]
    for line in [
        "    conv: Conv2d,",
        "        conv: {  // conv = Conv2d(2, 4, 3, padding=1): built from its config, then the program's data",
        "            let mut conv = Conv2dConfig::new([2, 4], [3, 3]).with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1)).init(&device);",
        "            let mut c2 = Conv2dConfig::new([4, 4], [3, 3]).with_stride([2, 2]).with_dilation([2, 2]).with_groups(2)"
        ".with_bias(false).init(&device);",
        "            conv.bias = Some(Param::from_tensor(Tensor::<1>::from_floats(",
        "            conv\n        },",
        "use burn::nn::conv::{Conv2d, Conv2dConfig};",
        "model.conv.bias = model.conv.bias.map(|b| b.set_require_grad(false));  // [12] line 14",
        "model.c2.weight = model.c2.weight.map(|t| t.add_scalar(0.5));  // [13] line 15",
        "let g = model.conv.weight.grad(&grads).expect(",
    ]:
        assert line in main, line
    assert "c2.bias" not in main  # bias=False: burn's config makes none, nothing is loaded


def test_family_operations_follow_the_interpreter_spelling():
    gelu = render(family_program("gelu"))["src/main.rs"]
    assert "let y = activation::gelu(_t1);" in gelu
    assert "let t = activation::gelu_approximate(_t2);" in gelu
    assert "let n = activation::gelu(model.a.val());" in gelu  # approximate="none": the exact form
    assert "let w = activation::gelu(model.lin.weight.val().transpose());" in gelu  # in torch's layout
    cat = render(family_program("cat"))["src/main.rs"]
    assert "Tensor::cat(vec![model.a.val(), model.b.val(), _t1], 0)" in cat
    assert "Tensor::cat(vec![model.a.val(), model.a.val()], 1)" in cat  # dim=-1 of a rank 2
    argmax = render(family_program("argmax"))["src/main.rs"]
    for line in [
        "let i = v.argmax(0);",  # a rank-1 result keeps its dim, as the interpreter's
        "let j = x.clone().argmax(1);",  # keepdim
        "let k = z.argmax(1).squeeze_dim::<2>(1);",
        "let big = Tensor::<1, Int>::from_data(TensorData::new(data::BIG.to_vec(), [70]), &device);",
        "let mask = Tensor::<2, Bool>::from_bool([[false, true, true, true], [false, false, true, true], ",
        'observe_int("m", "m", 6, Some(it), m, true);',
        'observe_bool("wide", "wide", 12, None, wide, false);',
        "use burn::tensor::{Bool, Device, Int, Tensor, TensorData};",
    ]:
        assert line in argmax, line
    loss = render(family_program("cross_entropy"))["src/main.rs"]
    assert "CrossEntropyLossConfig::new().init(&device).forward(_t1, t.clone());" in loss
    assert "CrossEntropyLossConfig::new().with_smoothing(Some(0.2)).init(&device).forward(_t2, t.clone());" in loss


def test_module_kinds_are_built_as_the_interpreter_builds_them():
    state = render(family_program("module-state"))["src/main.rs"]
    for line in [
        "    bn: BatchNorm,",
        "    mha: MultiHeadAttention,",
        "            let mut bn = BatchNormConfig::new(2).with_momentum(0.3).init(&device);",
        "            bn.running_mean = RunningState::new(Tensor::<1>::from_floats([0.0f32, 0.0], &device));",
        "            let mut plain = BatchNormConfig::new(3).init(&device);",  # affine=False: no burn spelling
        "            let mut mha = MultiHeadAttentionConfig::new(4, 2).with_dropout(0.0).init(&device);",
        # torch's [3d, d] in_proj: three burn Linears, each its rows transposed into [d_in, d_out]
        "            mha.key.weight = Param::from_tensor(Tensor::<2>::from_floats(",
        "            mha.value.bias = Some(Param::from_tensor(",
        "let a = model.mha.forward(MhaInput::new(q.clone(), q.clone(), q.clone())).context;",  # batch_first
        # read back joined, in burn's layout (observed transposed), the gradients joined too
        'observe_transposed("mha.in_proj_weight", "mha.in_proj_weight", 16, Some(it), [model.mha.query.weight'
        ".grad(&grads), model.mha.key.weight.grad(&grads), model.mha.value.weight.grad(&grads)].into_iter()"
        ".collect::<Option<Vec<_>>>().map(|parts| Tensor::cat(parts, 1)), Tensor::cat(vec![model.mha.query.weight"
        ".val(), model.mha.key.weight.val(), model.mha.value.weight.val()], 1), true);",
        'observe("bn.running_mean", "bn.running_mean", 18, Some(it), None, model.bn.running_mean.value_sync(), true);',
        "model.mha.value.weight = model.mha.value.weight.set_require_grad(false);",
        "model.mha.key.bias = model.mha.key.bias.map(|b| b.map(|t| t.add_scalar(0.5)));",
        "model.bn.running_mean = RunningState::new(model.bn.running_mean.value_sync().add_scalar(1.0));  // [26] line 24",
        "// [24] line 22: require_grad(bn.running_var): a buffer is no param in burn (a RunningState): unchanged",
        "let z = eval_model.bn.forward(x);",
    ]:
        assert line in state, line
    summed = render(family_program("attention-gradients-accumulated"))["src/main.rs"]
    assert "[grads_sum.get::<2>(model.mha.query.weight.id), grads_sum.get::<2>(model.mha.key.weight.id), " in summed
    assert ".context.swap_dims(0, 1);" in summed  # [L, N, d]: the port swaps dims 0 and 1 around the call
    masked = render(family_program("multihead_attention-0"))["src/main.rs"]
    assert (
        "        let input = MhaInput::new(query, key, value).mask_attn(mask.unsqueeze::<3>().expand([n, l, s]));\n"
        "        model.mha.forward(input).context.swap_dims(0, 1)\n    };"
    ) in masked
    for name, line in [
        ("conv1d-1", "Conv1dConfig::new(4, 6, 3).with_stride(2).with_dilation(2).with_groups(2).with_bias(false)"),
        ("layer_norm-1", "ln: LayerNormConfig::new(4).with_epsilon(0.01).with_bias(false).init(&device),"),
        ("group_norm-1", "gn: GroupNormConfig::new(3, 6).with_epsilon(0.001).with_affine(false).init(&device),"),
        ("embedding-1", "let y = model.emb.forward(ids.unsqueeze::<2>()).squeeze_dim::<2>(0);"),
        ("dropout-0", "drop: DropoutConfig::new(0.0).init(),  // drop = Dropout(p=0.0): built from its config"),
        ("dropout-eval", "drop: DropoutConfig::new(0.5).init(),"),  # burn has no default: torch's
        ("leaky_relu-0", "LeakyReluConfig::new().init().forward(model.a.val());"),
        ("softmax-1", "activation::softmax(_t1, 0);"),
        ("max_pool2d-2", "MaxPool2dConfig::new([3, 3]).with_strides([2, 2]).with_padding(PaddingConfig2d::Explicit("),
        ("avg_pool2d-2", ".with_count_include_pad(false).init().forward(model.x.val());"),
    ]:
        assert line in render(family_program(name))["src/main.rs"], (name, line)


def test_tensor_operations_and_losses_follow_the_interpreter_spelling():
    for name, line in [
        ("stack-2", "let k = Tensor::stack::<3>(vec![m.clone(), m], 2);"),
        ("narrow-1", "let z = model.x.val().narrow(0, 0, 2);"),
        ("index_select-1", "let z = k.select(1, i);"),
        ("gather-1", "let y = model.x.val().gather(0, i);"),
        ("max_dim-2", "let z = model.v.val().max_dim(0);"),  # rank 1: burn keeps [1]
        ("max_dim-2", "let u = model.w.val().max_dim(2).squeeze_dim::<2>(2);"),
        ("var-1", "let a = model.x.val().var_bias(1).squeeze_dim::<1>(1);"),
        ("var-1", "let b = model.x.val().var_bias(0);"),  # correction=0, keepdim
        ("var-1", "let c = model.x.val().var(1).squeeze_dim::<1>(1);"),
        ("clamp-1", "let z = model.x.val().clamp_min(0.5);"),
        ("unsqueeze-1", "let w = model.y.val().mask_where(_t1, model.x.val());"),
        ("masked_fill-1", "let y = model.x.val().mask_fill(m, 2.5);"),
        ("flatten-1", "let k = i.flatten::<1>(0, 1);"),
        ("unsqueeze-1", "let u = model.x.val().unsqueeze_dim::<4>(3);"),
        ("squeeze-1", "let k = i.squeeze_dim::<1>(0);"),
        ("squeeze-1", "        if t.dims()[0] == 1 { t } else { t.squeeze_dim::<1>(0) }"),
        ("expand-1", "let y = model.x.val().expand::<3, _>([2, 3, -1]);"),
        ("gt-0", "let a = x.clone().greater(y);"),
        ("lt_scalar-0", "let b = x.lower_elem(2.0);"),
        ("mse_loss-1", "let s = MseLoss::new().forward(_t1, t.clone(), Reduction::Sum);"),
        ("mse_loss-1", "let n = MseLoss::new().forward_no_reduction(_t2, t);"),
        ("huber_loss-1", "HuberLossConfig::new(1.0).init().forward_no_reduction(model.x.val(), z);"),
        ("smooth_l1_loss-1", "SmoothL1LossConfig::new().with_beta(0.3).init().forward_with_reduction("),
        ("smooth_l1_loss-1", "let n = SmoothL1LossConfig::new().init().forward(model.x.val(), z);"),
        ("binary_cross_entropy_with_logits-0", ".with_logits(true).init(&device).forward(_t2, y.int());"),
        ("nll_loss-1", "        log_probs.gather(1, target.reshape([n, 1])).neg().reshape([n])\n    };"),
    ]:
        assert line in render(family_program(name))["src/main.rs"], (name, line)
    edges = render(family_program("tensor-edges"))["src/main.rs"]
    for line in [
        # the receiver is read last (moved): the operands are bound first, in the interpreter's order
        "    let w = {  // [1] line 4\n        let (mask, a) = (m, y.clone());\n        y.mask_where(mask, a)\n    };",
        '        let start = size.checked_sub(5).unwrap_or_else(|| panic!("narrow: start -5 is out of range for a '
        'dim of size {size}"));',
        "let s = Tensor::stack::<3>(vec![n.clone(), n.clone(), n.clone()], 2);",
    ]:
        assert line in edges, line


def test_eval_takes_a_valid_snapshot_that_the_module_calls_use_until_train():
    main = render(family_program("train-eval"))["src/main.rs"]
    for line in [
        "let mut eval_model = model.valid();  // [1] line 6: eval()",
        "let y0 = eval_model.conv.forward(x.clone());  // [2] line 7",
        "// [4] line 9: train(): the module calls use `model` again",
        "let y = model.conv.forward(x.clone());  // [6] line 11",
        "eval_model = model.valid();  // [15] line 16",  # in the loop: the variable declared before it
        "let e = eval_model.conv.forward(x.clone());  // [22] line 23",
        "let _t5 = eval_model.lin.forward(h);  // [24] line 25",  # a Linear call in eval mode uses the snapshot too
        "// [27] line 27: train(): already in training mode",
    ]:
        assert line in main, line
    # a loop whose first iteration trains and the next ones evaluate: the first is written out
    loop = render(family_program("mode-changes-in-a-loop"))["src/main.rs"]
    assert "// iteration 1 of the loop at line 3, written out" in loop
    assert "let y = eval_model.conv.forward(x.clone());  // [1] line 4" in loop
    assert "for it in 2..=4 {" in loop


@pytest.mark.parametrize(
    ("source", "refused"),
    [
        (
            'a = input(2, dtype="int", high=3)\nb = input(2, dtype="int", high=3)\nc = cat(a, b)\n',
            "joins float tensors only",
        ),
        ("a = param(2, 3)\nb = param(3)\nc = cat(a, b)\n", "cat: the tensors have different ranks"),
        ("a = param(2, 3)\nc = argmax(a, 2)\n", "argmax: dim 2 is out of range for a rank-2 tensor"),
        ("conv = Conv2d(1, 2, 3)\nx = input(1, 4, 4)\ny = conv(x)\n", "a Conv2d takes [N, C, H, W], got a rank-3"),
        (
            'a = param(3, 4)\nt = input(3, 2, dtype="int", high=4)\nl = cross_entropy(a, t)\n',
            "takes class indices [N]",
        ),
        (
            'a = param(3, 4)\nt = input(3, dtype="int", high=4)\nl = cross_entropy(a, t, reduction="sum")\n',
            "has no `cross_entropy(reduction='sum')`",
        ),
        ("a = param(2, 3)\nb = param(3)\nc = stack(a, b)\n", "stack: the tensors have different ranks"),
        ("a = param(2, 2, 2, 2)\nb = unsqueeze(a, 0)\n", "unsqueeze: the result would have rank 5"),
        ("a = param(2, 3)\nb = stack(a, a, dim=3)\n", "stack: dim 3 is out of range for a rank-3 tensor"),
        ('a = param(2, 3)\ni = input(2, 1, dtype="int", high=2)\nb = index_select(a, i, dim=0)\n', "rank-1 int"),
        ('a = param(2, 3)\ni = input(2, dtype="int", high=2)\nb = gather(a, i, dim=0)\n', "the tensor's rank"),
        ("a = param(2, 3)\nb = var(a, 1, unbiased=False, correction=0)\n", "not both"),
        ("a = param(2, 3)\nb = clamp(a)\n", "give `min`, `max` or both"),
        ("a = param(2, 3)\nb = expand(a, [3])\n", "1 sizes for a rank-2 tensor"),
        ("a = param(2, 3)\nb = param(3)\nc = gt(a, b)\n", "operands of equal rank"),
        ("a = param(2, 3)\nb = param(3)\nc = mse_loss(a, b)\n", "an input and a target of one rank"),
        ("bn = BatchNorm1d(2)\nx = input(1, 2, 3, 3)\ny = bn(x)\n", "a BatchNorm1d takes [N, C] or [N, C, L]"),
        ('emb = Embedding(3, 2)\ni = input(1, 2, 2, dtype="int", high=3)\ny = emb(i)\n', "takes ids [N, L]"),
        (
            'mha = MultiheadAttention(4, 2)\nq = input(3, 2, 4)\nm = input(2, 3, 3, dtype="bool")\ny = mha(q, q, q, m)\n',
            "a bool attention mask [L, S], got a rank-3 one",
        ),
        ("x = input(2, 3)\ny = max_pool2d(x, 2)\n", "burn's 2-d pooling takes [N, C, H, W], got a rank-2"),
        ('a = param(3, 4)\nt = input(3, 1, dtype="int", high=4)\nl = nll_loss(a, t)\n', "takes class indices [N]"),
    ],
)
def test_a_family_statement_the_interpreter_stops_at_is_refused(source, refused):
    with pytest.raises(ValueError, match=re.escape(refused)):
        render(program(source))


def test_optimizers_and_schedules_follow_the_interpreter_spelling():
    """Each `with_*` only for an attribute the program gives (burn's own defaults otherwise); a
    schedule from the optimizer's `lr`, its `init()` error the interpreter's message; the
    optimizer's learning rate a variable that `sched_step` sets and `step` passes."""
    main = render(family_program("schedules"))["src/main.rs"]
    for line in [
        "let mut a = AdamWConfig::new().with_beta_1(0.8).with_beta_2(0.99).with_epsilon(1e-06).with_weight_decay(0.0)"
        ".with_amsgrad(true).with_grad_clipping(Some(GradientClippingConfig::Norm(0.5))).init();",
        "let mut r = RmsPropConfig::new().with_alpha(0.9).with_epsilon(1e-07).with_momentum(0.0).with_centered(true)"
        ".with_weight_decay(Some(WeightDecayConfig::new(0.01))).with_grad_clipping(Some(GradientClippingConfig::Value(0.1)))"
        ".init();",
        "let mut r_lr = ModuleLearningRate::from(0.02);",  # read by the first step(r), before any sched_step(sr)
        'let mut sa = StepLrSchedulerConfig::new(0.05, 2).init().unwrap_or_else(|e| panic!("StepLrSchedulerConfig::init: '
        '{e}"));',
        # LinearLR's omitted factors and count: torch's, as the interpreter writes them
        "let mut sr = LinearLrSchedulerConfig::new(0.02 * 0.3333333333333333, 0.02 * 1.0, 5).init()",
        "let _ = CosineAnnealingLrSchedulerConfig::new(0.02, 5).with_min_lr(0.001).init()",  # never stepped
        "let a_lr = sa.step();  // [12] line 13",  # burn's order: set before the step that reads it
        "model = a.step(a_lr, model, grads);",
        "model = r.step(r_lr, model, grads);",
        "r_lr = sr.step();  // [20] line 18",  # torch's order: the loop carries it to the next step
        "use burn::optim::lr_scheduler::module_lr_scheduler::ModuleLearningRate;",
    ]:
        assert line in main, line
    assert (
        "AdamWConfig::new().with_epsilon(1e-08).with_weight_decay(0.01).init()"
        in render(family_program("adamw-0"))["src/main.rs"]
    )
    omitted = render(family_program("rmsprop_defaults-defaults"))["src/main.rs"]
    assert "let mut opt = RmsPropConfig::new().init();" in omitted  # burn's eps 1e-5 and momentum 0.9
    # a sequential schedule: burn's config of its schedules' configs, as their statements wrote them
    sequential = render(family_program("sequential_lr-0"))["src/main.rs"]
    assert (
        "let mut sched = SequentialLrSchedulerConfig::new(vec![LrSchedulerConfig::Linear(LinearLrSchedulerConfig::new("
        "0.1 * 1.0, 0.1 * 0.5, 2)), LrSchedulerConfig::Cosine(CosineAnnealingLrSchedulerConfig::new(0.1, 10))], "
        'vec![2]).init().unwrap_or_else(|e| panic!("SequentialLrSchedulerConfig::init: {e}"));' in sequential
    )
    assert "let _ = CosineAnnealingLrSchedulerConfig::new(0.1, 10).init()" in sequential  # never stepped itself
    loops = render(family_program("schedules-in-loops"))["src/main.rs"]
    for line in [
        "let mut opt_lr = ModuleLearningRate::from(0.5);",  # step(opt) after the loop reads it if it never ran
        "        let _ = sched.step();  // [3] line 6: the learning rate it returns is replaced before `opt` steps with it",
        "        opt_lr = sched.step();  // [4] line 7",
        "        model = opt.step(opt_lr.clone(), model, grads);",
        "    model = opt.step(opt_lr, model, grads);",  # its last use: moved
        "        let o2_lr = ModuleLearningRate::from(0.1);",
        "        let o2_lr = s2.step();  // [22] line 22",
    ]:
        assert line in loops, line


def test_observations_at_every_checkpoint_hold_their_values_until_the_checkpoint_ends():
    """The statements observed at every checkpoint are listed for the helpers, which hold a timed
    observation with values until its iteration ends (its values read then); the first iteration,
    written out and a checkpoint, prints its observations at its end too."""
    main = render(family_program("every-checkpoint"))["src/main.rs"]
    assert "const EVERY_CHECKPOINT: &[u32] = &[7, 8, 9, 12];" in main
    assert "with_values && iteration.is_none_or(|it| it == LAST || EVERY_CHECKPOINT.contains(&op_index));" in main
    first, loop = main.split("for it in 2..=5 {", 1)
    assert 'observe_int("argmax", "_t5", 12, Some(1), _t5, true);' in first
    assert first.rstrip().endswith("print_pending(true);  // a checkpoint's observations, with their values")
    assert "print_pending(true);" in loop


@pytest.mark.parametrize(
    ("source", "refused"),
    [
        # the interpreter's sched_step leaves an optimizer bound to the name since alone
        (
            "p = param(1)\nopt = sgd(lr=0.1)\nsched = step_lr(opt, 2)\nopt = sgd(lr=0.2)\nsched_step(sched)\nstep(opt)\n",
            "line 5: `sched_step(sched)`: `opt` names another optimizer than the one the schedule `sched` was made from",
        ),
        # ... in the second iteration of a loop (the first is written out)
        (
            "p = param(1)\nopt = sgd(lr=0.1)\nsched = step_lr(opt, 2)\nfor i in range(3):\n    sched_step(sched)\n"
            "    backward(sum(p))\n    step(opt)\n    opt = sgd(lr=0.1)\n",
            "no rendering of a schedule that outlives its optimizer",
        ),
        (
            "p = param(1)\na = sgd(lr=0.1)\nb = sgd(lr=0.2)\ns = step_lr(a, 2)\ns = step_lr(b, 2)\nsched_step(s)\n",
            "line 5: `step_lr` binds `s` to a schedule of `b`, and line 4 to one of `a`",
        ),
    ],
)
def test_a_schedule_whose_optimizer_changes_is_refused(source, refused):
    p = program(source)
    with pytest.raises(ValueError, match=re.escape(refused)):
        render(p)
    assert sketch(p) is None


def test_target_network_operations_change_the_training_model():
    main = render(family_program("target-modules"))["src/main.rs"]
    for line in [
        "model.tc = model.tc.no_grad();  // [0] line 9: persistent, not a scope",
        "        model.tb = soft_update(model.tb, &model.bn, 0.5);  // [14] line 16",
        "        model.tm = soft_update(model.tm, &model.mha, 0.1);  // [16] line 18",
        # in eval mode: the training model's module is replaced, the snapshot's stays as it was
        "model.tc = model.conv.clone();  // [22] line 24: the online module itself, its ParamIds too",
        "let _t8 = eval_model.tc.forward(x.clone());  // [23] line 25",
        # the helper: a ModuleVisitor collects the online's tensors, a ModuleMapper maps the target's
        "impl ModuleMapper for SoftUpdater {",
        "        param.map(|t| t.mul_scalar(1.0 - tau) + online.mul_scalar(tau))",
        "fn soft_update<M: Module>(target: M, online: &M, tau: f64) -> M {",
        "use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, RunningState};",
        "use std::collections::VecDeque;",
    ]:
        assert line in main, line
    copied = render(family_program("target_network_copy-target-first"))["src/main.rs"]
    assert "model.target = model.online.clone();  // [0] line 5" in copied
    assert "soft_update" not in copied and "ModuleMapper" not in copied  # the helper only where it is called


def test_the_sketch_shows_module_kinds_and_int_inputs():
    text = sketch(family_program("cross_entropy"))
    assert text is not None and "let t = Tensor::<1, Int>::random([5], Distribution::Uniform(0.0, " in text
    text = sketch(family_program("conv2d"))
    assert text is not None
    assert (
        "conv: Conv2dConfig::new([2, 4], [3, 3]).with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1)).init(&device),"
        in text
    )


def test_the_sketch_is_the_code_without_data_or_printing():
    text = sketch(program(P10.format(loss="out ** 2"), P10_SETTINGS))
    assert text is not None
    assert "let x = Tensor::<2>::random([8, 16], Distribution::Default, &device);" in text
    assert "lin: LinearConfig::new(16, 16).with_bias(true).init(&device)," in text
    assert "let mut ema = model.lin.weight.val().detach();" in text
    assert "observe(&ema);" in text and "observe(&model.lin.weight);" in text
    assert "// [" not in text and "from_floats" not in text and "checkpoint" not in text


def test_write_reproducer_writes_a_crate_with_a_readme(tmp_path):
    crate = tmp_path / "found" / "rust"
    paths = write_reproducer(sample_program("backward-twice-panics"), crate, "found_0001")
    assert sorted(p.relative_to(crate).as_posix() for p in paths) == ["Cargo.toml", "README.md", "src/main.rs"]
    assert "cargo run --release" in (crate / "README.md").read_text()
    assert 'name = "found-0001"' in (crate / "Cargo.toml").read_text()
    with pytest.raises(ValueError, match="no_grad"):
        write_reproducer(program("a = param(2)\nwith no_grad():\n    b = a * 2.0\n"), tmp_path / "no", "x")
    assert not (tmp_path / "no").exists()


def test_write_bundle_makes_modules_of_programs_and_of_written_crates(tmp_path):
    write_reproducer(sample_program("log-of-negative"), tmp_path / "found" / "rust", "case_7")
    big = program("w = param(40, 40)\nobserve(w)\n")
    members = {"first": sample_program("grad-none-error"), "case_7": tmp_path / "found" / "rust", "Big one": big}
    folder = tmp_path / "bundle"
    assert write_bundle(folder, members, lockfile=PROJECT_ROOT / "Cargo.lock") == ["first", "case_7", "big_one"]
    written = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert written == ["Cargo.lock", "Cargo.toml", "src/big_one.rs", "src/big_one/data.rs", "src/case_7.rs"] + [
        "src/first.rs",
        "src/main.rs",
    ]
    manifest = (folder / "Cargo.toml").read_text()
    assert 'name = "bundle"' in manifest and "[workspace]" in manifest
    assert manifest.split("[dependencies]\n")[1].split("\n\n")[0].splitlines() == list(BUNDLE_DEPENDENCIES)
    # the bundle's own code at its level; no other package's profile is touched
    profiles = tomllib.loads(manifest)["profile"]
    assert profiles == {"release": {"package": {"bundle": {"opt-level": BUNDLE_OPT_LEVEL}}}}
    assert (folder / "Cargo.lock").read_text() == (PROJECT_ROOT / "Cargo.lock").read_text()
    # each module is its crate's main.rs with `fn main` made callable, nothing else changed
    crates = {
        "first": render(sample_program("grad-none-error"), title="first"),
        "case_7": {"src/main.rs": (tmp_path / "found" / "rust" / "src" / "main.rs").read_text()},
        "big_one": render(big, title="Big one"),
    }
    for module, crate in crates.items():
        got, want = (folder / "src" / f"{module}.rs").read_text().split("\n"), crate["src/main.rs"].split("\n")
        assert len(got) == len(want)
        assert [(g, w) for g, w in zip(got, want) if g != w] == [("pub(crate) fn main() {", "fn main() {")]
    assert "mod data;" in crates["big_one"]["src/main.rs"]
    assert (folder / "src" / "big_one" / "data.rs").read_text() == crates["big_one"]["src/data.rs"]
    dispatcher = (folder / "src" / "main.rs").read_text()
    assert "mod first;\nmod case_7;\nmod big_one;\n" in dispatcher
    assert '    ("case_7", case_7::main),\n' in dispatcher and "::std::process::exit(2);" in dispatcher


def test_write_bundle_leaves_unchanged_files_and_removes_the_modules_it_no_longer_has(tmp_path):
    folder = tmp_path / "bundle"
    members: dict[str, Program] = {
        "a": sample_program("grad-none-error"),
        "b": program("w = param(40, 40)\nobserve(w)\n"),
    }
    write_bundle(folder, members, name="kept")
    stamps = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
    time.sleep(0.01)
    write_bundle(folder, members, name="kept")
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()} == stamps
    assert write_bundle(folder, {"a": members["a"]}, name="kept") == ["a"]
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        "Cargo.toml",
        "src",
        "src/a.rs",
        "src/main.rs",
    ]
    assert (folder / "src" / "a.rs").stat().st_mtime_ns == stamps[folder / "src" / "a.rs"]


def test_write_bundle_refuses_a_folder_that_is_no_reproducers_crate(tmp_path):
    crate = tmp_path / "rust"
    write_reproducer(sample_program("grad-none-error"), crate, "x")
    manifest = (crate / "Cargo.toml").read_text()
    (crate / "Cargo.toml").write_text(manifest.replace("[dependencies]\n", '[dependencies]\nrand = "0.9"\n'))
    with pytest.raises(ValueError, match="its dependencies are not"):
        write_bundle(tmp_path / "b1", {"x": crate})
    (crate / "Cargo.toml").write_text(manifest.replace('edition = "2021"', 'edition = "2024"'))
    with pytest.raises(ValueError, match="edition '2024'"):
        write_bundle(tmp_path / "b2", {"x": crate})
    (crate / "Cargo.toml").write_text(manifest)
    (crate / "src" / "util.rs").write_text("")
    with pytest.raises(ValueError, match=r"util\.rs"):
        write_bundle(tmp_path / "b3", {"x": crate})
    (crate / "src" / "util.rs").unlink()
    main_rs = (crate / "src" / "main.rs").read_text()
    (crate / "src" / "main.rs").write_text(main_rs.replace("fn main() {", "fn main()  {"))
    with pytest.raises(ValueError, match="0 lines `fn main"):
        write_bundle(tmp_path / "b4", {"x": crate})
    assert not any((tmp_path / f"b{i}").exists() for i in range(1, 5))
    (crate / "src" / "main.rs").write_text(main_rs)
    assert write_bundle(tmp_path / "b5", {"x": crate}) == ["x"]


def test_read_run_splits_observations_checkpoints_and_the_panic():
    stdout = (
        '{"label": "w", "tensor": "w", "op_index": 1, "iteration": null, "shape": [2], "values": [NaN, 1.0], '
        '"grad": null, "flags": {}}\n{"checkpoint": 3, "track": "ema", "tracked": true, "flags": {}}\n'
    )
    stderr = (
        "thread 'main' (123) panicked at /x/burn-autodiff-0.22.1/src/runtime/server.rs:75:17:\n"
        "Cannot run backward: graph tape has already been consumed at NodeId(7).\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
    )
    run = read_run(stdout, stderr, 101)
    assert math.isnan(run.observations[0]["values"][0])
    assert run.checkpoints == [{"checkpoint": 3, "track": "ema", "tracked": True, "flags": {}}]
    assert run.panic == {
        "message": "Cannot run backward: graph tape has already been consumed at NodeId(7).",
        "location": "/x/burn-autodiff-0.22.1/src/runtime/server.rs:75:17",
    }


# ---- the reproducers built and run -----------------------------------------------------------


def _node_ids(text: str) -> str:
    # NodeIds count up process-wide: the interpreter's run follows others in this process
    return re.sub(r"NodeId\(\d+\)", "NodeId(_)", text).rstrip()


def _close(a: list[float] | None, b: list[float] | None) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(
        x == y or (math.isnan(x) and math.isnan(y)) or abs(x - y) <= 1e-6 * max(1.0, abs(y)) for x, y in zip(a, b)
    )


def agreement(p: Program, run: ReproducerRun, *, source: str, values: bool = True) -> list[str]:
    """How the reproducer's run differs from the interpreter's (empty: they agree). `values`
    False: the values and gradients are compared by their presence only (see `RANDOM`). `source`:
    the reproducer's own file, where a panic of the runner's code is (`src/NAME.rs` in a bundle)."""
    want = _probe.run_program(p.to_json())
    problems = []
    got_obs, want_obs = run.observations, want["observations"]
    if len(got_obs) != len(want_obs):
        problems.append(f"{len(got_obs)} observations; the interpreter made {len(want_obs)}")
    for got, obs in zip(got_obs, want_obs):
        for key in ("label", "tensor", "op_index", "iteration", "flags"):
            if got[key] != obs[key]:
                problems.append(f"{obs['label']} {key}: {got[key]!r}, interpreter {obs[key]!r}")
        if got["shape"] != list(obs["shape"]):
            problems.append(f"{obs['label']} shape: {got['shape']}, interpreter {obs['shape']}")
        for key in ("values", "grad"):
            if values and not _close(got[key], obs[key]):
                problems.append(f"{obs['label']} {key}: {got[key]}, interpreter {obs[key]}")
            elif not values and (got[key] is None) != (obs[key] is None):
                problems.append(f"{obs['label']} {key}: {got[key] is not None}, interpreter {obs[key] is not None}")
    if p.settings.track is not None:
        got_cps = [(c["checkpoint"], c["flags"]) for c in run.checkpoints]
        want_cps = [(c["step"], c["flags"]) for c in want["checkpoints"]]
        if got_cps != want_cps:
            problems.append(f"checkpoints {got_cps}, interpreter {want_cps}")
    failure = want["failure"]
    if want["outcome"] == "ok":
        if run.returncode != 0 or run.panic is not None:
            problems.append(f"exit {run.returncode}, panic {run.panic}; the interpreter ran to the end")
    elif run.panic is None:
        problems.append(f"no panic; the interpreter's outcome is {want['outcome']}: {failure}")
    else:
        assert failure is not None
        if _node_ids(run.panic["message"]) != _node_ids(failure["message"]):
            problems.append(f"panic {run.panic['message']!r}, interpreter {failure['message']!r}")
        where = failure["location"]
        if where is not None and "/burn-" in where:
            if run.panic["location"] != where:  # burn's own panic: the same place in burn
                problems.append(f"panic at {run.panic['location']}, interpreter {where}")
        elif f"{source}:" not in run.panic["location"]:  # the runner's error or a #[track_caller] panic
            problems.append(f"panic at {run.panic['location']}, expected the reproducer's {source}")
    return problems


BUNDLE = "repro-samples"
"""The package (and binary) the sample reproducers are built as (`write_bundle`)."""


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    """Every sample program as a module of one crate, built once, each run (`BUNDLE NAME`)."""
    folder = cache_dir() / "repro-bundle"
    programs = {name: sample_program(name) for name in SAMPLE}
    programs.update({f"family:{name}": family_program(name) for name in FAMILY_SAMPLE})
    members: dict[str, Program | Path] = dict(programs)
    for name in FOUND:
        programs[f"found:{name}"] = found_program(name)
        members[f"found:{name}"] = CASES_DIR / "found" / name / "rust"
    # the project's Cargo.lock: the versions the shared target directory already holds compiled
    names = write_bundle(folder, members, name=BUNDLE, lockfile=PROJECT_ROOT / "Cargo.lock")
    env = dict(os.environ)
    env.setdefault("CARGO_TARGET_DIR", str(target_dir()))
    started = time.monotonic()
    out = subprocess.run(
        ["cargo", "build", "--release"], cwd=folder, env=env, capture_output=True, text=True, timeout=3000
    )
    seconds = time.monotonic() - started
    assert out.returncode == 0, out.stderr[-6000:]
    exe = Path(env["CARGO_TARGET_DIR"]) / "release" / BUNDLE
    runs = {}
    for key, name in zip(programs, names):
        ran = subprocess.run(
            [str(exe), name], capture_output=True, text=True, timeout=300, env=dict(os.environ, RUST_BACKTRACE="0")
        )
        runs[key] = read_run(ran.stdout, ran.stderr, ran.returncode)
    return {
        "programs": programs,
        "runs": runs,
        "sources": {key: f"src/{name}.rs" for key, name in zip(programs, names)},
        "exe": exe,
        "folder": folder,
        "env": env,
        "build": out.stderr,
        "seconds": seconds,
    }


def _agreement(built: dict[str, Any], key: str, *, values: bool = True) -> list[str]:
    return agreement(built["programs"][key], built["runs"][key], values=values, source=built["sources"][key])


@pytest.mark.slow
@pytest.mark.cargo
def test_the_reproducers_build_without_warnings(built):
    warnings = [line for line in built["build"].splitlines() if line.startswith("warning")]
    assert not warnings, built["build"][-6000:]


@pytest.mark.slow
@pytest.mark.cargo
def test_the_bundle_compiles_only_its_own_code_at_its_level(built):
    """burn and the rest come from the shared target directory as the probe's build left them:
    the bundle's profile override touches its own package only (were it to reach a dependency,
    cargo would compile burn again here, minutes on a cold machine). The fixture's build compiled
    nothing but the bundle (nothing at all when it was built before); cargo's account of every
    unit, asked again (nothing to build now), has the bundle at its level and burn's crates at
    the release profile's 3."""
    compiled = [line.split()[1] for line in built["build"].splitlines() if line.strip().startswith("Compiling ")]
    assert set(compiled) <= {BUNDLE}, compiled
    out = subprocess.run(
        ["cargo", "build", "--release", "--message-format", "json"],
        cwd=built["folder"],
        env=built["env"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    artifacts = [json.loads(line) for line in out.stdout.splitlines() if '"compiler-artifact"' in line]
    assert all(a["fresh"] for a in artifacts), [a["target"]["name"] for a in artifacts if not a["fresh"]]
    bundle = [a["profile"]["opt_level"] for a in artifacts if a["target"]["name"] == BUNDLE]
    assert bundle == [str(BUNDLE_OPT_LEVEL)], bundle
    libraries = {a["target"]["name"]: a["profile"]["opt_level"] for a in artifacts if a["target"]["kind"] == ["lib"]}
    # (burn_derive, a procedural macro, and the build scripts run on the host: build-override's level)
    burn = {name: level for name, level in libraries.items() if name == "burn" or name.startswith("burn_")}
    assert {"burn", "burn_core", "burn_flex", "burn_autodiff"} <= set(burn), sorted(burn)
    assert set(burn.values()) == {"3"}, burn


@pytest.mark.slow
@pytest.mark.cargo
def test_the_bundle_runs_only_the_reproducers_it_names(built):
    names = [Path(source).stem for source in built["sources"].values()]
    for argv in (["no-such-reproducer"], [], [names[0] + " "]):
        ran = subprocess.run([str(built["exe"]), *argv], capture_output=True, text=True, timeout=60)
        assert ran.returncode == 2 and not ran.stdout, (argv, ran.stdout, ran.stderr)
        assert ran.stderr.startswith("unknown reproducer") and ", ".join(names) in ran.stderr, ran.stderr


@pytest.mark.slow
@pytest.mark.cargo
@pytest.mark.parametrize("name", list(SAMPLE))
def test_a_reproducer_prints_what_the_interpreter_observes(built, name):
    problems = _agreement(built, name)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.cargo
@pytest.mark.parametrize("name", list(FAMILY_SAMPLE))
def test_a_family_operations_reproducer_prints_what_the_interpreter_observes(built, name):
    """Where the values cannot agree (`RANDOM`: the same random stream drawn in another process)
    the rest is compared: labels, shapes, flags, which gradients exist, the outcome."""
    key = f"family:{name}"
    problems = _agreement(built, key, values=key not in RANDOM)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.cargo
def test_the_eval_mode_reproducer_shows_an_untracked_module_call(built):
    """In eval mode a module call runs on the `valid()` snapshot: its output is not tracked, and
    a backward of it panics in burn (torch's eval() keeps the graph)."""
    run = built["runs"]["family:backward-in-eval-mode-panics"]
    assert run.panic is not None and "requires a tracked autodiff tensor" in run.panic["message"]
    assert "burn-tensor-0.22.1/src/tensor/api/autodiff.rs" in run.panic["location"]
    flags = [o["flags"]["tracked"] for o in built["runs"]["family:train-eval"].observations]
    assert flags[0] is False and flags[-2] is True  # y0 (eval) untracked, conv(x) after train() tracked


@pytest.mark.slow
@pytest.mark.cargo
@pytest.mark.parametrize(
    "name", FOUND or [pytest.param("none", marks=pytest.mark.skip(reason="no cases/found/*/rust"))]
)
def test_a_found_reproducer_prints_what_the_interpreter_observes(built, name):
    problems = _agreement(built, f"found:{name}")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.cargo
def test_the_p10_reproducers_show_burns_detach_finding(built):
    detach = built["runs"]["p10-detach"]
    assert detach.returncode == 0
    assert [c["checkpoint"] for c in detach.checkpoints] == [1, 2, 6, 12]
    assert all(c["tracked"] is True for c in detach.checkpoints)  # torch's detach() EMA would be untracked
    target = built["runs"]["p10-target-panics"]
    assert target.panic is not None and "graph tape has already been consumed" in target.panic["message"]
    assert "burn-autodiff-0.22.1/src/runtime/server.rs" in target.panic["location"]
    assert [c["checkpoint"] for c in target.checkpoints] == [1, 2]  # the third backward panics
