"""Tensor operations on the torch side that are not one call with the tensors first: torch's
`index_select` and `gather` take the dim before the indices, `max`/`min` along a dim give
(values, indices), and `expand` is a method."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..ir import Stmt


def _dim(st: Stmt) -> int:
    dim = st.attrs["dim"]
    assert isinstance(dim, int)
    return dim


def _keepdim(st: Stmt) -> bool:
    return bool(st.attrs.get("keepdim", False))


def _index_select(run: Any, st: Stmt, args: list[Any]) -> torch.Tensor:
    t, indices = args
    return torch.index_select(t, _dim(st), indices)


def _gather(run: Any, st: Stmt, args: list[Any]) -> torch.Tensor:
    t, indices = args
    return torch.gather(t, _dim(st), indices)


def _max_dim(run: Any, st: Stmt, args: list[Any]) -> torch.Tensor:
    return torch.max(args[0], _dim(st), keepdim=_keepdim(st)).values


def _min_dim(run: Any, st: Stmt, args: list[Any]) -> torch.Tensor:
    return torch.min(args[0], _dim(st), keepdim=_keepdim(st)).values


def _expand(run: Any, st: Stmt, args: list[Any]) -> torch.Tensor:
    sizes = st.attrs["sizes"]
    assert isinstance(sizes, list)
    t: torch.Tensor = args[0]
    return t.expand(sizes)


IMPL: dict[str, Callable[[Any, Stmt, list[Any]], Any]] = {
    "index_select": _index_select,
    "gather": _gather,
    "max_dim": _max_dim,
    "min_dim": _min_dim,
    "expand": _expand,
}
