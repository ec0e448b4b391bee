"""The burn interpreter's liveness pass (`rust_probe/src/program/compile.rs` `liveness`), over
program names: which read of a value is its last (the reproducer moves the value there and clones
it before), which result somebody reads later (bound, or dropped at once), and what a loop carries
from one iteration to the next."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ...contract.ops import OPS
from ..ir import Program, Stmt, timed_loop

INPLACE = frozenset(name for name, spec in OPS.items() if spec.inplace)
"""Ops that rebind their argument (and bind `out` too when given)."""

HELD = "@grads"
"""The gradients held between backward and step / zero_grad, as one variable of the liveness."""


@dataclass
class Operands:
    """One statement's reads and writes: program names (tensors, optimizers) and `HELD`."""

    reads: list[tuple[str, int]] = field(default_factory=list)
    """(name, argument position; -1 for `HELD`), in the order the interpreter reads them."""
    defs: list[tuple[str, str]] = field(default_factory=list)
    """(name, role): role "out", "alias" (an in-place op's argument), "opt" or "held"."""


@dataclass
class Live:
    """What the liveness pass decided, per statement index."""

    take: dict[tuple[int, int], bool] = field(default_factory=dict)
    """(statement index, argument position) -> the read is the value's last use (move it)."""
    keep: dict[tuple[int, str], bool] = field(default_factory=dict)
    """(statement index, role) -> somebody reads the result later (bind it)."""
    end: dict[int, frozenset[str]] = field(default_factory=dict)
    """repeat's index -> what is live at the end of an iteration (read by the next one or after)."""
    defined: dict[int, frozenset[str]] = field(default_factory=dict)
    """repeat's index -> every name its body writes."""
    after: dict[int, frozenset[str]] = field(default_factory=dict)
    """repeat's index -> what is live after the loop."""


def tensor_names(program: Program) -> frozenset[str]:
    """The params and the modules' buffers: read from the model, never moved (the interpreter's
    `Src::Param`)."""
    return frozenset(t.name for t in program.tensors if t.role in ("param", "buffer"))


def operands(st: Stmt, params: set[str] | frozenset[str]) -> Operands:
    ops = Operands()
    op, args, out = st.op, st.args, st.out

    def tensor(i: int) -> None:
        if args[i] not in params:
            ops.reads.append((args[i], i))

    if OPS[op].result == "optimizer":
        assert out is not None
        ops.defs.append((out, "opt"))
    elif op == "step":
        ops.reads += [(args[0], 0), (HELD, -1)]
        ops.defs.append((HELD, "held"))
    elif op == "zero_grad":
        ops.defs.append((HELD, "held"))
    elif op == "backward":
        tensor(0)
        if st.attrs.get("accumulate"):
            ops.reads.append((HELD, -1))
        ops.defs.append((HELD, "held"))
    elif op == "observe":
        tensor(0)
        if st.attrs.get("values", True):
            ops.reads.append((HELD, -1))
    elif op == "grad":
        tensor(0)
        ops.reads.append((HELD, -1))
    elif op == "linear":
        tensor(1)
    elif op in INPLACE:
        if args[0] not in params:
            tensor(0)
    else:
        kinds = OPS[op].args
        for i in range(len(args)):
            # a variadic op's last kind repeats (`cat(a, b, c)`)
            if kinds[min(i, len(kinds) - 1)] == "tensor":
                tensor(i)
    if out is not None and OPS[op].result != "optimizer":
        if not (op in INPLACE and out == args[0]):
            ops.defs.append((out, "out"))
    if op in INPLACE and args[0] not in params:
        ops.defs.append((args[0], "alias"))
    return ops


def liveness(program: Program) -> Live:
    """The burn interpreter's liveness pass (`compile.rs` `liveness`), over names.

    A read moves the value when nothing reads it later; a result is kept when something does.
    A loop may run zero times (what is live after it stays live before it), and the timed
    loop's `track` is read after every iteration."""
    params = tensor_names(program)
    track = program.settings.track if program.settings.track not in params else None
    timed = timed_loop(program.body)
    live = Live()

    def defined(body: Sequence[Stmt]) -> set[str]:
        names: set[str] = set()
        for s in body:
            if s.op == "repeat":
                names |= defined(s.body or [])
            else:
                names |= {n for n, _ in operands(s, params).defs}
        return names

    def visit(body: Sequence[Stmt], live_out: frozenset[str]) -> frozenset[str]:
        now = set(live_out)
        for st in reversed(body):
            if st.op in ("repeat", "no_grad"):
                inner = st.body or []
                end = frozenset(now | ({track} if st is timed and track is not None else set()))
                while True:
                    start = visit(inner, end)
                    grown = end | start
                    if grown == end:
                        break
                    end = grown
                start = visit(inner, end)
                live.end[st.index] = end
                live.after[st.index] = frozenset(now)
                live.defined[st.index] = frozenset(defined(inner))
                now |= start
                continue
            ops = operands(st, params)
            for name, role in ops.defs:
                live.keep[(st.index, role)] = name in now
            for name, _ in ops.defs:
                now.discard(name)
            for name, pos in reversed(ops.reads):
                if pos >= 0:
                    live.take[(st.index, pos)] = name not in now
                now.add(name)
        return frozenset(now)

    visit(program.body, frozenset())
    return live
