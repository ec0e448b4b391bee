"""Generated programs, from the operation table.

A program is built statement by statement with every tensor's shape known, so it is
well-typed by construction: each computation step is an operation of the table drawn
uniformly from those the generator can make (`rules.generated_ops()`: the generic rule for
plain functions of float tensors, a registered rule for the others), on operands that fit it.
Each program ends with a scalar loss, one backward, and an observation of every named
tensor. A share of programs also train (an optimizer of the table, with attributes drawn from
its spec, stepped after the backward; 1 in 12 of those in a loop of 200 iterations) or contain
graph operations whose semantics differ between the frameworks (`detach` of a parameter,
`require_grad` of a non-leaf, a second backward): the known differences.

Declared tensors hold normal, uniform or positive values, or (1 in 4) edge values: zero,
tiny, and far out on both sides (and the table's kinks), where activations saturate.

Program `index` of campaign `seed` is a function of the two (`program_at`, a `random.Random`
seeded with both): shards of a campaign generate disjoint programs, and a rerun the same ones.
`strategies.programs()` is the same generator as a hypothesis strategy, for the property tests
(a module of its own: the command does not import hypothesis).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from ..contract.ops import OPS, REQUIRED, AttrValue
from ..program.ir import ModuleDecl, ParsedProgram, Stmt, walk
from .rules import RULES, Builder, Chooser, Value, coin, draw_attr, generated_ops, generic, pick, shape_of

LOOP_ITERATIONS = 200
OPTIMIZERS = tuple(name for name, spec in OPS.items() if spec.result == "optimizer" and not spec.args)
COMPUTE = generated_ops()
# Every operation a generated program may hold (coverage is counted over these).
GENERATED = tuple(
    dict.fromkeys(
        (
            *COMPUTE,
            "abs",
            "add_scalar",
            "sum",
            "mean",
            "require_grad",
            "item",
            "backward",
            *OPTIMIZERS,
            "step",
            "zero_grad",
            "observe",
            "repeat",
            "grad",
            "freeze",
            "add_scalar_",
            "clone",
        )
    )
)
SPECIALS = ("require_grad", "detach-param", "freeze", "inplace")


class RandomChooser:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)


def program_seed(seed: int, index: int) -> int:
    """The generator seed of program `index` of a campaign seeded `seed`."""
    return (seed * 1_000_003 + index) % (1 << 64) ^ 0x5DEECE66D


def program_at(seed: int, index: int, max_ops: int = 8) -> ParsedProgram:
    """Program `index` of the campaign seeded `seed` (the same every time)."""
    return build(RandomChooser(random.Random(program_seed(seed, index))), max_ops)


def _operation(c: Chooser, b: Builder) -> None:
    """One computation step: an operation of the table (a rule's, or the generic one); a few
    tries, then a reduction, which always fits."""
    for _ in range(6):
        op = pick(c, COMPUTE)
        spec = OPS[op]
        make = RULES.get(op, generic)
        if make(c, b, spec):
            return
    v = pick(c, b.floats())
    out = b.fresh()
    b.stmt(pick(c, ("sum", "mean")), [v.name], out)
    b.value(out, (1,), positive=v.positive, tracked=v.tracked, scalar=True)


def _optimizer(c: Chooser, b: Builder) -> None:
    name = pick(c, OPTIMIZERS)
    attrs: dict[str, AttrValue] = {}
    for a in OPS[name].attrs:
        if a.name == "lr":
            attrs["lr"] = pick(c, (0.1, 0.01))
            continue
        value = draw_attr(c, a, 1)
        if value is None and a.default is REQUIRED:
            continue
        if value is not None:
            attrs[a.name] = value
    if "clip_grad_norm" in attrs and "clip_grad_value" in attrs:  # one clipping at a time
        del attrs[pick(c, ("clip_grad_norm", "clip_grad_value"))]
    b.stmt(name, [], "opt", **attrs)


def build(c: Chooser, max_ops: int = 8) -> ParsedProgram:
    """A program; a draw the language refuses as a whole (a combination of attributes the
    table's validation rejects) is drawn again, from the chooser's next choices."""
    for _ in range(8):
        try:
            return _build(c, max_ops)
        except ValueError:
            continue
    return _build(c, 1)


def _build(c: Chooser, max_ops: int) -> ParsedProgram:
    b = Builder()
    for _ in range(c.integer(1, 3)):
        b.declare(c, shape_of(c), pick(c, ("param", "param", "input")), prefix="p")
    if not any(t.role == "param" for t in b.tensors):
        first = b.tensors[0]
        b.tensors[0] = first.model_copy(update={"role": "param"})
        b.values[0].param = b.values[0].tracked = True
    declared = [v.name for v in b.values]
    optimizer = c.integer(0, 4) >= 3
    if optimizer:
        _optimizer(c, b)
    loop = optimizer and c.integer(0, 11) == 0
    accumulator = None
    if loop:
        accumulator = b.declare(c, b.values[0].shape, "input", prefix="acc").name
        b.tensors[-1] = b.tensors[-1].model_copy(update={"init": "zeros", "values": None})
    loop_start = len(b.body)
    for _ in range(c.integer(1, max_ops)):
        _operation(c, b)
    tracked = [v for v in b.floats() if v.tracked]
    last = tracked[-1] if tracked else next(v for v in b.values if v.param)
    if c.integer(0, 9) == 0:
        _special(c, b, last)
    # The loss reaches every tracked result nothing else used: each statement's gradient counts.
    used = {a for s in b.body for a in s.args}
    dangling = [v for v in tracked if v.name not in used and v.name != last.name and not v.param][-2:]
    terms = []
    for v in [*dangling, last]:
        term = b.fresh("l")
        b.stmt(pick(c, ("sum", "mean")), [v.name], term)
        terms.append(term)
    total = terms[0]
    for term in terms[1:]:
        added = b.fresh("l")
        b.stmt("add", [total, term], added)
        total = added
    b.stmt("clone", [total], "loss")
    if optimizer and (loop or coin(c)):
        b.stmt("zero_grad", ["opt"])
    b.stmt("backward", ["loss"], None, retain_graph=False, accumulate=False)
    if not loop and c.integer(0, 19) == 0:
        b.stmt("backward", ["loss"], None, retain_graph=False, accumulate=False)
    if not loop and coin(c, 4):
        b.stmt("item", ["loss"])
    if not loop and coin(c, 4):
        param = next(v for v in b.values if v.param)
        b.stmt("grad", [param.name], "g")
        b.value("g", param.shape)
    observed = ["loss", *[v.name for v in b.values if v.name != "loss"]]
    if loop:
        assert accumulator is not None
        carried = [v for v in b.floats() if v.shape == b.values[0].shape and v.name != accumulator]
        if carried and coin(c):
            src = pick(c, carried)
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
        for name in observed:
            b.stmt("observe", [name], None, label=name, values=True)
        return _finish(b)
    for name in observed:
        b.stmt("observe", [name], None, label=name, values=True)
    if optimizer:
        b.stmt("step", ["opt"])
        for name in declared:
            b.stmt("observe", [name], None, label=f"{name} after step", values=True)
    return _finish(b)


def _special(c: Chooser, b: Builder, last: Value) -> None:
    """A graph operation with known semantic differences."""
    special = pick(c, SPECIALS)
    if special == "require_grad":
        b.stmt("require_grad", [last.name])
    elif special == "freeze":
        params = [v for v in b.values if v.param]
        if len(params) > 1:  # one param stays trainable: the loss must still reach one
            b.stmt("freeze", [params[-1].name])
    elif special == "inplace":
        copy = b.fresh()
        b.stmt("clone", [last.name], copy)
        b.stmt("add_scalar_", [copy], None, scalar=1.5)
        b.value(copy, last.shape, scalar=last.scalar)
    else:
        param = next(v for v in b.values if v.param)
        d = b.fresh()
        b.stmt("detach", [param.name], d)
        b.value(d, param.shape)
        out = b.fresh()
        b.stmt("mul_scalar", [d], out, scalar=2.0)
        b.value(out, param.shape)


def _finish(b: Builder) -> ParsedProgram:
    tensors = list(b.tensors)
    modules = []
    for name, kind, attrs in b.modules:
        decl = ModuleDecl(name=name, kind=kind, attrs=attrs)
        modules.append(decl)
        tensors += decl.tensor_specs()
    counter = iter(range(10**6))

    def number(stmt: Stmt) -> dict[str, object]:
        index = next(counter)
        data: dict[str, object] = {
            "index": index,
            "line": index,
            "op": stmt.op,
            "args": list(stmt.args),
            "out": stmt.out,
            "attrs": dict(stmt.attrs),
        }
        if stmt.body is not None:
            data["body"] = [number(child) for child in stmt.body]
        return data

    body = [number(s) for s in b.body]
    return ParsedProgram.model_validate(
        {"tensors": [t.model_dump() for t in tensors], "modules": modules, "body": body}
    )


def ops_of(program: ParsedProgram) -> list[str]:
    """The operations of a program in order (blocks flattened), for coverage."""
    return [s.op for s in walk(program.body)]


def stream(seed: int, start: int, step: int, max_ops: int = 8) -> Iterator[tuple[int, ParsedProgram]]:
    """Programs start, start + step, ... of the campaign seeded `seed`, with their indices."""
    index = start
    while True:
        yield index, program_at(seed, index, max_ops)
        index += step


assert set(GENERATED) <= set(OPS)
