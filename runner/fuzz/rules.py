"""How the generator makes one statement of an operation: read from the operation table, with a
rule per operation where the table cannot say it.

The generic rule (`generic`) covers a plain function of float tensors (category `math`,
`tensor`, `layer` or `loss`; every argument a tensor of element type float or any; attributes
the table describes by type, range and choices): it picks operands of one shape (the table's
`domain` says when an operand must be positive or nonzero), draws each attribute from its
spec (a dim within the operand's rank), and asks torch for the result's shape and element
type on a tiny tensor (`infer`): a combination torch refuses is not generated. Its result is
tracked when the table says the operation is `differentiable`.

An operation that needs more (index operands in range, a module's geometry, a shape list) gets
a rule: a function registered with `@rule("name")` that appends its statement(s) to the builder
and returns whether it could. That registry (`RULES`) is the extension point: adding an
operation whose shapes torch cannot infer from same-shaped operands is one function here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol, TypeVar

from ..contract.ops import OMITTED, OPS, REQUIRED, AttrSpec, AttrValue, OpSpec
from ..program.ir import Stmt, TensorSpec

T = TypeVar("T")

DIMS = (1, 2, 3, 4, 8, 16)
PURE_CATEGORIES = frozenset({"math", "tensor", "layer", "loss"})
# Values an `edge` tensor holds (with the table's kinks): zero, tiny, moderate, and far out on
# both sides, where saturating activations and clamps show what they do at their extremes.
EDGE_VALUES = (0.0, 1e-4, -1e-4, 0.3, -0.3, 1.0, -1.0, 2.5, -2.5, 4.5, -4.5, 6.0, -6.0, 9.0, -9.0)
NICE_FLOATS = (0.5, 0.1, 0.9, 2.0, 1.0, 0.01, -0.5, -1.0, 3.0, 0.0)
# Values of hyperparameters as training code writes them (a weight decay of 2 makes every run
# explode, and then every comparison is a float32 race).
NICE_BY_NAME: dict[str, tuple[float, ...]] = {
    "weight_decay": (0.0, 0.01, 0.1),
    "momentum": (0.0, 0.9, 0.5),
    "dampening": (0.0, 0.1, 0.5),
    "beta1": (0.9, 0.5),
    "beta2": (0.999, 0.99),
    "eps": (1e-8, 1e-6),
    "label_smoothing": (0.1, 0.5),
    "alpha": (0.99, 0.9),
    "clip_grad_norm": (1.0, 0.5),
    "clip_grad_value": (1.0, 0.5),
}


class Chooser(Protocol):
    """Where the generator's choices come from: `random.Random` in a campaign (program `i` of
    seed `s` is a function of both), hypothesis's draw in the property tests."""

    def integer(self, low: int, high: int) -> int:
        """An integer in [low, high]."""
        ...


def pick(c: Chooser, items: Sequence[T]) -> T:
    return items[c.integer(0, len(items) - 1)]


def coin(c: Chooser, one_in: int = 2) -> bool:
    return c.integer(0, one_in - 1) == 0


@dataclass
class Value:
    """A tensor the program holds, as the generator tracks it."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float"
    positive: bool = False
    param: bool = False
    tracked: bool = False  # derived from a param without a cut: the loss needs one
    scalar: bool = False  # shape [] in torch ([1] in burn): elementwise operations only


@dataclass
class Builder:
    tensors: list[TensorSpec] = field(default_factory=list)
    modules: list[tuple[str, str, dict[str, AttrValue]]] = field(default_factory=list)  # name, kind, attrs
    body: list[Stmt] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    counter: int = 0

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def stmt(self, op: str, args: list[str], out: str | None = None, **attrs: AttrValue) -> Stmt:
        s = Stmt.model_construct(index=0, line=0, op=op, args=args, out=out, attrs=attrs, body=None)
        self.body.append(s)
        return s

    def value(self, name: str, shape: tuple[int, ...], **kw: Any) -> Value:
        v = Value(name, shape, **kw)
        v.tracked = v.tracked or v.param
        self.values = [x for x in self.values if x.name != name] + [v]
        return v

    def floats(self) -> list[Value]:
        return [v for v in self.values if v.dtype == "float"]

    def declare(
        self, c: Chooser, shape: tuple[int, ...], role: str, *, kinks: Sequence[float] = (), prefix: str = "x"
    ) -> Value:
        """A new float tensor: normal, uniform, positive, or (1 in 4) edge values."""
        name = f"{prefix}{len(self.tensors)}"
        kind = c.integer(0, 7)
        spec: dict[str, Any] = {"name": name, "role": role, "shape": list(shape)}
        positive = False
        if kind <= 1:
            n = math.prod(shape)
            pool = (*EDGE_VALUES, *kinks)
            spec |= {"init": "values", "values": [pool[c.integer(0, len(pool) - 1)] for _ in range(n)]}
        else:
            init = ("normal", "normal", "uniform", "uniform", "positive", "positive")[kind - 2]
            spec["init"] = init
            positive = init == "positive"
        self.tensors.append(TensorSpec.model_validate(spec))
        return self.value(name, shape, positive=positive, param=role == "param")


Rule = Callable[[Chooser, Builder, OpSpec], bool]
RULES: dict[str, Rule] = {}
"""Per-operation generation rules (operation name -> rule). An operation with neither a rule
nor the generic rule's shape is not generated (`generated_ops()` lists the ones that are)."""


def rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for name in names:
            RULES[name] = fn
        return fn

    return register


def shape_of(c: Chooser) -> tuple[int, ...]:
    return tuple(pick(c, DIMS) for _ in range(c.integer(1, 2)))


def positive(b: Builder, v: Value) -> Value:
    """`v` itself if positive, else `abs(v) + 0.5` (the domain of log, sqrt, a divisor)."""
    if v.positive:
        return v
    a = b.fresh()
    b.stmt("abs", [v.name], a)
    p = b.fresh()
    b.stmt("add_scalar", [a], p, scalar=0.5)
    return b.value(p, v.shape, positive=True, tracked=v.tracked, scalar=v.scalar)


def draw_attr(c: Chooser, a: AttrSpec, rank: int) -> AttrValue | None:
    """A value for attribute `a` (None: leave it out, or none can be drawn)."""
    if a.default is OMITTED and coin(c):
        return None
    if a.default is not REQUIRED and a.default is not OMITTED and coin(c):
        return None  # the language's default
    if a.type == "bool":
        return coin(c)
    if a.type == "str":
        return pick(c, a.choices) if a.choices else None
    if a.type == "int":
        if "dim" in a.name:
            low, high = -rank, rank - 1
        else:
            low = int(a.minimum) if a.minimum is not None else 0
            high = low + 3
        low = max(low, int(a.minimum) + (1 if a.minimum_exclusive else 0)) if a.minimum is not None else low
        high = min(high, int(a.maximum) - (1 if a.maximum_exclusive else 0)) if a.maximum is not None else high
        return c.integer(low, high) if low <= high else None
    if a.type == "float":
        fits = [x for x in NICE_BY_NAME.get(a.name, NICE_FLOATS) if _in_range(a, x)]
        return pick(c, fits) if fits else None
    return None  # int lists need a rule


def _in_range(a: AttrSpec, x: float) -> bool:
    if a.minimum is not None and (x < a.minimum or (a.minimum_exclusive and x == a.minimum)):
        return False
    return not (a.maximum is not None and (x > a.maximum or (a.maximum_exclusive and x == a.maximum)))


@lru_cache(maxsize=4096)
def _infer(op: str, attrs: tuple[tuple[str, Any], ...], shapes: tuple[tuple[int, ...], ...]) -> tuple[Any, str] | None:
    import torch

    from ..program import torch_interp, torch_ops

    st = Stmt.model_construct(index=0, line=0, op=op, args=[], out=None, attrs=dict(attrs), body=None)
    fn: Any = torch_interp._IMPL.get(op) or torch_ops.IMPL.get(op) or torch_ops.call
    try:
        with torch.no_grad():
            out = fn(None, st, [torch.full(s, 0.5) for s in shapes])
    except Exception:
        return None
    if not isinstance(out, torch.Tensor) or out.numel() == 0 or out.numel() > 4096 or out.dim() > 4:
        return None
    dtype = "float" if out.dtype.is_floating_point else ("bool" if out.dtype == torch.bool else "int")
    return tuple(out.shape), dtype


def infer(
    op: str, attrs: dict[str, AttrValue], shapes: Sequence[tuple[int, ...]]
) -> tuple[tuple[int, ...], str] | None:
    """The result's torch shape and element type of `op` on float operands of `shapes`, or None
    when torch refuses the combination."""
    key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in attrs.items()))
    found = _infer(op, key, tuple(tuple(s) for s in shapes))
    return None if found is None else (tuple(found[0]), found[1])


def generic_applies(spec: OpSpec) -> bool:
    return (
        spec.category in PURE_CATEGORIES
        and spec.result == "tensor"
        and spec.module is None
        and not spec.inplace
        and all(k == "tensor" for k in spec.args)
        and all(spec.arg_dtype(i) in ("float", "any") for i in range(spec.arity()[1]))
        and spec.supports("torch")
        and spec.supports("burn")
        and not any(a.type == "int_list" and a.default is REQUIRED for a in spec.attrs)
    )


