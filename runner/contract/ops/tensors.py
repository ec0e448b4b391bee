"""Tensor operations: joining, slicing, indexing, reductions along a dim, clamping, masking, reshaping.

An operation along a dim is spelled as torch's call (`keepdim` omitted: torch's False); the
burn side is what a port writes for the same result (burn keeps the dim: the port squeezes it)."""

from __future__ import annotations

from typing import Final

from .. import limits
from .spec import AttrSpec, ModuleSpec, OpSpec

_DIM = AttrSpec(
    "dim", "int", positional=True, minimum=-limits.MAX_RANK, maximum=limits.MAX_RANK - 1, doc="the dimension"
)

MODULES: Final[tuple[ModuleSpec, ...]] = ()

SPECS: Final[tuple[OpSpec, ...]] = (
    OpSpec(
        "cat",
        "tensor",
        ("tensor", "tensor"),
        "tensor",
        "`cat(a, b, ..., dim=0)`",
        "`torch.cat([a, b, ...], dim=0)`",
        "`Tensor::cat(vec![a, b, ...], dim)` (equal ranks; the dim is always written)",
        "joins 2 to 4 tensors along a dim",
        attrs=(AttrSpec("dim", "int", 0, minimum=-limits.MAX_RANK, maximum=limits.MAX_RANK - 1, doc="the dimension"),),
        differentiable=True,
        family="tensors",
        max_args=4,
        arg_dtypes=("any",),
        result_dtype="arg0",
        torch_call="torch.cat",
        torch_args="list",
    ),
    OpSpec(
        "argmax",
        "tensor",
        ("tensor",),
        "tensor",
        "`argmax(T, dim, keepdim=False)`",
        "`torch.argmax(t, dim, keepdim=False)`",
        "`t.argmax(dim)` (keeps the dim), then `.squeeze_dim(dim)` unless `keepdim`",
        "the index of the largest value along a dim (an int tensor)",
        attrs=(_DIM, AttrSpec("keepdim", "bool", False, doc="keep the reduced dim with size 1")),
        family="tensors",
        result_dtype="int",
        torch_call="torch.argmax",
    ),
)
