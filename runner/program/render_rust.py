"""A program as a standalone Rust program against burn 0.22.1 that reproduces the burn
interpreter's run outside the runner: the reproducer a user attaches to an upstream report.

`render` gives the files of a cargo project (`Cargo.toml`, `src/main.rs`, and `src/data.rs`
for the larger initial tensors): straight-line burn code, one Rust statement per IR statement
(commented with its IR index and source line), every value a concrete `Tensor<D>`. Running it
(`cargo run --release`) prints one JSON line per observation, the fields of the torch script's
(`render_torch`), and, with `settings.track`, one line per checkpoint of the timed loop with
the tracked tensor's flags. A burn panic is printed by Rust's own panic handler (message and
location); nothing is caught.

What the code does is what the burn interpreter (`rust_probe/src/program/`) does, operation
for operation:

- params live in a `#[derive(Module)] struct Model` (a Linear's weight in burn's
  `[d_in, d_out]`, loaded from torch's `[d_out, d_in]` data as its `layout` says), so burn's own
  optimizers update them (`model = opt.step(lr, model, grads)`); a param read is `.val()`;
- a value derived from a Linear weight keeps burn's layout (the interpreter's *transposed*
  flag): `transpose` of it is no operation, an operation that needs torch's layout gets
  `.transpose()`, and observations transpose it on the host;
- a value is moved on its last use and cloned before (the interpreter's liveness), a result
  nobody reads is dropped at once (`let _ = ...`), and a value read by reference on its last use
  (`backward`, `grad`) is dropped right after when a later `backward` could see it: tensors
  hold graph nodes, so lifetimes decide what burn's graph cleanup frees;
- the gradients held between `backward` and `step` / `zero_grad` are a `Gradients` (`grads`),
  and with `backward(accumulate=True)` the params' sum in a `GradientsParams` (`grads_sum`)
  made with `GradientsAccumulator`;
- inside the timed loop observations are recorded at the checkpoints only, and the last
  iteration's are printed when it ends, their values read then (a panic before prints them
  without values), as the interpreter reads them outside the timed region;
- a loop whose values change type (rank, layout, gradients held) between iterations has its
  first iterations written out before the `for`, so that every Rust variable has one type.

An operation burn lacks (`no_grad`, `retain_grad`, `backward(retain_graph=True)`, an operation
of two tensors of unequal ranks) makes `render` raise `ValueError` naming it.

`write_reproducer` writes one crate (with a README line); `write_workspace` lays out many
reproducers (programs, or crates `write_reproducer` wrote) as members of one cargo workspace so
that they share one compiled burn; `read_run` parses what a reproducer printed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..contract import burn
from ..contract.ops import OPS, unsupported
from .ir import Program, Stmt, TensorDecl, timed_loop, walk

BURN_VERSION = burn.pinned_version()
BURN_DEPENDENCY = burn.dependency().toml_line()
INLINE_ELEMENTS = 64
"""Initial tensors up to this many elements are written in `main.rs`; larger ones in `src/data.rs`."""
MAX_PEELED = 3
"""Iterations of one loop written out before its `for` (where values change type between iterations)."""


_RUST_KEYWORDS = frozenset(
    "as async await break const continue crate do dyn else enum extern false final fn for gen if impl in let "
    "loop macro match mod move mut override priv pub ref return self Self static struct super trait true try "
    "type typeof union unsafe unsized use virtual where while yield abstract become box".split()
)
_RESERVED = _RUST_KEYWORDS | frozenset(
    # the generated code's own names, and prelude names a local would shadow
    "main model device grads grads_sum newest_grads grad_tmp fresh acc it data observe observe_transposed record checkpoint "
    "flags_json torch_values floats_json number_json string_json drop Some None Ok Err Box Vec String Option "
    "Result Default Tensor TensorData Device Param Module Linear Model CHECKPOINTS LAST".split()
)

_UNARY_METHOD = {
    "detach": "detach()",
    "without_autodiff": "without_autodiff()",
    "require_grad": "require_grad()",
    "freeze": "set_require_grad(false)",
    "neg": "neg()",
    "exp": "exp()",
    "log": "log()",
    "sqrt": "sqrt()",
    "abs": "abs()",
    "tanh": "tanh()",
}
_BINARY_OPERATOR = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_INPLACE = frozenset(name for name, spec in OPS.items() if spec.inplace)
"""Ops that rebind their argument (and bind `out` too when given)."""


# ---- the interpreter's liveness ---------------------------------------------------------------

_HELD = "@grads"
"""The gradients held between backward and step / zero_grad, as one variable of the liveness."""


@dataclass
class _Operands:
    """One statement's reads and writes: program names (tensors, optimizers) and `_HELD`."""

    reads: list[tuple[str, int]] = field(default_factory=list)
    """(name, argument position; -1 for `_HELD`), in the order the interpreter reads them."""
    defs: list[tuple[str, str]] = field(default_factory=list)
    """(name, role): role "out", "alias" (an in-place op's argument), "opt" or "held"."""


@dataclass
class _Live:
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


def _operands(st: Stmt, params: set[str]) -> _Operands:
    ops = _Operands()
    op, args, out = st.op, st.args, st.out

    def tensor(i: int) -> None:
        if args[i] not in params:
            ops.reads.append((args[i], i))

    if op in ("sgd", "adam"):
        assert out is not None
        ops.defs.append((out, "opt"))
    elif op == "step":
        ops.reads += [(args[0], 0), (_HELD, -1)]
        ops.defs.append((_HELD, "held"))
    elif op == "zero_grad":
        ops.defs.append((_HELD, "held"))
    elif op == "backward":
        tensor(0)
        if st.attrs.get("accumulate"):
            ops.reads.append((_HELD, -1))
        ops.defs.append((_HELD, "held"))
    elif op == "observe":
        tensor(0)
        if st.attrs.get("values", True):
            ops.reads.append((_HELD, -1))
    elif op == "grad":
        tensor(0)
        ops.reads.append((_HELD, -1))
    elif op == "linear":
        tensor(1)
    elif op in _INPLACE:
        if args[0] not in params:
            tensor(0)
    else:
        for i, kind in enumerate(OPS[op].args):
            if kind == "tensor":
                tensor(i)
    if out is not None and op not in ("sgd", "adam"):
        if not (op in _INPLACE and out == args[0]):
            ops.defs.append((out, "out"))
    if op in _INPLACE and args[0] not in params:
        ops.defs.append((args[0], "alias"))
    return ops


def _liveness(program: Program) -> _Live:
    """The burn interpreter's liveness pass (`compile.rs` `liveness`), over names.

    A read moves the value when nothing reads it later; a result is kept when something does.
    A loop may run zero times (what is live after it stays live before it), and the timed
    loop's `track` is read after every iteration."""
    params = {t.name for t in program.params()}
    track = program.settings.track if program.settings.track not in params else None
    timed = timed_loop(program.body)
    live = _Live()

    def defined(body: Sequence[Stmt]) -> set[str]:
        names: set[str] = set()
        for s in body:
            if s.op == "repeat":
                names |= defined(s.body or [])
            else:
                names |= {n for n, _ in _operands(s, params).defs}
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
            ops = _operands(st, params)
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


# ---- static types and the state of the code at one point --------------------------------------


@dataclass(frozen=True)
class _Ty:
    """A tensor's static type: its rank, and whether it holds burn's layout of a Linear weight."""

    rank: int
    transposed: bool = False


@dataclass(eq=False)
class _Decl:
    """One Rust variable (a `let` and the assignments to it)."""

    id: int
    base: str
    reads: int = 0
    mut: bool = False
    reads_since_write: int = 0
    written_at: int = -1
    """`_Gen.loops` when it was last written: a later write with no loop boundary and no read in
    between overwrites a value Rust can see is never read."""


@dataclass
class _Binding:
    decl: _Decl
    ty: _Ty | None = None
    value: bool = True
    """The variable holds the value now (it was not moved out)."""


@dataclass(frozen=True)
class _OptConfig:
    kind: str
    lr: float
    builder: str
    """The Rust expression that makes it."""


@dataclass
class _OptBinding:
    decl: _Decl
    config: _OptConfig


@dataclass
class _State:
    vars: dict[str, _Binding] = field(default_factory=dict)
    opts: dict[str, _OptBinding] = field(default_factory=dict)
    held: str = "none"
    """The gradients held: "none", "raw" (`grads`) or "acc" (`grads_sum` and the newest `grads`)."""
    grads: _Binding | None = None
    grads_sum: _Binding | None = None

    def copy(self) -> _State:
        def dup(b: _Binding | None) -> _Binding | None:
            return None if b is None else _Binding(b.decl, b.ty, b.value)

        return _State(
            vars={k: _Binding(b.decl, b.ty, b.value) for k, b in self.vars.items()},
            opts={k: _OptBinding(o.decl, o.config) for k, o in self.opts.items()},
            held=self.held,
            grads=dup(self.grads),
            grads_sum=dup(self.grads_sum),
        )

    def signature(self, name: str) -> Any:
        """What the code after a loop's head assumes about `name` (compared between iterations)."""
        if name == _HELD:
            return self.held
        if name in self.opts:
            return ("opt", self.opts[name].config)
        b = self.vars.get(name)
        if b is None or not b.value:
            return None
        return b.ty


