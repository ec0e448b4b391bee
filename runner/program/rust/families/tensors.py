"""Tensor operations in the Rust reproducer: what `rust_probe/src/program/families/tensors.rs`
does, as code (see the package docstring for how to add one). burn keeps a reduced dim where
torch drops it by default: the port squeezes it (`squeeze_dim::<D>`, its rank written out)."""

from __future__ import annotations

from typing import Final

from .base import Call, Expr, Ty

IMPORTS: Final = ()


def cat(c: Call) -> Expr:
    kinds = sorted({a.ty.dtype for a in c.args} - {"float"})
    if kinds:
        c.refuse(f"the burn interpreter joins float tensors only (a {kinds[0]} tensor is `unsupported` there)")
    rank = c.args[0].ty.rank
    if any(a.ty.rank != rank for a in c.args):
        c.refuse("the burn interpreter stops with `cat: the tensors have different ranks`")
    d = c.dim(c.integer("dim"), rank)
    return Expr(f"Tensor::cat(vec![{', '.join(a.expr for a in c.args)}], {d})", Ty(rank))


def argmax(c: Call) -> Expr:
    (x,) = c.args
    rank = x.ty.rank
    d = c.dim(c.integer("dim"), rank)
    kept = f"{x.expr}.argmax({d})"
    if c.flag("keepdim") or rank == 1:
        # a rank-1 result keeps its one dim (torch gives a scalar, shape []), as the interpreter does
        return Expr(kept, Ty(rank, dtype="int"))
    return Expr(f"{kept}.squeeze_dim::<{rank - 1}>({d})", Ty(rank - 1, dtype="int"))


OPS: Final = {"cat": cat, "argmax": argmax}
