"""Training utilities: AdamW, RMSprop, gradient clipping, learning-rate schedules, train/eval,
target networks."""

from __future__ import annotations

from typing import Final

from .spec import ModuleSpec, OpSpec

MODULES: Final[tuple[ModuleSpec, ...]] = ()

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
)
