"""Training utilities in the Rust reproducer: the statements the burn interpreter's machine runs
itself (`rust_probe/src/program/mod.rs`: `Kind::SetMode`, the optimizers, the schedules, the
target networks), as code (see the package docstring for how to add one).

- `OPTIMIZERS`: op -> the config a port writes (`SgdConfig::new().with_...`, without `.init()`);
  the generator binds it (`let mut opt = ...init();`) and `step(opt)` writes
  `model = opt.step(lr, model, grads)` with the `lr` of the statement.
- `SCHEDULERS`: op -> the config a port writes from the optimizer's `lr`
  (`StepLrSchedulerConfig::new(lr, step_size).with_...`, without `.init()`), and its type's name
  (`sequential_lr`: from the configs of the schedules it composes, `VARIANTS` of
  `LrSchedulerConfig`);
  the generator binds `config.init()` (its error a panic with the interpreter's message), writes
  the optimizer's learning rate as a variable (`opt_lr`, `ModuleLearningRate`) that
  `sched_step(sched)` sets (`opt_lr = sched.step();`) and `step(opt)` passes.
- `STATEMENTS`: op -> a function that writes the statement's lines itself, with what it may use
  of the generator (`base.Writer`: `g.put`, `g.note`, `g.read_decl`, `g.own_variable`,
  `g.module`, `g.use`) and the state it changes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from ....contract.ops import OPS as SPECS
from ....contract.ops import AttrValue
from .base import Call, Ctx, Expr, State, Stmt, Writer, literals

IMPORTS: Final = (
    "burn::optim::SgdConfig",
    "burn::optim::AdamConfig",
    "burn::optim::AdamWConfig",
    "burn::optim::RmsPropConfig",
    "burn::optim::momentum::MomentumConfig",
    "burn::optim::grad_clipping::GradientClippingConfig",
    "burn::optim::decay::WeightDecayConfig",
    "burn::optim::lr_scheduler::step::StepLrSchedulerConfig",
    "burn::optim::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig",
    "burn::optim::lr_scheduler::linear::LinearLrSchedulerConfig",
    "burn::optim::lr_scheduler::sequential::SequentialLrSchedulerConfig",
    "burn::optim::lr_scheduler::LrSchedulerConfig",
    "burn::optim::lr_scheduler::module_lr_scheduler::ModuleLearningRate",
    # `soft_update`'s helper (`support.SOFT_UPDATE`)
    "burn::module::ModuleMapper",
    "burn::module::ModuleVisitor",
    "std::any::Any",
    "std::collections::VecDeque",
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


def adamw(c: Call) -> str:
    """As the interpreter's `build_optimizer`: each `with_*` only for a given attribute (a weight
    decay of 0 too: AdamW's is a plain f32, 1e-4 by default)."""
    c.use("burn::optim::AdamWConfig")
    config = "AdamWConfig::new()"
    for key, method in (
        ("beta1", "with_beta_1"),
        ("beta2", "with_beta_2"),
        ("eps", "with_epsilon"),
        ("weight_decay", "with_weight_decay"),
    ):
        if c.has(key):
            config += f".{method}({literals.f32(c.num(key))})"
    if c.has("amsgrad"):
        config += f".with_amsgrad({'true' if c.flag('amsgrad') else 'false'})"
    return config + _clipping(c, "with_grad_clipping")


def rmsprop(c: Call) -> str:
    """As the interpreter's `build_optimizer`: each `with_*` only for a given attribute (a momentum
    of 0 too: burn's default is 0.9); the weight decay a `WeightDecayConfig` when not 0."""
    c.use("burn::optim::RmsPropConfig")
    config = "RmsPropConfig::new()"
    for key, method in (("alpha", "with_alpha"), ("eps", "with_epsilon"), ("momentum", "with_momentum")):
        if c.has(key):
            config += f".{method}({literals.f32(c.num(key))})"
    if c.has("centered"):
        config += f".with_centered({'true' if c.flag('centered') else 'false'})"
    return config + _weight_decay(c) + _clipping(c, "with_grad_clipping")


OPTIMIZERS: Final = {"sgd": sgd, "adam": adam, "adamw": adamw, "rmsprop": rmsprop}


def step_lr(c: Call, lr: float, _schedules: Sequence[str]) -> tuple[str, str]:
    c.use("burn::optim::lr_scheduler::step::StepLrSchedulerConfig")
    config = f"StepLrSchedulerConfig::new({literals.f64(lr)}, {c.integer('step_size')})"
    if c.has("gamma"):
        config += f".with_gamma({literals.f64(c.num('gamma'))})"
    return "StepLrSchedulerConfig", config


def cosine_lr(c: Call, lr: float, _schedules: Sequence[str]) -> tuple[str, str]:
    c.use("burn::optim::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig")
    config = f"CosineAnnealingLrSchedulerConfig::new({literals.f64(lr)}, {c.integer('t_max')})"
    if c.has("eta_min"):
        config += f".with_min_lr({literals.f64(c.num('eta_min'))})"
    return "CosineAnnealingLrSchedulerConfig", config


