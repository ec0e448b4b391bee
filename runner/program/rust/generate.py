"""The statement generator: the burn code of a program's statements, one Rust statement per IR
statement, doing what the burn interpreter does (see the package docstring).

It runs twice over a program (`generate`). The first pass counts which Rust variables are read
and which are assigned after their `let`; the second writes every line with each variable's
final identifier (`x`, or `_x` when nothing reads it) and its `mut` decided. Both passes make
the same variables in the same order (`Decl.id`), so the decisions of the first are looked up by
id in the second."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ...contract import burn
from ...contract.ops import MODULES, OPS, AttrValue, unsupported
from ..ir import ModuleDecl, Program, Stmt, TensorDecl, timed_loop, walk
from . import families, literals
from .families.base import Arg, Call, Declaration, ModuleTensor
from .forward import ForwardRegion, ForwardUnfit, Plan, plan
from .liveness import HELD, INPLACE, LEARNING_RATE, LEARNING_RATE_READ, learning_rate, liveness, schedules, tensor_names
from .names import RustNames, unread
from .state import (
    LEARNING_RATE_TYPE,
    SCHEDULE_TYPE,
    Binding,
    Ctx,
    Decl,
    Dtype,
    Made,
    OptBinding,
    OptConfig,
    State,
    Ty,
)

BURN_VERSION = burn.pinned_version()
INLINE_ELEMENTS = 64
"""Initial tensors up to this many elements are written in `main.rs`; larger ones in `src/data.rs`."""
MAX_PEELED = 3
"""Iterations of one loop written out before its `for` (where values change type between iterations)."""

UNARY_METHOD = {
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
BINARY_OPERATOR = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
CORE_OPS = frozenset(
    [*UNARY_METHOD, *BINARY_OPERATOR]
    + "matmul reshape add_scalar_ clone transpose relu sigmoid sum mean add_scalar mul_scalar powi sum_dim "
    "linear step zero_grad backward observe grad item repeat sched_step".split()
)
"""The operations this module writes itself; the others are the families' (`families`)."""


@dataclass(frozen=True)
class Decided:
    """What the first pass decided for each Rust variable, by `Decl.id`."""

    idents: tuple[str, ...]
    """How it is written: its base, or `_base` when nothing reads it."""
    muts: tuple[bool, ...]
    """It is assigned after its `let` (or borrowed mutably): `let mut`."""

    @staticmethod
    def of(decls: Sequence[Decl], *, all_read: bool = False) -> Decided:
        """The decisions for the variables of a finished pass (`all_read`: none is written `_x`)."""
        return Decided(
            idents=tuple(d.base if d.reads or all_read else unread(d.base) for d in decls),
            muts=tuple(d.mut for d in decls),
        )


