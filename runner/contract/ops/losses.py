"""Losses: cross-entropy, MSE, Huber, BCE with logits, NLL."""

from __future__ import annotations

from typing import Final

from .spec import ModuleSpec, OpSpec

SPECS: Final[tuple[OpSpec, ...]] = ()
MODULES: Final[tuple[ModuleSpec, ...]] = ()
