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
from typing import Annotated, Any, Literal

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
    MAX_CHECKPOINTS,
    MAX_DEPTH,
    MAX_DIM,
    MAX_ELEMENTS,
    MAX_RANK,
    MAX_STATEMENTS,
    MAX_TOTAL_ELEMENTS,
)
from ..contract.ops import ARG_NAME, MODULES, OMITTED, OPS, REQUIRED, AttrValue

USER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
TEMP_NAME = re.compile(r"_t[1-9][0-9]{0,8}")
PARAM_ATTRS = ("weight", "bias")
MODULE_PARAM = re.compile(r"([A-Za-z][A-Za-z0-9_]{0,63})\.(weight|bias)")


def is_value_name(name: str) -> bool:
    """A name a statement may bind or read: a user name, a parser temporary or `module.weight/bias`."""
    return bool(USER_NAME.fullmatch(name) or TEMP_NAME.fullmatch(name) or MODULE_PARAM.fullmatch(name))


def _check_name(name: str) -> str:
    if not is_value_name(name):
        raise ValueError(
            f"{name!r} is not a valid name (a letter then letters, digits or _, at most 64 characters; "
            "`module.weight` / `module.bias`; or a temporary `_t1`, `_t2`, ...)"
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


def _check_data(data: Sequence[float], shape: Sequence[int]) -> None:
    n = _product(shape)
    if len(data) != n:
        raise ValueError(f"data has {len(data)} values; shape {list(shape)} needs {n}")
    for v in data:
        if not -FLOAT32_MAX <= v <= FLOAT32_MAX:
            raise ValueError(f"data value {v!r} is not a finite float32")


class Stmt(_Strict):
    """One statement: an operation of the table, or a block (`repeat`, `no_grad`) with a body."""

    index: Annotated[StrictInt, Field(ge=0)]
    line: Annotated[StrictInt, Field(ge=0)]
    op: StrictStr
    args: list[Name] = Field(default_factory=list, max_length=4)
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
    spec = OPS[op]
    unknown = [k for k in attrs if spec.attr(k) is None]
    if unknown:
        valid = ", ".join(spec.attr_names) or "none"
        raise ValueError(f"{op}: unknown attribute {unknown[0]!r}; valid: {valid}")
    out: dict[str, AttrValue] = {}
    for a in spec.attrs:
        if a.name in attrs:
            try:
                out[a.name] = a.check(attrs[a.name])
            except ValueError as e:
                raise ValueError(f"{op}: {e}") from None
        elif a.default is REQUIRED:
            raise ValueError(f"{op}: attribute `{a.name}` is required")
        elif a.default is OMITTED:
            continue
        elif a.default is ARG_NAME:
            if args:
                out[a.name] = args[0]
        else:
            default = a.default
            out[a.name] = list(default) if isinstance(default, list) else default  # type: ignore[assignment]
    if op == "reshape":
        _check_reshape(out["shape"])  # type: ignore[arg-type]
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
    """An initial tensor: row-major float32 values (finite) in torch layout."""

    name: Name
    role: Literal["param", "input"]
    shape: Shape
    data: list[FiniteFloat] = Field(max_length=MAX_ELEMENTS)
    module: Name | None = None

    @model_validator(mode="after")
    def _consistent(self) -> TensorDecl:
        _check_decl_name(self.name, self.role, self.module)
        _check_shape_size(self.shape)
        _check_data(self.data, self.shape)
        return self

    @model_serializer(mode="wrap")
    def _drop_missing_module(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("module") is None:
            data.pop("module", None)
        return data


def _check_decl_name(name: str, role: str, module: str | None) -> None:
    param = MODULE_PARAM.fullmatch(name)
    if module is None:
        if param is not None:
            raise ValueError(f"tensor {name!r}: `module.weight` / `module.bias` names a module's tensor (set `module`)")
        if not USER_NAME.fullmatch(name):
            raise ValueError(f"tensor name {name!r}: a letter then letters, digits or _ (at most 64)")
    else:
        if param is None or param.group(1) != module:
            raise ValueError(f"tensor {name!r} of module {module!r} must be named `{module}.weight` or `{module}.bias`")
        if role != "param":
            raise ValueError(f"tensor {name!r}: a module's tensors are params")


class ModuleDecl(_Strict):
    """A module declaration: its `kind` (a module kind of the contract, `MODULES`) and its
    constructor's attributes, checked against that kind's table (`lin = Linear(4, 3)`)."""

    name: Name
    kind: Literal["linear"] = "linear"
    d_in: Annotated[StrictInt, Field(ge=1, le=MAX_DIM)]
    d_out: Annotated[StrictInt, Field(ge=1, le=MAX_DIM)]
    bias: StrictBool = True
    layout: Literal["transposed", "copied"] = "transposed"

    @model_validator(mode="after")
    def _name(self) -> ModuleDecl:
        if not USER_NAME.fullmatch(self.name):
            raise ValueError(f"module name {self.name!r}: a letter then letters, digits or _ (at most 64)")
        _check_shape_size([self.d_out, self.d_in])
        return self

    def param_shapes(self) -> dict[str, list[int]]:
        """The module's tensors (torch layout) by name, in declaration order."""
        spec = MODULES[self.kind]
        attrs = self.model_dump()
        return {
            f"{self.name}.{p.name}": [attrs[d] if isinstance(d, str) else d for d in p.shape]
            for p in spec.params
            if p.when is None or attrs[p.when]
        }


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


def check_body(
    tensors: Sequence[tuple[str, str]],
    modules: Sequence[ModuleDecl],
    body: Sequence[Stmt],
) -> None:
    """The body's names, kinds and structure against the declarations (`tensors`: (name, role) in
    declaration order); `ProgramIssue` at the first mistake."""
    kinds: dict[str, str] = {}
    fixed: dict[str, str] = {}
    params: set[str] = set()
    for name, role in tensors:
        kinds[name] = "tensor"
        if role == "param":
            fixed[name] = "a param"
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
            if len(stmt.args) != len(spec.args):
                n = len(spec.args)
                raise ProgramIssue(
                    line,
                    f"{stmt.op} takes {n} argument{'s' if n != 1 else ''} ({spec.signature()}), got {len(stmt.args)}",
                )
            for i, (arg, kind) in enumerate(zip(stmt.args, spec.args)):
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
            if stmt.op == "freeze" and stmt.args[0] not in params:
                raise ProgramIssue(line, f"freeze: `{stmt.args[0]}` is not a param (freeze takes a param)")
            if spec.result in ("none", "block"):
                if stmt.out is not None:
                    raise ProgramIssue(line, f"{stmt.op} gives no value; it cannot be assigned to `{stmt.out}`")
            elif spec.result == "optimizer" and stmt.out is None:
                raise ProgramIssue(line, f"{stmt.op} makes an optimizer: assign it to a name (`opt = {stmt.op}(...)`)")
            if stmt.out is not None:
                new_kind = "optimizer" if spec.result == "optimizer" else "tensor"
                if stmt.out in fixed:
                    raise ProgramIssue(line, f"`{stmt.out}` is {fixed[stmt.out]}; it cannot be reassigned")
                old_kind = kinds.get(stmt.out)
                if old_kind is not None and old_kind != new_kind:
                    raise ProgramIssue(
                        line, f"`{stmt.out}` is {_a(old_kind)}; it cannot be reassigned to {_a(new_kind)}"
                    )
                kinds[stmt.out] = new_kind
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


def _check_settings(settings: Settings, body: Sequence[Stmt], tensor_names: set[str]) -> None:
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

    ir_version: Literal[1] = 1
    tensors: list[TensorDecl] = Field(default_factory=list, max_length=1000)
    modules: list[ModuleDecl] = Field(default_factory=list, max_length=1000)
    body: list[Stmt] = Field(default_factory=list, max_length=MAX_STATEMENTS)
    settings: Settings = Field(default_factory=Settings)

    @model_validator(mode="after")
    def _semantics(self) -> Program:
        _check_declarations(
            [t.name for t in self.tensors],
            self.modules,
            [t.module for t in self.tensors],
            [t.shape for t in self.tensors],
        )
        by_name = {t.name: t for t in self.tensors}
        for m in self.modules:
            shapes = m.param_shapes()
            for pname, shape in shapes.items():
                decl = by_name.get(pname)
                if decl is None or decl.module != m.name:
                    raise ValueError(f"module {m.name!r}: tensor {pname!r} is missing")
                if decl.shape != shape:
                    raise ValueError(f"module {m.name!r}: {pname} has shape {decl.shape}, expected {shape}")
            extra = [t.name for t in self.tensors if t.module == m.name and t.name not in shapes]
            if extra:
                raise ValueError(f"module {m.name!r}: unexpected tensor {extra[0]!r}")
        check_body([(t.name, t.role) for t in self.tensors], self.modules, self.body)
        _check_settings(self.settings, self.body, set(by_name))
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

    def statements(self) -> Iterator[Stmt]:
        return walk(self.body)


Init = Literal["normal", "uniform", "positive", "ones", "zeros", "arange", "values", "linear"]


class TensorSpec(_Strict):
    """A declared tensor before its data is made: how `data.materialize` makes it.

    `init="linear"` (a module's weight or bias): uniform in +-1/sqrt(d_in);
    `init="values"`: the given `values`, row-major.
    """

    name: Name
    role: Literal["param", "input"]
    shape: Shape
    init: Init = "normal"
    values: list[FiniteFloat] | None = Field(default=None, max_length=MAX_ELEMENTS)
    module: Name | None = None

    @model_validator(mode="after")
    def _consistent(self) -> TensorSpec:
        _check_decl_name(self.name, self.role, self.module)
        _check_shape_size(self.shape)
        if (self.init == "values") != (self.values is not None):
            raise ValueError(f"tensor {self.name!r}: `values` goes with init 'values', and only with it")
        if self.values is not None:
            _check_data(self.values, self.shape)
        if (self.init == "linear") and self.module is None:
            raise ValueError(f"tensor {self.name!r}: init 'linear' is for a module's tensors")
        if self.module is not None and self.init not in ("linear", "values"):
            raise ValueError(f"tensor {self.name!r}: a module's tensor is made by init 'linear' or 'values'")
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
            for pname, shape in m.param_shapes().items():
                spec = by_name.get(pname)
                if spec is None or spec.shape != shape:
                    raise ValueError(f"module {m.name!r}: tensor {pname!r} with shape {shape} is missing")
        check_body([(t.name, t.role) for t in self.tensors], self.modules, self.body)
        return self


# ---- the result of one run ----------------------------------------------------------------------


def same_values(a: Sequence[float] | None, b: Sequence[float] | None) -> bool:
    """Equal value lists, NaN equal to NaN."""
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))