@dataclass
class _Ctx:
    """Where a statement is rendered."""

    iteration: str | None = None
    """Inside the timed loop: the Rust expression of its iteration (`it`, or a written-out number)."""
    tail_backward: bool = False
    """A backward runs later in the Rust scope this block is rendered into (after the block)."""
    carried: tuple[dict[str, _Binding], ...] = ()
    """The enclosing loops' carried variables (innermost last): a write assigns them."""


# ---- formatting --------------------------------------------------------------------------------


def _num(attrs: Mapping[str, Any], key: str, default: float | None = None) -> float:
    """A number attribute (validated IR: an int or a float)."""
    value = attrs.get(key, default)
    assert isinstance(value, (int, float)) and not isinstance(value, bool), (key, value)
    return float(value)


def _f64(value: float) -> str:
    """A Rust f64 literal with exactly this value."""
    text = repr(float(value))
    return text if re.search(r"[.eE]", text) else text + ".0"


def _f32(value: float) -> str:
    """A Rust float literal read as f32 to the value `value as f32` has (Rust's rounding)."""
    text = str(np.float32(value))
    return text if re.search(r"[.eE]", text) else text + ".0"


def _rust_str(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _nested(data: Sequence[float], shape: Sequence[int]) -> str:
    """`[[a, b], [c, d]]`: row-major data as nested array literals, f32 (the first one suffixed)."""
    values = [_f32(v) for v in data]
    if values:
        values[0] += "f32"

    def build(offset: int, dims: Sequence[int]) -> str:
        if len(dims) == 1:
            return "[" + ", ".join(values[offset : offset + dims[0]]) + "]"
        step = math.prod(dims[1:])
        return "[" + ", ".join(build(offset + i * step, dims[1:]) for i in range(dims[0])) + "]"

    return build(0, list(shape))


def _transpose_host(data: Sequence[float], rows: int, cols: int) -> list[float]:
    return [data[r * cols + c] for c in range(cols) for r in range(rows)]


def package_name(title: str) -> str:
    """A cargo package name from a title: lowercase letters, digits and `-`, starting with a letter."""
    name = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60].strip("-")
    if not name or not name[0].isalpha():
        name = "repro-" + name if name else "repro"
    return name


# ---- the renderer -------------------------------------------------------------------------------