def generic(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    floats = b.floats()
    if not floats:
        return False
    v = pick(c, floats)
    least, most = spec.arity()
    n = c.integer(least, min(most, least + 1))
    args = [v]
    for _ in range(n - 1):
        same = [x for x in floats if x.shape == v.shape and x.scalar == v.scalar]
        args.append(pick(c, same))
    domains = spec.domain or ()
    for i, arg in enumerate(args):
        domain = domains[min(i, len(domains) - 1)] if domains else "any"
        if domain in ("positive", "nonzero"):
            args[i] = positive(b, arg)
    rank = max(len(v.shape), 1)
    attrs: dict[str, AttrValue] = {}
    for a in spec.attrs:
        value = draw_attr(c, a, rank)
        if value is None and a.default is REQUIRED:
            return False
        if value is not None:
            attrs[a.name] = value
    found = infer(spec.name, attrs, [() if x.scalar else x.shape for x in args])
    if found is None:
        return False
    shape, dtype = found
    scalar = shape == ()
    if any(x.scalar for x in args) and not scalar:
        return False  # a scalar's shape differs between the frameworks: elementwise results only
    out = b.fresh()
    b.stmt(spec.name, [x.name for x in args], out, **attrs)
    b.value(
        out,
        shape if not scalar else (1,),
        dtype=dtype,
        tracked=spec.differentiable and dtype == "float" and any(x.tracked for x in args),
        scalar=scalar,
    )
    return True


def generated_ops() -> tuple[str, ...]:
    """Every operation the generator draws as a computation step (rule or generic)."""
    return tuple(name for name, spec in OPS.items() if name in RULES or generic_applies(spec))


# ---- the rules ---------------------------------------------------------------------------------


@rule("powi")
def _powi(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    v = pick(c, b.floats())
    e = pick(c, (-1, 2, 3) if v.positive else (2, 3))
    out = b.fresh()
    b.stmt("powi", [v.name], out, exponent=e)
    b.value(out, v.shape, positive=v.positive or e == 2, tracked=v.tracked, scalar=v.scalar)
    return True


@rule("add_scalar", "mul_scalar")
def _scalar(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    v = pick(c, b.floats())
    s = pick(c, (-2.0, -0.5, 0.5, 1.5, 3.0))
    out = b.fresh()
    b.stmt(spec.name, [v.name], out, scalar=s)
    b.value(out, v.shape, positive=v.positive and s > 0, tracked=v.tracked, scalar=v.scalar)
    return True


def _tensors(b: Builder) -> list[Value]:
    return [v for v in b.floats() if not v.scalar]


@rule("matmul")
def _matmul(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    matrices = [v for v in _tensors(b) if len(v.shape) == 2]
    if not matrices:
        return False
    v = pick(c, matrices)
    partners = [x for x in matrices if x.shape[0] == v.shape[1]]
    if partners and coin(c):
        w = pick(c, partners)
    else:
        w = b.declare(c, (v.shape[1], pick(c, DIMS)), pick(c, ("param", "input")), prefix="m")
    out = b.fresh()
    b.stmt("matmul", [v.name, w.name], out)
    b.value(out, (v.shape[0], w.shape[1]), tracked=v.tracked or w.tracked)
    return True


@rule("transpose")
def _transpose(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    matrices = [v for v in _tensors(b) if len(v.shape) == 2]
    if not matrices:
        return False
    v = pick(c, matrices)
    out = b.fresh()
    b.stmt("transpose", [v.name], out)
    b.value(out, (v.shape[1], v.shape[0]), positive=v.positive, tracked=v.tracked)
    return True


@rule("sum_dim")
def _sum_dim(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    options = _tensors(b)
    if not options:
        return False
    v = pick(c, options)
    d = c.integer(0, len(v.shape) - 1)
    shape = list(v.shape)
    shape[d] = 1
    out = b.fresh()
    b.stmt("sum_dim", [v.name], out, dim=d)
    b.value(out, tuple(shape), positive=v.positive, tracked=v.tracked)
    return True


@rule("reshape")
def _reshape(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    options = _tensors(b)
    if not options:
        return False
    v = pick(c, options)
    n = math.prod(v.shape)
    shapes: list[tuple[int, ...]] = [(n,)] + [(a, n // a) for a in DIMS if n % a == 0 and a != n]
    new = pick(c, shapes)
    out = b.fresh()
    b.stmt("reshape", [v.name], out, shape=list(new))
    b.value(out, new, positive=v.positive, tracked=v.tracked)
    return True


@rule("linear")
def _linear(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    options = [v for v in _tensors(b) if v.shape[-1] <= 16]
    if not options:
        return False
    v = pick(c, options)
    name = f"lin{len(b.modules)}"
    d_out = pick(c, DIMS)
    attrs: dict[str, AttrValue] = {"d_in": v.shape[-1], "d_out": d_out}
    if coin(c, 4):
        attrs["bias"] = False
    b.modules.append((name, "linear", attrs))
    out = b.fresh()
    b.stmt("linear", [name, v.name], out)
    b.value(out, (*v.shape[:-1], d_out), tracked=True)
    return True


@rule("conv2d")
def _conv2d(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    """A [1, C, H, W] image from a fresh input, a small Conv2d whose geometry fits it."""
    channels, side = pick(c, (1, 2, 3)), pick(c, (4, 5, 6))
    x = b.declare(c, (1, channels, side, side), pick(c, ("param", "input")), prefix="img")
    kernel = pick(c, (1, 2, 3))
    attrs: dict[str, AttrValue] = {"in_channels": channels, "out_channels": pick(c, (1, 2, 4)), "kernel_size": kernel}
    if coin(c):
        attrs["padding"] = 1
    if coin(c, 3):
        attrs["stride"] = 2
    found = infer_conv(attrs, x.shape)
    if found is None:
        return False
    name = f"conv{len(b.modules)}"
    b.modules.append((name, "conv2d", attrs))
    out = b.fresh()
    b.stmt("conv2d", [name, x.name], out)
    b.value(out, found, tracked=True)
    return True


def infer_conv(attrs: dict[str, AttrValue], shape: tuple[int, ...]) -> tuple[int, ...] | None:
    def n(key: str, default: int) -> int:
        value = attrs.get(key, default)
        assert isinstance(value, int)
        return value

    k, s, p = n("kernel_size", 1), n("stride", 1), n("padding", 0)
    side = (shape[-1] + 2 * p - k) // s + 1
    return None if side < 1 else (shape[0], n("out_channels", 1), side, side)


@rule("cross_entropy")
def _cross_entropy(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    logits = [v for v in _tensors(b) if len(v.shape) == 2 and v.shape[1] >= 2]
    if not logits:
        return False
    v = pick(c, logits)
    rows, classes = v.shape
    target = f"t{len(b.tensors)}"
    b.tensors.append(
        TensorSpec.model_validate(
            {"name": target, "role": "input", "shape": [rows], "dtype": "int", "init": "randint", "high": classes}
        )
    )
    b.value(target, (rows,), dtype="int")
    attrs: dict[str, AttrValue] = {}
    if coin(c, 3):
        attrs["label_smoothing"] = pick(c, (0.1, 0.5))
    out = b.fresh()
    b.stmt("cross_entropy", [v.name, target], out, **attrs)
    b.value(out, (1,), tracked=v.tracked, scalar=True)
    return True


@rule("detach")
def _detach(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    v = pick(c, b.floats())
    out = b.fresh()
    b.stmt("detach", [v.name], out)
    b.value(out, v.shape, positive=v.positive, scalar=v.scalar)
    return True


@rule("clone")
def _clone(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    v = pick(c, b.floats())
    out = b.fresh()
    b.stmt("clone", [v.name], out)
    b.value(out, v.shape, positive=v.positive, tracked=v.tracked, scalar=v.scalar)
    return True


@rule("max_pool2d", "avg_pool2d", "adaptive_avg_pool2d")
def _pool2d(c: Chooser, b: Builder, spec: OpSpec) -> bool:
    """2-d pooling of an image: a [N, C, H, W] tensor the program holds (a conv's output) or a
    fresh one, the only rank burn's pooling takes (torch also takes [C, H, W], and the generic
    rule's rank-2 operands; a port of those would not compile), attributes drawn from the table
    and kept when torch accepts the geometry."""
    images = [v for v in _tensors(b) if len(v.shape) == 4]
    if images and coin(c):
        x = pick(c, images)
    else:
        shape = (pick(c, (1, 2)), pick(c, (1, 2, 3)), pick(c, (4, 5, 6, 8)), pick(c, (4, 5, 6, 8)))
        x = b.declare(c, shape, pick(c, ("param", "input")), prefix="img")
    attrs: dict[str, AttrValue] = {}
    for a in spec.attrs:
        value = draw_attr(c, a, 4)
        if value is None and a.default is REQUIRED:
            return False
        if value is not None:
            attrs[a.name] = value
    found = infer(spec.name, attrs, [x.shape])
    if found is None or len(found[0]) != 4:
        return False
    out = b.fresh()
    b.stmt(spec.name, [x.name], out, **attrs)
    b.value(out, found[0], tracked=x.tracked)  # padding zeros: not positive
    return True
