"""Generated programs, as hypothesis strategies.

A program is built statement by statement with every tensor's shape known, so
it is well-typed by construction: binary operations get operands of one shape,
`matmul` a matching pair, `log` and `sqrt` a positive operand (`abs(t) + 0.5`),
`powi` small exponents. Each program ends with a scalar loss, one backward, and
an observation of every named tensor, so values, gradients and flags are all
compared. A share of programs also train (an optimizer step after the
backward) or contain graph operations whose semantics differ between the
frameworks (`detach` of a parameter, `require_grad` of a non-leaf, a second
backward): the known differences, which the registry recognises.

Sizes stay small (at most 16x16, rank 1 or 2) so that many programs run per
second; the program source (`unparse`) is what a found case file holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from ..contract.ops import OPS, AttrValue
from ..program.ir import ModuleDecl, ParsedProgram, Stmt, TensorSpec, walk

DIMS = (1, 2, 3, 4, 8, 16)
UNARY = ("exp", "tanh", "sigmoid", "relu", "abs", "neg", "clone")
POSITIVE_ONLY = ("log", "sqrt")
BINARY = ("add", "sub", "mul", "div")
REDUCE = ("sum", "mean")
# Operations the generator draws (the statement op, before any wrapper it needs).
GENERATED = (
    *UNARY,
    *POSITIVE_ONLY,
    *BINARY,
    *REDUCE,
    "matmul",
    "transpose",
    "add_scalar",
    "mul_scalar",
    "powi",
    "sum_dim",
    "reshape",
    "detach",
    "linear",
    "require_grad",
    "item",
    "backward",
    "sgd",
    "adam",
    "step",
    "zero_grad",
    "observe",
    "repeat",
    "grad",
    "freeze",
    "add_scalar_",
)


@dataclass
class _Value:
    name: str
    shape: tuple[int, ...]
    positive: bool = False
    param: bool = False
    tracked: bool = False  # derived from a param without a detach: the loss needs one
    scalar: bool = False  # a reduction's result: [] in torch, [1] in burn


@dataclass
class _Builder:
    tensors: list[TensorSpec] = field(default_factory=list)
    modules: list[dict[str, object]] = field(default_factory=list)
    body: list[Stmt] = field(default_factory=list)
    values: list[_Value] = field(default_factory=list)
    counter: int = 0

    def fresh(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    def stmt(self, op: str, args: list[str], out: str | None = None, **attrs: AttrValue) -> Stmt:
        line = len(self.body) + len(self.tensors) + 1
        s = Stmt.model_construct(index=0, line=line, op=op, args=args, out=out, attrs=attrs, body=None)
        self.body.append(s)
        return s

    def value(
        self,
        name: str,
        shape: tuple[int, ...],
        positive: bool = False,
        param: bool = False,
        tracked: bool = False,
        scalar: bool = False,
    ) -> _Value:
        v = _Value(name, shape, positive, param, tracked or param, scalar)
        self.values = [x for x in self.values if x.name != name] + [v]
        return v


# Strategies built once: constructing them inside every draw is most of hypothesis's cost.
_INDEX = {n: st.integers(0, n - 1) for n in range(1, 65)}
_DIM = st.sampled_from(DIMS)
_RANK = st.integers(1, 2)
_BOOL = st.booleans()
_KIND = st.sampled_from(
    (
        "unary",
        "unary",
        "positive",
        "binary",
        "binary",
        "scalar",
        "powi",
        "matmul",
        "transpose",
        "sum_dim",
        "reshape",
        "detach",
        "linear",
        "reduce",
    )
)
_UNARY = st.sampled_from(UNARY)
_POSITIVE_ONLY = st.sampled_from(POSITIVE_ONLY)
_BINARY = st.sampled_from(BINARY)
_REDUCE = st.sampled_from(REDUCE)
_SCALAR_OP = st.sampled_from(("add_scalar", "mul_scalar"))
_SCALAR = st.sampled_from((-2.0, -0.5, 0.5, 1.5, 3.0))
_EXP_ANY = st.sampled_from((2, 3))
_EXP_POS = st.sampled_from((-1, 2, 3))
_ROLE = st.sampled_from(("param", "param", "input"))
_INPUT_ROLE = st.sampled_from(("param", "input"))
_INIT = st.sampled_from(("normal", "uniform", "positive"))
_OPTIMIZER = st.sampled_from((None, None, None, "sgd", "adam"))
_LR = st.sampled_from((0.1, 0.01))
_MOMENTUM = st.sampled_from((0.0, 0.9))
_DECAY = st.sampled_from((0.0, 0.01))
_SPECIAL = st.sampled_from(("require_grad", "detach-param", "backward-twice", "freeze", "inplace"))
_DECLS = st.integers(1, 3)
_ONE_IN_10 = st.integers(0, 9)
_ONE_IN_20 = st.integers(0, 19)
_ONE_IN_12 = st.integers(0, 11)
_ONE_IN_4 = st.integers(0, 3)
LOOP_ITERATIONS = 200
_COUNTS = {n: st.integers(1, n) for n in range(1, 33)}


def _pick(draw: st.DrawFn, items: list[_Value]) -> _Value:
    return items[draw(_INDEX[len(items)])] if len(items) <= 64 else items[-1]


def shapes(draw: st.DrawFn) -> tuple[int, ...]:
    return tuple(draw(_DIM) for _ in range(draw(_RANK)))


def _positive(b: _Builder, v: _Value) -> _Value:
    """`v` itself if positive, else `abs(v) + 0.5` (the domain of log and sqrt)."""
    if v.positive:
        return v
    a = b.fresh()
    b.stmt("abs", [v.name], a)
    p = b.fresh()
    b.stmt("add_scalar", [a], p, scalar=0.5)
    return b.value(p, v.shape, positive=True, tracked=v.tracked, scalar=v.scalar)


def _operation(draw: st.DrawFn, b: _Builder) -> None:
    """One statement (or a short sequence with the wrappers it needs) over existing values."""
    v = _pick(draw, b.values)
    kind = draw(_KIND)
    out = b.fresh()
    t, sc = v.tracked, v.scalar
    if v.scalar and kind in ("matmul", "transpose", "sum_dim", "reshape", "linear"):
        kind = "unary"  # a scalar's shape differs between the frameworks: elementwise operations only
    if kind == "unary":
        op = draw(_UNARY)
        b.stmt(op, [v.name], out)
        b.value(out, v.shape, positive=op in ("exp", "sigmoid"), tracked=t, scalar=sc)
    elif kind == "positive":
        op = draw(_POSITIVE_ONLY)
        p = _positive(b, v)
        b.stmt(op, [p.name], out)
        b.value(out, v.shape, positive=op == "sqrt", tracked=t, scalar=sc)
    elif kind == "binary":
        op = draw(_BINARY)
        same = [x for x in b.values if x.shape == v.shape and x.scalar == v.scalar]
        w = _pick(draw, same)
        if op == "div":
            w = _positive(b, w)
        b.stmt(op, [v.name, w.name], out)
        b.value(out, v.shape, tracked=t or w.tracked, scalar=sc)
    elif kind == "scalar":
        op = draw(_SCALAR_OP)
        s = draw(_SCALAR)
        b.stmt(op, [v.name], out, scalar=s)
        b.value(out, v.shape, positive=v.positive and s > 0, tracked=t, scalar=sc)
    elif kind == "powi":
        e = draw(_EXP_POS if v.positive else _EXP_ANY)
        b.stmt("powi", [v.name], out, exponent=e)
        b.value(out, v.shape, positive=v.positive or e == 2, tracked=t, scalar=sc)
    elif kind == "matmul" and len(v.shape) == 2:
        n = draw(_DIM)
        partners = [x for x in b.values if len(x.shape) == 2 and x.shape[0] == v.shape[1]]
        coin: bool = draw(_BOOL)
        if partners and coin:
            w = _pick(draw, partners)
        else:
            name = f"m{len(b.tensors)}"
            b.tensors.append(
                TensorSpec.model_validate(
                    {"name": name, "role": draw(_INPUT_ROLE), "shape": [v.shape[1], n], "init": "uniform"}
                )
            )
            w = b.value(name, (v.shape[1], n), param=b.tensors[-1].role == "param")
        b.stmt("matmul", [v.name, w.name], out)
        b.value(out, (v.shape[0], w.shape[1]), tracked=t or w.tracked)
    elif kind == "transpose" and len(v.shape) == 2:
        b.stmt("transpose", [v.name], out)
        b.value(out, (v.shape[1], v.shape[0]), positive=v.positive, tracked=t)
    elif kind == "sum_dim":
        d = draw(_INDEX[len(v.shape)])
        b.stmt("sum_dim", [v.name], out, dim=d)
        shape = list(v.shape)
        shape[d] = 1
        b.value(out, tuple(shape), positive=v.positive, tracked=t)
    elif kind == "reshape":
        n = 1
        for d in v.shape:
            n *= d
        options: list[tuple[int, ...]] = [(n,)] + [(a, n // a) for a in DIMS if n % a == 0 and a != n]
        new_shape = options[draw(_INDEX[len(options)])]
        b.stmt("reshape", [v.name], out, shape=list(new_shape))
        b.value(out, new_shape, positive=v.positive, tracked=t)
    elif kind == "detach":
        b.stmt("detach", [v.name], out)
        b.value(out, v.shape, positive=v.positive, scalar=sc)
    elif kind == "linear" and v.shape[-1] <= 16:
        d_out = draw(_DIM)
        name = f"lin{len(b.modules)}"
        d_in = v.shape[-1]
        b.modules.append({"name": name, "d_in": d_in, "d_out": d_out})
        b.stmt("linear", [name, v.name], out)
        b.value(out, (*v.shape[:-1], d_out), tracked=True)
    else:  # reduce (and the kinds above that did not fit this value)
        op = draw(_REDUCE)
        b.stmt(op, [v.name], out)
        b.value(out, (1,), positive=v.positive, tracked=t, scalar=True)


@st.composite
def programs(draw: st.DrawFn, max_ops: int = 8) -> ParsedProgram:
    """A well-typed program of at most `max_ops` generated operations, ending in
    a loss, a backward and observations (see the module docstring)."""
    b = _Builder()
    for i in range(draw(_DECLS)):
        shape = shapes(draw)
        role = draw(_ROLE)
        init = draw(_INIT)
        name = f"{'p' if role == 'param' else 'x'}{i}"
        b.tensors.append(TensorSpec.model_validate({"name": name, "role": role, "shape": list(shape), "init": init}))
        b.value(name, shape, positive=init == "positive", param=role == "param")
    if not any(t.role == "param" for t in b.tensors):
        b.tensors[0] = b.tensors[0].model_copy(update={"role": "param", "name": "p0"})
        b.values[0] = _Value("p0", b.values[0].shape, b.values[0].positive, True)
    declared = [v.name for v in b.values]
    optimizer = draw(_OPTIMIZER)
    if optimizer == "sgd":
        b.stmt("sgd", [], "opt", lr=draw(_LR), momentum=draw(_MOMENTUM), weight_decay=draw(_DECAY))
    elif optimizer == "adam":
        b.stmt("adam", [], "opt", lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0)
    # A loop (1 in 12, with an optimizer): the training step repeated, timed per iteration,
    # sometimes with a running accumulator carried across iterations (EMA, total loss).
    loop = optimizer is not None and draw(_ONE_IN_12) == 0
    accumulator = None
    if loop:
        acc_shape = b.values[0].shape
        accumulator = f"acc{len(b.tensors)}"
        b.tensors.append(
            TensorSpec.model_validate({"name": accumulator, "role": "input", "shape": list(acc_shape), "init": "zeros"})
        )
        b.value(accumulator, acc_shape)
    loop_start = len(b.body)
    ops = draw(_COUNTS[max_ops]) if max_ops in _COUNTS else draw(st.integers(1, max_ops))
    for _ in range(ops):
        _operation(draw, b)
    tracked = [v for v in b.values if v.tracked]
    last = tracked[-1] if tracked else next(v for v in b.values if v.param)
    if draw(_ONE_IN_10) == 0:  # a graph operation with known semantic differences
        special = draw(_SPECIAL)
        if special == "require_grad":
            b.stmt("require_grad", [last.name])
        elif special == "freeze":
            frozen = [v for v in b.values if v.param]
            if len(frozen) > 1:  # one param stays trainable: the loss must still reach one
                b.stmt("freeze", [frozen[-1].name])
        elif special == "inplace":
            c = b.fresh()
            b.stmt("clone", [last.name], c)
            b.stmt("add_scalar_", [c], None, scalar=1.5)
            b.value(c, last.shape, scalar=last.scalar)
        elif special == "detach-param":
            param = next(v for v in b.values if v.param)
            d = b.fresh()
            b.stmt("detach", [param.name], d)
            b.value(d, param.shape)
            out = b.fresh()
            b.stmt("mul_scalar", [d], out, scalar=2.0)
            b.value(out, param.shape)
    loss_op = draw(_REDUCE)
    b.stmt(loss_op, [last.name], "loss")
    zero: bool = draw(_BOOL)
    if optimizer is not None and (loop or zero):
        b.stmt("zero_grad", ["opt"])
    b.stmt("backward", ["loss"], None, retain_graph=False, accumulate=False)
    if not loop and draw(_ONE_IN_20) == 0:
        b.stmt("backward", ["loss"], None, retain_graph=False, accumulate=False)
    if not loop and draw(_ONE_IN_4) == 0:
        b.stmt("item", ["loss"])
    if not loop and draw(_ONE_IN_4) == 0:
        param = next(v for v in b.values if v.param)
        b.stmt("grad", [param.name], "g")
        b.value("g", param.shape)
    if loop:
        assert accumulator is not None
        carried = [v for v in b.values if v.shape == b.values[0].shape and v.name != accumulator]
        carry: bool = draw(_BOOL)
        if carried and carry:
            src = _pick(draw, carried)
            scaled = b.fresh()
            b.stmt("mul_scalar", [accumulator], scaled, scalar=0.9)
            b.stmt("add", [scaled, src.name], accumulator)
        b.stmt("step", ["opt"])
        inner = b.body[loop_start:]
        del b.body[loop_start:]
        b.body.append(
            Stmt.model_construct(
                index=0,
                line=0,
                op="repeat",
                args=[],
                out=None,
                attrs={"count": LOOP_ITERATIONS, "var": "i"},
                body=inner,
            )
        )
        for name in ["loss", *[v.name for v in b.values if v.name != "loss"]]:
            b.stmt("observe", [name], None, label=name, values=True)
        return _finish(b)
    observed = ["loss", *[v.name for v in b.values if v.name != "loss"]]
    if optimizer is not None:
        for name in observed:
            b.stmt("observe", [name], None, label=name, values=True)
        b.stmt("step", ["opt"])
        for name in declared:
            b.stmt("observe", [name], None, label=f"{name} after step", values=True)
    else:
        for name in observed:
            b.stmt("observe", [name], None, label=name, values=True)
    return _finish(b)


def _finish(b: _Builder) -> ParsedProgram:
    modules = []
    tensors = list(b.tensors)
    for m in b.modules:
        decl = ModuleDecl(
            name=str(m["name"]), kind="linear", attrs={"d_in": int(str(m["d_in"])), "d_out": int(str(m["d_out"]))}
        )
        modules.append(decl)
        tensors += decl.tensor_specs()
    counter = iter(range(10**6))

    def number(stmt: Stmt) -> dict[str, object]:
        data: dict[str, object] = {
            "index": 0,
            "line": 0,
            "op": stmt.op,
            "args": list(stmt.args),
            "out": stmt.out,
            "attrs": dict(stmt.attrs),
        }
        data["index"] = data["line"] = next(counter)
        if stmt.body is not None:
            data["body"] = [number(c) for c in stmt.body]
        return data

    body = [number(s) for s in b.body]
    return ParsedProgram.model_validate(
        {"tensors": [t.model_dump() for t in tensors], "modules": modules, "body": body}
    )


def ops_of(program: ParsedProgram) -> list[str]:
    """The operations of a program in order (blocks flattened), for coverage and signatures."""
    return [s.op for s in walk(program.body)]


assert set(GENERATED) <= set(OPS)
