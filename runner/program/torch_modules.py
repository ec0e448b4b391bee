"""A declared module as torch builds it: the constructor call a port starts from.

One place for both torch sides: the interpreter (`torch_interp`) instantiates it and the
renderer (`render_torch`) writes it. Positional attributes go in table order, the others
by torch's keyword, and an attribute the program omits is omitted, so torch applies its
own default; attributes only the burn side sees (a Linear's `layout`) are left out.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..contract.ops import MODULES, AttrValue
from .ir import ModuleDecl

if TYPE_CHECKING:  # the renderer writes the call without importing torch
    import torch


def constructor(decl: ModuleDecl) -> tuple[str, list[AttrValue], dict[str, AttrValue]]:
    """(`torch.nn.Conv2d`, positional arguments, keyword arguments) of the declaration."""
    spec = MODULES[decl.kind]
    args: list[AttrValue] = []
    kwargs: dict[str, AttrValue] = {}
    keywords = False
    for a in spec.attrs:
        if "torch" not in a.sides:
            continue
        if a.name not in decl.attrs:
            keywords = True  # after an omitted one, the rest go by keyword
            continue
        value = decl.attrs[a.name]
        if a.positional and not keywords:
            args.append(value)
        else:
            kwargs[a.torch_name or a.name] = value
    return spec.torch_class, args, kwargs


def takes_dtype(decl: ModuleDecl) -> bool:
    """Whether its constructor takes `dtype=`: a kind with tensors does (`Dropout` has none, and no `dtype`)."""
    return bool(MODULES[decl.kind].params)


def build(decl: ModuleDecl, dtype: torch.dtype) -> torch.nn.Module:
    """The torch module, in `dtype`."""
    path, args, kwargs = constructor(decl)
    module_name, _, class_name = path.rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    extra: dict[str, torch.dtype] = {"dtype": dtype} if takes_dtype(decl) else {}
    module: torch.nn.Module = cls(*args, **kwargs, **extra)
    return module


def tensor_of(module: torch.nn.Module, decl: ModuleDecl, name: str) -> Any:
    """The module's param or buffer that the IR calls `name` (`conv.weight`)."""
    spec = MODULES[decl.kind]
    short = name.split(".", 1)[1]
    path = next((p.torch_path or p.name for p in spec.params if p.name == short), short)
    target: Any = module
    for part in path.split("."):
        target = getattr(target, part)
    return target
