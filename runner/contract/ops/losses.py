"""Losses: cross-entropy, MSE, Huber, smooth L1, BCE with logits, NLL.

The torch side is `torch.nn.functional`'s call; the burn side is the loss module a port
builds (`CrossEntropyLossConfig::new()...init(&device).forward(..)`). Where burn's `forward`
returns the mean with no choice (cross-entropy, BCE), a `reduction` burn's module lacks is an
`unsupported` outcome, not silently another number; where it takes a `Reduction` (MSE, Huber,
smooth L1), burn has no default and the port writes torch's (`mean`), and `none` is the
module's `forward_no_reduction`. burn has no NLL loss: the port writes it with `gather`."""

from __future__ import annotations

from typing import Final

from .spec import OMITTED, AttrSpec, ModuleSpec, OpSpec

MODULES: Final[tuple[ModuleSpec, ...]] = ()

_MEAN_ONLY = "burn 0.22.1's loss module returns the mean; a port sums or keeps the losses itself"
_REDUCTIONS: Final = ("mean", "sum", "none")

_REDUCTION = AttrSpec(
    "reduction",
    "str",
    "mean",
    choices=_REDUCTIONS,
    enum="Reduction",
    doc="torch's default 'mean'; burn's `forward` takes a `Reduction` with no default, so the port writes "
    "torch's (`Reduction::Mean`, `Reduction::Sum`; 'none': `forward_no_reduction`)",
)


SPECS: Final[tuple[OpSpec, ...]] = (
    OpSpec(
        "cross_entropy",
        "loss",
        ("tensor", "tensor"),
        "tensor",
        "`cross_entropy(logits, target, label_smoothing=, reduction=)`",
        "`torch.nn.functional.cross_entropy(logits, target, ...)` (target: class indices)",
        "`CrossEntropyLossConfig::new()` `.with_smoothing(Some(s))` when given, `.init(&device)`, "
        "`.forward(logits, target)` (the mean)",
        "cross-entropy of logits `[N, C]` against class indices `[N]`",
        attrs=(
            AttrSpec(
                "label_smoothing",
                "float",
                OMITTED,
                minimum=0,
                maximum=1,
                torch_default=0.0,
                burn_default=0.0,
                doc="the share of the target spread evenly over the classes (burn: `smoothing` None, no smoothing)",
            ),
            AttrSpec(
                "reduction",
                "str",
                OMITTED,
                choices=_REDUCTIONS,
                enum="Reduction",
                torch_default="mean",
                burn_unsupported=(("sum", "none"), _MEAN_ONLY),
            ),
        ),
        differentiable=True,
        family="losses",
        arg_dtypes=("float", "int"),
        torch_call="torch.nn.functional.cross_entropy",
    ),
    OpSpec(
        "mse_loss",
        "loss",
        ("tensor", "tensor"),
        "tensor",
        "`mse_loss(input, target, reduction='mean')`",
        "`torch.nn.functional.mse_loss(input, target, reduction=...)`",
        "`MseLoss::new().forward(input, target, Reduction::Mean)` (`Reduction::Sum`; 'none': "
        "`.forward_no_reduction(input, target)`); equal shapes (torch broadcasts with a warning)",
        "the squared error of two tensors of one shape",
        attrs=(_REDUCTION,),
        differentiable=True,
        family="losses",
        torch_call="torch.nn.functional.mse_loss",
    ),
    OpSpec(
        "huber_loss",
        "loss",
        ("tensor", "tensor"),
        "tensor",
        "`huber_loss(input, target, reduction='mean', delta=1.0)`",
        "`torch.nn.functional.huber_loss(input, target, reduction=..., delta=1.0)`",
        "`HuberLossConfig::new(delta).init().forward(input, target, Reduction::Mean)` ('none': "
        "`.forward_no_reduction`); `delta` is `new`'s argument, with no default: the port writes torch's 1.0",
        "quadratic below `delta`, linear above it",
        attrs=(
            _REDUCTION,
            AttrSpec(
                "delta",
                "float",
                1.0,
                minimum=0,
                minimum_exclusive=True,
                doc="where the loss turns linear (torch's default 1.0; burn: required, no default)",
            ),
        ),
        differentiable=True,
        family="losses",
        torch_call="torch.nn.functional.huber_loss",
    ),
    OpSpec(
        "smooth_l1_loss",
        "loss",
        ("tensor", "tensor"),
        "tensor",
        "`smooth_l1_loss(input, target, reduction='mean', beta=)`",
        "`torch.nn.functional.smooth_l1_loss(input, target, reduction=..., beta=1.0)` (`beta=0`: the L1 loss)",
        "`SmoothL1LossConfig::new()` `.with_beta(beta)` when given, `.init()`, "
        "`.forward_with_reduction(input, target, Reduction::Mean)` ('none': `.forward`); `init` panics for "
        "`beta <= 0` (`The parameter beta must be positive.`) where torch gives the L1 loss",
        "Huber divided by `beta`: quadratic below `beta`, `|x - y| - beta / 2` above",
        attrs=(
            _REDUCTION,
            AttrSpec(
                "beta",
                "float",
                OMITTED,
                minimum=0,
                torch_default=1.0,
                burn_default=1.0,
                doc="where the loss turns linear",
            ),
        ),
        differentiable=True,
        family="losses",
        torch_call="torch.nn.functional.smooth_l1_loss",
    ),
    OpSpec(
        "binary_cross_entropy_with_logits",
        "loss",
        ("tensor", "tensor"),
        "tensor",
        "`binary_cross_entropy_with_logits(logits, target, reduction=)`",
        "`torch.nn.functional.binary_cross_entropy_with_logits(logits, target, ...)` (float targets, "
        "soft labels allowed)",
        "`BinaryCrossEntropyLossConfig::new().with_logits(true).init(&device).forward(logits, target.int())` "
        "(the mean): burn takes *integer* targets, so the port converts them, and a soft label (0.3) "
        "becomes 0",
        "binary cross-entropy of logits against targets of the same shape",
        attrs=(
            AttrSpec(
                "reduction",
                "str",
                OMITTED,
                choices=_REDUCTIONS,
                enum="Reduction",
                torch_default="mean",
                burn_unsupported=(("sum", "none"), _MEAN_ONLY),
            ),
        ),
        differentiable=True,
        family="losses",
        torch_call="torch.nn.functional.binary_cross_entropy_with_logits",
    ),
    OpSpec(
        "nll_loss",
        "loss",
        ("tensor", "tensor"),
        "tensor",
        "`nll_loss(log_probs, target, reduction='mean')`",
        "`torch.nn.functional.nll_loss(log_probs, target, reduction=...)` (target: class indices)",
        "burn 0.22.1 has no NLL loss; the port writes `log_probs.gather(1, target.reshape([n, 1])).neg()` "
        "and `.mean()` ('sum': `.sum()`; 'none': `.reshape([n])`)",
        "the negative log-probability of the target class, of `[N, C]` against class indices `[N]`",
        attrs=(_REDUCTION,),
        differentiable=True,
        family="losses",
        arg_dtypes=("float", "int"),
        torch_call="torch.nn.functional.nll_loss",
    ),
)
