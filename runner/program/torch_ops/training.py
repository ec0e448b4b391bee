"""Training utilities on the torch side: what a port writes that is not one call.

The optimizers are built over every param (declaration order) with only the keywords the
program gives, so torch applies its own defaults; a clipping attribute is applied as the port
writes it, `torch.nn.utils.clip_grad_norm_` (or `clip_grad_value_`) right before `opt.step()`.
A scheduler wraps its optimizer (`sequential_lr`: its optimizer and the schedules it runs one after
another); `sched_step` is `sched.step()`.
"""

from __future__ import annotations

import importlib
import weakref
from collections.abc import Callable
from typing import Any

import torch

from ...contract.ops import OPS, torch_keywords
from ...contract.ops.training import OPTIMIZER_OPS, SCHEDULER_OPS, clipping, optimizer_keywords
from ..ir import Stmt

_CLIPPING: weakref.WeakKeyDictionary[torch.optim.Optimizer, tuple[str, float]] = weakref.WeakKeyDictionary()
"""Each optimizer's clipping, applied before its `step()`: ("norm" or "value", the threshold)."""


def _modules(run: Any) -> list[torch.nn.Module]:
    return [m for m in run.env.values() if isinstance(m, torch.nn.Module)]


def _train(run: Any, st: Stmt, args: list[Any]) -> None:
    for module in _modules(run):
        module.train()


def _eval(run: Any, st: Stmt, args: list[Any]) -> None:
    for module in _modules(run):
        module.eval()


def _torch_class(op: str) -> Any:
    """The torch class the table names for an optimizer or a scheduler (`torch_signature`)."""
    path = OPS[op].torch_signature
    assert path is not None, f"{op} names no torch class"
    module_name, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module_name), name)


def _optimizer(run: Any, st: Stmt, args: list[Any]) -> torch.optim.Optimizer:
    opt: torch.optim.Optimizer = _torch_class(st.op)(run.params, **optimizer_keywords(OPS[st.op], st.attrs))
    clip = clipping(st.attrs)
    if clip is not None:
        _CLIPPING[opt] = clip
    return opt


def _step(run: Any, st: Stmt, args: list[Any]) -> None:
    opt: torch.optim.Optimizer = args[0]
    clip = _CLIPPING.get(opt)
    if clip is not None:
        kind, threshold = clip
        if kind == "norm":
            torch.nn.utils.clip_grad_norm_(run.params, threshold)
        else:
            torch.nn.utils.clip_grad_value_(run.params, threshold)
    opt.step()


def _scheduler(run: Any, st: Stmt, args: list[Any]) -> Any:
    return _torch_class(st.op)(args[0], **torch_keywords(st.op, st.attrs))


def _sequential(run: Any, st: Stmt, args: list[Any]) -> Any:
    """`SequentialLR(opt, schedulers=[...], milestones=[...])`: the schedules the program made."""
    opt, *schedulers = args
    return _torch_class(st.op)(opt, schedulers=schedulers, milestones=st.ints("milestones"))


def _sched_step(run: Any, st: Stmt, args: list[Any]) -> None:
    args[0].step()


def _copy_module(run: Any, st: Stmt, args: list[Any]) -> None:
    target, online = args
    target.load_state_dict(online.state_dict())


def _soft_update(run: Any, st: Stmt, args: list[Any]) -> None:
    target, online = args
    tau = st.number("tau")
    with torch.no_grad():
        for t, o in zip(target.parameters(), online.parameters()):
            t.mul_(1 - tau).add_(o, alpha=tau)


def _module_no_grad(run: Any, st: Stmt, args: list[Any]) -> None:
    args[0].requires_grad_(False)


IMPL: dict[str, Callable[[Any, Stmt, list[Any]], Any]] = {
    "train": _train,
    "eval": _eval,
    **dict.fromkeys(OPTIMIZER_OPS, _optimizer),
    "step": _step,
    **dict.fromkeys(SCHEDULER_OPS, _scheduler),
    "sequential_lr": _sequential,
    "sched_step": _sched_step,
    "copy_module": _copy_module,
    "soft_update": _soft_update,
    "module_no_grad": _module_no_grad,
}