class _Gen:
    def __init__(self, program: Program, *, sketch: bool = False) -> None:
        self.p = program
        self.sketch = sketch
        for st in program.statements():
            lacked = unsupported("burn", st.op, st.attrs)
            if lacked is not None:
                raise ValueError(f"render: line {st.line}: burn {BURN_VERSION} has no `{lacked[0]}` ({lacked[1]})")
        self.live = _liveness(program)
        self.timed = timed_loop(program.body)
        self.timed_observes = self.timed is not None and any(s.op == "observe" for s in walk(self.timed.body or []))
        """The timed loop observes: observations carry their iteration, and the last iteration's
        are printed when it ends."""
        self.modules = {m.name: m for m in program.modules}
        self.params: dict[str, TensorDecl] = {t.name: t for t in program.params()}
        self.lines: list[tuple[int, str]] = []
        self.decls: list[_Decl] = []
        self.model_unread = False
        self.loops = 0
        """Loop boundaries (a `for` opened or closed) emitted so far."""
        self.used: set[str] = set()
        self.dry = 0
        self.protected: list[set[str]] = []
        self.data_file: list[str] = []
        self._idents()

    # names

    def _idents(self) -> None:
        taken = set(_RESERVED)
        self.ident: dict[str, str] = {}
        names = [t.name for t in self.p.tensors if t.module is None] + [m.name for m in self.p.modules]
        for st in self.p.statements():
            if st.out is not None:
                names.append(st.out)
        for name in names:
            if name in self.ident:
                continue
            base = name
            while base in taken:
                base += "_"
            taken.add(base)
            self.ident[name] = base
        self.field = {n: (n + "_" if n in _RUST_KEYWORDS else n) for n in names}
        self.taken = taken

    def fresh_base(self, base: str) -> str:
        """`base`, or `base_2`, `base_3`... when an enclosing loop carries a variable named `base`."""
        protected = set().union(*self.protected) if self.protected else set()
        if base not in protected:
            return base
        k = 2
        while f"{base}_{k}" in protected or f"{base}_{k}" in self.taken:
            k += 1
        return f"{base}_{k}"

    def decl(self, base: str) -> _Decl:
        d = _Decl(len(self.decls), base)
        self.decls.append(d)
        return d

    @staticmethod
    def v(decl: _Decl) -> str:
        return f"\x00{decl.id}\x00"

    @staticmethod
    def mut(decl: _Decl) -> str:
        return f"\x01{decl.id}\x01"

    def read_decl(self, decl: _Decl) -> str:
        if not self.dry:
            decl.reads += 1
            decl.reads_since_write += 1
            if decl is getattr(self, "model", None):
                self.model_unread = False
        return self.v(decl)

    def model_written(self) -> None:
        """`model = opt.step(...)`: Rust warns about an assignment nothing reads after."""
        if not self.dry:
            self.model_unread = True

    def set_mut(self, decl: _Decl) -> None:
        if not self.dry:
            decl.mut = True

    def use(self, *names: str) -> None:
        if not self.dry:
            self.used.update(names)

    # output

    def put(self, depth: int, text: str, st: Stmt | None = None, note: str = "") -> None:
        if self.dry:
            return
        comment = ""
        if not self.sketch:
            where = f"[{st.index}] line {st.line}" if st is not None else ""
            comment = "  // " + ": ".join(x for x in (where, note) if x) if (where or note) else ""
        elif note and st is None:
            comment = "  // " + note
        self.lines.append((depth, text + comment))

    def text(self) -> str:
        def resolve(line: str) -> str:
            line = re.sub(r"\x01(\d+)\x01", lambda m: "mut " if self.decls[int(m.group(1))].mut else "", line)

            def ident(m: re.Match[str]) -> str:
                d = self.decls[int(m.group(1))]
                return d.base if d.reads or d.base.startswith("_") else "_" + d.base

            return re.sub(r"\x00(\d+)\x00", ident, line)

        return "\n".join(("    " * depth + resolve(t)) if t else "" for depth, t in self.lines)

    # reading values

    def param_expr(self, name: str, state: _State) -> tuple[str, _Ty, str]:
        """A param's current value: (expression, type, the field path)."""
        t = self.params[name]
        model = self.read_decl(self.model)
        if t.module is not None:
            m = self.field[t.module]
            if name.endswith(".weight"):
                return f"{model}.{m}.weight.val()", _Ty(2, True), f"{model}.{m}.weight"
            return f"{model}.{m}.bias.as_ref().unwrap().val()", _Ty(1), f"{model}.{m}.bias.as_ref().unwrap()"
        f = self.field[name]
        return f"{model}.{f}.val()", _Ty(len(t.shape)), f"{model}.{f}"

    def operand(self, state: _State, st: Stmt, pos: int) -> tuple[str, _Ty]:
        name = st.args[pos]
        if name in self.params:
            expr, ty, _ = self.param_expr(name, state)
            return expr, ty
        b = state.vars.get(name)
        if b is None or not b.value or b.ty is None:
            raise AssertionError(f"render: line {st.line}: {name!r} has no value here")
        ident = self.read_decl(b.decl)
        if self.live.take.get((st.index, pos), False):
            b.value = False
            return ident, b.ty
        return f"{ident}.clone()", b.ty

    def type_of(self, state: _State, name: str) -> _Ty:
        if name in self.params:
            t = self.params[name]
            return _Ty(2, True) if t.module is not None and name.endswith(".weight") else _Ty(len(t.shape))
        b = state.vars.get(name)
        return b.ty if b is not None and b.ty is not None else _Ty(0)

    @staticmethod
    def materialize(expr: str, ty: _Ty) -> tuple[str, _Ty]:
        """In torch's layout: a value in burn's Linear-weight layout is transposed."""
        if ty.transposed:
            return f"{expr}.transpose()", _Ty(ty.rank)
        return expr, ty

    def kept(self, st: Stmt, role: str) -> bool:
        return self.live.keep.get((st.index, role), False)

    # writing values

    def carried_binding(self, ctx: _Ctx, name: str) -> _Binding | None:
        for frame in reversed(ctx.carried):
            if name in frame:
                return frame[name]
        return None

    def write(
        self,
        state: _State,
        ctx: _Ctx,
        name: str,
        keep: bool,
        expr: str,
        ty: _Ty,
        depth: int,
        st: Stmt | None,
        note: str = "",
        tail: bool = False,
    ) -> None:
        """Binds `name` to the value of `expr` (or drops it at once when nobody reads it)."""
        if not keep:
            self.put(depth, f"let _ = {expr};", st, note)
            return
        outer = self.carried_binding(ctx, name)
        old = state.vars.get(name)
        if outer is not None and outer.ty == ty:
            # a loop-carried variable: assigned in place (the old value is dropped here)
            if old is not None and old.decl is outer.decl and old.value:
                self.unread_overwrite(outer.decl, depth)
            self.set_mut(outer.decl)
            self.put(depth, f"{self.v(outer.decl)} = {expr};", st, note)
            self.written(outer.decl)
            state.vars[name] = _Binding(outer.decl, ty, True)
            return
        if old is not None and old.value and tail and old.ty == ty and outer is None and old.decl.reads_since_write:
            # the old value is still held: the interpreter drops it when the name is rebound
            self.set_mut(old.decl)
            self.put(depth, f"{self.v(old.decl)} = {expr};", st, note)
            self.written(old.decl)
            old.value = True
            return
        if old is not None and old.value and tail:
            self.put(depth, f"drop({self.read_decl(old.decl)});", None, "the value it held is dropped here")
        d = self.decl(self.fresh_base(self.ident[name]))
        self.put(depth, f"let {self.mut(d)}{self.v(d)} = {expr};", st, note)
        self.written(d)
        state.vars[name] = _Binding(d, ty, True)

    def written(self, decl: _Decl) -> None:
        if not self.dry:
            decl.reads_since_write = 0
            decl.written_at = self.loops

    def unread_overwrite(self, decl: _Decl, depth: int) -> None:
        """Before a variable is assigned again: when its value was written since the last loop
        boundary and not read since (a loop written out made that plain), Rust would warn that the
        value is never read; it is dropped explicitly (where the interpreter drops it too)."""
        if not self.dry and decl.reads_since_write == 0 and decl.written_at == self.loops:
            self.put(depth, f"drop({self.read_decl(decl)});", None, "its value is replaced here")

    def drop_after(self, state: _State, st: Stmt, pos: int, depth: int, tail: bool) -> None:
        """A value read by reference on its last use is dropped, as the interpreter does, when a
        later backward could otherwise still see its graph nodes."""
        name = st.args[pos]
        if name in self.params or not self.live.take.get((st.index, pos), False) or not tail:
            return
        b = state.vars.get(name)
        if b is not None and not self.sketch:
            self.put(depth, f"drop({self.read_decl(b.decl)});", None, "its last use: dropped now, as the runner does")

    # setup

    def setup(self, state: _State) -> None:
        p = self.p
        self.device = self.decl("device")
        self.model = self.decl("model")
        self.put(1, f"let {self.v(self.device)} = Device::flex().autodiff();")
        fields: list[str] = []
        order: list[str] = []
        for t in p.tensors:
            if t.module is not None:
                if t.module not in order:
                    order.append(t.module)
            elif t.role == "param":
                order.append(t.name)
        self.has_model = bool(order) or any(
            s.op == "step" or (s.op == "backward" and s.attrs.get("accumulate")) for s in p.statements()
        )
        if self.has_model:
            self.use("Module")
            self.put(1, f"let {self.mut(self.model)}{self.v(self.model)} = Model {{")
            by_name = {t.name: t for t in p.tensors}
            for name in order:
                if name in self.modules:
                    m = self.modules[name]
                    self.use("Linear", "Param")
                    w = by_name[f"{name}.weight"]
                    if m.text("layout") == "transposed":
                        how = f"torch's [{m.integer('d_out')}, {m.integer('d_in')}] weight transposed into burn's [d_in, d_out]"
                        data = _transpose_host(w.data, m.integer("d_out"), m.integer("d_in"))
                    else:
                        how = (
                            f"torch's [{m.integer('d_out')}, {m.integer('d_in')}] buffer copied as is into burn's [d_in, d_out] "
                            '(layout "copied": the port forgot the transpose)'
                        )
                        data = list(w.data)
                    fields.append(f"{self.field[name]}: Linear")
                    self.put(
                        2,
                        f"{self.field[name]}: Linear {{",
                        None,
                        f"{name} = Linear({m.integer('d_in')}, {m.integer('d_out')}): {how}",
                    )
                    self.put(
                        3,
                        f"weight: Param::from_tensor({self.tensor_literal(f'{name}.weight', data, [m.integer('d_in'), m.integer('d_out')])}),",
                    )
                    if m.flag("bias"):
                        b = by_name[f"{name}.bias"]
                        self.put(3, f"bias: Some(Param::from_tensor({self.tensor_literal(b.name, b.data, b.shape)})),")
                    else:
                        self.put(3, "bias: None,")
                    self.put(2, "},")
                else:
                    t = by_name[name]
                    self.use("Param")
                    fields.append(f"{self.field[name]}: Param<Tensor<{len(t.shape)}>>")
                    self.put(
                        2, f"{self.field[name]}: Param::from_tensor({self.tensor_literal(name, t.data, t.shape)}),"
                    )
            self.put(1, "};")
        self.model_fields = fields
        for t in p.tensors:
            if t.role == "input":
                d = self.decl(self.ident[t.name])
                self.put(1, f"let {self.mut(d)}{self.v(d)} = {self.tensor_literal(t.name, t.data, t.shape)};")
                state.vars[t.name] = _Binding(d, _Ty(len(t.shape)), True)

    def tensor_literal(self, name: str, data: Sequence[float], shape: Sequence[int]) -> str:
        device = self.read_decl(self.device)
        rank = len(shape)
        if len(data) <= INLINE_ELEMENTS:
            return f"Tensor::<{rank}>::from_floats({_nested(data, shape)}, &{device})"
        const = re.sub(r"[^A-Za-z0-9]+", "_", name).upper()
        if not const[0].isalpha():
            const = "T" + const
        while any(line.startswith(f"pub static {const}:") for line in self.data_file):
            const += "_"
        rows = [", ".join(_f32(v) for v in data[i : i + 8]) for i in range(0, len(data), 8)]
        self.data_file.append(
            f"pub static {const}: [f32; {len(data)}] = [\n" + "".join(f"    {r},\n" for r in rows) + "];"
        )
        self.use("TensorData")
        dims = ", ".join(str(d) for d in shape)
        return f"Tensor::<{rank}>::from_data(TensorData::new(data::{const}.to_vec(), [{dims}]), &{device})"

    # statements

    def block(self, stmts: Sequence[Stmt], state: _State, depth: int, ctx: _Ctx) -> None:
        # later[i]: a backward runs after statement i in this Rust scope
        later = [ctx.tail_backward] * (len(stmts) + 1)
        for i in range(len(stmts) - 1, -1, -1):
            later[i] = later[i + 1] or any(s.op == "backward" for s in walk(stmts[i + 1 : i + 2]))
        for i, st in enumerate(stmts):
            tail = later[i]
            if st.op == "repeat":
                self.repeat(st, state, depth, ctx, tail)
            else:
                self.stmt(st, state, depth, ctx, tail)

    def stmt(self, st: Stmt, state: _State, depth: int, ctx: _Ctx, tail: bool) -> None:
        op = st.op
        if op in ("sgd", "adam"):
            self.optimizer(st, state, depth, ctx)
            return
        if op == "step":
            self.step(st, state, depth, ctx)
            return
        if op == "zero_grad":
            if not self.sketch:
                what = "the gradients held are dropped" if state.held != "none" else "no gradients are held"
                self.put(
                    depth, f"// [{st.index}] line {st.line}: zero_grad({st.args[0]}): burn has nothing to reset; {what}"
                )
            self.drop_carried_grads(state, ctx, depth, (state.grads, state.grads_sum))
            state.held, state.grads, state.grads_sum = "none", None, None
            return
        if op == "backward":
            self.backward(st, state, depth, ctx, tail)
            return
        if op == "observe":
            self.observe(st, state, depth, ctx)
            return
        if op in _INPLACE and st.args[0] in self.params:
            self.param_inplace(st, state, depth, ctx, tail)
            return
        if op == "grad":
            self.grad(st, state, depth, ctx, tail)
            return
        if op == "item":
            expr, _ = self.operand(state, st, 0)
            self.put(depth, f"let _ = {expr}.into_scalar::<f32>();", st)
            return
        note = ""
        if op == "transpose" and self.type_of(state, st.args[0]).transposed:
            note = "no operation: the value is held in burn's [d_in, d_out] layout, which is torch's transpose"
        expr, ty = self.expression(st, state)
        if op in _INPLACE:
            self.inplace_slot(st, state, depth, ctx, expr, ty, tail)
            return
        assert st.out is not None
        self.write(state, ctx, st.out, self.kept(st, "out"), expr, ty, depth, st, note, tail)

    def expression(self, st: Stmt, state: _State) -> tuple[str, _Ty]:
        op, at = st.op, st.attrs
        if op == "linear":
            x, ty = self.materialize(*self.operand(state, st, 1))
            model = self.read_decl(self.model)
            return f"{model}.{self.field[st.args[0]]}.forward({x})", ty
        if op in _BINARY_OPERATOR or op == "matmul":
            a, ta = self.operand(state, st, 0)
            b, tb = self.operand(state, st, 1)
            if ta.rank != tb.rank:
                raise ValueError(
                    f"render: line {st.line}: `{op}` of a rank-{ta.rank} and a rank-{tb.rank} tensor: burn's tensor "
                    "operations take operands of equal rank (torch broadcasts across ranks, burn has no such operation)"
                )
            if op == "matmul" or ta.transposed != tb.transposed:
                a, ta = self.materialize(a, ta)
                b, tb = self.materialize(b, tb)
            if op == "matmul":
                return f"{a}.matmul({b})", _Ty(ta.rank)
            return f"{a} {_BINARY_OPERATOR[op]} {b}", ta
        if op == "reshape":
            a, ta = self.materialize(*self.operand(state, st, 0))
            shape = at["shape"]
            assert isinstance(shape, list)
            return f"{a}.reshape([{', '.join(str(d) for d in shape)}])", _Ty(len(shape))
        a, ta = self.operand(state, st, 0)
        if op in _UNARY_METHOD:
            return f"{a}.{_UNARY_METHOD[op]}", ta
        if op == "add_scalar_":
            return f"{a}.add_scalar({_f64(_num(at, 'scalar'))})", ta
        if op == "clone":
            return a, ta
        if op == "transpose":
            if ta.transposed:
                return a, _Ty(2)
            return f"{a}.transpose()", ta
        if op in ("relu", "sigmoid"):
            self.use("activation")
            return f"activation::{op}({a})", ta
        if op in ("sum", "mean"):
            return f"{a}.{op}()", _Ty(1)
        if op == "add_scalar":
            return f"{a}.add_scalar({_f64(_num(at, 'scalar'))})", ta
        if op == "mul_scalar":
            return f"{a}.mul_scalar({_f64(_num(at, 'scalar'))})", ta
        if op == "powi":
            return f"{a}.powi_scalar({at['exponent']})", ta
        if op == "sum_dim":
            a, ta = self.materialize(a, ta)
            return f"{a}.sum_dim({at['dim']})", ta
        raise AssertionError(f"render: no Rust for `{op}`")

    def inplace_slot(self, st: Stmt, state: _State, depth: int, ctx: _Ctx, expr: str, ty: _Ty, tail: bool) -> None:
        """`require_grad(x)`, `freeze(x)`, `add_scalar_(x, s)` of a tensor that is not a param:
        `x` is rebound (and `out` too when given)."""
        name = st.args[0]
        keep_alias = self.kept(st, "alias")
        out = st.out if st.out is not None and st.out != name else None
        keep_out = out is not None and self.kept(st, "out")
        if keep_alias and keep_out:
            assert out is not None
            self.write(state, ctx, name, True, expr, ty, depth, st, tail=tail)
            b = state.vars[name]
            self.write(state, ctx, out, True, f"{self.read_decl(b.decl)}.clone()", ty, depth, None, tail=tail)
        elif keep_out:
            assert out is not None
            self.write(state, ctx, out, True, expr, ty, depth, st, tail=tail)
        else:
            self.write(state, ctx, name, keep_alias, expr, ty, depth, st, tail=tail)

    def param_inplace(self, st: Stmt, state: _State, depth: int, ctx: _Ctx, tail: bool) -> None:
        name = st.args[0]
        t = self.params[name]
        model = self.read_decl(self.model)
        self.set_mut(self.model)
        if st.op == "add_scalar_":
            change = f"map(|t| t.add_scalar({_f64(_num(st.attrs, 'scalar'))}))"
        else:
            change = f"set_require_grad({'true' if st.op == 'require_grad' else 'false'})"
        if t.module is not None and name.endswith(".bias"):
            path = f"{model}.{self.field[t.module]}.bias"
            self.put(depth, f"{path} = {path}.map(|b| b.{change});", st)
        else:
            path = f"{model}.{self.field[t.module]}.weight" if t.module is not None else f"{model}.{self.field[name]}"
            self.put(depth, f"{path} = {path}.{change};", st)
        if st.out is not None and st.out != name and self.kept(st, "out"):
            expr, ty, _ = self.param_expr(name, state)
            self.write(state, ctx, st.out, True, expr, ty, depth, None, tail=tail)

    def optimizer(self, st: Stmt, state: _State, depth: int, ctx: _Ctx) -> None:
        at = st.attrs
        assert st.out is not None
        lr = _num(at, "lr")
        if st.op == "sgd":
            self.use("SgdConfig")
            parts = ["SgdConfig::new()"]
            momentum = _num(at, "momentum", 0.0)
            if momentum != 0.0:
                self.use("MomentumConfig")
                m = f"MomentumConfig::new().with_momentum({_f64(momentum)})"
                if "dampening" in at:
                    m += f".with_dampening({_f64(_num(at, 'dampening'))})"
                if "nesterov" in at:
                    m += f".with_nesterov({'true' if at['nesterov'] else 'false'})"
                parts.append(f".with_momentum(Some({m}))")
            wd = _num(at, "weight_decay", 0.0)
            if wd != 0.0:
                self.use("WeightDecayConfig")
                parts.append(f".with_weight_decay(Some(WeightDecayConfig::new({_f32(wd)})))")
        else:
            self.use("AdamConfig")
            parts = ["AdamConfig::new()"]
            for key, method in (("beta1", "with_beta_1"), ("beta2", "with_beta_2"), ("eps", "with_epsilon")):
                if key in at:
                    parts.append(f".{method}({_f32(_num(at, key))})")
            wd = _num(at, "weight_decay", 0.0)
            if wd != 0.0:
                self.use("WeightDecayConfig")
                parts.append(f".with_weight_decay(Some(WeightDecayConfig::new({_f32(wd)})))")
        parts.append(".init()")
        builder = "".join(parts)
        config = _OptConfig(st.op, lr, builder)
        note = f"lr {lr!r} is an argument of step in burn"
        if not self.kept(st, "opt"):
            self.put(depth, f"let _ = {builder};", st, note + "; never stepped before it is replaced")
            return
        carried = self.carried_binding(ctx, st.out)
        if carried is not None:
            self.set_mut(carried.decl)
            self.put(depth, f"{self.v(carried.decl)} = {builder};", st, note)
            state.opts[st.out] = _OptBinding(carried.decl, config)
            return
        d = self.decl(self.fresh_base(self.ident[st.out]))
        self.put(depth, f"let {self.mut(d)}{self.v(d)} = {builder};", st, note)
        state.opts[st.out] = _OptBinding(d, config)

    def drop_carried_grads(self, state: _State, ctx: _Ctx, depth: int, held: Iterable[_Binding | None]) -> None:
        """Gradients a loop carries in a variable declared before it are dropped where the
        interpreter drops them (`step`, `zero_grad`), not when the variable is next assigned."""
        carried = {b.decl.id for frame in ctx.carried for b in frame.values()}
        for b in held:
            if b is not None and b.decl.id in carried and not self.sketch:
                self.put(depth, f"drop({self.read_decl(b.decl)});", None, "the gradients held are dropped")

    def step(self, st: Stmt, state: _State, depth: int, ctx: _Ctx) -> None:
        opt = state.opts[st.args[0]]
        o = self.read_decl(opt.decl)
        self.set_mut(opt.decl)
        self.set_mut(self.model)
        model = self.read_decl(self.model)
        lr = _f64(opt.config.lr)
        self.use("GradientsParams")
        if state.held == "raw" and state.grads is not None:
            d = self.decl(self.fresh_base("grads"))
            g = self.read_decl(state.grads.decl)
            self.put(depth, f"let {self.v(d)} = GradientsParams::from_grads({g}, &{model});", st)
            self.put(depth, f"{model} = {o}.step({lr}, {model}, {self.read_decl(d)});")
            self.model_written()
        elif state.held == "acc" and state.grads_sum is not None:
            s = self.read_decl(state.grads_sum.decl)
            self.put(depth, f"{model} = {o}.step({lr}, {model}, {s});", st, "the accumulated gradients")
            self.model_written()
            self.drop_carried_grads(state, ctx, depth, (state.grads,))
        else:
            self.put(depth, f"{model} = {o}.step({lr}, {model}, GradientsParams::new());", st, "no gradients held")
            self.model_written()
        state.held, state.grads, state.grads_sum = "none", None, None

    def held_write(
        self, state: _State, ctx: _Ctx, which: str, expr: str, depth: int, st: Stmt | None, note: str = ""
    ) -> None:
        """Binds `grads` (which="grads") or `grads_sum`, in place when a loop carries them."""
        outer = self.carried_binding(ctx, "@" + which)
        if outer is not None:
            current = state.grads if which == "grads" else state.grads_sum
            if current is not None and current.decl is outer.decl:
                self.unread_overwrite(outer.decl, depth)
            self.set_mut(outer.decl)
            self.put(depth, f"{self.v(outer.decl)} = {expr};", st, note)
            self.written(outer.decl)
            b = _Binding(outer.decl)
        else:
            # the newest gradients beside an accumulated sum get their own name: often unread
            base = "newest_grads" if which == "grads" and state.held == "acc" else which
            d = self.decl(self.fresh_base(base))
            self.put(depth, f"let {self.mut(d)}{self.v(d)} = {expr};", st, note)
            self.written(d)
            b = _Binding(d)
        if which == "grads":
            state.grads = b
        else:
            state.grads_sum = b

    def backward(self, st: Stmt, state: _State, depth: int, ctx: _Ctx, tail: bool) -> None:
        loss, _ = self.operand(state, st, 0)
        # `operand` gave `x.clone()` when x is read later: backward borrows, no clone needed
        loss = loss.removesuffix(".clone()")
        keep = self.kept(st, "held")
        accumulate = bool(st.attrs.get("accumulate")) and state.held != "none"
        if not keep:
            self.put(depth, f"let _ = {loss}.backward();", st, "nothing reads these gradients")
            state.held, state.grads, state.grads_sum = "raw", None, None
        elif not accumulate:
            self.held_write(state, ctx, "grads", f"{loss}.backward()", depth, st)
            state.held, state.grads_sum = "raw", None
        else:
            self.use("GradientsAccumulator", "GradientsParams")
            model = self.read_decl(self.model)
            fresh = self.decl(self.fresh_base("fresh"))
            acc = self.decl(self.fresh_base("acc"))
            fresh.mut = acc.mut = True
            self.put(depth, f"let {self.mut(fresh)}{self.v(fresh)} = {loss}.backward();", st, "accumulate=True")
            self.put(depth, f"let {self.mut(acc)}{self.v(acc)} = GradientsAccumulator::<Model>::new();")
            if state.held == "raw" and state.grads is not None:
                self.set_mut(state.grads.decl)
                g = self.read_decl(state.grads.decl)
                old = f"GradientsParams::from_module(&mut {g}, &{model})"
            else:
                assert state.grads_sum is not None
                old = self.read_decl(state.grads_sum.decl)
            a = self.read_decl(acc)
            self.put(depth, f"{a}.accumulate(&{model}, {old});")
            f = self.read_decl(fresh)
            self.put(depth, f"{a}.accumulate(&{model}, GradientsParams::from_module(&mut {f}, &{model}));")
            state.held = "acc"
            self.held_write(state, ctx, "grads_sum", f"{a}.grads()", depth, None, "the params' gradients, summed")
            self.held_write(state, ctx, "grads", self.read_decl(fresh), depth, None, "the newest, for other tensors")
        self.drop_after(state, st, 0, depth, tail)

    def grad_expr(self, state: _State, st: Stmt, pos: int, value_ident: str | None) -> str | None:
        """The gradient held for the argument now (an `Option<Tensor<D>>` expression), or None
        when none is held."""
        name = st.args[pos]
        if state.held == "none" or state.grads is None:
            return None
        if name in self.params:
            _, ty, path = self.param_expr(name, state)
            if state.held == "acc" and state.grads_sum is not None:
                s = self.read_decl(state.grads_sum.decl)
                return f"{s}.get::<{ty.rank}>({path}.id)"
            return f"{path}.grad(&{self.read_decl(state.grads.decl)})"
        assert value_ident is not None
        return f"{value_ident}.grad(&{self.read_decl(state.grads.decl)})"

    def grad(self, st: Stmt, state: _State, depth: int, ctx: _Ctx, tail: bool) -> None:
        name = st.args[0]
        if name in self.params:
            ty = self.type_of(state, name)
            ident = None
        else:
            b = state.vars[name]
            assert b.ty is not None
            ty, ident = b.ty, self.read_decl(b.decl)
            if self.live.take.get((st.index, 0), False):
                b.value = False
        shown = "the param" if name in self.params else name
        message = (
            f"grad: no gradient held for {json.dumps(shown)} (none since the last backward, "
            "or consumed by step, or reset by zero_grad)"
        )
        g = self.grad_expr(state, st, 0, ident)
        assert st.out is not None
        if g is None:
            expr = f"None::<Tensor<{ty.rank}>>.expect({_rust_str(message)})"
            note = "no backward since the last step / zero_grad: nothing is held"
        else:
            expr, note = f"{g}.expect({_rust_str(message)})", ""
        taken = name not in self.params and self.live.take.get((st.index, 0), False) and tail
        if taken and st.out == name and self.kept(st, "out"):
            # `x = grad(x)`: the old x is dropped after its gradient is read, before x is rebound
            old = state.vars[name]
            tmp = self.decl(self.fresh_base("grad_tmp"))
            self.put(depth, f"let {self.v(tmp)} = {expr};", st, note)
            self.put(depth, f"drop({self.read_decl(old.decl)});", None, "its last use: dropped now, as the runner does")
            self.write(state, ctx, st.out, True, self.read_decl(tmp), ty, depth, None, tail=tail)
            return
        self.write(state, ctx, st.out, self.kept(st, "out"), expr, ty, depth, st, note, tail)
        if st.out != name:
            self.drop_after(state, st, 0, depth, tail)

    def observe(self, st: Stmt, state: _State, depth: int, ctx: _Ctx) -> None:
        name = st.args[0]
        values = bool(st.attrs.get("values", True))
        label = str(st.attrs.get("label", name))
        if self.sketch:
            if name in self.params:
                self.put(depth, f"observe(&{self.param_expr(name, state)[2].removesuffix('.as_ref().unwrap()')});")
            else:
                self.put(depth, f"observe(&{self.read_decl(state.vars[name].decl)});")
            return
        grad: str | None = None
        if values:
            ident = None if name in self.params else self.read_decl(state.vars[name].decl)
            grad = self.grad_expr(state, st, 0, ident)
        value, ty = self.operand(state, st, 0)
        fn = "observe_transposed" if ty.transposed else "observe"
        self.use(fn)
        args = [_rust_str(label), _rust_str(name), str(st.index)]
        if self.timed_observes:
            args.append(f"Some({ctx.iteration})" if ctx.iteration is not None else "None")
        args += [grad if grad is not None else "None", value, "true" if values else "false"]
        self.put(depth, f"{fn}({', '.join(args)});", st)

    # loops

    def repeat(self, st: Stmt, state: _State, depth: int, ctx: _Ctx, tail: bool) -> None:
        assert st.body is not None
        count = st.attrs["count"]
        assert isinstance(count, int)
        timed = st is self.timed
        end = self.live.end[st.index]
        carried_names = sorted(self.live.defined[st.index] & end)
        body_has_backward = any(s.op == "backward" for s in walk(st.body))
        done = 0
        while done < count:
            first = done + 1
            # try the rest as one loop: every carried value must keep its type across iterations
            trial = self.loop_fits(st, state, carried_names, ctx, timed)
            if trial is not None:
                self.emit_loop(st, state, trial, depth, ctx, carried_names, timed, first, count)
                return
            if done >= MAX_PEELED:
                raise ValueError(
                    f"render: line {st.line}: the loop's values change type (rank, layout or gradients held) "
                    f"for more than {MAX_PEELED} iterations; straight-line Rust cannot give them one type"
                )
            # written out: one iteration in the enclosing scope
            what = (
                f"the only iteration of the loop at line {st.line}, written out"
                if count == 1
                else f"iteration {first} of the loop at line {st.line}, written out: its values' types change"
            )
            if not self.sketch:
                self.put(depth, f"// {what}")
            else:
                self.put(depth, f"// iteration {first} (written out)")
            inner = _Ctx(
                iteration=str(first) if timed else ctx.iteration,
                tail_backward=tail or body_has_backward,
                carried=ctx.carried,
            )
            self.block(st.body, state, depth, inner)
            if timed and self.timed_observes and first == count and not self.sketch:
                self.put(depth, "print_pending(true);", None, "the last iteration's observations, with their values")
            if timed:
                self.checkpoint(state, depth, str(first), static=first)
            self.forget_locals(st, state, carried_names)
            done += 1

    def forget_locals(self, st: Stmt, state: _State, carried_names: Sequence[str]) -> None:
        """After an iteration, a name its body wrote that nothing reads later holds nothing."""
        for name in self.live.defined[st.index] - set(carried_names):
            if name in state.vars:
                state.vars[name].value = False

    def loop_fits(self, st: Stmt, state: _State, carried_names: Sequence[str], ctx: _Ctx, timed: bool) -> _State | None:
        """The state after one iteration from `state` (a dry run), if every carried value keeps its
        type (rank, layout, gradients held) across it; None if not."""
        trial = state.copy()
        frame: dict[str, _Binding] = {}
        for name in carried_names:
            if name == _HELD:
                continue
            b = trial.vars.get(name)
            if b is not None and b.value:
                frame[name] = b
        self.dry += 1
        try:
            inner = _Ctx(iteration="it" if timed else ctx.iteration, carried=(*ctx.carried, frame))
            self.block(st.body or [], trial, 0, inner)
        finally:
            self.dry -= 1
        for name in carried_names:
            before, after = state.signature(name), trial.signature(name)
            if name in state.opts or name in trial.opts or name == _HELD:
                if before != after:
                    return None
            elif before is not None and before != after:
                return None
        return trial

    def emit_loop(
        self,
        st: Stmt,
        state: _State,
        trial: _State,
        depth: int,
        ctx: _Ctx,
        carried_names: Sequence[str],
        timed: bool,
        first: int,
        count: int,
    ) -> None:
        """The rest of the loop as a Rust `for`; `trial`: the state after one iteration (its types)."""
        assert st.body is not None
        # the carried variables, declared before the loop
        frame: dict[str, _Binding] = {}
        for name in carried_names:
            if name == _HELD:
                continue
            if name in state.opts or name in trial.opts:
                if name in state.opts:
                    frame[name] = _Binding(state.opts[name].decl)
                continue
            b = state.vars.get(name)
            if b is not None and b.value:
                frame[name] = b
                continue
            after = trial.vars.get(name)
            if after is None or after.ty is None:
                continue
            d = self.decl(self.fresh_base(self.ident[name]))
            if name in self.live.after[st.index]:
                # bound only inside the loop and read after it: Rust wants a value before the loop
                device = self.read_decl(self.device)
                ones = ", ".join("1" for _ in range(after.ty.rank))
                self.put(
                    depth,
                    f"let {self.mut(d)}{self.v(d)} = Tensor::<{after.ty.rank}>::empty([{ones}], &{device});",
                    None,
                    f"`{name}` is bound in the loop below; Rust needs a value before it (never read)",
                )
            else:
                why = "the checkpoints read it" if name == self.p.settings.track else "the next iteration reads it"
                self.put(
                    depth,
                    f"let {self.mut(d)}{self.v(d)}: Tensor<{after.ty.rank}>;",
                    None,
                    f"`{name}` is bound in the loop below and kept across iterations ({why})",
                )
            binding = _Binding(d, after.ty, True)
            state.vars[name] = binding
            frame[name] = binding
        if _HELD in carried_names:
            for which in ("grads", "grads_sum"):
                b = state.grads if which == "grads" else state.grads_sum
                if b is not None:
                    frame["@" + which] = b
        for b in frame.values():
            self.set_mut(b.decl)
        self.protected.append({b.decl.base for b in frame.values()})
        remaining = count - first + 1
        it = self.decl("it")
        if timed:
            header = f"for {self.v(it)} in {first}..={count} {{"
            cps = self.p.settings.checkpoints
            note = (
                f"the timed loop: observations at iterations {', '.join(map(str, cps))}"
                if cps
                else "the timed loop: no checkpoints, the observations in it record nothing"
            )
        else:
            header = f"for _ in 0..{remaining} {{"
            note = ""
        self.put(depth, header, st, note)
        self.loops += 0 if self.dry else 1
        start = len(self.lines)
        inner = _Ctx(iteration=self.v(it) if timed else ctx.iteration, carried=(*ctx.carried, frame))
        self.block(st.body, state, depth + 1, inner)
        if timed and self.timed_observes and not self.sketch:
            self.put(depth + 1, "print_pending(true);", None, "the last iteration's observations, with their values")
        if timed:
            self.checkpoint(state, depth + 1, self.v(it), static=None)
            if any(self.v(it) in line for _, line in self.lines[start:]):
                it.reads += 1
        self.put(depth, "}")
        self.loops += 0 if self.dry else 1
        self.protected.pop()
        self.forget_locals(st, state, carried_names)
        for name, b in frame.items():
            if name.startswith("@"):
                continue
            if name in state.opts:
                continue
            current = state.vars.get(name)
            if current is not None and current.decl is not b.decl:
                # the loop's last write of it went to the carried variable
                state.vars[name] = _Binding(b.decl, current.ty, current.value)

    def checkpoint(self, state: _State, depth: int, iteration: str, static: int | None) -> None:
        """After a timed iteration: the `track` tensor's flags, at the checkpoints."""
        track = self.p.settings.track
        if track is None or not self.p.settings.checkpoints or self.sketch:
            return
        if static is not None and static not in self.p.settings.checkpoints:
            return
        if track in self.params:
            value = f"&{self.param_expr(track, state)[0]}"
        else:
            b = state.vars.get(track)
            value = f"&{self.read_decl(b.decl)}" if b is not None and b.value else ""
        self.use("checkpoint")
        call = (
            f"checkpoint({iteration}, {_rust_str(track)}, Some({value}));"
            if value
            else f"checkpoint({iteration}, {_rust_str(track)}, None::<&Tensor<1>>);"
        )
        if static is None:
            self.use("CHECKPOINTS")
            self.put(depth, f"if CHECKPOINTS.contains(&{iteration}) {{")
            self.put(depth + 1, call)
            self.put(depth, "}")
        else:
            self.put(depth, call)


