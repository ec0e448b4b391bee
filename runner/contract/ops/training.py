"""Training utilities: AdamW, RMSprop, gradient clipping, learning-rate schedules, train/eval, target networks."""

from __future__ import annotations

from typing import Final

from .spec import ModuleSpec, OpSpec

SPECS: Final[tuple[OpSpec, ...]] = ()
MODULES: Final[tuple[ModuleSpec, ...]] = ()
