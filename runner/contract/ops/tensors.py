"""Tensor operations: joining, slicing, indexing, reductions along a dim, clamping, masking, reshaping.

An operation along a dim is spelled as torch's call (`keepdim` omitted: torch's False); the
burn side is what a port writes for the same result (burn keeps the dim: the port squeezes it).
burn's ranks are types: where torch's call changes the rank (`stack`, `flatten`, `squeeze`,
`unsqueeze`, `expand`), the port writes the new rank (`t.flatten::<2>(1, 2)`), and this
interpreter picks it from the tensor's rank at run time. A rank-1 result of a reduction stays
`[1]` in burn (there is no rank-0 tensor) where torch gives a scalar `[]`: the observations
compare them as equal."""

from __future__ import annotations

from typing import Final

from .. import limits
from .spec import OMITTED, REQUIRED, AttrSpec, ModuleSpec, OpSpec


def _dim_attr(
    name: str, default: int | None = None, *, positional: bool = False, doc: str = "the dimension"
) -> AttrSpec:
    """A dim (negative counts from the end, as torch; both frameworks take it so)."""
    return AttrSpec(
        name,
        "int",
        REQUIRED if default is None else default,
        positional=positional,
        minimum=-limits.MAX_RANK,
        maximum=limits.MAX_RANK - 1,
        doc=doc,
    )


_DIM = _dim_attr("dim", positional=True)
_DIM_KEYWORD = _dim_attr("dim")
_KEEPDIM = AttrSpec(
    "keepdim",
    "bool",
    False,
    doc="keep the reduced dim with size 1 (torch's default False; burn always keeps it: the port squeezes it)",
)

MODULES: Final[tuple[ModuleSpec, ...]] = ()


def _along_dim(
    name: str, torch: str, burn: str, summary: str, *, torch_call: str | None = None, torch_code: str | None = None
) -> OpSpec:
    """A reduction along one dim (`max_dim`, `min_dim`, `mean_dim`): float in, float out."""
    return OpSpec(
        name,
        "tensor",
        ("tensor",),
        "tensor",
        f"`{name}(T, dim, keepdim=False)`",
        torch,
        burn,
        summary,
        attrs=(_DIM, _KEEPDIM),
        differentiable=True,
        family="tensors",
        torch_call=torch_call,
        torch_code=torch_code,
    )


def _compare(name: str, torch_name: str, burn: str, symbol: str) -> OpSpec:
    return OpSpec(
        name,
        "tensor",
        ("tensor", "tensor"),
        "tensor",
        f"`{name}(a, b)`",
        f"`torch.{torch_name}(a, b)` (`a {symbol} b`; broadcasts across ranks)",
        f"`a.{burn}(b)` (equal ranks; size-1 dims broadcast; unequal ranks: `unsupported` at that op)",
        f"elementwise `a {symbol} b`: a bool mask",
        family="tensors",
        result_dtype="bool",
        torch_call=f"torch.{torch_name}",
        row="gt",
    )