# ---- the Rust around the statements -------------------------------------------------------------

_HELPERS_COMMON = r"""
// ---- printing what the runner records, as JSON lines ----

/// `tracked` is burn's `is_tracked()`, `requires_grad` its `is_require_grad()`.
fn flags_json<const D: usize>(t: &Tensor<D>) -> String {
    let (tracked, require_grad, autodiff) = (t.is_tracked(), t.is_require_grad(), t.is_autodiff());
    format!(
        "{{\"tracked\": {tracked}, \"requires_grad\": {require_grad}, \"raw\": {{\"is_tracked\": {tracked}, \
         \"is_require_grad\": {require_grad}, \"is_autodiff\": {autodiff}}}}}"
    )
}

fn string_json(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
"""

_HELPERS_VALUES = r"""
/// A float as Python's json reads it (NaN and infinities kept).
fn number_json(x: f32) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        (if x > 0.0 { "Infinity" } else { "-Infinity" }).to_string()
    } else {
        format!("{:?}", x as f64)
    }
}

fn floats_json(values: Option<Vec<f32>>) -> String {
    match values {
        None => "null".to_string(),
        Some(v) => format!("[{}]", v.into_iter().map(number_json).collect::<Vec<_>>().join(", ")),
    }
}

/// Row-major values in torch's layout: a rank-2 tensor held in burn's Linear-weight layout
/// (`transposed`) is transposed here, on the host (no burn operation).
fn torch_values<const D: usize>(t: &Tensor<D>, transposed: bool) -> Vec<f32> {
    let values = t.try_to_vec_as::<f32>().expect("reading the tensor's values");
    if !transposed {
        return values;
    }
    let (rows, cols) = (t.dims()[0], t.dims()[1]);
    let mut out = vec![0.0; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
    out
}
"""

