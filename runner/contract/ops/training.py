"""Training utilities: AdamW, RMSprop, gradient clipping (an optimizer attribute, see
`core.CLIP_ATTRS`), learning-rate schedules, train/eval, target networks.

An optimizer, a scheduler and the target-network operations are the machine's own on the burn
side (`rust_probe/src/program/mod.rs`: the optimizers and schedulers live next to the model), and
on the torch side they are in `runner/program/torch_ops/training.py`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .core import CLIP_ATTRS
from .spec import OMITTED, ArgKind, AttrSpec, AttrValue, ModuleSpec, OpSpec

MODULES: Final[tuple[ModuleSpec, ...]] = ()

_OPT: Final[tuple[ArgKind, ...]] = ("optimizer",)
_LR = AttrSpec("lr", "float", minimum=0, minimum_exclusive=True, doc="learning rate")
_BURN_LR_RANGE = (
    "`init()` returns an error for an initial learning rate outside (0, 1] (outcome `error` at this statement; "
    "torch takes any)"
)


def _beta(name: str, default: float) -> AttrSpec:
    return AttrSpec(
        name,
        "float",
        OMITTED,
        minimum=0,
        maximum=1,
        maximum_exclusive=True,
        torch_default=default,
        burn_default=default,
    )


SPECS: Final[tuple[OpSpec, ...]] = (
    OpSpec(
        "train",
        "training",
        (),
        "none",
        "`train()`",
        "`model.train()`: every module in training mode",
        "back to the training model (the one `valid()` was taken from)",
        "every module in training mode (the default)",
    ),
    OpSpec(
        "eval",
        "training",
        (),
        "none",
        "`eval()`",
        "`model.eval()`: dropout off, batch norm uses its running statistics; gradients still flow",
        "`let model = model.valid()`: a snapshot on the backend without autodiff, every training flag off; "
        "the module calls use it until `train()` (its outputs are not tracked)",
        "every module in evaluation mode",
    ),
    OpSpec(
        "adamw",
        "training",
        (),
        "optimizer",
        "`adamw(lr=, beta1=, beta2=, eps=, weight_decay=, amsgrad=, clip_grad_norm=, clip_grad_value=)` (omitted: "
        "each framework's default)",
        "`torch.optim.AdamW(params, lr=..., ...)` with only the given keywords (`betas` when either beta is given)",
        "`AdamWConfig::new()` `.with_beta_1(..)` `.with_beta_2(..)` `.with_epsilon(..)` `.with_weight_decay(..)` "
        "`.with_amsgrad(..)` each only when given (defaults 0.9, 0.999, **1e-5** and a decoupled weight decay of "
        "**1e-4**; torch's eps is 1e-8 and its weight decay 1e-2), `.with_grad_clipping(..)` for a clip, `.init()`; "
        "`lr` required (burn-optim `src/optim/adamw.rs`)",
        "AdamW (decoupled weight decay) over every param (declaration order)",
        attrs=(
            _LR,
            _beta("beta1", 0.9),
            _beta("beta2", 0.999),
            AttrSpec("eps", "float", OMITTED, minimum=0, minimum_exclusive=True, torch_default=1e-8, burn_default=1e-5),
            AttrSpec(
                "weight_decay",
                "float",
                OMITTED,
                minimum=0,
                torch_default=1e-2,
                burn_default=1e-4,
                doc="decoupled: the param is multiplied by 1 - lr * weight_decay",
            ),
            AttrSpec("amsgrad", "bool", OMITTED, torch_default=False, burn_default=False),
            *CLIP_ATTRS,
        ),
        torch_signature="torch.optim.AdamW",
    ),
    OpSpec(
        "rmsprop",
        "training",
        (),
        "optimizer",
        "`rmsprop(lr=, alpha=, eps=, weight_decay=, momentum=, centered=, clip_grad_norm=, clip_grad_value=)` "
        "(omitted: each framework's default)",
        "`torch.optim.RMSprop(params, lr=..., ...)` with only the given keywords",
        "`RmsPropConfig::new()` `.with_alpha(..)` `.with_epsilon(..)` `.with_momentum(..)` `.with_centered(..)` each "
        "only when given (defaults 0.99, **1e-5**, **0.9** and false; torch's eps is 1e-8 and its momentum 0), "
        "`.with_weight_decay(Some(WeightDecayConfig::new(wd)))` if given and not 0, `.with_grad_clipping(..)` for a "
        "clip, `.init()`; `lr` required (burn-optim `src/optim/rmsprop.rs`)",
        "RMSprop over every param (declaration order)",
        attrs=(
            _LR,
            AttrSpec(
                "alpha",
                "float",
                OMITTED,
                minimum=0,
                maximum=1,
                torch_default=0.99,
                burn_default=0.99,
                doc="smoothing constant of the squared-gradient average",
            ),
            AttrSpec("eps", "float", OMITTED, minimum=0, minimum_exclusive=True, torch_default=1e-8, burn_default=1e-5),
            AttrSpec("weight_decay", "float", OMITTED, minimum=0, torch_default=0.0, burn_default=0.0),
            AttrSpec("momentum", "float", OMITTED, minimum=0, torch_default=0.0, burn_default=0.9),
            AttrSpec("centered", "bool", OMITTED, torch_default=False, burn_default=False),
            *CLIP_ATTRS,
        ),
        torch_signature="torch.optim.RMSprop",
    ),
    OpSpec(
        "step_lr",
        "training",
        _OPT,
        "scheduler",
        "`step_lr(opt, step_size, gamma=)`",
        "`torch.optim.lr_scheduler.StepLR(opt, step_size, gamma=...)`",
        "`StepLrSchedulerConfig::new(lr, step_size)` (`lr`: the optimizer's) `.with_gamma(g)` when given, "
        "`.init()` (burn-optim `src/lr_scheduler/step.rs`)",
        "a schedule that multiplies the learning rate by `gamma` every `step_size` scheduler steps",
        attrs=(
            AttrSpec(
                "step_size", "int", positional=True, minimum=1, maximum=10_000_000, doc="scheduler steps per decay"
            ),
            AttrSpec(
                "gamma",
                "float",
                OMITTED,
                minimum=0,
                minimum_exclusive=True,
                torch_default=0.1,
                burn_default=0.1,
                doc="the factor",
            ),
        ),
        torch_signature="torch.optim.lr_scheduler.StepLR",
    ),
    OpSpec(
        "cosine_lr",
        "training",
        _OPT,
        "scheduler",
        "`cosine_lr(opt, t_max, eta_min=)`",
        "`torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max, eta_min=...)`",
        "`CosineAnnealingLrSchedulerConfig::new(lr, t_max)` (`lr`: the optimizer's) `.with_min_lr(eta_min)` when "
        f"given, `.init()`: {_BURN_LR_RANGE} (burn-optim `src/lr_scheduler/cosine.rs`)",
        "cosine annealing from the optimizer's learning rate to `eta_min` over `t_max` scheduler steps",
        attrs=(
            AttrSpec(
                "t_max",
                "int",
                positional=True,
                minimum=1,
                maximum=10_000_000,
                torch_name="T_max",
                doc="scheduler steps of a half period",
            ),
            AttrSpec(
                "eta_min",
                "float",
                OMITTED,
                minimum=0,
                torch_default=0.0,
                burn_default=0.0,
                doc="the lowest learning rate",
            ),
        ),
        torch_signature="torch.optim.lr_scheduler.CosineAnnealingLR",
    ),
    OpSpec(
        "linear_lr",
        "training",
        _OPT,
        "scheduler",
        "`linear_lr(opt, start_factor=, end_factor=, total_iters=)`",
        "`torch.optim.lr_scheduler.LinearLR(opt, start_factor=..., end_factor=..., total_iters=...)`",
        "`LinearLrSchedulerConfig::new(lr * start_factor, lr * end_factor, total_iters)` (`lr`: the optimizer's), "
        "`.init()`: the config has no defaults, so a port writes torch's (1/3, 1.0, 5) for what the PyTorch line "
        f"omits; {_BURN_LR_RANGE}, and the same for a final learning rate above 1 (burn-optim "
        "`src/lr_scheduler/linear.rs`)",
        "a linear warm-up (or decay) of the learning rate's factor from `start_factor` to `end_factor` over "
        "`total_iters` scheduler steps",
        attrs=(
            AttrSpec(
                "start_factor",
                "float",
                OMITTED,
                minimum=0,
                minimum_exclusive=True,
                maximum=1,
                torch_default=1 / 3,
                burn_writes_torch_default=True,
                doc="burn: no default (a port writes torch's)",
            ),
            AttrSpec(
                "end_factor",
                "float",
                OMITTED,
                minimum=0,
                maximum=1,
                torch_default=1.0,
                burn_writes_torch_default=True,
                doc="burn: no default (a port writes torch's)",
            ),
            AttrSpec(
                "total_iters",
                "int",
                OMITTED,
                minimum=1,
                maximum=10_000_000,
                torch_default=5,
                burn_writes_torch_default=True,
                doc="burn: no default (a port writes torch's)",
            ),
        ),
        torch_signature="torch.optim.lr_scheduler.LinearLR",
    ),
    OpSpec(
        "sequential_lr",
        "training",
        ("optimizer", "scheduler"),
        "scheduler",
        "`sequential_lr(opt, s1, s2, ..., milestones=[m1, ...])`",
        "`torch.optim.lr_scheduler.SequentialLR(opt, schedulers=[s1, s2, ...], milestones=[m1, ...])`: building "
        "it resets the optimizer's learning rate to its initial one, undoes the children's first steps and steps "
        "the first child again; its `m`-th `step()` switches to the next child at its epoch 0 "
        "(`_update_lr(0)`: a cosine child's is the optimizer's initial learning rate), later ones step that child; "
        "so with `sched.step()` after `opt.step()`, optimizer step k + 1 uses child i at epoch k - m (m the "
        "milestone it started at). A count of milestones that is not one less than the children's raises",
        "`SequentialLrSchedulerConfig::new(vec![LrSchedulerConfig::Linear(..), LrSchedulerConfig::Cosine(..), ..], "
        "vec![m1, ..])`, each child the config its own statement writes from the optimizer's `lr`, `.init()`: a "
        "milestone is the number of completed `step()` calls at which the next child takes over, from the child's "
        "own first step (whose value is the child's initial learning rate); `init()` returns an error for "
        "milestones that are 0 or not strictly increasing, for a count that is not one less than the children's, "
        "and for a child config it refuses (outcome `error` at this statement) (burn-optim "
        "`src/lr_scheduler/sequential.rs`)",
        "schedules one after another (a warm-up, then a decay): the next takes over after each milestone's "
        "number of scheduler steps",
        attrs=(
            AttrSpec(
                "milestones",
                "int_list",
                minimum=0,
                maximum=10_000_000,
                doc="scheduler steps after which the next schedule takes over, one fewer than the schedules",
            ),
        ),
        max_args=8,
        torch_signature="torch.optim.lr_scheduler.SequentialLR",
    ),
    OpSpec(
        "sched_step",
        "training",
        ("scheduler",),
        "none",
        "`sched_step(sched)`",
        "`sched.step()`: sets the learning rate of the optimizer's next `step()`",
        "`lr = sched.step()`: the learning rate the port passes to `optim.step(lr, ...)` from then on (before "
        "any scheduler step: the optimizer's `lr`). burn's `step()` returns the schedule's current value and then "
        "advances (the first call gives the initial learning rate), so written where torch's `sched.step()` is "
        "(after the optimizer's step) it lags one step behind torch",
        "advances a learning-rate schedule",
        torch_code="{a0}.step()",
    ),
    OpSpec(
        "copy_module",
        "training",
        ("module", "module"),
        "none",
        "`copy_module(target, online)`",
        "`target.load_state_dict(online.state_dict())`: the values of the params and buffers; the target keeps "
        "its own tensors and their `requires_grad`",
        "`target = online.clone()`: the online module itself, its `ParamId`s and its tensors (tracked leaves that "
        "require grad as the online's do), until one of the two changes. The program's optimizer steps every "
        "param, and finds one gradient per `ParamId`: it updates the first-declared of the two modules only "
        "(`cases/target_network_copy.toml`)",
        "copies a module's params and buffers into another of the same kind and shape (a target network)",
        torch_code="{a0}.load_state_dict({a1}.state_dict())",
    ),
    OpSpec(
        "soft_update",
        "training",
        ("module", "module"),
        "none",
        "`soft_update(target, online, tau)`",
        "under `torch.no_grad()`, for each pair of params: `t.mul_(1 - tau).add_(o, alpha=tau)` (in place: no graph)",
        "for each pair of params: `target.p = target.p.map(|t| t * (1 - tau) + online.p.val() * tau)` (a "
        "`ModuleMapper` over the target): the online's tensor requires grad, so the target's param becomes a "
        "tracked non-leaf whose graph reaches back through every update; a backward through the target's output "
        "then panics at the third step (`graph tape has already been consumed`, `cases/target_soft_update.toml`)",
        "moves a target module's params toward another's: t = (1 - tau) t + tau o (Polyak averaging)",
        attrs=(
            AttrSpec("tau", "float", positional=True, minimum=0, maximum=1, doc="the share of the online params taken"),
        ),
    ),
    OpSpec(
        "module_no_grad",
        "training",
        ("module",),
        "none",
        "`module_no_grad(m)`",
        "`m.requires_grad_(False)`: every param of the module stops requiring grad",
        "`m = m.no_grad()` (`Module::no_grad`: persistent, every float param's `require_grad` false, until "
        "`set_require_grad(true)`; not a scope like `torch.no_grad()`)",
        "stops every param of a module from requiring grad",
        torch_code="{a0}.requires_grad_(False)",
    ),
)

OPTIMIZER_OPS: Final[tuple[str, ...]] = ("sgd", "adam", "adamw", "rmsprop")
SCHEDULER_OPS: Final[tuple[str, ...]] = ("step_lr", "cosine_lr", "linear_lr")
"""The schedules made from an optimizer alone (`sequential_lr` composes them)."""
_CLIP_NAMES: Final = frozenset(a.name for a in CLIP_ATTRS)


def optimizer_keywords(spec: OpSpec, attrs: Mapping[str, AttrValue]) -> dict[str, AttrValue | tuple[float, float]]:
    """The keywords a port passes to torch's optimizer (`spec.torch_signature`): `lr` and the
    attributes the program gives, no others, so torch applies its own defaults; `beta1`/`beta2`
    are torch's `betas`, written when either is given (the other at torch's default, from the
    table, which `tests/test_defaults.py` holds against torch's signature). The clipping
    attributes are not the optimizer's: the port calls `clip_grad_norm_` before `step()`."""
    out: dict[str, AttrValue | tuple[float, float]] = {}
    betas = [spec.attr("beta1"), spec.attr("beta2")]
    for a in spec.attrs:
        if a.name in _CLIP_NAMES or a.name not in attrs:
            continue
        if a.name in ("beta1", "beta2"):
            b1, b2 = betas
            assert b1 is not None and b2 is not None
            out["betas"] = (
                float(attrs.get("beta1", b1.torch_default)),  # type: ignore[arg-type]
                float(attrs.get("beta2", b2.torch_default)),  # type: ignore[arg-type]
            )
            continue
        out[a.torch_name or a.name] = attrs[a.name]
    return out


def clipping(attrs: Mapping[str, AttrValue]) -> tuple[str, float] | None:
    """("norm" | "value", threshold) when an optimizer's attributes clip its gradients."""
    for kind in ("norm", "value"):
        value = attrs.get(f"clip_grad_{kind}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return kind, float(value)
    return None
