"""Tensor operations: joining, slicing, indexing, reductions along a dim, clamping, masking, reshaping."""

from __future__ import annotations

from typing import Final

from .spec import ModuleSpec, OpSpec

SPECS: Final[tuple[OpSpec, ...]] = ()
MODULES: Final[tuple[ModuleSpec, ...]] = ()
