"""Tensor operations in the Rust reproducer: what `rust_probe/src/program/families/tensors.rs`
does, as code (see the package docstring for how to add one). burn keeps a reduced dim where
torch drops it by default: the port squeezes it (`squeeze_dim::<D>`, its rank written out).
burn's ranks are types: where the call changes the rank, the rank is written out
(`stack::<3>`, `flatten::<2>`, `unsqueeze_dim::<3>`), as a port writes it; the interpreter picks
the same from the tensor's rank at run time. A dim is resolved torch's way (negative counts
from the end) where the interpreter resolves it, and written as the number it resolves to."""

from __future__ import annotations

from typing import Final

from ..state import Dtype
from .base import Arg, Call, Expr, Ty, block, literals

IMPORTS: Final = ()

MAX_RANK: Final = 4
"""The interpreter's tensors have rank 1 to 4 (`value.rs` `MAX_RANK`)."""


def _too_big(c: Call, rank: int) -> None:
    if rank > MAX_RANK:
        c.refuse(
            f"the burn interpreter stops with `{c.op}: the result would have rank {rank}; this interpreter's "
            f"tensors have rank 1 to {MAX_RANK}`"
        )


def _equal_ranks(c: Call, *args: Arg) -> None:
    """burn's `Tensor<D>` operations take operands of one rank; the interpreter's outcome is
    `unsupported` (torch broadcasts across ranks)."""
    if len({a.ty.rank for a in args}) > 1:
        ranks = " and ".join(f"rank-{a.ty.rank}" for a in args)
        c.refuse(
            f"the {ranks} operands: burn's tensor operations take operands of equal rank (torch broadcasts "
            "across ranks; the burn interpreter's outcome is `unsupported`)"
        )


def _squeezed(c: Call, kept: str, x: Arg, d: int, dtype: Dtype = "float") -> Expr:
    """A reduction that keeps the dim (burn's), squeezed unless `keepdim`; a rank-1 result keeps
    its one dim (torch gives a scalar, shape []), as the interpreter's `squeeze_reduced`."""
    rank = x.ty.rank
    if c.flag("keepdim") or rank == 1:
        return Expr(kept, Ty(rank, dtype=dtype))
    return Expr(f"{kept}.squeeze_dim::<{rank - 1}>({d})", Ty(rank - 1, dtype=dtype))


def cat(c: Call) -> Expr:
    kinds = sorted({a.ty.dtype for a in c.args} - {"float"})
    if kinds:
        c.refuse(f"the burn interpreter joins float tensors only (a {kinds[0]} tensor is `unsupported` there)")
    rank = c.args[0].ty.rank
    if any(a.ty.rank != rank for a in c.args):
        c.refuse("the burn interpreter stops with `cat: the tensors have different ranks`")
    d = c.dim(c.integer("dim"), rank)
    return Expr(f"Tensor::cat(vec![{', '.join(a.expr for a in c.args)}], {d})", Ty(rank))


def stack(c: Call) -> Expr:
    """`Tensor::stack::<D2>(vec![a, b, ...], dim)`: tensors of one kind and rank (burn panics when
    their shapes differ, as torch raises)."""
    first = c.args[0].ty
    other = next((a.ty.dtype for a in c.args if a.ty.dtype != first.dtype), None)
    if other is not None:
        c.refuse(f"the burn interpreter stops with `stack: {other} tensor is not a {first.dtype} tensor`")
    if any(a.ty.rank != first.rank for a in c.args):
        c.refuse("the burn interpreter stops with `stack: the tensors have different ranks`")
    d = c.dim(c.integer("dim"), first.rank + 1)
    _too_big(c, first.rank + 1)
    items = ", ".join(a.expr for a in c.args)
    return Expr(f"Tensor::stack::<{first.rank + 1}>(vec![{items}], {d})", Ty(first.rank + 1, dtype=first.dtype))


def narrow(c: Call) -> Expr:
    """`t.narrow(dim, start, length)`; torch's negative `start` is written as `size + start` (the
    interpreter's error when that is still negative, as a panic with its message)."""
    (x,) = c.args
    d = c.dim(c.integer("dim"), x.ty.rank)
    start, length = c.integer("start"), c.integer("length")
    if start >= 0:
        return Expr(f"{x.expr}.narrow({d}, {start}, {length})", x.ty)
    message = literals.string(f"narrow: start {start} is out of range for a dim of size {{size}}")
    text = block(
        [
            f"let t = {x.expr};",
            f"let size = t.dims()[{d}];",
            f"let start = size.checked_sub({-start}).unwrap_or_else(|| panic!({message}));",
        ],
        f"t.narrow({d}, start, {length})",
    )
    return Expr(text, x.ty)


