"""Layers and activations: convolution, pooling, normalization, embedding, dropout, attention, GELU, SiLU, LeakyReLU, softmax."""

from __future__ import annotations

from typing import Final

from .spec import ModuleSpec, OpSpec

SPECS: Final[tuple[OpSpec, ...]] = ()
MODULES: Final[tuple[ModuleSpec, ...]] = ()
