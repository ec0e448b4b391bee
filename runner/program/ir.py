"""The program IR (the JSON both interpreters execute) and the result of one run, as pydantic models.

`docs/program-ir.md` is the contract; this module enforces it: unknown keys are
rejected, numbers are finite, shapes are 1 to 4 positive integers, data has one
value per element, every statement's op, arguments and attributes agree with
the op table (`ops.OPS`), names are assigned before they are used, params and
modules are never reassigned, and `index` numbers the statements in pre-order.
Attributes with a default in the table are filled in, so the interpreters see
every one of them (except the `OMITTED` ones: absent means the framework's
default).

`ParsedProgram` is the same program before its data is made: what
`syntax.parse` returns and `data.materialize` turns into a `Program`.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_serializer,
    model_validator,
)

from ..contract.limits import (
    FLOAT32_MAX,
    IR_VERSION,
    MAX_CHECKPOINTS,
    MAX_DEPTH,
    MAX_ELEMENTS,
    MAX_RANK,
    MAX_STATEMENTS,
    MAX_TOTAL_ELEMENTS,
)
from ..contract.ops import ARG_NAME, MODULES, OMITTED, OPS, REQUIRED, AttrSpec, AttrValue, TensorDtype

USER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
TEMP_NAME = re.compile(r"_t[1-9][0-9]{0,8}")
MODULE_PARAM = re.compile(r"([A-Za-z][A-Za-z0-9_]{0,63})\.([a-z][a-z_]{0,31})")
"""A module's param or buffer: `lin.weight`, `bn.running_mean`."""
MAX_INT_VALUE = 1 << 24
"""Integer tensors (class indices, embedding rows) hold values below this: exact in float32."""


def is_value_name(name: str) -> bool:
    """A name a statement may bind or read: a user name, a parser temporary or `module.tensor`."""
    return bool(USER_NAME.fullmatch(name) or TEMP_NAME.fullmatch(name) or MODULE_PARAM.fullmatch(name))


def _check_name(name: str) -> str:
    if not is_value_name(name):
        raise ValueError(
            f"{name!r} is not a valid name (a letter then letters, digits or _, at most 64 characters; "
            "`module.weight`, `module.running_mean`...; or a temporary `_t1`, `_t2`, ...)"
        )
    return name