def index_select(c: Call) -> Expr:
    x, indices = c.args
    d = c.dim(c.integer("dim"), x.ty.rank)
    if indices.ty.rank != 1:
        c.refuse(
            "the burn interpreter stops with `index_select: the indices must be a rank-1 int tensor (torch: "
            f"index_select(): Index is supposed to be a vector)` (a rank-{indices.ty.rank} one here)"
        )
    return Expr(f"{x.expr}.select({d}, {indices.expr})", x.ty)


def gather(c: Call) -> Expr:
    x, indices = c.args
    d = c.dim(c.integer("dim"), x.ty.rank)
    if indices.ty.rank != x.ty.rank:
        c.refuse(
            "the burn interpreter stops with `gather: the indices must have the tensor's rank (torch: Index "
            f"tensor must have the same number of dimensions as input tensor)` (rank {indices.ty.rank} and "
            f"{x.ty.rank} here)"
        )
    return Expr(f"{x.expr}.gather({d}, {indices.expr})", Ty(x.ty.rank))


def argmax(c: Call) -> Expr:
    (x,) = c.args
    d = c.dim(c.integer("dim"), x.ty.rank)
    return _squeezed(c, f"{x.expr}.argmax({d})", x, d, dtype="int")


def max_dim(c: Call) -> Expr:
    (x,) = c.args
    d = c.dim(c.integer("dim"), x.ty.rank)
    return _squeezed(c, f"{x.expr}.max_dim({d})", x, d)


def min_dim(c: Call) -> Expr:
    (x,) = c.args
    d = c.dim(c.integer("dim"), x.ty.rank)
    return _squeezed(c, f"{x.expr}.min_dim({d})", x, d)


def mean_dim(c: Call) -> Expr:
    (x,) = c.args
    d = c.dim(c.integer("dim"), x.ty.rank)
    return _squeezed(c, f"{x.expr}.mean_dim({d})", x, d)


def square(c: Call) -> Expr:
    (x,) = c.args
    return Expr(f"{x.expr}.square()", Ty(x.ty.rank))


def var(c: Call) -> Expr:
    """torch's `var(t, dim)` is unbiased unless `unbiased=False` or `correction=0`: `var` (by
    n - 1) or `var_bias` (by n), as the interpreter's `var_method`."""
    (x,) = c.args
    if c.has("unbiased") and c.has("correction"):
        c.refuse(
            "the burn interpreter stops with `var: give `unbiased` or `correction`, not both (torch: var() "
            "received an invalid combination of arguments)`"
        )
    biased = (c.has("unbiased") and not c.flag("unbiased")) or (c.has("correction") and c.integer("correction") == 0)
    d = c.dim(c.integer("dim"), x.ty.rank)
    return _squeezed(c, f"{x.expr}.{'var_bias' if biased else 'var'}({d})", x, d)


def clamp(c: Call) -> Expr:
    """`t.clamp(min, max)`, `t.clamp_min(min)` or `t.clamp_max(max)`, by what is given."""
    (x,) = c.args
    if c.has("min") and c.has("max"):
        return Expr(f"{x.expr}.clamp({literals.f64(c.num('min'))}, {literals.f64(c.num('max'))})", x.ty)
    if c.has("min"):
        return Expr(f"{x.expr}.clamp_min({literals.f64(c.num('min'))})", x.ty)
    if c.has("max"):
        return Expr(f"{x.expr}.clamp_max({literals.f64(c.num('max'))})", x.ty)
    c.refuse(
        "the burn interpreter stops with `clamp: give `min`, `max` or both (torch: At least one of 'min' or "
        "'max' must not be None)`"
    )


def where(c: Call) -> Expr:
    """torch's `where(mask, a, b)`: `b.mask_where(mask, a)`."""
    mask, a, b = c.args
    _equal_ranks(c, mask, a, b)
    if b.name and b.name == a.name:
        # `b` is read last (moved) and `a` is its clone: Rust evaluates the receiver first, so the
        # operands are bound in the interpreter's order before the call
        return Expr(
            block([f"let (mask, a) = ({mask.expr}, {a.expr});"], f"{b.expr}.mask_where(mask, a)"), Ty(a.ty.rank)
        )
    return Expr(f"{b.expr}.mask_where({mask.expr}, {a.expr})", Ty(a.ty.rank))


