"""Training utilities on the torch side: what a port writes that is not one call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..ir import Stmt


def _modules(run: Any) -> list[torch.nn.Module]:
    return [m for m in run.env.values() if isinstance(m, torch.nn.Module)]


def _train(run: Any, st: Stmt, args: list[Any]) -> None:
    for module in _modules(run):
        module.train()


def _eval(run: Any, st: Stmt, args: list[Any]) -> None:
    for module in _modules(run):
        module.eval()


IMPL: dict[str, Callable[[Any, Stmt, list[Any]], Any]] = {"train": _train, "eval": _eval}
