"""Losses: cross-entropy, MSE, Huber, BCE with logits, NLL.

The torch side is `torch.nn.functional`'s call; the burn side is the loss module a port
builds (`CrossEntropyLossConfig::new()...init(&device).forward(..)`), which returns the mean:
a `reduction` burn's module lacks is an `unsupported` outcome, not silently another number."""

from __future__ import annotations

from typing import Final

from .spec import OMITTED, AttrSpec, ModuleSpec, OpSpec

MODULES: Final[tuple[ModuleSpec, ...]] = ()

_MEAN_ONLY = "burn 0.22.1's loss module returns the mean; a port sums or keeps the losses itself"

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
                doc="the share of the target spread evenly over the classes",
            ),
            AttrSpec(
                "reduction",
                "str",
                OMITTED,
                choices=("mean", "sum", "none"),
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
)