def masked_fill(c: Call) -> Expr:
    x, mask = c.args
    _equal_ranks(c, x, mask)
    return Expr(f"{x.expr}.mask_fill({mask.expr}, {literals.f64(c.num('value'))})", Ty(x.ty.rank))


def flatten(c: Call) -> Expr:
    """`t.flatten::<D2>(start, end)`: burn has no defaults, the port writes both and the result's
    rank (burn panics for `start > end`, as the interpreter's run does; its rank is then the
    tensor's)."""
    (x,) = c.args
    rank = x.ty.rank
    s, e = c.dim(c.integer("start_dim"), rank), c.dim(c.integer("end_dim"), rank)
    to = rank - max(e - s, 0)
    return Expr(f"{x.expr}.flatten::<{to}>({s}, {e})", Ty(to, dtype=x.ty.dtype))


def unsqueeze(c: Call) -> Expr:
    (x,) = c.args
    rank = x.ty.rank
    d = c.dim(c.integer("dim"), rank + 1)
    _too_big(c, rank + 1)
    return Expr(f"{x.expr}.unsqueeze_dim::<{rank + 1}>({d})", Ty(rank + 1, dtype=x.ty.dtype))


def squeeze(c: Call) -> Expr:
    """`t.squeeze_dim::<D2>(dim)`: burn panics when the dim's size is not 1 (torch leaves the
    tensor as is). A rank-1 `[1]` stays `[1]` (burn has no rank 0); a longer rank-1 tensor is the
    port's `squeeze_dim::<1>`, which burn refuses as for any size but 1."""
    (x,) = c.args
    rank = x.ty.rank
    d = c.dim(c.integer("dim"), rank)
    if rank == 1:
        text = block([f"let t = {x.expr};"], f"if t.dims()[0] == 1 {{ t }} else {{ t.squeeze_dim::<1>({d}) }}")
        return Expr(text, x.ty)
    return Expr(f"{x.expr}.squeeze_dim::<{rank - 1}>({d})", Ty(rank - 1, dtype=x.ty.dtype))


def expand(c: Call) -> Expr:
    """`t.expand::<D2, _>([sizes])` (-1 keeps a dim; new dims in front)."""
    (x,) = c.args
    sizes = c.attrs["sizes"]
    assert isinstance(sizes, list)
    rank = x.ty.rank
    if len(sizes) < rank or len(sizes) > MAX_RANK:
        c.refuse(
            f"the burn interpreter stops with `expand: {len(sizes)} sizes for a rank-{rank} tensor (torch: the "
            "number of sizes provided must be greater or equal to the number of dimensions in the tensor; this "
            f"interpreter: at most {MAX_RANK})`"
        )
    shape = ", ".join(str(s) for s in sizes)
    return Expr(f"{x.expr}.expand::<{len(sizes)}, _>([{shape}])", Ty(len(sizes), dtype=x.ty.dtype))


def _compare(method: str, c: Call) -> Expr:
    a, b = c.args
    _equal_ranks(c, a, b)
    return Expr(f"{a.expr}.{method}({b.expr})", Ty(a.ty.rank, dtype="bool"))


def gt(c: Call) -> Expr:
    return _compare("greater", c)


def lt(c: Call) -> Expr:
    return _compare("lower", c)


def gt_scalar(c: Call) -> Expr:
    (x,) = c.args
    return Expr(f"{x.expr}.greater_elem({literals.f64(c.num('scalar'))})", Ty(x.ty.rank, dtype="bool"))


def lt_scalar(c: Call) -> Expr:
    (x,) = c.args
    return Expr(f"{x.expr}.lower_elem({literals.f64(c.num('scalar'))})", Ty(x.ty.rank, dtype="bool"))


OPS: Final = {
    "cat": cat,
    "stack": stack,
    "narrow": narrow,
    "index_select": index_select,
    "gather": gather,
    "argmax": argmax,
    "max_dim": max_dim,
    "min_dim": min_dim,
    "mean_dim": mean_dim,
    "square": square,
    "var": var,
    "clamp": clamp,
    "where": where,
    "masked_fill": masked_fill,
    "flatten": flatten,
    "unsqueeze": unsqueeze,
    "squeeze": squeeze,
    "expand": expand,
    "gt": gt,
    "lt": lt,
    "gt_scalar": gt_scalar,
    "lt_scalar": lt_scalar,
}