_RECORD_TIMED = r"""
/// One observation, as a JSON line. `iteration`: inside the timed loop, where it is recorded at
/// the checkpoints only, with values and gradient at the loop's last iteration only; there it is
/// printed when the iteration ends, its values read then, as the runner reads them.
fn record<const D: usize>(
    label: &str,
    tensor: &str,
    op_index: u32,
    iteration: Option<usize>,
    grad: Option<Tensor<D>>,
    t: Tensor<D>,
    with_values: bool,
    transposed: bool,
) {
    if iteration.is_some_and(|it| !CHECKPOINTS.contains(&it)) {
        return;
    }
    let with_values = with_values && iteration.is_none_or(|it| it == LAST);
    let mut shape = t.dims().to_vec();
    if transposed {
        shape.reverse();
    }
    let head = format!(
        "{{\"label\": {}, \"tensor\": {}, \"op_index\": {op_index}, \"iteration\": {}, \"shape\": {shape:?}",
        string_json(label),
        string_json(tensor),
        iteration.map_or("null".to_string(), |it| it.to_string()),
    );
    let flags = flags_json(&t);
    // `read` is false when a panic ends the iteration before the values are read
    let line = move |read: bool| {
        let read = read && with_values;
        let values = read.then(|| torch_values(&t, transposed));
        let grad = grad.as_ref().filter(|_| read).map(|g| torch_values(g, transposed));
        format!("{head}, \"values\": {}, \"grad\": {}, \"flags\": {flags}}}", floats_json(values), floats_json(grad))
    };
    if iteration == Some(LAST) {
        PENDING.with(|pending| pending.borrow_mut().push(Box::new(line)));
    } else {
        println!("{}", line(true));
    }
}

thread_local! {
    /// The observations of the timed loop's last iteration, printed when it ends.
    static PENDING: RefCell<Vec<Box<dyn Fn(bool) -> String>>> = const { RefCell::new(Vec::new()) };
}

/// The end of a timed iteration: the observations held back are printed, their values read now;
/// `read` false (a panic ended the iteration): without values, as the runner records them.
fn print_pending(read: bool) {
    let pending = PENDING.with(|p| p.try_borrow_mut().map(|mut p| std::mem::take(&mut *p)).unwrap_or_default());
    for line in &pending {
        println!("{}", line(read));
    }
    if !read {
        std::mem::forget(pending); // inside the panic hook: no burn tensor is dropped there
    }
}
"""

