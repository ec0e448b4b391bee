"""Layers on the torch side: what a port writes that is not one call of the module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir import Stmt


def _multihead_attention(run: Any, st: Stmt, args: list[Any]) -> Any:
    """`mha(q, k, v, attn_mask=mask)[0]`: the module returns (output, averaged weights), and its
    fourth positional argument is the key padding mask, so the port names the attention mask."""
    module, query, key, value, *mask = args
    if mask:
        return module(query, key, value, attn_mask=mask[0])[0]
    return module(query, key, value)[0]


IMPL: dict[str, Callable[[Any, Stmt, list[Any]], Any]] = {"multihead_attention": _multihead_attention}