class Generator:
    """One pass over a program (see the module docstring): `decided` is None in the first pass,
    which only counts, and the first pass's decisions in the second, which writes."""

    def __init__(
        self, program: Program, *, sketch: bool = False, decided: Decided | None = None, forward: Plan | None = None
    ) -> None:
        self.p = program
        self.sketch = sketch
        self.decided = decided
        self.plan = forward
        """The forward region `fn main` calls `model.forward(..)` for (`forward`), if any."""
        self.forward: Forward | None = None
        """The method, made at the region's first call (every call must give it the same types)."""
        self.forward_note: str | None = None
        """Why a region given to `generate` stays inline (`ForwardUnfit`), for a comment in main.rs."""
        self.in_forward = False
        """This generator writes the method's body (`forward_body`), not `fn main`."""
        self.parameters: list[str] = []
        """The method's parameters (`forward_body`)."""
        self.last_let: tuple[int, Decl, str, Stmt | None, str] | None = None
        """The newest `let` of a new variable: (its line count after, the variable, expression,
        statement, note), so that the method returns the expression of its last `let` itself."""
        for st in program.statements():
            lacked = unsupported("burn", st.op, st.attrs)
            if lacked is not None:
                raise ValueError(f"render: line {st.line}: burn {BURN_VERSION} has no `{lacked[0]}` ({lacked[1]})")
        for st in program.statements():
            if st.op not in CORE_OPS and not families.renders(st.op):
                raise families.missing_op(st.op, st.line)
        for m in program.modules:
            if m.kind != "linear" and m.kind not in families.MODULES:
                raise families.missing_module(m.name, m.kind)
        self.live = liveness(program)
        self.schedules = schedules(program)
        """Each scheduler name -> the optimizer name its schedules are made from."""
        self.generations = 0
        """Optimizer statements run so far (`Made.generation`)."""
        self.timed = timed_loop(program.body)
        self.timed_observes = self.timed is not None and any(s.op == "observe" for s in walk(self.timed.body or []))
        """The timed loop observes: observations carry their iteration, and the last iteration's
        are printed when it ends."""
        self.modules = {m.name: m for m in program.modules}
        read_from_model = tensor_names(program)
        self.params: dict[str, TensorDecl] = {t.name: t for t in program.tensors if t.name in read_from_model}
        """The params and the modules' buffers: read from `model` (the interpreter's `Src::Param`)."""
        self.names = RustNames(program)
        self.lines: list[tuple[int, str]] = []
        self.decls: list[Decl] = []
        self.model_unread = False
        self.loops = 0
        """Loop boundaries (a `for` opened or closed) emitted so far."""
        self.used: set[str] = set()
        self.imports: set[str] = set()
        """The families' `use` paths the code needs."""
        self.dry = 0
        self.scopes = [0]
        """The Rust blocks open now (`Decl.scope`): `fn main`'s, then each `for` body's."""
        self.next_scope = 1
        self.protected: list[set[str]] = []
        self.data_file: list[str] = []
        self.model_fields: list[str] = []
        self.has_model = False
        self.head: list[str] = []
        """The sketch's lines before the statements."""
        self.device = self.decl("device")
        self.model = self.decl("model")

    # variables

    def local_ident(self, name: str) -> str:
        """A program name's identifier, or an optimizer's learning rate's (`opt_lr`)."""
        if name.startswith(LEARNING_RATE):
            return self.names.learning_rate(name.removeprefix(LEARNING_RATE))
        return self.names.local(name)

    def fresh(self, base: str) -> str:
        """`base`, or `base_2`, `base_3`... when an enclosing loop carries a variable named `base`."""
        return self.names.fresh(base, set().union(*self.protected))

    def decl(self, base: str) -> Decl:
        d = Decl(len(self.decls), base, scope=self.scopes[-1])
        self.decls.append(d)
        return d

    def open_scope(self) -> None:
        """A `for` body begins (closed by `self.scopes.pop()`)."""
        self.scopes.append(self.next_scope)
        self.next_scope += 1

    def own_variable(self, old: Binding | None, base: str, expr: str, depth: int, st: Stmt, note: str) -> Binding:
        """Binds a variable of the code's own (`eval_model`) to `expr`: assigned in place when
        `old` holds one whose block is still open (a loop then carries it across iterations),
        else a new `let`."""
        if old is not None and old.decl.scope in self.scopes:
            self.unread_overwrite(old.decl, depth)
            self.set_mut(old.decl)
            self.put(depth, f"{self.v(old.decl)} = {expr};", st, note)
            self.written(old.decl)
            return Binding(old.decl, None, True)
        d = self.decl(self.fresh(base))
        self.put(depth, f"let {self.mut(d)}{self.v(d)} = {expr};", st, note)
        self.written(d)
        return Binding(d, None, True)

    def note(self, depth: int, st: Stmt, text: str) -> None:
        """A statement that is only a comment in the code (none in the sketch)."""
        if not self.sketch:
            self.put(depth, f"// [{st.index}] line {st.line}: {text}")

    def import_(self, path: str) -> None:
        """A family's `use` path (one of `families.IMPORTS`)."""
        if path not in families.IMPORTS:
            raise AssertionError(f"render: `use {path}` is not listed in a family module's IMPORTS")
        if not self.dry:
            self.imports.add(path)

    def v(self, decl: Decl) -> str:
        """The variable as written (the first pass writes its base: its lines are not kept)."""
        return decl.base if self.decided is None else self.decided.idents[decl.id]

    def mut(self, decl: Decl) -> str:
        """`mut ` in its `let` when it is assigned later."""
        return "mut " if self.decided is not None and self.decided.muts[decl.id] else ""

    def read_decl(self, decl: Decl) -> str:
        if not self.dry:
            decl.reads += 1
            decl.reads_since_write += 1
            if decl is self.model:
                self.model_unread = False
        return self.v(decl)

    def iteration(self, it: str | Decl) -> str:
        """The timed loop's iteration as an expression: a written-out number, or the `for`'s variable (read)."""
        return it if isinstance(it, str) else self.read_decl(it)

    def model_written(self) -> None:
        """`model = opt.step(...)`: Rust warns about an assignment nothing reads after."""
        if not self.dry:
            self.model_unread = True

    def module(self, name: str, *, assigned: bool = False) -> str:
        """A module of the training model (`Writer.module`)."""
        if assigned:
            self.set_mut(self.model)
        return f"{self.read_decl(self.model)}.{self.names.field(name)}"

    def set_mut(self, decl: Decl) -> None:
        if not self.dry:
            decl.mut = True

    def use(self, *names: str) -> None:
        if not self.dry:
            self.used.update(names)

    # output

    @property
    def writing(self) -> bool:
        """The second pass, outside a loop's trial run: lines are kept."""
        return self.decided is not None and not self.dry

    def put(self, depth: int, text: str, st: Stmt | None = None, note: str = "") -> None:
        if not self.writing:
            return
        comment = ""
        if not self.sketch:
            where = f"[{st.index}] line {st.line}" if st is not None else ""
            comment = "  // " + ": ".join(x for x in (where, note) if x) if (where or note) else ""
        elif note and st is None:
            comment = "  // " + note
        first, newline, rest = text.partition("\n")  # a block expression: the comment on its first line
        self.lines.append((depth, first + comment + newline + rest))

    def text(self) -> str:
        """The lines written, indented (a line of several, a block expression, as a whole)."""
        return "\n".join(("    " * depth + line) if line else "" for depth, t in self.lines for line in t.split("\n"))

    # reading values

    def param_expr(self, name: str, state: State) -> tuple[str, Ty, str]:
        """A param's current value: (expression, type, the field path)."""
        t = self.params[name]
        model = self.read_decl(self.model)
        layer = self.layer_tensor(name)
        if layer is not None:
            module = f"{model}.{self.names.field(layer[0])}"
            return layer[1].value(module), Ty(len(t.shape), layer[1].transposed), layer[1].path(module)
        if t.module is not None:
            m = self.names.field(t.module)
            if name.endswith(".weight"):
                return f"{model}.{m}.weight.val()", Ty(2, True), f"{model}.{m}.weight"
            return f"{model}.{m}.bias.as_ref().unwrap().val()", Ty(1), f"{model}.{m}.bias.as_ref().unwrap()"
        f = self.names.field(name)
        return f"{model}.{f}.val()", Ty(len(t.shape)), f"{model}.{f}"

    def layer_tensor(self, name: str) -> tuple[str, ModuleTensor] | None:
        """A tensor of a family module kind's module (`conv.weight`): (the module, how burn holds it)."""
        t = self.params[name]
        if t.module is None or self.modules[t.module].kind == "linear":
            return None
        return t.module, families.MODULES[self.modules[t.module].kind].tensor(name.split(".", 1)[1])

    def operand(self, state: State, st: Stmt, pos: int, *, borrowed: bool = False) -> tuple[str, Ty]:
        """The argument's value: moved on its last use, cloned before (`borrowed`: read by
        reference, never cloned)."""
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
        return (ident if borrowed else f"{ident}.clone()"), b.ty

    def type_of(self, state: State, name: str) -> Ty:
        if name in self.params:
            t = self.params[name]
            layer = self.layer_tensor(name) if t.module is not None else None
            if layer is not None:
                return Ty(len(t.shape), layer[1].transposed)
            linear = t.module is not None
            return Ty(2, True) if linear and name.endswith(".weight") else Ty(len(t.shape))
        b = state.vars.get(name)
        return b.ty if b is not None and b.ty is not None else Ty(0)

    @staticmethod
    def materialize(expr: str, ty: Ty) -> tuple[str, Ty]:
        """In torch's layout: a value in burn's Linear-weight layout is transposed."""
        if ty.transposed:
            return f"{expr}.transpose()", Ty(ty.rank)
        return expr, ty

    def kept(self, st: Stmt, role: str) -> bool:
        return self.live.keep.get((st.index, role), False)

    # writing values

    def carried_binding(self, ctx: Ctx, name: str) -> Binding | None:
        for frame in reversed(ctx.carried):
            if name in frame:
                return frame[name]
        return None

    def write(
        self,
        state: State,
        ctx: Ctx,
        name: str,
        keep: bool,
        expr: str,
        ty: Ty,
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
            state.vars[name] = Binding(outer.decl, ty, True)
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
        d = self.decl(self.fresh(self.local_ident(name)))
        self.put(depth, f"let {self.mut(d)}{self.v(d)} = {expr};", st, note)
        self.last_let = (len(self.lines), d, expr, st, note)
        self.written(d)
        state.vars[name] = Binding(d, ty, True)

    def written(self, decl: Decl) -> None:
        if not self.dry:
            decl.reads_since_write = 0
            decl.written_at = self.loops

    def unread_overwrite(self, decl: Decl, depth: int) -> None:
        """Before a variable is assigned again: when its value was written since the last loop
        boundary and not read since (a loop written out made that plain), Rust would warn that the
        value is never read; it is dropped explicitly (where the interpreter drops it too)."""
        if not self.dry and decl.reads_since_write == 0 and decl.written_at == self.loops:
            self.put(depth, f"drop({self.read_decl(decl)});", None, "its value is replaced here")

    def drop_after(self, state: State, st: Stmt, pos: int, depth: int, tail: bool) -> None:
        """A value read by reference on its last use is dropped, as the interpreter does, when a
        later backward could otherwise still see its graph nodes."""
        name = st.args[pos]
        if name in self.params or not self.live.take.get((st.index, pos), False) or not tail:
            return
        b = state.vars.get(name)
        if b is not None and not self.sketch:
            self.put(depth, f"drop({self.read_decl(b.decl)});", None, "its last use: dropped now, as the runner does")

    # setup

    def setup(self, state: State) -> None:
        p = self.p
        self.put(1, f"let {self.v(self.device)} = Device::flex().autodiff();")
        fields: list[str] = []
        order: list[str] = []
        for t in p.tensors:
            if t.module is not None:
                if t.module not in order:
                    order.append(t.module)
            elif t.role == "param":
                order.append(t.name)
        order += [m.name for m in p.modules if m.name not in order]  # a module without tensors
        self.has_model = bool(order) or any(
            s.op == "step" or (s.op == "backward" and s.attrs.get("accumulate")) for s in p.statements()
        )
        if self.has_model:
            self.use("Module")
            self.put(1, f"let {self.mut(self.model)}{self.v(self.model)} = Model {{")
            by_name = {t.name: t for t in p.tensors}
            for name in order:
                if name in self.modules and self.modules[name].kind != "linear":
                    fields.append(self.layer_field(self.modules[name], by_name))
                elif name in self.modules:
                    m = self.modules[name]
                    self.use("Linear", "Param")
                    w = by_name[f"{name}.weight"]
                    if m.text("layout") == "transposed":
                        how = f"torch's [{m.integer('d_out')}, {m.integer('d_in')}] weight transposed into burn's [d_in, d_out]"
                        data = literals.transpose_host(w.data, m.integer("d_out"), m.integer("d_in"))
                    else:
                        how = (
                            f"torch's [{m.integer('d_out')}, {m.integer('d_in')}] buffer copied as is into burn's [d_in, d_out] "
                            '(layout "copied": the port forgot the transpose)'
                        )
                        data = list(w.data)
                    fields.append(f"{self.names.field(name)}: Linear")
                    self.put(
                        2,
                        f"{self.names.field(name)}: Linear {{",
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
                    fields.append(f"{self.names.field(name)}: Param<Tensor<{len(t.shape)}>>")
                    self.put(
                        2,
                        f"{self.names.field(name)}: Param::from_tensor({self.tensor_literal(name, t.data, t.shape)}),",
                    )
            self.put(1, "};")
        self.model_fields = fields
        for t in p.tensors:
            if t.role == "input":
                d = self.decl(self.names.local(t.name))
                literal = self.tensor_literal(t.name, t.data, t.shape, t.dtype)
                self.put(1, f"let {self.mut(d)}{self.v(d)} = {literal};")
                state.vars[t.name] = Binding(d, Ty(len(t.shape), dtype=t.dtype), True)

    def layer_field(self, m: ModuleDecl, by_name: dict[str, TensorDecl]) -> str:
        """A module kind of the families in `let model = Model { .. }`: built from its config as
        the interpreter's `layers::build` does, then the program's data loaded into its tensors.
        Returns the field's declaration for `struct Model`."""
        r = families.MODULES[m.kind]
        spec = MODULES[m.kind]
        field = self.names.field(m.name)
        local = self.names.local(m.name)
        for path in r.imports:
            self.import_(path)
        config = r.config(Declaration(m.name, spec.source, m.attrs, self.import_))
        tensors = spec.tensors(m.attrs)
        given = ", ".join(
            [self.attr_text(m.attrs[a.name]) for a in spec.attrs if a.positional and a.name in m.attrs]
            + [
                f"{a.name}={self.attr_text(m.attrs[a.name])}"
                for a in spec.attrs
                if not a.positional and a.name in m.attrs
            ]
        )
        init = r.init(self.read_decl(self.device) if r.init_takes_device else "")
        if not tensors:  # nothing to load: burn's own init is the module
            self.put(2, f"{field}: {config}{init},", None, f"{m.name} = {spec.source}({given}): built from its config")
            return f"{field}: {r.rust_type}"
        self.put(
            2,
            f"{field}: {{",
            None,
            f"{m.name} = {spec.source}({given}): built from its config, then the program's data",
        )
        self.put(3, f"let mut {local} = {config}{init};")
        for p in tensors:
            t = by_name[f"{m.name}.{p.name}"]
            mt = r.tensor(p.name)
            for path in mt.imports():
                self.import_(path)
            pieces = mt.pieces(t.data, t.shape)
            for part, data, shape in pieces:
                # a piece of a fused tensor: its own array in data.rs (`MHA_IN_PROJ_WEIGHT_QUERY`)
                const = t.name if len(pieces) == 1 else f"{t.name}.{part.split('.')[0]}"
                self.put(3, f"{local}.{part} = {mt.load(self.tensor_literal(const, data, shape))};")
        self.put(3, local)
        self.put(2, "},")
        return f"{field}: {r.rust_type}"

    @staticmethod
    def attr_text(value: object) -> str:
        """An attribute's value in a comment, as the source writes it (a string escaped)."""
        if isinstance(value, bool):
            return "True" if value else "False"
        if isinstance(value, str):
            return literals.string(value)
        return str(value)

    def tensor_literal(self, name: str, data: Sequence[float], shape: Sequence[int], dtype: Dtype = "float") -> str:
        device = self.read_decl(self.device)
        ty = Ty(len(shape), dtype=dtype)
        if dtype != "float":
            self.import_(f"burn::tensor::{dtype.title()}")
        if len(data) <= INLINE_ELEMENTS:
            if dtype == "float":
                return f"Tensor::<{ty.rank}>::from_floats({literals.nested(data, shape)}, &{device})"
            make = "from_ints" if dtype == "int" else "from_bool"
            return f"{ty.path}::{make}({literals.nested_elements(data, shape, dtype)}, &{device})"
        const = self.names.static(name)
        if self.writing:
            if dtype == "float":
                rows = [", ".join(literals.f32(v) for v in data[i : i + 8]) for i in range(0, len(data), 8)]
            else:
                rows = [
                    ", ".join(literals.element(v, dtype) for v in data[i : i + 16]) for i in range(0, len(data), 16)
                ]
            element = {"float": "f32", "int": "i32", "bool": "bool"}[dtype]
            self.data_file.append(
                f"pub static {const}: [{element}; {len(data)}] = [\n" + "".join(f"    {r},\n" for r in rows) + "];"
            )
        self.use("TensorData")
        dims = ", ".join(str(d) for d in shape)
        return f"{ty.path}::from_data(TensorData::new(data::{const}.to_vec(), [{dims}]), &{device})"

    # statements

    def block(self, stmts: Sequence[Stmt], state: State, depth: int, ctx: Ctx) -> None:
        # later[i]: a backward runs after statement i in this Rust scope
        later = [ctx.tail_backward] * (len(stmts) + 1)
        for i in range(len(stmts) - 1, -1, -1):
            later[i] = later[i + 1] or any(s.op == "backward" for s in walk(stmts[i + 1 : i + 2]))
        skip = -1
        for i, st in enumerate(stmts):
            if st.index <= skip:
                continue
            tail = later[i]
            if self.plan is not None and not self.in_forward and st.index == self.plan.stmts[0].index:
                self.forward_call(state, depth, ctx, tail)
                skip = self.plan.stmts[-1].index
                continue
            if st.op == "repeat":
                self.repeat(st, state, depth, ctx, tail)
            else:
                self.stmt(st, state, depth, ctx, tail)

    def stmt(self, st: Stmt, state: State, depth: int, ctx: Ctx, tail: bool) -> None:
        op = st.op
        if op in families.OPTIMIZERS:
            self.optimizer(st, state, depth, ctx)
            return
        if op in families.SCHEDULERS:
            self.scheduler(st, state, depth, ctx)
            return
        if op == "sched_step":
            self.sched_step(st, state, depth, ctx)
            return
        if op in families.STATEMENTS:
            families.STATEMENTS[op](self, st, state, depth, ctx)
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
        if op in INPLACE and st.args[0] in self.params:
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
        if op in INPLACE:
            self.inplace_slot(st, state, depth, ctx, expr, ty, tail)
            return
        if st.out is None:  # a family operation's result nobody binds
            self.put(depth, f"let _ = {expr};", st, note)
            return
        self.write(state, ctx, st.out, self.kept(st, "out"), expr, ty, depth, st, note, tail)

    def family(self, st: Stmt, state: State) -> tuple[str, Ty]:
        """A family operation: its operands read as the interpreter reads them (`float_arg`: in
        torch's layout), then its rendering (`families`)."""
        kinds = OPS[st.op].args
        args: list[Arg] = []
        module: str | None = None
        module_attrs: Mapping[str, AttrValue] = {}
        for pos, name in enumerate(st.args):
            if kinds[min(pos, len(kinds) - 1)] == "module":
                # the interpreter's `Ctx::model`: the `valid()` snapshot in eval mode
                holder = self.model if state.training or state.eval_model is None else state.eval_model.decl
                module = f"{self.read_decl(holder)}.{self.names.field(name)}"
                module_attrs = self.modules[name].attrs
                continue
            expr, ty = self.materialize(*self.operand(state, st, pos))
            args.append(Arg(expr, ty, name))
        call = Call(
            st.op,
            st.line,
            args,
            st.attrs,
            module=module,
            module_attrs=module_attrs,
            device=lambda: self.read_decl(self.device),
            use=self.import_,
        )
        result = families.OPS[st.op](call)
        return result.text, result.ty

    def expression(self, st: Stmt, state: State) -> tuple[str, Ty]:
        op, at = st.op, st.attrs
        if op in families.OPS:
            return self.family(st, state)
        if op == "linear":
            x, ty = self.materialize(*self.operand(state, st, 1))
            # the interpreter's model for module calls: the `valid()` snapshot in eval mode
            holder = self.model if state.training or state.eval_model is None else state.eval_model.decl
            return f"{self.read_decl(holder)}.{self.names.field(st.args[0])}.forward({x})", ty
        if op in BINARY_OPERATOR or op == "matmul":
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
                return f"{a}.matmul({b})", Ty(ta.rank)
            return f"{a} {BINARY_OPERATOR[op]} {b}", ta
        if op == "reshape":
            a, ta = self.materialize(*self.operand(state, st, 0))
            shape = at["shape"]
            assert isinstance(shape, list)
            return f"{a}.reshape([{', '.join(str(d) for d in shape)}])", Ty(len(shape))
        a, ta = self.operand(state, st, 0)
        if op in UNARY_METHOD:
            return f"{a}.{UNARY_METHOD[op]}", ta
        if op == "add_scalar_":
            return f"{a}.add_scalar({literals.f64(literals.num(at, 'scalar'))})", ta
        if op == "clone":
            return a, ta
        if op == "transpose":
            if ta.transposed:
                return a, Ty(2)
            return f"{a}.transpose()", ta
        if op in ("relu", "sigmoid"):
            self.use("activation")
            return f"activation::{op}({a})", ta
        if op in ("sum", "mean"):
            return f"{a}.{op}()", Ty(1)
        if op == "add_scalar":
            return f"{a}.add_scalar({literals.f64(literals.num(at, 'scalar'))})", ta
        if op == "mul_scalar":
            return f"{a}.mul_scalar({literals.f64(literals.num(at, 'scalar'))})", ta
        if op == "powi":
            return f"{a}.powi_scalar({at['exponent']})", ta
        if op == "sum_dim":
            a, ta = self.materialize(a, ta)
            return f"{a}.sum_dim({at['dim']})", ta
        raise AssertionError(f"render: no Rust for `{op}`")

    def inplace_slot(self, st: Stmt, state: State, depth: int, ctx: Ctx, expr: str, ty: Ty, tail: bool) -> None:
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

    def param_inplace(self, st: Stmt, state: State, depth: int, ctx: Ctx, tail: bool) -> None:
        name = st.args[0]
        layer = self.layer_tensor(name)
        if layer is not None and layer[1].kind == "running" and st.op != "add_scalar_":
            # the interpreter's `layers::set_require_grad`: a buffer never requires grad
            self.note(depth, st, f"{st.op}({name}): a buffer is no param in burn (a RunningState): unchanged")
        else:
            self.change_param(st, depth)
        if st.out is not None and st.out != name and self.kept(st, "out"):
            expr, ty, _ = self.param_expr(name, state)
            self.write(state, ctx, st.out, True, expr, ty, depth, None, tail=tail)

    def change_param(self, st: Stmt, depth: int) -> None:
        """`freeze`, `require_grad` or `add_scalar_` of a param (or `add_scalar_` of a buffer)."""
        name = st.args[0]
        t = self.params[name]
        model = self.read_decl(self.model)
        self.set_mut(self.model)
        if st.op == "add_scalar_":
            change = f"map(|t| t.add_scalar({literals.f64(literals.num(st.attrs, 'scalar'))}))"
        else:
            change = f"set_require_grad({'true' if st.op == 'require_grad' else 'false'})"
        layer = self.layer_tensor(name)
        if layer is not None:
            module, mt = layer
            if mt.kind == "running":
                # a buffer's state is replaced by its value plus the scalar (`layers::add_scalar`)
                self.import_("burn::module::RunningState")
                path = f"{model}.{self.names.field(module)}.{mt.field}"
                scalar = literals.f64(literals.num(st.attrs, "scalar"))
                self.put(depth, f"{path} = RunningState::new({path}.value_sync().add_scalar({scalar}));", st)
            else:
                for i, line in enumerate(mt.change(f"{model}.{self.names.field(module)}", change)):
                    self.put(depth, line, st if i == 0 else None)
        elif t.module is not None and name.endswith(".bias"):
            path = f"{model}.{self.names.field(t.module)}.bias"
            self.put(depth, f"{path} = {path}.map(|b| b.{change});", st)
        else:
            path = (
                f"{model}.{self.names.field(t.module)}.weight"
                if t.module is not None
                else f"{model}.{self.names.field(name)}"
            )
            self.put(depth, f"{path} = {path}.{change};", st)

    def attributes(self, st: Stmt) -> Call:
        """A statement without tensor operands (an optimizer, a schedule) as a `Call`: its attributes."""
        return Call(
            st.op,
            st.line,
            (),
            st.attrs,
            module=None,
            module_attrs={},
            device=lambda: self.read_decl(self.device),
            use=self.import_,
        )

    def optimizer(self, st: Stmt, state: State, depth: int, ctx: Ctx) -> None:
        at = st.attrs
        assert st.out is not None
        lr = literals.num(at, "lr")
        builder = families.OPTIMIZERS[st.op](self.attributes(st)) + ".init()"
        config = OptConfig(st.op, lr, builder)
        self.generations += 1
        state.made[st.out] = Made(lr, self.generations)
        note = f"lr {lr!r} is an argument of step in burn"
        if not self.kept(st, "opt"):
            self.put(depth, f"let _ = {builder};", st, note + "; never stepped before it is replaced")
        else:
            carried = self.carried_binding(ctx, st.out)
            if carried is not None:
                self.set_mut(carried.decl)
                self.put(depth, f"{self.v(carried.decl)} = {builder};", st, note)
                state.opts[st.out] = OptBinding(carried.decl, config)
            else:
                d = self.decl(self.fresh(self.names.local(st.out)))
                self.put(depth, f"let {self.mut(d)}{self.v(d)} = {builder};", st, note)
                state.opts[st.out] = OptBinding(d, config)
        if st.out in self.schedules.values() and self.kept(st, "lr"):
            # a schedule sets its learning rate: a variable from here (the interpreter's `Optim::lr`)
            self.import_("burn::optim::lr_scheduler::module_lr_scheduler::ModuleLearningRate")
            expr = f"ModuleLearningRate::from({literals.f64(lr)})"
            note = f"the learning rate `{st.out}` steps with until a schedule sets another"
            self.write(state, ctx, learning_rate(st.out), True, expr, LEARNING_RATE_TYPE, depth, None, note)

    def scheduler(self, st: Stmt, state: State, depth: int, ctx: Ctx) -> None:
        """`sched = step_lr(opt, ...)`: burn's schedule from the optimizer's `lr` (the interpreter's
        `build_scheduler`); `init()`'s error stops the interpreter with its message: a panic here."""
        assert st.out is not None
        opt = st.args[0]
        made = state.made[opt]  # the IR binds an optimizer before a schedule names it
        # a sequential_lr composes the configs its schedules were built from (bound before it)
        composed = [state.configs[name] for name in st.args[1:]]
        name, config = families.SCHEDULERS[st.op](self.attributes(st), made.lr, composed)
        message = literals.string(f"{name}::init: {{e}}")
        expr = f"{config}.init().unwrap_or_else(|e| panic!({message}))"
        note = f"from `{opt}`'s lr {made.lr!r}; init() refuses some values (the interpreter's error)"
        if composed:
            note = f"the configs of {', '.join(f'`{n}`' for n in st.args[1:])}, one after another; " + note
        self.write(state, ctx, st.out, self.kept(st, "sched"), expr, SCHEDULE_TYPE, depth, st, note)
        state.schedules[st.out] = (opt, made.generation)
        state.configs[st.out] = f"LrSchedulerConfig::{families.SCHEDULE_VARIANTS[name]}({config})"

    def sched_step(self, st: Stmt, state: State, depth: int, ctx: Ctx) -> None:
        """`sched_step(sched)`: `opt_lr = sched.step();`, the learning rate of the optimizer's next
        steps (the interpreter's `Kind::SchedStep`)."""
        name = st.args[0]
        b = state.vars.get(name)
        if b is None or not b.value:
            raise AssertionError(f"render: line {st.line}: {name!r} has no schedule here")
        opt, _ = state.schedules[name]
        if not state.linked(name):
            # the interpreter steps the schedule and leaves the optimizer bound since alone; the
            # liveness counts every sched_step as setting the learning rate
            raise ValueError(
                f"render: line {st.line}: `sched_step({name})`: `{opt}` names another optimizer than the one the "
                f"schedule `{name}` was made from, whose learning rate the burn interpreter then leaves alone; the "
                "Rust reproducer has no rendering of a schedule that outlives its optimizer"
            )
        self.set_mut(b.decl)
        sched = self.read_decl(b.decl)
        if self.live.take.get((st.index, 0), False):
            b.value = False
        note = f"the learning rate of `{opt}`'s next steps (the first call gives the initial one)"
        if not self.kept(st, "lr"):
            note = f"the learning rate it returns is replaced before `{opt}` steps with it"
        self.write(
            state, ctx, learning_rate(opt), self.kept(st, "lr"), f"{sched}.step()", LEARNING_RATE_TYPE, depth, st, note
        )

    def learning_rate(self, st: Stmt, state: State) -> str:
        """`step(opt)`'s learning rate: the literal `lr` of its optimizer, or the variable a schedule sets."""
        opt = st.args[0]
        if opt not in self.schedules.values():
            return literals.f64(state.opts[opt].config.lr)
        b = state.vars.get(learning_rate(opt))
        if b is None or not b.value:
            raise AssertionError(f"render: line {st.line}: the learning rate of {opt!r} has no value here")
        ident = self.read_decl(b.decl)
        if self.live.take.get((st.index, LEARNING_RATE_READ), False):
            b.value = False
            return ident
        return f"{ident}.clone()"

    def drop_carried_grads(self, state: State, ctx: Ctx, depth: int, held: Iterable[Binding | None]) -> None:
        """Gradients a loop carries in a variable declared before it are dropped where the
        interpreter drops them (`step`, `zero_grad`), not when the variable is next assigned."""
        carried = {b.decl.id for frame in ctx.carried for b in frame.values()}
        for b in held:
            if b is not None and b.decl.id in carried and not self.sketch:
                self.put(depth, f"drop({self.read_decl(b.decl)});", None, "the gradients held are dropped")

    def step(self, st: Stmt, state: State, depth: int, ctx: Ctx) -> None:
        opt = state.opts[st.args[0]]
        o = self.read_decl(opt.decl)
        self.set_mut(opt.decl)
        self.set_mut(self.model)
        model = self.read_decl(self.model)
        lr = self.learning_rate(st, state)
        self.use("GradientsParams")
        if state.held == "raw" and state.grads is not None:
            d = self.decl(self.fresh("grads"))
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
        self, state: State, ctx: Ctx, which: str, expr: str, depth: int, st: Stmt | None, note: str = ""
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
            b = Binding(outer.decl)
        else:
            # the newest gradients beside an accumulated sum get their own name: often unread
            base = "newest_grads" if which == "grads" and state.held == "acc" else which
            d = self.decl(self.fresh(base))
            self.put(depth, f"let {self.mut(d)}{self.v(d)} = {expr};", st, note)
            self.written(d)
            b = Binding(d)
        if which == "grads":
            state.grads = b
        else:
            state.grads_sum = b

    def backward(self, st: Stmt, state: State, depth: int, ctx: Ctx, tail: bool) -> None:
        loss, _ = self.operand(state, st, 0, borrowed=True)
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
            fresh = self.decl(self.fresh("fresh"))
            acc = self.decl(self.fresh("acc"))
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

    def grad_expr(self, state: State, st: Stmt, pos: int, value_ident: str | None) -> str | None:
        """The gradient held for the argument now (an `Option<Tensor<D>>` expression), or None
        when none is held."""
        name = st.args[pos]
        if state.held == "none" or state.grads is None:
            return None
        layer = self.layer_tensor(name) if name in self.params else None
        if layer is not None and layer[1].kind == "running":
            return None  # a buffer is no param: no gradient
        if layer is not None:
            module = f"{self.read_decl(self.model)}.{self.names.field(layer[0])}"
            if state.held == "acc" and state.grads_sum is not None:
                return layer[1].grad_sum(module, self.read_decl(state.grads_sum.decl), len(self.params[name].shape))
            return layer[1].grad(module, self.read_decl(state.grads.decl))
        if name in self.params:
            _, ty, path = self.param_expr(name, state)
            if state.held == "acc" and state.grads_sum is not None:
                s = self.read_decl(state.grads_sum.decl)
                return f"{s}.get::<{ty.rank}>({path}.id)"
            return f"{path}.grad(&{self.read_decl(state.grads.decl)})"
        assert value_ident is not None
        return f"{value_ident}.grad(&{self.read_decl(state.grads.decl)})"

    def grad(self, st: Stmt, state: State, depth: int, ctx: Ctx, tail: bool) -> None:
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
            expr = f"None::<Tensor<{ty.rank}>>.expect({literals.string(message)})"
            note = "no backward since the last step / zero_grad: nothing is held"
        else:
            expr, note = f"{g}.expect({literals.string(message)})", ""
        taken = name not in self.params and self.live.take.get((st.index, 0), False) and tail
        if taken and st.out == name and self.kept(st, "out"):
            # `x = grad(x)`: the old x is dropped after its gradient is read, before x is rebound
            old = state.vars[name]
            tmp = self.decl(self.fresh("grad_tmp"))
            self.put(depth, f"let {self.v(tmp)} = {expr};", st, note)
            self.put(depth, f"drop({self.read_decl(old.decl)});", None, "its last use: dropped now, as the runner does")
            self.write(state, ctx, st.out, True, self.read_decl(tmp), ty, depth, None, tail=tail)
            return
        self.write(state, ctx, st.out, self.kept(st, "out"), expr, ty, depth, st, note, tail)
        if st.out != name:
            self.drop_after(state, st, 0, depth, tail)

    def observe(self, st: Stmt, state: State, depth: int, ctx: Ctx) -> None:
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
        exact = self.type_of(state, name).dtype != "float"
        """An int or bool tensor: values only, no gradient, never tracked (the interpreter reads them at once)."""
        if values and not exact:
            ident = None if name in self.params else self.read_decl(state.vars[name].decl)
            grad = self.grad_expr(state, st, 0, ident)
        value, ty = self.operand(state, st, 0)
        fn = f"observe_{ty.dtype}" if exact else "observe_transposed" if ty.transposed else "observe"
        self.use(fn)
        if exact:
            self.import_(f"burn::tensor::{ty.dtype.title()}")
        args = [literals.string(label), literals.string(name), str(st.index)]
        if self.timed_observes:
            args.append(f"Some({self.iteration(ctx.iteration)})" if ctx.iteration is not None else "None")
        if not exact:
            args.append(grad if grad is not None else "None")
        args += [value, "true" if values else "false"]
        self.put(depth, f"{fn}({', '.join(args)});", st)

    # the forward region

    def forward_call(self, state: State, depth: int, ctx: Ctx, tail: bool) -> None:
        """`let out = model.forward(..);` where the region's statements stood; the method itself is
        made at the first call (`Forward.make`), from the types of the arguments there."""
        plan = self.plan
        assert plan is not None
        if not state.training:
            raise ForwardUnfit("the forward runs in eval mode, where the modules are the `model.valid()` snapshot's")
        types: list[Ty] = []
        for name in plan.args:
            b = state.vars.get(name)
            if name in self.params or b is None or not b.value or b.ty is None or b.ty.kind != "tensor":
                raise ForwardUnfit(f"the forward's argument `{name}` is no tensor `fn main` holds there")
            types.append(b.ty)
        if self.forward is None:
            self.forward = Forward.make(self.p, plan, tuple(types))
        elif self.forward.types != tuple(types):
            raise ForwardUnfit("the forward's arguments change type between iterations")
        exprs: list[str] = []
        for name in plan.args:
            b = state.vars[name]
            ident = self.read_decl(b.decl)
            at = plan.last_read.get(name)
            if at is not None and self.live.take.get(at, False):
                b.value = False
                exprs.append(ident)
            else:
                exprs.append(f"{ident}.clone()")
        model = self.read_decl(self.model)
        first, last = plan.stmts[0], plan.stmts[-1]
        where = f"[{first.index}]..[{last.index}] lines {first.line}..{last.line}"
        note = f"{where}: the forward (`Model::forward` above)"
        out = plan.region.output
        expr = f"{model}.forward({', '.join(exprs)})"
        self.write(
            state, ctx, out, self.kept(plan.defines_output, "out"), expr, self.forward.out, depth, None, note, tail
        )

    def forward_body(self, types: Sequence[Ty]) -> Ty:
        """The method's body (this generator's lines, at depth 2): the region's statements with the
        model read as `self`, its arguments moved on their last read in it. Returns its type."""
        plan = self.plan
        assert plan is not None
        self.in_forward = True
        self.model.base = "self"
        self.model.reads = 1
        state = State()
        params: list[str] = []
        for name, ty in zip(plan.args, types):
            d = self.decl(self.names.local(name))
            state.vars[name] = Binding(d, ty, True)
            params.append(f"{self.v(d)}: {ty.rust}")
            if ty.dtype != "float":
                self.import_(f"burn::tensor::{ty.dtype.title()}")
        self.parameters = params
        for name, at in plan.last_read.items():
            # the arguments are the method's own: moved on their last read there
            self.live.take[at] = name != plan.region.output
        if self.decided is not None and not self.decided.idents[self.device.id].startswith("_"):
            if not plan.args:
                raise ForwardUnfit("the forward needs the device and has no tensor argument to read it from")
            first = self.v(state.vars[plan.args[0]].decl)
            self.put(2, f"let {self.v(self.device)} = {first}.device();")
        self.block(list(plan.stmts), state, 2, Ctx())
        if self.model.mut:
            raise ForwardUnfit("a statement of the forward changes the model")
        b = state.vars.get(plan.region.output)
        if b is None or not b.value or b.ty is None:
            raise ForwardUnfit(f"`{plan.region.output}` holds no value at the forward's end")
        ident = self.read_decl(b.decl)
        last = self.last_let
        if last is not None and last[0] == len(self.lines) and last[1] is b.decl and self.writing:
            # `let out = expr; out`: the expression itself is what the method returns
            self.lines.pop()
            self.put(2, last[2], last[3], last[4])
        else:
            self.put(2, ident)
        return b.ty

    # loops

    def repeat(self, st: Stmt, state: State, depth: int, ctx: Ctx, tail: bool) -> None:
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
            inner = Ctx(
                iteration=str(first) if timed else ctx.iteration,
                tail_backward=tail or body_has_backward,
                carried=ctx.carried,
            )
            self.block(st.body, state, depth, inner)
            if timed and self.timed_observes and first in self.p.settings.checkpoints and not self.sketch:
                self.put(depth, "print_pending(true);", None, "a checkpoint's observations, with their values")
            if timed:
                self.checkpoint(state, depth, str(first), static=first)
            self.forget_locals(st, state, carried_names)
            done += 1

    def forget_locals(self, st: Stmt, state: State, carried_names: Sequence[str]) -> None:
        """After an iteration, a name its body wrote that nothing reads later holds nothing."""
        for name in self.live.defined[st.index] - set(carried_names):
            if name in state.vars:
                state.vars[name].value = False

    def loop_fits(self, st: Stmt, state: State, carried_names: Sequence[str], ctx: Ctx, timed: bool) -> State | None:
        """The state after one iteration from `state` (a dry run), if every carried value keeps its
        type (rank, layout, gradients held) across it; None if not."""
        trial = state.copy()
        frame: dict[str, Binding] = {}
        for name in carried_names:
            if name == HELD:
                continue
            b = trial.vars.get(name)
            if b is not None and b.value:
                frame[name] = b
        self.dry += 1
        self.open_scope()
        try:
            inner = Ctx(iteration="it" if timed else ctx.iteration, carried=(*ctx.carried, frame))
            self.block(st.body or [], trial, 0, inner)
        finally:
            self.dry -= 1
            self.scopes.pop()
        if trial.mode() != state.mode():
            return None
        # a schedule made before the loop: whether its sched_step still reaches its optimizer (one
        # first made in the body is made there before any sched_step of it can run)
        links = trial.links()
        if any(links[name] != linked for name, linked in state.links().items()):
            return None
        for name in carried_names:
            before, after = state.signature(name), trial.signature(name)
            # a schedule or a learning rate keeps its binding too: it is then bound before the loop,
            # and needs no declaration without a value there
            strict = name in self.schedules or name.startswith(LEARNING_RATE)
            if name in state.opts or name in trial.opts or name == HELD or strict:
                if before != after:
                    return None
            elif before is not None and before != after:
                return None
        return trial

    def emit_loop(
        self,
        st: Stmt,
        state: State,
        trial: State,
        depth: int,
        ctx: Ctx,
        carried_names: Sequence[str],
        timed: bool,
        first: int,
        count: int,
    ) -> None:
        """The rest of the loop as a Rust `for`; `trial`: the state after one iteration (its types)."""
        assert st.body is not None
        # the carried variables, declared before the loop
        frame: dict[str, Binding] = {}
        for name in carried_names:
            if name == HELD:
                continue
            if name in state.opts or name in trial.opts:
                if name in state.opts:
                    frame[name] = Binding(state.opts[name].decl)
                continue
            b = state.vars.get(name)
            if b is not None and b.value:
                frame[name] = b
                continue
            after = trial.vars.get(name)
            if after is None or after.ty is None:
                continue
            d = self.decl(self.fresh(self.names.local(name)))
            if after.ty.dtype != "float":
                self.import_(f"burn::tensor::{after.ty.dtype.title()}")
            if name in self.live.after[st.index]:
                # bound only inside the loop and read after it: Rust wants a value before the loop
                device = self.read_decl(self.device)
                ones = ", ".join("1" for _ in range(after.ty.rank))
                self.put(
                    depth,
                    f"let {self.mut(d)}{self.v(d)} = {after.ty.path}::empty([{ones}], &{device});",
                    None,
                    f"`{name}` is bound in the loop below; Rust needs a value before it (never read)",
                )
            else:
                why = "the checkpoints read it" if name == self.p.settings.track else "the next iteration reads it"
                self.put(
                    depth,
                    f"let {self.mut(d)}{self.v(d)}: {after.ty.rust};",
                    None,
                    f"`{name}` is bound in the loop below and kept across iterations ({why})",
                )
            binding = Binding(d, after.ty, True)
            state.vars[name] = binding
            frame[name] = binding
        if HELD in carried_names:
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
        inner = Ctx(iteration=it if timed else ctx.iteration, carried=(*ctx.carried, frame))
        self.open_scope()
        self.block(st.body, state, depth + 1, inner)
        self.scopes.pop()
        if timed and self.timed_observes and not self.sketch:
            self.put(depth + 1, "print_pending(true);", None, "a checkpoint's observations, with their values")
        if timed:
            self.checkpoint(state, depth + 1, it, static=None)
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
                state.vars[name] = Binding(b.decl, current.ty, current.value)

    def checkpoint(self, state: State, depth: int, it: str | Decl, static: int | None) -> None:
        """After a timed iteration (`it`: a written-out one's number, or the `for`'s variable):
        the `track` tensor's flags, at the checkpoints."""
        track = self.p.settings.track
        if track is None or not self.p.settings.checkpoints or self.sketch:
            return
        if static is not None and static not in self.p.settings.checkpoints:
            return
        exact = False
        if track in self.params:
            value = f"&{self.param_expr(track, state)[0]}"
        else:
            b = state.vars.get(track)
            value = f"&{self.read_decl(b.decl)}" if b is not None and b.value else ""
            exact = bool(value) and b is not None and b.ty is not None and b.ty.dtype != "float"
        iteration = self.iteration(it)
        if exact:  # an int or bool tensor: never tracked
            self.use("checkpoint_exact")
            call = f"checkpoint_exact({iteration}, {literals.string(track)}, Some({value[1:]}.is_autodiff()));"
        else:
            self.use("checkpoint")
            call = (
                f"checkpoint({iteration}, {literals.string(track)}, Some({value}));"
                if value
                else f"checkpoint({iteration}, {literals.string(track)}, None::<&Tensor<1>>);"
            )
        if static is None:
            self.use("CHECKPOINTS")
            self.put(depth, f"if CHECKPOINTS.contains(&{iteration}) {{")
            self.put(depth + 1, call)
            self.put(depth, "}")
        else:
            self.put(depth, call)

    # the whole of `fn main`

    def main(self, state: State) -> None:
        """The body of the reproducer's `fn main`: the params and inputs, the statements."""
        self.setup(state)
        if self.timed_observes:
            self.put(1, "// A checkpoint iteration of the timed loop prints its observations when it ends (the runner")
            self.put(1, "// reads their values then); a panic before prints them without values, then itself.")
            self.put(1, "let report_panic = std::panic::take_hook();")
            self.put(1, "std::panic::set_hook(Box::new(move |info| {")
            self.put(2, "print_pending(false);")
            self.put(2, "report_panic(info);")
            self.put(1, "}));")
        self.block(self.p.body, state, 1, Ctx())
        if self.model_unread:
            self.put(
                1,
                f"drop({self.read_decl(self.model)});",
                None,
                "the params after the last step, dropped at the end as the runner does",
            )

    def sketch_main(self, state: State) -> None:
        """The sketch: the params and inputs made at random (`head`), then the statements."""
        p = self.p
        self.device.reads = self.model.reads = 1
        head = ["let device = Device::flex().autodiff();"]
        fields: list[str] = []
        inits: list[str] = []
        seen: set[str] = set()

        def layer(m: ModuleDecl) -> None:
            r = families.MODULES[m.kind]
            field = self.names.field(m.name)
            fields.append(f"{field}: {r.rust_type}")
            config = r.config(Declaration(m.name, MODULES[m.kind].source, m.attrs, self.import_))
            shapes = ", ".join(f"{spec.name} {spec.shape(m.attrs)}" for spec in MODULES[m.kind].tensors(m.attrs))
            inits.append(f"    {field}: {config}{r.init('device')},  // {shapes or 'no tensors'}")

        for t in p.tensors:
            if t.module is not None:
                if t.module in seen:
                    continue
                seen.add(t.module)
                m = self.modules[t.module]
                if m.kind != "linear":
                    layer(m)
                    continue
                field = self.names.field(m.name)
                fields.append(f"{field}: Linear")
                how = "transposed" if m.text("layout") == "transposed" else "copied as is (no transpose)"
                inits.append(
                    f"    {field}: LinearConfig::new({m.integer('d_in')}, {m.integer('d_out')}).with_bias({'true' if m.flag('bias') else 'false'})"
                    f".init(&device),  // weight [{m.integer('d_in')}, {m.integer('d_out')}]: torch's {how}"
                )
            elif t.role == "param":
                field = self.names.field(t.name)
                shape = ", ".join(str(d) for d in t.shape)
                fields.append(f"{field}: Param<Tensor<{len(t.shape)}>>")
                inits.append(
                    f"    {field}: Param::from_tensor(Tensor::<{len(t.shape)}>::random([{shape}], "
                    "Distribution::Default, &device)),"
                )
        for m in p.modules:
            if m.name not in seen:  # a module without tensors
                layer(m)
        self.has_model = bool(fields) or any(s.op == "step" for s in p.statements())
        if self.has_model:
            head.append(f"let mut model = Model {{  // struct Model {{ {', '.join(fields)} }}, #[derive(Module)]")
            head += inits
            head.append("};")
        for t in p.tensors:
            if t.role == "input":
                ident = self.names.local(t.name)
                d = self.decl(ident)
                d.reads = 1
                shape = ", ".join(str(x) for x in t.shape)
                ty = Ty(len(t.shape), dtype=t.dtype)
                if t.dtype == "int":
                    high = int(max(t.data)) + 1
                    made = f"{ty.path}::random([{shape}], Distribution::Uniform(0.0, {high}.0), &device)"
                elif t.dtype == "bool":
                    made = f"Tensor::<{ty.rank}>::random([{shape}], Distribution::Default, &device).greater_elem(0.0)"
                else:
                    made = f"Tensor::<{len(t.shape)}>::random([{shape}], Distribution::Default, &device)"
                head.append(f"let {ident} = {made};")
                state.vars[t.name] = Binding(d, ty, True)
        self.head = head
        self.block(p.body, state, 0, Ctx())


@dataclass(frozen=True)
class Forward:
    """The method `Model::forward` of a forward region, for one set of argument types."""

    types: tuple[Ty, ...]
    out: Ty
    parameters: tuple[str, ...]
    """`x: Tensor<2>`, ... (an argument nothing reads written `_x`)."""
    body: str
    """Its statements, indented for a method of `impl Model`."""
    imports: frozenset[str]
    used: frozenset[str]

    @staticmethod
    def make(program: Program, plan: Plan, types: tuple[Ty, ...]) -> Forward:
        """The method, by a generator of its own in two passes (as `generate`)."""
        first = Generator(program, forward=plan)
        first.forward_body(types)
        second = Generator(program, forward=plan, decided=Decided.of(first.decls))
        out = second.forward_body(types)
        if [d.base for d in second.decls] != [d.base for d in first.decls]:
            raise AssertionError("render: the two passes of the forward made different variables")
        return Forward(
            types, out, tuple(second.parameters), second.text(), frozenset(second.imports), frozenset(second.used)
        )


def _generate(program: Program, sketch: bool, forward: Plan | None) -> Generator:
    first = Generator(program, sketch=sketch, forward=forward)
    (first.sketch_main if sketch else first.main)(State())
    second = Generator(program, sketch=sketch, decided=Decided.of(first.decls, all_read=sketch), forward=forward)
    (second.sketch_main if sketch else second.main)(State())
    if [d.base for d in second.decls] != [d.base for d in first.decls]:
        raise AssertionError("render: the two passes made different variables")
    if second.forward is not None:
        second.imports |= second.forward.imports
        second.used |= second.forward.used
    return second


def generate(program: Program, *, sketch: bool = False, forward: ForwardRegion | None = None) -> Generator:
    """The program's `fn main` (or its sketch), in two passes (see the module docstring): the
    second pass's generator, whose `text()` is the code. `ValueError` names an operation burn
    lacks.

    `forward`: statements written as the method `Model::forward` that `fn main` calls (the
    generator's `forward`); a region the method cannot hold stays inline, and `forward_note`
    says why (`forward.ForwardUnfit`)."""
    if forward is None or sketch:
        return _generate(program, sketch, None)
    try:
        g = _generate(program, sketch, plan(program, forward))
        if g.forward is None:
            raise ForwardUnfit("no statement of the region runs")
        return g
    except ForwardUnfit as unfit:
        g = _generate(program, sketch, None)
        g.forward_note = str(unfit)
        return g