_RECORD_PLAIN = r"""
/// One observation as a JSON line.
fn record<const D: usize>(
    label: &str,
    tensor: &str,
    op_index: u32,
    grad: Option<Tensor<D>>,
    t: Tensor<D>,
    with_values: bool,
    transposed: bool,
) {
    let mut shape = t.dims().to_vec();
    if transposed {
        shape.reverse();
    }
    let values = with_values.then(|| torch_values(&t, transposed));
    let grad = grad.filter(|_| with_values).map(|g| torch_values(&g, transposed));
    println!(
        "{{\"label\": {}, \"tensor\": {}, \"op_index\": {op_index}, \"iteration\": null, \"shape\": {shape:?}, \
         \"values\": {}, \"grad\": {}, \"flags\": {}}}",
        string_json(label),
        string_json(tensor),
        floats_json(values),
        floats_json(grad),
        flags_json(&t),
    );
}
"""

_OBSERVE = {
    ("observe", True): r"""
/// `observe(t)`: its values, the gradient held for it and its flags, in torch's layout.
fn observe<const D: usize>(
    label: &str,
    tensor: &str,
    op_index: u32,
    iteration: Option<usize>,
    grad: Option<Tensor<D>>,
    t: Tensor<D>,
    with_values: bool,
) {
    record(label, tensor, op_index, iteration, grad, t, with_values, false);
}
""",
    ("observe_transposed", True): r"""
/// `observe(t)` of a value in burn's Linear-weight layout (`[d_in, d_out]`): printed transposed.
fn observe_transposed(
    label: &str,
    tensor: &str,
    op_index: u32,
    iteration: Option<usize>,
    grad: Option<Tensor<2>>,
    t: Tensor<2>,
    with_values: bool,
) {
    record(label, tensor, op_index, iteration, grad, t, with_values, true);
}
""",
    ("observe", False): r"""
/// `observe(t)`: its values, the gradient held for it and its flags, in torch's layout.
fn observe<const D: usize>(label: &str, tensor: &str, op_index: u32, grad: Option<Tensor<D>>, t: Tensor<D>, with_values: bool) {
    record(label, tensor, op_index, grad, t, with_values, false);
}
""",
    ("observe_transposed", False): r"""
/// `observe(t)` of a value in burn's Linear-weight layout (`[d_in, d_out]`): printed transposed.
fn observe_transposed(label: &str, tensor: &str, op_index: u32, grad: Option<Tensor<2>>, t: Tensor<2>, with_values: bool) {
    record(label, tensor, op_index, grad, t, with_values, true);
}
""",
}

