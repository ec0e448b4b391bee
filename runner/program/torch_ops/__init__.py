"""The torch side of the operations the table does not describe by a `torch_call`, by family.

Most operations need no code here: an operation with a `torch_call` (`torch.nn.functional.gelu`)
is called with its tensor arguments and, by keyword, the attributes the program gives
(`call`), and a module's call is the module itself (`module(x)`). A family module lists the
rest in `IMPL` (what a port writes that is not one call, e.g. `model.eval()`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ...contract.ops import OPS, torch_keywords
from ..ir import Stmt
from . import layers, tensors, training

Impl = Callable[[Any, Stmt, list[Any]], Any]
"""(the run, the statement, its argument values) -> the result (or None)."""

IMPL: dict[str, Impl] = {**layers.IMPL, **tensors.IMPL, **training.IMPL}


def torch_function(path: str) -> Callable[..., Any]:
    """`torch.nn.functional.gelu` as the callable."""
    module_name, _, name = path.rpartition(".")
    function: Callable[..., Any] = getattr(importlib.import_module(module_name), name)
    return function


def call(run: Any, st: Stmt, args: list[Any]) -> Any:
    """A table operation on the torch side: its `torch_call`, or the module's own call."""
    spec = OPS[st.op]
    kwargs = torch_keywords(st.op, st.attrs)
    if spec.torch_call is not None:
        function = torch_function(spec.torch_call)
        if spec.torch_args == "list":
            return function(list(args), **kwargs)
        return function(*args, **kwargs)
    assert spec.module is not None, f"{st.op} has neither a torch_call nor a module"
    module, *rest = args
    return module(*rest, **kwargs)


def implemented() -> frozenset[str]:
    """Every op the torch side runs through this package (a `torch_call`, a module call, or `IMPL`)."""
    return frozenset(IMPL) | frozenset(
        name for name, spec in OPS.items() if spec.family is not None and spec.supports("torch")
    )