Name = Annotated[StrictStr, Field(min_length=1, max_length=80)]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
Dim = Annotated[StrictInt, Field(ge=1, le=MAX_ELEMENTS)]
Shape = Annotated[list[Dim], Field(min_length=1, max_length=MAX_RANK)]
IRAttr = StrictBool | StrictInt | StrictFloat | StrictStr | list[StrictInt]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _product(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _check_shape_size(shape: Sequence[int]) -> None:
    n = _product(shape)
    if n > MAX_ELEMENTS:
        raise ValueError(f"shape {list(shape)} has {n} elements; at most {MAX_ELEMENTS} are allowed")


def _check_data(data: Sequence[float], shape: Sequence[int], dtype: TensorDtype = "float") -> None:
    n = _product(shape)
    if len(data) != n:
        raise ValueError(f"data has {len(data)} values; shape {list(shape)} needs {n}")
    if dtype == "float":
        for v in data:
            if not -FLOAT32_MAX <= v <= FLOAT32_MAX:
                raise ValueError(f"data value {v!r} is not a finite float32")
    elif dtype == "int":
        for v in data:
            if not (float(v).is_integer() and -MAX_INT_VALUE < v < MAX_INT_VALUE):
                raise ValueError(f"data value {v!r} of an int tensor is not an integer of magnitude below 2**24")
    else:
        for v in data:
            if v not in (0, 1):
                raise ValueError(f"data value {v!r} of a bool tensor is not 0 or 1")


class Stmt(_Strict):
    """One statement: an operation of the table, or a block (`repeat`, `no_grad`) with a body."""

    index: Annotated[StrictInt, Field(ge=0)]
    line: Annotated[StrictInt, Field(ge=0)]
    op: StrictStr
    args: list[Name] = Field(default_factory=list, max_length=8)
    out: Name | None = None
    attrs: dict[StrictStr, IRAttr] = Field(default_factory=dict)
    body: list[Stmt] | None = None

    @model_validator(mode="after")
    def _against_table(self) -> Stmt:
        spec = OPS.get(self.op)
        if spec is None:
            raise ValueError(f"unknown op {self.op!r}; valid: {', '.join(OPS)}")
        for name in self.args:
            _check_name(name)
        if self.out is not None:
            _check_name(self.out)
        self.attrs = normalize_attrs(self.op, self.attrs, self.args)
        least, most = spec.arity()
        if not least <= len(self.args) <= most:
            expected = str(least) if least == most else f"{least} to {most}"
            raise ValueError(f"{self.op} takes {expected} arguments ({spec.signature()}), got {len(self.args)}")
        if spec.result == "block":
            if not self.body:
                raise ValueError(f"{self.op}: a block needs a non-empty body")
        elif self.body is not None:
            raise ValueError(f"{self.op}: only blocks (repeat, no_grad) have a body")
        return self

    @model_serializer(mode="wrap")
    def _drop_missing_body(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("body") is None:
            data.pop("body", None)
        return data

    def number(self, key: str) -> float:
        value = self.attrs[key]
        assert isinstance(value, (int, float)) and not isinstance(value, bool)
        return float(value)

    def integer(self, key: str) -> int:
        value = self.attrs[key]
        assert isinstance(value, int) and not isinstance(value, bool)
        return value

    def flag(self, key: str) -> bool:
        value = self.attrs[key]
        assert isinstance(value, bool)
        return value

    def text(self, key: str) -> str:
        value = self.attrs[key]
        assert isinstance(value, str)
        return value

    def ints(self, key: str) -> list[int]:
        value = self.attrs[key]
        assert isinstance(value, list)
        return list(value)

    def walk(self) -> Iterator[Stmt]:
        """This statement and every statement in its body, in pre-order."""
        yield self
        for child in self.body or ():
            yield from child.walk()


def normalize_attrs(op: str, attrs: dict[str, Any], args: Sequence[str]) -> dict[str, AttrValue]:
    """The attributes checked against the op table, defaults filled in; `ValueError` naming the problem."""
    out = check_attrs(op, OPS[op].attrs, attrs, args)
    if op == "reshape":
        _check_reshape(out["shape"])  # type: ignore[arg-type]
    if "clip_grad_norm" in out and "clip_grad_value" in out:
        raise ValueError(
            f"{op}: give clip_grad_norm or clip_grad_value, not both "
            "(burn's optimizer config holds one GradientClippingConfig)"
        )
    return out


def check_attrs(
    owner: str, specs: Sequence[AttrSpec], attrs: dict[str, Any], args: Sequence[str]
) -> dict[str, AttrValue]:
    """Attributes (of an operation or a module declaration) checked against their specs, the
    language's defaults filled in, the omitted ones left out; `ValueError` naming the problem."""
    known = {a.name for a in specs}
    unknown = [k for k in attrs if k not in known]
    if unknown:
        valid = ", ".join(a.name for a in specs) or "none"
        raise ValueError(f"{owner}: unknown attribute {unknown[0]!r}; valid: {valid}")
    out: dict[str, AttrValue] = {}
    for a in specs:
        if a.name in attrs and attrs[a.name] is not None:
            try:
                out[a.name] = a.check(attrs[a.name])
            except ValueError as e:
                raise ValueError(f"{owner}: {e}") from None
        elif a.default is REQUIRED:
            raise ValueError(f"{owner}: attribute `{a.name}` is required")
        elif a.default is OMITTED:
            continue
        elif a.default is ARG_NAME:
            if args:
                out[a.name] = args[0]
        else:
            default = a.default
            out[a.name] = list(default) if isinstance(default, list) else default  # type: ignore[assignment]
    return out


def _check_reshape(shape: list[int]) -> None:
    if not 1 <= len(shape) <= MAX_RANK:
        raise ValueError(f"reshape: the shape needs 1 to {MAX_RANK} entries, not {len(shape)}")
    if any(d == 0 or d < -1 for d in shape) or shape.count(-1) > 1:
        raise ValueError(f"reshape: shape entries are positive integers, at most one -1; not {shape}")
    if any(d > MAX_ELEMENTS for d in shape):
        raise ValueError(f"reshape: shape entries are at most {MAX_ELEMENTS}")


def walk(body: Iterable[Stmt]) -> Iterator[Stmt]:
    """Every statement of a body, in pre-order."""
    for stmt in body:
        yield from stmt.walk()


def timed_loop(body: Sequence[Stmt]) -> Stmt | None:
    """The first top-level `repeat`: the timed loop."""
    for stmt in body:
        if stmt.op == "repeat":
            return stmt
    return None


class TensorDecl(_Strict):
    """An initial tensor: row-major values in torch layout, finite float32 (`dtype` "float", the
    default), integers of magnitude below 2**24 ("int": class indices, rows), or 0/1 ("bool": masks)."""

    name: Name
    role: Literal["param", "input", "buffer"]
    shape: Shape
    data: list[FiniteFloat] = Field(max_length=MAX_ELEMENTS)
    module: Name | None = None
    dtype: Literal["float", "int", "bool"] = "float"

    @model_validator(mode="after")
    def _consistent(self) -> TensorDecl:
        _check_decl_name(self.name, self.role, self.module, self.dtype)
        _check_shape_size(self.shape)
        _check_data(self.data, self.shape, self.dtype)
        return self

    @model_serializer(mode="wrap")
    def _drop_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("module") is None:
            data.pop("module", None)
        if data.get("dtype") == "float":
            data.pop("dtype", None)
        return data


def _check_decl_name(name: str, role: str, module: str | None, dtype: str) -> None:
    owned = MODULE_PARAM.fullmatch(name)
    if module is None:
        if owned is not None:
            raise ValueError(f"tensor {name!r}: `module.name` names a module's tensor (set `module`)")
        if not USER_NAME.fullmatch(name):
            raise ValueError(f"tensor name {name!r}: a letter then letters, digits or _ (at most 64)")
        if role == "buffer":
            raise ValueError(f"tensor {name!r}: only a module's tensors are buffers")
    else:
        if owned is None or owned.group(1) != module:
            raise ValueError(f"tensor {name!r} of module {module!r} must be named `{module}.NAME`")
        if role not in ("param", "buffer"):
            raise ValueError(f"tensor {name!r}: a module's tensors are params or buffers")
    if dtype != "float" and role != "input":
        raise ValueError(f"tensor {name!r}: a {role} is a float tensor; int and bool tensors are inputs")


class ModuleDecl(_Strict):
    """A module declaration (`conv = Conv2d(3, 8, 3, padding=1)`): its `kind` (a module kind of the
    contract, `MODULES`) and its constructor's attributes, checked against that kind's table, the
    language's defaults filled in and the omitted ones left out (each framework's own default)."""

    name: Name
    kind: StrictStr
    attrs: dict[StrictStr, IRAttr] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _against_table(self) -> ModuleDecl:
        if not USER_NAME.fullmatch(self.name):
            raise ValueError(f"module name {self.name!r}: a letter then letters, digits or _ (at most 64)")
        spec = MODULES.get(self.kind)
        if spec is None:
            raise ValueError(f"module {self.name!r}: unknown kind {self.kind!r}; valid: {', '.join(MODULES)}")
        self.attrs = check_attrs(spec.source, spec.attrs, self.attrs, [])
        problem = spec.constraint(self.attrs) if spec.constraint is not None else None
        if problem is not None:
            raise ValueError(f"module {self.name!r}: {problem}")
        for shape in self.tensor_shapes().values():
            _check_shape_size(shape[0])
        for p in spec.tensors(self.attrs):
            if p.zero_row is not None and p.zero_row in self.attrs:
                rows, row = p.shape(self.attrs)[0], self.integer(p.zero_row)
                if not -rows <= row < rows:
                    raise ValueError(
                        f"module {self.name!r}: `{p.zero_row}` must be a row of its {p.name} "
                        f"(-{rows} to {rows - 1}), not {row}"
                    )
        return self

    def tensor_shapes(self) -> dict[str, tuple[list[int], str]]:
        """The module's params and buffers (torch layout) by name, with their role, in table order."""
        spec = MODULES[self.kind]
        return {f"{self.name}.{p.name}": (p.shape(self.attrs), p.role) for p in spec.tensors(self.attrs)}

    def tensor_specs(self, values: dict[str, list[float]] | None = None) -> list[TensorSpec]:
        """How its params and buffers are made: the kind's init (a `fan_in` one with the fan in of
        these attributes), or the given `values` by short name (`weight`)."""
        spec = MODULES[self.kind]
        fan_in = spec.fan_in(self.attrs) if spec.fan_in is not None else None
        out = []
        for p in spec.tensors(self.attrs):
            given = (values or {}).get(p.name)
            init = p.init if given is None else "values"
            shape = p.shape(self.attrs)
            zero_row = None
            if p.zero_row is not None and p.zero_row in self.attrs and given is None:
                row = self.integer(p.zero_row)
                zero_row = row + shape[0] if row < 0 else row
            out.append(
                TensorSpec(
                    name=f"{self.name}.{p.name}",
                    role=p.role,
                    shape=shape,
                    init=init,  # type: ignore[arg-type]
                    values=given,
                    module=self.name,
                    fan_in=fan_in if init == "fan_in" else None,
                    zero_row=zero_row,
                )
            )
        return out

    def integer(self, key: str) -> int:
        value = self.attrs[key]
        assert isinstance(value, int) and not isinstance(value, bool)
        return value

    def flag(self, key: str) -> bool:
        value = self.attrs[key]
        assert isinstance(value, bool)
        return value

    def text(self, key: str) -> str:
        value = self.attrs[key]
        assert isinstance(value, str)
        return value


class Settings(_Strict):
    checkpoints: list[Annotated[StrictInt, Field(ge=1)]] = Field(default_factory=list, max_length=MAX_CHECKPOINTS)
    rss_every: Annotated[StrictInt, Field(ge=0)] = 0
    track: Name | None = None

    @model_validator(mode="after")
    def _increasing(self) -> Settings:
        cps = self.checkpoints
        if any(b <= a for a, b in itertools.pairwise(cps)):
            raise ValueError(f"settings.checkpoints must be strictly increasing, not {cps}")
        return self


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


class ProgramIssue(ValueError):
    """A semantic mistake in a program's body, at a source line."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


PAIRED_MODULE_OPS: Final[frozenset[str]] = frozenset({"copy_module", "soft_update"})
"""The operations on a (target, online) pair of modules of one kind and shape."""


def _declaration(m: ModuleDecl) -> str:
    attrs = ", ".join(f"{k}={v!r}" for k, v in m.attrs.items())
    return f"{MODULES[m.kind].source}({attrs})"


def check_body(
    tensors: Sequence[tuple[str, str, str]],
    modules: Sequence[ModuleDecl],
    body: Sequence[Stmt],
) -> None:
    """The body's names, kinds, element types and structure against the declarations (`tensors`:
    (name, role, dtype) in declaration order); `ProgramIssue` at the first mistake."""
    kinds: dict[str, str] = {}
    dtypes: dict[str, str] = {}
    fixed: dict[str, str] = {}
    params: set[str] = set()
    module_kinds = {m.name: m.kind for m in modules}
    module_decls = {m.name: m for m in modules}
    for name, role, dtype in tensors:
        kinds[name] = "tensor"
        dtypes[name] = dtype
        if role in ("param", "buffer"):
            fixed[name] = f"a {role}"
        if role == "param":
            params.add(name)
    for m in modules:
        kinds[m.name] = "module"
        fixed[m.name] = "a module"
    first_assigned: dict[str, int] = {}
    all_stmts = list(walk(body))
    if len(all_stmts) > MAX_STATEMENTS:
        raise ProgramIssue(all_stmts[-1].line, f"{len(all_stmts)} statements; at most {MAX_STATEMENTS} are allowed")
    for stmt in all_stmts:
        if stmt.out is not None and stmt.out not in first_assigned:
            first_assigned[stmt.out] = stmt.line
    value_names = set(kinds) | set(first_assigned)
    bound = set(kinds)
    next_index = 0

    def visit(stmts: Sequence[Stmt], depth: int) -> None:
        nonlocal next_index
        for stmt in stmts:
            spec = OPS[stmt.op]
            line = stmt.line
            if stmt.index != next_index:
                raise ProgramIssue(line, f"statement index {stmt.index}: expected {next_index} (pre-order numbering)")
            next_index += 1
            least, most = spec.arity()
            if not least <= len(stmt.args) <= most:
                n = str(least) if least == most else f"{least} to {most}"
                raise ProgramIssue(
                    line,
                    f"{stmt.op} takes {n} argument{'s' if most != 1 else ''} ({spec.signature()}), got {len(stmt.args)}",
                )
            extra = len(stmt.args) - len(spec.args)
            arg_kinds = list(spec.args) + ([spec.args[-1]] * extra if extra > 0 else [])
            for i, (arg, kind) in enumerate(zip(stmt.args, arg_kinds)):
                if arg not in bound:
                    if arg in first_assigned:
                        raise ProgramIssue(
                            line,
                            f"`{arg}` is used before it is assigned (first assigned on line {first_assigned[arg]})",
                        )
                    raise ProgramIssue(line, f"`{arg}` is not declared or assigned anywhere")
                if kinds[arg] != kind:
                    raise ProgramIssue(
                        line, f"{stmt.op}: argument {i + 1} must be {_a(kind)}; `{arg}` is {_a(kinds[arg])}"
                    )
                if kind == "module" and spec.module is not None and module_kinds[arg] != spec.module:
                    source = MODULES[spec.module].source
                    raise ProgramIssue(
                        line, f"{stmt.op}: `{arg}` is a {MODULES[module_kinds[arg]].source}, not a {source}"
                    )
                if kind == "tensor":
                    want, have = spec.arg_dtype(i - spec.args.index("tensor")), dtypes.get(arg, "float")
                    if want != "any" and want != have:
                        raise ProgramIssue(
                            line, f"{stmt.op}: argument {i + 1} must be a {want} tensor; `{arg}` is a {have} tensor"
                        )
            if stmt.op == "freeze" and stmt.args[0] not in params:
                raise ProgramIssue(line, f"freeze: `{stmt.args[0]}` is not a param (freeze takes a param)")
            if stmt.op in PAIRED_MODULE_OPS:
                target, online = (module_decls[a] for a in stmt.args[:2])
                if target.name == online.name:
                    raise ProgramIssue(line, f"{stmt.op}: the target and the online module are both `{target.name}`")
                if target.kind != online.kind or target.attrs != online.attrs:
                    raise ProgramIssue(
                        line,
                        f"{stmt.op}: `{target.name}` and `{online.name}` must be modules of the same kind with the "
                        f"same attributes (their params pair up by shape); `{target.name}` is "
                        f"{_declaration(target)}, `{online.name}` is {_declaration(online)}",
                    )
            if spec.result in ("none", "block"):
                if stmt.out is not None:
                    raise ProgramIssue(line, f"{stmt.op} gives no value; it cannot be assigned to `{stmt.out}`")
            elif spec.result in ("optimizer", "scheduler") and stmt.out is None:
                raise ProgramIssue(
                    line, f"{stmt.op} makes {_a(spec.result)}: assign it to a name (`x = {stmt.op}(...)`)"
                )
            if stmt.out is not None:
                new_kind = spec.result if spec.result in ("optimizer", "scheduler") else "tensor"
                if stmt.out in fixed:
                    raise ProgramIssue(line, f"`{stmt.out}` is {fixed[stmt.out]}; it cannot be reassigned")
                old_kind = kinds.get(stmt.out)
                if old_kind is not None and old_kind != new_kind:
                    raise ProgramIssue(
                        line, f"`{stmt.out}` is {_a(old_kind)}; it cannot be reassigned to {_a(new_kind)}"
                    )
                kinds[stmt.out] = new_kind
                if new_kind == "tensor":
                    result = spec.result_dtype
                    first = next((a for a, k in zip(stmt.args, arg_kinds) if k == "tensor"), None)
                    dtypes[stmt.out] = dtypes.get(first, "float") if result == "arg0" and first else result
                bound.add(stmt.out)
            if stmt.op == "repeat":
                var = stmt.attrs.get("var", "_")
                if var in value_names:
                    raise ProgramIssue(line, f"the loop variable `{var}` is also a value's name; use another name")
            if stmt.body is not None:
                if depth + 1 > MAX_DEPTH:
                    raise ProgramIssue(line, f"blocks are nested more than {MAX_DEPTH} deep")
                visit(stmt.body, depth + 1)

    visit(body, 0)


def _check_declarations(
    names: Sequence[str],
    modules: Sequence[ModuleDecl],
    module_of: Sequence[str | None],
    shapes: Sequence[Sequence[int]],
) -> None:
    total = sum(_product(shape) for shape in shapes)
    if total > MAX_TOTAL_ELEMENTS:
        raise ValueError(f"the tensors have {total} elements together; at most {MAX_TOTAL_ELEMENTS} are allowed")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"tensor {name!r} is declared twice")
        seen.add(name)
    module_names = set()
    for m in modules:
        if m.name in seen or m.name in module_names:
            raise ValueError(f"module {m.name!r}: the name is already declared")
        module_names.add(m.name)
    for name, module in zip(names, module_of):
        if module is not None and module not in module_names:
            raise ValueError(f"tensor {name!r}: module {module!r} is not declared")


def check_settings(settings: Settings, body: Sequence[Stmt], tensor_names: set[str]) -> None:
    """The run settings against the body: checkpoints within the timed loop, `track` a tensor of it."""
    loop = timed_loop(body)
    if settings.checkpoints:
        if loop is None:
            raise ValueError("settings.checkpoints needs a timed loop (a top-level `for ... in range(N):`)")
        count = loop.attrs["count"]
        assert isinstance(count, int)
        if settings.checkpoints[-1] > count:
            raise ValueError(f"settings.checkpoints: {settings.checkpoints[-1]} is past the timed loop's {count}")
    if settings.track is not None:
        outs = {s.out for s in walk(body) if s.out is not None and OPS[s.op].result == "tensor"}
        if settings.track not in tensor_names | outs:
            raise ValueError(f"settings.track: {settings.track!r} is not a tensor of the program")


class Program(_Strict):
    """The IR: initial tensors, modules, the statements and the run settings."""

    ir_version: StrictInt = IR_VERSION
    tensors: list[TensorDecl] = Field(default_factory=list, max_length=1000)
    modules: list[ModuleDecl] = Field(default_factory=list, max_length=1000)
    body: list[Stmt] = Field(default_factory=list, max_length=MAX_STATEMENTS)
    settings: Settings = Field(default_factory=Settings)

    @model_validator(mode="after")
    def _semantics(self) -> Program:
        if self.ir_version != IR_VERSION:
            raise ValueError(f"ir_version: this runner reads version {IR_VERSION}, got {self.ir_version}")
        _check_declarations(
            [t.name for t in self.tensors],
            self.modules,
            [t.module for t in self.tensors],
            [t.shape for t in self.tensors],
        )
        by_name = {t.name: t for t in self.tensors}
        for m in self.modules:
            shapes = m.tensor_shapes()
            for pname, (shape, role) in shapes.items():
                decl = by_name.get(pname)
                if decl is None or decl.module != m.name:
                    raise ValueError(f"module {m.name!r}: tensor {pname!r} is missing")
                if decl.shape != shape:
                    raise ValueError(f"module {m.name!r}: {pname} has shape {decl.shape}, expected {shape}")
                if decl.role != role:
                    raise ValueError(f"module {m.name!r}: {pname} is a {role}, not a {decl.role}")
            extra = [t.name for t in self.tensors if t.module == m.name and t.name not in shapes]
            if extra:
                raise ValueError(f"module {m.name!r}: unexpected tensor {extra[0]!r}")
        check_body([(t.name, t.role, t.dtype) for t in self.tensors], self.modules, self.body)
        check_settings(self.settings, self.body, set(by_name))
        return self

    def to_json(self, *, indent: int | None = None) -> str:
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Program:
        """The program from its JSON; `pydantic.ValidationError` (a `ValueError`) when it is not valid."""
        return cls.model_validate_json(text)

    def params(self) -> list[TensorDecl]:
        """Every param (free and module params), in declaration order: what an optimizer updates."""
        return [t for t in self.tensors if t.role == "param"]

    def module(self, name: str) -> ModuleDecl:
        return next(m for m in self.modules if m.name == name)

    def statements(self) -> Iterator[Stmt]:
        return walk(self.body)


Init = Literal[
    "normal", "uniform", "positive", "ones", "zeros", "arange", "values", "fan_in", "randint", "bernoulli", "triu"
]


class TensorSpec(_Strict):
    """A declared tensor before its data is made: how `data.materialize` makes it.

    Float: `normal`, `uniform`, `positive`, `ones`, `zeros`, `arange`, or `values` (the given
    `values`, row-major); a module's tensor: its kind's init (`fan_in`: uniform in +-1/sqrt(fan in),
    torch's Linear and Conv init; `ones`, `zeros`, `normal`). Int: `randint`, uniform in
    [0, `high`). Bool: `bernoulli` (each true with probability 1/2) or `triu` (true above the
    diagonal of the last two dims: a causal attention mask).
    """

    name: Name
    role: Literal["param", "input", "buffer"]
    shape: Shape
    init: Init = "normal"
    values: list[FiniteFloat] | None = Field(default=None, max_length=MAX_ELEMENTS)
    module: Name | None = None
    dtype: Literal["float", "int", "bool"] = "float"
    high: Annotated[StrictInt, Field(ge=1, le=MAX_INT_VALUE)] | None = None
    fan_in: Annotated[StrictInt, Field(ge=1)] | None = None
    zero_row: Annotated[StrictInt, Field(ge=0)] | None = None
    """A row (dim 0) the init sets to zero (an Embedding's `padding_idx`, as torch's init does)."""

    @model_validator(mode="after")
    def _consistent(self) -> TensorSpec:
        _check_decl_name(self.name, self.role, self.module, self.dtype)
        _check_shape_size(self.shape)
        if (self.init == "values") != (self.values is not None):
            raise ValueError(f"tensor {self.name!r}: `values` goes with init 'values', and only with it")
        if self.values is not None:
            _check_data(self.values, self.shape, self.dtype)
        allowed = {
            "float": ("normal", "uniform", "positive", "ones", "zeros", "arange", "values", "fan_in"),
            "int": ("randint", "zeros", "arange", "values"),
            "bool": ("bernoulli", "triu", "ones", "zeros", "values"),
        }[self.dtype]
        if self.init not in allowed:
            raise ValueError(
                f"tensor {self.name!r}: a {self.dtype} tensor is made by init {', '.join(map(repr, allowed))}"
            )
        if (self.init == "randint") != (self.high is not None):
            raise ValueError(f"tensor {self.name!r}: `high` goes with init 'randint', and only with it")
        if (self.init == "fan_in") != (self.fan_in is not None):
            raise ValueError(f"tensor {self.name!r}: `fan_in` goes with init 'fan_in', and only with it")
        if self.init == "fan_in" and self.module is None:
            raise ValueError(f"tensor {self.name!r}: init 'fan_in' is for a module's tensors")
        if self.zero_row is not None and (self.module is None or not self.shape or self.zero_row >= self.shape[0]):
            raise ValueError(f"tensor {self.name!r}: zero_row {self.zero_row} is not a row of a module's tensor")
        return self


class ParsedProgram(_Strict):
    """A parsed program: declarations and statements, before the data is made."""

    tensors: list[TensorSpec] = Field(default_factory=list, max_length=1000)
    modules: list[ModuleDecl] = Field(default_factory=list, max_length=1000)
    body: list[Stmt] = Field(default_factory=list, max_length=MAX_STATEMENTS)

    @model_validator(mode="after")
    def _semantics(self) -> ParsedProgram:
        _check_declarations(
            [t.name for t in self.tensors],
            self.modules,
            [t.module for t in self.tensors],
            [t.shape for t in self.tensors],
        )
        by_name = {t.name: t for t in self.tensors}
        for m in self.modules:
            for pname, (shape, role) in m.tensor_shapes().items():
                spec = by_name.get(pname)
                if spec is None or spec.shape != shape or spec.role != role:
                    raise ValueError(f"module {m.name!r}: {role} {pname!r} with shape {shape} is missing")
        check_body([(t.name, t.role, t.dtype) for t in self.tensors], self.modules, self.body)
        return self


# ---- the result of one run ----------------------------------------------------------------------


def same_values(a: Sequence[float] | None, b: Sequence[float] | None) -> bool:
    """Equal value lists, NaN equal to NaN."""
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))