_CHECKPOINT = r"""
/// After a checkpoint iteration of the timed loop: the flags of the tensor `settings.track` names
/// (None while it is not bound).
fn checkpoint<const D: usize>(step: usize, track: &str, t: Option<&Tensor<D>>) {
    let tracked = t.map_or("null".to_string(), |t| t.is_tracked().to_string());
    let flags = t.map_or("null".to_string(), flags_json);
    println!(
        "{{\"checkpoint\": {step}, \"track\": {}, \"tracked\": {tracked}, \"flags\": {flags}}}",
        string_json(track),
    );
}
"""


def _cargo_toml(name: str, *, standalone: bool) -> str:
    lines = [
        "# Generated by runner.program.render_rust: `cargo run --release` reproduces the program on burn.",
        "[package]",
        f'name = "{name}"',
        'version = "0.1.0"',
        'edition = "2021"',
        "publish = false",
        "",
        "[dependencies]",
        BURN_DEPENDENCY,
    ]
    if standalone:
        lines += ["", "# A project of its own, not a member of an enclosing workspace.", "[workspace]"]
    return "\n".join(lines) + "\n"


def _program(program: Program | Mapping[str, Any]) -> Program:
    return program if isinstance(program, Program) else Program.model_validate(program)


def render(
    program: Program | Mapping[str, Any],
    *,
    title: str = "A program case, in burn 0.22.1",
    name: str | None = None,
    standalone: bool = True,
) -> dict[str, str]:
    """The program as a cargo project: relative path -> file text.

    `name`: the package name (default: from `title`). `standalone=False` leaves out the
    `[workspace]` table, for a member of a workspace (`write_workspace`). `ValueError` names an
    operation burn lacks."""
    p = _program(program)
    g = _Gen(p)
    state = _State()
    g.setup(state)
    if g.timed_observes:
        g.put(1, "// The timed loop's last iteration prints its observations when it ends (the runner reads")
        g.put(1, "// their values then); a panic before prints them without values, then itself.")
        g.put(1, "let report_panic = std::panic::take_hook();")
        g.put(1, "std::panic::set_hook(Box::new(move |info| {")
        g.put(2, "print_pending(false);")
        g.put(2, "report_panic(info);")
        g.put(1, "}));")
    g.block(p.body, state, 1, _Ctx())
    if g.model_unread:
        g.put(
            1,
            f"drop({g.read_decl(g.model)});",
            None,
            "the params after the last step, dropped at the end as the runner does",
        )
    body = g.text()

    used = g.used
    imports: list[str] = []
    module_items = [x for x in ("Module", "Param") if x in used]
    if module_items:
        imports.append(f"use burn::module::{{{', '.join(module_items)}}};")
    if "Linear" in used:
        imports.append("use burn::nn::Linear;")
    if "WeightDecayConfig" in used:
        imports.append("use burn::optim::decay::WeightDecayConfig;")
    if "MomentumConfig" in used:
        imports.append("use burn::optim::momentum::MomentumConfig;")
    optim = [x for x in ("AdamConfig", "GradientsAccumulator", "GradientsParams", "SgdConfig") if x in used]
    if optim:
        imports.append(f"use burn::optim::{{{', '.join(optim)}}};")
    if "activation" in used:
        imports.append("use burn::tensor::activation;")
    tensor_items = ["Device", "Tensor"] + (["TensorData"] if "TensorData" in used else [])
    imports.append(f"use burn::tensor::{{{', '.join(tensor_items)}}};")
    if g.timed_observes:
        imports.insert(0, "use std::cell::RefCell;\n")

    lint = ""
    idents = [d.base for d in g.decls] + [f.split(":")[0] for f in g.model_fields]
    if any(re.search(r"[A-Z]", i) for i in idents):
        lint = "#![allow(non_snake_case)]\n"

    out = [
        "//! " + title.replace("\n", " "),
        "//!",
        f"//! Generated by runner.program.render_rust from the program's IR: burn {BURN_VERSION} (Flex backend",
        "//! with Autodiff), straight-line. The initial tensors are the IR's data; every statement is",
        "//! commented with its IR index and source line. `cargo run --release` prints one JSON line per",
        "//! observation (values and gradients in torch's layout); a burn panic is printed as Rust prints",
        "//! panics.",
    ]
    if lint:
        out.append(lint.rstrip())
    out.append("")
    if g.data_file:
        out += ["mod data;", ""]
    out += imports
    timed = g.timed
    observes = [f for f in ("observe", "observe_transposed") if f in used]
    if timed is not None and (g.timed_observes or "CHECKPOINTS" in used):
        count = timed.attrs["count"]
        cps = ", ".join(str(c) for c in p.settings.checkpoints)
        out += [
            "",
            "/// Iterations of the timed loop (1-based) at which observations are recorded.",
            f"const CHECKPOINTS: &[usize] = &[{cps}];",
        ]
        if g.timed_observes:
            out += ["/// Its last iteration: observations record values there only.", f"const LAST: usize = {count};"]
    if g.has_model:
        out += ["", "/// Every param of the program: what burn's optimizers update.", "#[derive(Module, Debug)]"]
        if g.model_fields:
            out.append("struct Model {")
            out += [f"    {f}," for f in g.model_fields]
            out.append("}")
        else:
            out.append("struct Model {}")
    out += ["", "fn main() {", body, "}"]
    if observes or "checkpoint" in used:
        out.append(_HELPERS_COMMON.rstrip("\n"))
    if observes:
        out.append(_HELPERS_VALUES.rstrip("\n"))
        out.append((_RECORD_TIMED if g.timed_observes else _RECORD_PLAIN).rstrip("\n"))
        for f in observes:
            out.append(_OBSERVE[(f, g.timed_observes)].rstrip("\n"))
    if "checkpoint" in used:
        out.append(_CHECKPOINT.rstrip("\n"))
    files = {
        "Cargo.toml": _cargo_toml(name or package_name(title), standalone=standalone),
        "src/main.rs": "\n".join(out) + "\n",
    }
    if g.data_file:
        files["src/data.rs"] = (
            "//! The larger initial tensors of the program, row-major float32 (a Linear weight in burn's layout).\n\n"
            + "\n\n".join(g.data_file)
            + "\n"
        )
    return files