def linear_lr(c: Call, lr: float, _schedules: Sequence[str]) -> tuple[str, str]:
    """burn's config has no defaults: a factor or count the program omits is torch's (the table's
    `torch_default`, the interpreter's `torch_defaults::LINEAR_LR_*`); the learning rates are the
    optimizer's `lr` times the factors, multiplied at run time as the interpreter does."""
    c.use("burn::optim::lr_scheduler::linear::LinearLrSchedulerConfig")
    spec = SPECS["linear_lr"]

    def given(key: str) -> AttrValue:
        attr = spec.attr(key)
        assert attr is not None and attr.torch_default is not None, key
        return c.attrs.get(key, attr.torch_default)

    start, end, iters = given("start_factor"), given("end_factor"), given("total_iters")
    assert isinstance(start, (int, float)) and isinstance(end, (int, float)) and isinstance(iters, int)
    lr_text = literals.f64(lr)
    config = (
        f"LinearLrSchedulerConfig::new({lr_text} * {literals.f64(start)}, {lr_text} * {literals.f64(end)}, {iters})"
    )
    return "LinearLrSchedulerConfig", config


def sequential_lr(c: Call, lr: float, schedules: Sequence[str]) -> tuple[str, str]:
    """burn's sequential config of the schedules' configs (`schedules`: each as an
    `LrSchedulerConfig` variant, as its own statement wrote it from its optimizer's `lr`), as the
    interpreter's `build_scheduler` composes them; the milestones as they are."""
    c.use("burn::optim::lr_scheduler::sequential::SequentialLrSchedulerConfig")
    c.use("burn::optim::lr_scheduler::LrSchedulerConfig")
    milestones = ", ".join(str(m) for m in c.ints("milestones"))
    return (
        "SequentialLrSchedulerConfig",
        f"SequentialLrSchedulerConfig::new(vec![{', '.join(schedules)}], vec![{milestones}])",
    )


SCHEDULERS: Final = {"step_lr": step_lr, "cosine_lr": cosine_lr, "linear_lr": linear_lr, "sequential_lr": sequential_lr}

VARIANTS: Final = {
    "StepLrSchedulerConfig": "Step",
    "CosineAnnealingLrSchedulerConfig": "Cosine",
    "LinearLrSchedulerConfig": "Linear",
    "SequentialLrSchedulerConfig": "Sequential",
}
"""A schedule's config type -> its variant of burn's `LrSchedulerConfig` (what `SequentialLrSchedulerConfig`
composes)."""


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


def copy_module(g: Writer, st: Stmt, state: State, depth: int, ctx: Ctx) -> None:
    """`target = online.clone()` on the training model (the interpreter's `Kind::CopyModule`; an
    `eval()` snapshot taken before keeps the old target): the online module itself, its
    `ParamId`s and tensors."""
    target, online = st.args
    source = g.module(online)
    g.put(
        depth,
        f"{g.module(target, assigned=True)} = {source}.clone();",
        st,
        "the online module itself, its ParamIds too",
    )


def soft_update(g: Writer, st: Stmt, state: State, depth: int, ctx: Ctx) -> None:
    """`soft_update(target, online, tau)`: the helper's `ModuleMapper` maps each of the target's
    float params (and buffers) to `t * (1 - tau) + o * tau`, as the interpreter's
    `Kind::SoftUpdate` does."""
    target, online = st.args
    tau = literals.num(st.attrs, "tau")
    g.use("soft_update", "Module", "Param")
    for path in (
        "burn::module::ModuleMapper",
        "burn::module::ModuleVisitor",
        "std::any::Any",
        "std::collections::VecDeque",
    ):
        g.import_(path)
    moved = g.module(target)
    source = g.module(online)
    g.put(depth, f"{g.module(target, assigned=True)} = soft_update({moved}, &{source}, {literals.f64(tau)});", st)


def module_no_grad(g: Writer, st: Stmt, state: State, depth: int, ctx: Ctx) -> None:
    """`m = m.no_grad()` (`Module::no_grad`: every float param's `require_grad` false, until set
    again; the interpreter's `Kind::ModuleNoGrad`)."""
    (name,) = st.args
    module = g.module(name)
    g.put(depth, f"{g.module(name, assigned=True)} = {module}.no_grad();", st, "persistent, not a scope")


STATEMENTS: Final = {
    "train": train,
    "eval": eval_,
    "copy_module": copy_module,
    "soft_update": soft_update,
    "module_no_grad": module_no_grad,
}

OPS: Final[dict[str, Callable[[Call], Expr]]] = {}
"""A training operation that is a plain function of its arguments (the table's `family`), as in
the other families' `OPS`."""
