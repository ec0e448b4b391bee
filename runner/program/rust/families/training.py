"""Training utilities in the Rust reproducer: the statements the burn interpreter's machine runs
itself (`rust_probe/src/program/mod.rs`: `Kind::SetMode`, the optimizers), as code (see the
package docstring for how to add one).

- `OPTIMIZERS`: op -> the config a port writes (`SgdConfig::new().with_...`, without `.init()`);
  the generator binds it (`let mut opt = ...init();`) and `step(opt)` writes
  `model = opt.step(lr, model, grads)` with the `lr` of the statement.
- `STATEMENTS`: op -> a function that writes the statement's lines itself, with what it may use
  of the generator (`base.Writer`: `g.put`, `g.note`, `g.read_decl`, `g.own_variable`) and the
  state it changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .base import Call, Ctx, Expr, State, Stmt, Writer, literals

IMPORTS: Final = (
    "burn::optim::SgdConfig",
    "burn::optim::AdamConfig",
    "burn::optim::momentum::MomentumConfig",
    "burn::optim::grad_clipping::GradientClippingConfig",
    "burn::optim::decay::WeightDecayConfig",
)


def _weight_decay(c: Call) -> str:
    """A non-zero `weight_decay` (the language's default 0 is burn's None)."""
    wd = literals.num(c.attrs, "weight_decay", 0.0)
    if wd == 0.0:
        return ""
    c.use("burn::optim::decay::WeightDecayConfig")
    return f".with_weight_decay(Some(WeightDecayConfig::new({literals.f32(wd)})))"


def _clipping(c: Call, method: str) -> str:
    """`.with_grad_clipping(Some(GradientClippingConfig::Norm(v)))` for a given `clip_grad_norm` /
    `clip_grad_value` (burn's SgdConfig names the method `with_gradient_clipping`)."""
    for key, variant in (("clip_grad_norm", "Norm"), ("clip_grad_value", "Value")):
        if c.has(key):
            c.use("burn::optim::grad_clipping::GradientClippingConfig")
            return f".{method}(Some(GradientClippingConfig::{variant}({literals.f32(c.num(key))})))"
    return ""


def sgd(c: Call) -> str:
    c.use("burn::optim::SgdConfig")
    config = "SgdConfig::new()"
    momentum = literals.num(c.attrs, "momentum", 0.0)
    if momentum != 0.0:
        c.use("burn::optim::momentum::MomentumConfig")
        m = f"MomentumConfig::new().with_momentum({literals.f64(momentum)})"
        if c.has("dampening"):
            m += f".with_dampening({literals.f64(c.num('dampening'))})"
        if c.has("nesterov"):
            m += f".with_nesterov({'true' if c.attrs['nesterov'] else 'false'})"
        config += f".with_momentum(Some({m}))"
    return config + _weight_decay(c) + _clipping(c, "with_gradient_clipping")


def adam(c: Call) -> str:
    c.use("burn::optim::AdamConfig")
    config = "AdamConfig::new()"
    for key, method in (("beta1", "with_beta_1"), ("beta2", "with_beta_2"), ("eps", "with_epsilon")):
        if c.has(key):
            config += f".{method}({literals.f32(c.num(key))})"
    return config + _weight_decay(c) + _clipping(c, "with_grad_clipping")


OPTIMIZERS: Final = {"sgd": sgd, "adam": adam}


def eval_(g: Writer, st: Stmt, state: State, depth: int, ctx: Ctx) -> None:
    """`eval()`: the interpreter takes `model.valid()` (no autodiff, every training flag off); the
    module calls but Linear's use it until `train()`. Params are still read from `model`."""
    if not g.has_model:
        g.note(depth, st, "eval(): the program has no module or param: nothing to switch")
        return
    model = g.read_decl(g.model)
    note = "eval(): a snapshot without autodiff, training flags off; the module calls use it until train()"
    state.eval_model = g.own_variable(state.eval_model, "eval_model", f"{model}.valid()", depth, st, note)


def train(g: Writer, st: Stmt, state: State, depth: int, ctx: Ctx) -> None:
    """`train()`: the module calls use the training model again (the interpreter drops its snapshot)."""
    if state.training or state.eval_model is None:
        g.note(depth, st, "train(): already in training mode")
        return
    g.note(depth, st, "train(): the module calls use `model` again")
    state.eval_model.value = False


STATEMENTS: Final = {"train": train, "eval": eval_}

OPS: Final[dict[str, Callable[[Call], Expr]]] = {}
"""A training operation that is a plain function of its arguments (the table's `family`), as in
the other families' `OPS`."""