def sketch(program: Program | Mapping[str, Any]) -> str | None:
    """The program as compact burn code (no data, no printing), or None if burn lacks one of its
    operations: what a report's program card shows."""
    p = _program(program)
    try:
        g = _Gen(p, sketch=True)
        state = _State()
        g.device = g.decl("device")
        g.model = g.decl("model")
        g.device.reads = g.model.reads = 1
        head: list[str] = ["let device = Device::flex().autodiff();"]
        fields: list[str] = []
        inits: list[str] = []
        by_name = {t.name: t for t in p.tensors}
        seen: set[str] = set()
        for t in p.tensors:
            if t.module is not None:
                if t.module in seen:
                    continue
                seen.add(t.module)
                m = g.modules[t.module]
                fields.append(f"{g.field[m.name]}: Linear")
                how = "transposed" if m.text("layout") == "transposed" else "copied as is (no transpose)"
                inits.append(
                    f"    {g.field[m.name]}: LinearConfig::new({m.integer('d_in')}, {m.integer('d_out')}).with_bias({'true' if m.flag('bias') else 'false'})"
                    f".init(&device),  // weight [{m.integer('d_in')}, {m.integer('d_out')}]: torch's {how}"
                )
            elif t.role == "param":
                shape = ", ".join(str(d) for d in t.shape)
                fields.append(f"{g.field[t.name]}: Param<Tensor<{len(t.shape)}>>")
                inits.append(
                    f"    {g.field[t.name]}: Param::from_tensor(Tensor::<{len(t.shape)}>::random([{shape}], "
                    "Distribution::Default, &device)),"
                )
        del by_name
        g.has_model = bool(fields) or any(s.op == "step" for s in p.statements())
        if g.has_model:
            head.append(f"let mut model = Model {{  // struct Model {{ {', '.join(fields)} }}, #[derive(Module)]")
            head += inits
            head.append("};")
        for t in p.tensors:
            if t.role == "input":
                d = g.decl(g.ident[t.name])
                d.reads = 1
                shape = ", ".join(str(x) for x in t.shape)
                head.append(
                    f"let {g.ident[t.name]} = Tensor::<{len(t.shape)}>::random([{shape}], Distribution::Default, &device);"
                )
                state.vars[t.name] = _Binding(d, _Ty(len(t.shape)), True)
        g.block(p.body, state, 0, _Ctx())
    except ValueError:
        return None
    for d in g.decls:
        d.reads = max(d.reads, 1)
    return "\n".join(head) + "\n" + g.text() + "\n"


# ---- reproducers on disk ----------------------------------------------------------------------------

README = """\
# {title}

A reproducer generated by `runner.program.render_rust` (burn {version}, Flex backend with
Autodiff). Run it with:

    cargo run --release

It prints one JSON line per observation (values and gradients in torch's layout); a burn panic
is printed by Rust with its message and location.
"""


def write_reproducer(
    program: Program | Mapping[str, Any], folder: Path, name: str, *, title: str | None = None
) -> list[Path]:
    """Writes the reproducer crate into `folder` (created): `Cargo.toml` (package `name`, made a
    valid cargo name), `src/main.rs` (and `src/data.rs` for larger tensors) and a README saying how
    to run it. Returns the files written. `ValueError` if burn lacks one of the program's
    operations (nothing is written then)."""
    files = render(program, title=title or name, name=package_name(name))
    files["README.md"] = README.format(title=title or name, version=BURN_VERSION)
    root = Path(folder)
    written = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def write_workspace(
    folder: Path, members: Mapping[str, Program | Mapping[str, Any] | Path], *, lockfile: Path | None = None
) -> list[str]:
    """Lays out a cargo workspace in `folder` whose members are reproducers, so that one
    `cargo build --release` compiles burn once for all of them. A member is a program (rendered
    here) or the folder of a crate `write_reproducer` wrote (copied, its `[workspace]` table
    left out). `lockfile`: a `Cargo.lock` copied over the workspace's (the project's, so that the
    versions a shared target directory already holds compiled are used). Returns the members'
    package names (their binaries' names), in order. A file whose text has not changed is left
    as it is (cargo rebuilds nothing for it); members of an earlier layout are removed.

    The workspace also has a member `unify-features` that depends on serde and serde_json with
    their default features, as the probe does: cargo then resolves burn's dependencies with the
    same features as the probe's build, and the burn it compiled is used."""
    folder = Path(folder)
    files: dict[str, str] = {}
    names: list[str] = []
    for key, member in members.items():
        name = package_name(key)
        if name in names or name == "unify-features":
            raise ValueError(f"write_workspace: two members named {name!r}")
        names.append(name)
        if isinstance(member, Path):
            crate: dict[str, str] = {}
            for path in sorted(member.rglob("*")):
                rel = path.relative_to(member).as_posix()
                if path.is_file() and not rel.startswith("target/") and rel != "Cargo.lock":
                    crate[rel] = path.read_text()
            manifest = re.sub(r'(?m)^name = ".*"$', f'name = "{name}"', crate["Cargo.toml"], count=1)
            crate["Cargo.toml"] = re.sub(r"(?m)^# A project of its own.*\n|^\[workspace\]\s*$", "", manifest)
        else:
            crate = render(member, title=key, name=name, standalone=False)
        files.update({f"crates/{name}/{rel}": text for rel, text in crate.items()})
    files["crates/unify-features/Cargo.toml"] = (
        '[package]\nname = "unify-features"\nversion = "0.1.0"\nedition = "2021"\npublish = false\n\n'
        '[dependencies]\nserde = "1"\nserde_json = "1"\n'
    )
    files["crates/unify-features/src/lib.rs"] = "//! Only its dependencies matter (see the workspace's Cargo.toml).\n"
    listed = ",\n".join(f'    "crates/{n}"' for n in [*names, "unify-features"])
    files["Cargo.toml"] = (
        "# Reproducers built together: one compiled burn for all (runner.program.render_rust.write_workspace).\n"
        f'[workspace]\nresolver = "2"\nmembers = [\n{listed},\n]\n'
    )
    if lockfile is not None and lockfile.exists():
        files["Cargo.lock"] = lockfile.read_text()
    crates = folder / "crates"
    if crates.exists():
        for path in sorted(crates.rglob("*"), reverse=True):
            rel = path.relative_to(folder).as_posix()
            if path.is_file() and rel not in files:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    for rel, text in files.items():
        path = folder / rel
        if path.is_file() and path.read_text() == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return names


# ---- running a built reproducer -----------------------------------------------------------------

_PANIC = re.compile(
    r"thread '[^']*'(?: \(\d+\))? panicked at (?P<location>[^\n]+?):\n(?P<message>.*?)"
    r"(?:\nnote: |\nstack backtrace:|\n\s*\d+: |\Z)",
    re.DOTALL,
)


@dataclass
class ReproducerRun:
    """What a reproducer printed: its observations, checkpoint lines and the panic, if any."""

    returncode: int
    observations: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    panic: dict[str, str] | None = None
    """`message` and `location` (`file:line:column`) of the first panic Rust printed."""


def read_run(stdout: str, stderr: str, returncode: int) -> ReproducerRun:
    """Parses a reproducer's output (`ValueError` for a line that is not one it prints)."""
    run = ReproducerRun(returncode)
    for line in stdout.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if not isinstance(record, dict):
            raise ValueError(f"not a reproducer's line: {line[:200]!r}")
        if "checkpoint" in record:
            run.checkpoints.append(record)
        else:
            run.observations.append(record)
    m = _PANIC.search(stderr)
    if m is not None:
        run.panic = {"message": m.group("message").rstrip("\n"), "location": m.group("location")}
    return run