def _compare_scalar(name: str, torch_name: str, burn: str, symbol: str) -> OpSpec:
    return OpSpec(
        name,
        "tensor",
        ("tensor",),
        "tensor",
        f"`{name}(T, s)`",
        f"`torch.{torch_name}(t, s)` (`t {symbol} s`)",
        f"`t.{burn}(s)`",
        f"elementwise `T {symbol} s` against a number: a bool mask",
        attrs=(AttrSpec("scalar", "float", positional=True, doc="the number", torch_name="other"),),
        family="tensors",
        result_dtype="bool",
        torch_call=f"torch.{torch_name}",
        row="gt_scalar",
    )


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
        attrs=(_dim_attr("dim", 0),),
        differentiable=True,
        family="tensors",
        max_args=4,
        arg_dtypes=("any",),
        result_dtype="arg0",
        torch_call="torch.cat",
        torch_args="list",
    ),
    OpSpec(
        "stack",
        "tensor",
        ("tensor", "tensor"),
        "tensor",
        "`stack(a, b, ..., dim=0)`",
        "`torch.stack([a, b, ...], dim=0)`",
        "`Tensor::stack::<D2>(vec![a, b, ...], dim)` (`D2` = the rank + 1; the dim is always written; "
        "different shapes panic, as torch raises)",
        "joins 2 to 4 tensors of one shape along a new dim",
        attrs=(_dim_attr("dim", 0, doc="the new dimension's position in the result"),),
        differentiable=True,
        family="tensors",
        max_args=4,
        arg_dtypes=("any",),
        result_dtype="arg0",
        torch_call="torch.stack",
        torch_args="list",
    ),
    OpSpec(
        "narrow",
        "tensor",
        ("tensor",),
        "tensor",
        "`narrow(T, dim, start, length)`",
        "`torch.narrow(t, dim, start, length)` (a negative `start` counts from the end)",
        "`t.narrow(dim, start, length)` (`start` is a `usize`: the port writes a negative one as `size + start`; "
        "past the end panics, as torch raises; a length of 0 panics in burn, torch gives an empty tensor: the "
        "language takes lengths from 1)",
        "the `length` entries from `start` along a dim",
        attrs=(
            _DIM,
            AttrSpec("start", "int", positional=True, minimum=-limits.MAX_DIM, maximum=limits.MAX_DIM, doc="the first"),
            AttrSpec("length", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="how many"),
        ),
        differentiable=True,
        family="tensors",
        arg_dtypes=("any",),
        result_dtype="arg0",
        torch_call="torch.narrow",
    ),
    OpSpec(
        "index_select",
        "tensor",
        ("tensor", "tensor"),
        "tensor",
        "`index_select(T, indices, dim=)`",
        "`torch.index_select(t, dim, indices)` (indices: a rank-1 int tensor)",
        "`t.select(dim, indices)` (indices `Tensor<1, Int>`)",
        "the entries at `indices` along a dim",
        attrs=(_DIM_KEYWORD,),
        differentiable=True,
        family="tensors",
        arg_dtypes=("any", "int"),
        result_dtype="arg0",
        torch_code="torch.index_select({a0}, {dim}, {a1})",
    ),
    OpSpec(
        "gather",
        "tensor",
        ("tensor", "tensor"),
        "tensor",
        "`gather(T, indices, dim=)`",
        "`torch.gather(t, dim, indices)` (indices: an int tensor of T's rank, each dim no larger than T's)",
        "`t.gather(dim, indices)` (indices `Tensor<D, Int>`: every dim but `dim` must *equal* T's, "
        "else it panics: `The tensor shape should be the same as the index tensor shape`)",
        "`out[i][j] = T[i][indices[i][j]]` (dim 1), by the indices' shape",
        attrs=(_DIM_KEYWORD,),
        differentiable=True,
        family="tensors",
        arg_dtypes=("float", "int"),
        torch_code="torch.gather({a0}, {dim}, {a1})",
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
    _along_dim(
        "max_dim",
        "`torch.max(t, dim, keepdim=False).values` (the gradient goes to the one index it returns)",
        "`t.max_dim(dim)` (keeps the dim), then `.squeeze_dim(dim)` unless `keepdim`",
        "the largest value along a dim",
        torch_code="torch.max({a0}, {dim}, keepdim={keepdim}).values",
    ),
    _along_dim(
        "min_dim",
        "`torch.min(t, dim, keepdim=False).values`",
        "`t.min_dim(dim)` (keeps the dim), then `.squeeze_dim(dim)` unless `keepdim`",
        "the smallest value along a dim",
        torch_code="torch.min({a0}, {dim}, keepdim={keepdim}).values",
    ),
    _along_dim(
        "mean_dim",
        "`torch.mean(t, dim, keepdim=False)`",
        "`t.mean_dim(dim)` (keeps the dim), then `.squeeze_dim(dim)` unless `keepdim`",
        "the mean along a dim",
        torch_call="torch.mean",
    ),
    OpSpec(
        "square",
        "tensor",
        ("tensor",),
        "tensor",
        "`square(T)`",
        "`torch.square(t)`",
        "`t.square()`",
        "each element times itself",
        differentiable=True,
        family="tensors",
        torch_call="torch.square",
    ),
    OpSpec(
        "var",
        "tensor",
        ("tensor",),
        "tensor",
        "`var(T, dim, unbiased=, correction=, keepdim=False)`",
        "`torch.var(t, dim, unbiased=True, keepdim=False)` or `torch.var(t, dim, correction=1)` "
        "(the default divides by n - 1; giving both raises)",
        "`t.var(dim)` (divides by n - 1) for the default, `unbiased=True` or `correction=1`; `t.var_bias(dim)` "
        "(by n) for `unbiased=False` or `correction=0`; both keep the dim: `.squeeze_dim(dim)` unless `keepdim`",
        "the variance along a dim",
        attrs=(
            _DIM,
            AttrSpec(
                "unbiased",
                "bool",
                OMITTED,
                torch_default=True,
                burn_default=True,
                doc="divide by n - 1 (Bessel's correction); burn has no such argument: `var` is unbiased, "
                "`var_bias` is not, and a port of torch's `var(t, dim)` calls `var`",
            ),
            AttrSpec(
                "correction",
                "int",
                OMITTED,
                minimum=0,
                maximum=1,
                torch_default=1,
                burn_default=1,
                doc="divide by n - correction (torch takes any number; burn has `var` for 1 and `var_bias` for 0)",
            ),
            _KEEPDIM,
        ),
        differentiable=True,
        family="tensors",
        torch_call="torch.var",
    ),
    OpSpec(
        "clamp",
        "tensor",
        ("tensor",),
        "tensor",
        "`clamp(T, min=, max=)`",
        "`torch.clamp(t, min=None, max=None)` (at least one; `min > max` gives `max` everywhere; a value exactly "
        "on a bound gets no gradient)",
        "`t.clamp(min, max)` when both are given, `t.clamp_min(min)` or `t.clamp_max(max)` when one is "
        "(`clamp` is `clamp_min(clamp_max(t, max), min)`: with `min > max` it gives `min` everywhere; a value "
        "exactly on a bound keeps its gradient: `cases/clamp_edges.toml`)",
        "limits the values to [min, max]",
        attrs=(
            AttrSpec("min", "float", OMITTED, doc="the lower bound"),
            AttrSpec("max", "float", OMITTED, doc="the upper bound"),
        ),
        differentiable=True,
        family="tensors",
        torch_call="torch.clamp",
    ),
    OpSpec(
        "where",
        "tensor",
        ("tensor", "tensor", "tensor"),
        "tensor",
        "`where(mask, a, b)`",
        "`torch.where(mask, a, b)` (broadcasts across ranks)",
        "`b.mask_where(mask, a)` (equal ranks; unequal ranks: `unsupported` at that op)",
        "`a` where the mask is true, else `b`",
        differentiable=True,
        family="tensors",
        arg_dtypes=("bool", "float", "float"),
        torch_call="torch.where",
    ),
    OpSpec(
        "masked_fill",
        "tensor",
        ("tensor", "tensor"),
        "tensor",
        "`masked_fill(T, mask, value)`",
        "`torch.masked_fill(t, mask, value)` (the mask broadcasts to T, across ranks)",
        "`t.mask_fill(mask, value)` (equal ranks; unequal ranks: `unsupported` at that op)",
        "`value` where the mask is true",
        attrs=(AttrSpec("value", "float", positional=True, doc="the fill value"),),
        differentiable=True,
        family="tensors",
        arg_dtypes=("float", "bool"),
        torch_call="torch.masked_fill",
    ),
    OpSpec(
        "flatten",
        "tensor",
        ("tensor",),
        "tensor",
        "`flatten(T, start_dim=0, end_dim=-1)`",
        "`torch.flatten(t, start_dim=0, end_dim=-1)` (`torch.nn.Flatten`'s start is 1: a module, not this call)",
        "`t.flatten::<D2>(start, end)`: burn has no defaults, the port writes both (torch's 0 and -1) and the "
        "result's rank `D2`",
        "merges the dims `start_dim` to `end_dim` into one",
        attrs=(
            _dim_attr("start_dim", 0, positional=True, doc="the first dim merged"),
            _dim_attr("end_dim", -1, positional=True, doc="the last dim merged"),
        ),
        differentiable=True,
        family="tensors",
        arg_dtypes=("any",),
        result_dtype="arg0",
        torch_call="torch.flatten",
    ),
    OpSpec(
        "unsqueeze",
        "tensor",
        ("tensor",),
        "tensor",
        "`unsqueeze(T, dim)`",
        "`torch.unsqueeze(t, dim)`",
        "`t.unsqueeze_dim::<D2>(dim)` (`D2` = the rank + 1; a negative dim counts from the end, as torch)",
        "inserts a dim of size 1",
        attrs=(_DIM,),
        differentiable=True,
        family="tensors",
        arg_dtypes=("any",),
        result_dtype="arg0",
        torch_call="torch.unsqueeze",
    ),
    OpSpec(
        "squeeze",
        "tensor",
        ("tensor",),
        "tensor",
        "`squeeze(T, dim)`",
        "`torch.squeeze(t, dim)` (a dim whose size is not 1 is left as is)",
        "`t.squeeze_dim::<D2>(dim)` (`D2` = the rank - 1): a dim whose size is not 1 panics (`Can't squeeze "
        "dimension {dim} because its size is not 1`); a rank-1 `[1]` stays `[1]` (burn has no rank 0)",
        "removes a dim of size 1",
        attrs=(_DIM,),
        differentiable=True,
        family="tensors",
        arg_dtypes=("any",),
        result_dtype="arg0",
        torch_call="torch.squeeze",
    ),
    OpSpec(
        "expand",
        "tensor",
        ("tensor",),
        "tensor",
        "`expand(T, [sizes])`",
        "`t.expand(sizes)` (-1 keeps a dim; new dims are added in front)",
        "`t.expand::<D2, _>([sizes])` (the same rules: -1 keeps a dim, new dims in front)",
        "broadcasts size-1 dims to a larger size, without copying",
        attrs=(AttrSpec("sizes", "int_list", positional=True, doc="the new shape, rank 1 to 4; -1 keeps a dim"),),
        differentiable=True,
        family="tensors",
        arg_dtypes=("any",),
        result_dtype="arg0",
        torch_code="{a0}.expand({sizes})",
    ),
    _compare("gt", "gt", "greater", ">"),
    _compare("lt", "lt", "lower", "<"),
    _compare_scalar("gt_scalar", "gt", "greater_elem", ">"),
    _compare_scalar("lt_scalar", "lt", "lower_elem", "<"),
)
