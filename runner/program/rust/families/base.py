"""What a family's renderings work with (the guide is the package docstring): `Call` (one
statement of an operation: its operands' Rust expressions and static types, its attributes),
`Expr` (what a rendering returns), `Declaration` and `ModuleRendering` (a module kind in
`struct Model`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NoReturn, Protocol

from ....contract.ops import OPS, AttrValue
from ...ir import Stmt
from .. import literals
from ..state import Binding, Ctx, Decl, State, Ty

__all__ = [
    "Arg",
    "Call",
    "Ctx",
    "Declaration",
    "Expr",
    "ModuleRendering",
    "ModuleTensor",
    "State",
    "Stmt",
    "Ty",
    "Writer",
    "block",
    "literals",
]


@dataclass(frozen=True)
class Arg:
    """A tensor operand: its Rust expression (moved or cloned as the liveness says, in torch's
    layout: a value held in burn's Linear-weight layout is already `.transpose()`d) and its static
    type (rank, element type)."""

    expr: str
    ty: Ty
    name: str = ""
    """The program's name of the value (two operands of one name: one is a clone of the other,
    and Rust evaluates them in the order written)."""


@dataclass(frozen=True)
class Expr:
    """A rendering's result: the burn expression and the static type of its value."""

    text: str
    ty: Ty


def block(lines: Sequence[str], value: str) -> str:
    """A Rust block expression over several lines: `lines` (statements, each ending with `;`),
    then its `value`. Its locals live in the block only: bind every operand in the first line
    (a tuple, in the interpreter's order) before naming a local that a later operand's expression
    could mean."""
    body = "".join(f"\n    {line}" for line in [*lines, value])
    return "{" + body + "\n}"


class _Attrs:
    """Typed reads of attributes, and clean refusals."""

    where: str
    attrs: Mapping[str, AttrValue]

    def has(self, key: str) -> bool:
        """The program gives it (an `OMITTED` attribute the program omits is absent: the burn call
        omits its `with_*` too, so burn's own default applies)."""
        return key in self.attrs

    def num(self, key: str) -> float:
        return literals.num(self.attrs, key)

    def integer(self, key: str) -> int:
        value = self.attrs[key]
        assert isinstance(value, int) and not isinstance(value, bool), (key, value)
        return value

    def flag(self, key: str) -> bool:
        value = self.attrs[key]
        assert isinstance(value, bool), (key, value)
        return value

    def ints(self, key: str) -> list[int]:
        value = self.attrs[key]
        assert isinstance(value, list), (key, value)
        return [int(v) for v in value]

    def text(self, key: str) -> str:
        value = self.attrs[key]
        assert isinstance(value, str), (key, value)
        return value

    def refuse(self, why: str) -> NoReturn:
        """No reproducer for this statement: `render` raises `ValueError` with `why` (say what the
        burn interpreter does instead, e.g. its error message for a rank it does not take)."""
        raise ValueError(f"render: {self.where}: {why}")


class Call(_Attrs):
    """One statement of a family operation, as its rendering function sees it."""

    def __init__(
        self,
        op: str,
        line: int,
        args: Sequence[Arg],
        attrs: Mapping[str, AttrValue],
        *,
        module: str | None,
        module_attrs: Mapping[str, AttrValue],
        device: Callable[[], str],
        use: Callable[[str], None],
    ) -> None:
        self.op = op
        self.line = line
        self.args = tuple(args)
        """The tensor operands, in order (a module call's module is `module`, not an operand)."""
        self.attrs = attrs
        self.module = module
        """A module call: the module's Rust expression (`model.conv`, or `eval_model.conv` in
        eval mode, as the interpreter's `Ctx::model`)."""
        self.module_attrs = module_attrs
        """A module call: the module's declared attributes."""
        self.where = f"line {line}: `{op}`"
        self._device = device
        self._use = use

    @property
    def device(self) -> str:
        """`&device`, for a config's `.init(...)`."""
        return f"&{self._device()}"

    def use(self, *paths: str) -> None:
        """The `use` items the expression needs (`burn::nn::loss::CrossEntropyLossConfig`); each
        must be listed in the family's `IMPORTS`."""
        for path in paths:
            self._use(path)

    def dim(self, d: int, rank: int) -> int:
        """A dim resolved torch's way (negative counts from the end), or refused with the burn
        interpreter's message (`families/tensors.rs` `dim`)."""
        resolved = d + rank if d < 0 else d
        if not 0 <= resolved < rank:
            self.refuse(
                f"the burn interpreter stops with `{self.op}: dim {d} is out of range for a rank-{rank} tensor`"
            )
        return resolved

    def wrong_rank(self, what: str, rank: int) -> NoReturn:
        """Refused as the burn interpreter's `wrong_rank` (`families/mod.rs`) stops the run."""
        self.refuse(f"the burn interpreter stops with `{self.op}: {what}, got a rank-{rank} tensor`")


class Declaration(_Attrs):
    """A module declaration (`conv = Conv2d(2, 4, 3, padding=1)`), as a `ModuleRendering` sees it."""

    def __init__(self, name: str, kind: str, attrs: Mapping[str, AttrValue], use: Callable[[str], None]) -> None:
        self.name = name
        self.kind = kind
        self.attrs = attrs
        self.where = f"module `{name}` ({kind})"
        self._use = use

    def use(self, *paths: str) -> None:
        for path in paths:
            self._use(path)


TensorKind = Literal["param", "optional", "running"]


@dataclass(frozen=True)
class ModuleTensor:
    """How one of a module kind's tensors (the table's `ParamSpec`, torch's layout) lives in burn's
    module: its field, and whether it is a `Param<Tensor<D>>` ("param"), an
    `Option<Param<Tensor<D>>>` ("optional", a bias) or a `RunningState<Tensor<D>>` ("running", a
    buffer such as a running mean). Its data is loaded in torch's layout, as the interpreter's
    `layers::build` does; a tensor burn keeps as a Linear's weight (`transposed`) is loaded
    transposed and read back with the layout flag, and a tensor torch fuses (MultiheadAttention's
    `in_proj_weight`) is several burn tensors (`parts`), loaded by equal rows and joined when read
    (`layers::join`)."""

    name: str
    """The table's short name (`weight`, `bias`, `running_mean`)."""
    field: str
    """burn's field on the module (`weight`, `bias`, `running_mean`); for `parts`, unused."""
    kind: TensorKind = "param"
    transposed: bool = False
    """Held in burn's Linear-weight layout `[d_in, d_out]`, the transpose of torch's."""
    parts: tuple[str, ...] = ()
    """burn's fields of the pieces of a fused torch tensor (`query.weight`, `key.weight`, ...), in
    torch's row order: each takes an equal share of torch's rows."""
    join_dim: int = 0
    """The dim their values are joined along when read (in burn's layout)."""

    def _fields(self) -> tuple[str, ...]:
        return self.parts or (self.field,)

    def _one(self, field: str) -> ModuleTensor:
        return ModuleTensor(self.name, field, self.kind, self.transposed)

    def value(self, module: str) -> str:
        """Its current value, the interpreter's `layers::tensor` (burn's layout)."""
        if self.parts:
            values = ", ".join(self._one(f).value(module) for f in self.parts)
            return f"Tensor::cat(vec![{values}], {self.join_dim})"
        if self.kind == "running":
            # `value_sync`, as the interpreter reads it: `value()` may be one update behind
            return f"{module}.{self.field}.value_sync()"
        return f"{self.path(module)}.val()"

    def path(self, module: str) -> str:
        """The `Param` (for `.grad(&grads)`, `.id`); for a buffer, the `RunningState`; for a
        tensor of `parts`, its value (the report's sketch shows it)."""
        if self.parts:
            return self.value(module)
        if self.kind == "optional":
            return f"{module}.{self.field}.as_ref().unwrap()"
        return f"{module}.{self.field}"

    def _joined(self, grads: list[str]) -> str:
        """The gradients of the parts joined, or None when one has none (`layers::grad`)."""
        listed = ", ".join(grads)
        return f"[{listed}].into_iter().collect::<Option<Vec<_>>>().map(|parts| Tensor::cat(parts, {self.join_dim}))"

    def grad(self, module: str, grads: str) -> str:
        """Its gradient in `grads` (an `Option<Tensor<D>>` expression, burn's layout)."""
        if self.parts:
            return self._joined([self._one(f).grad(module, grads) for f in self.parts])
        return f"{self.path(module)}.grad(&{grads})"

    def grad_sum(self, module: str, sums: str, rank: int) -> str:
        """Its gradient in accumulated `GradientsParams` (an `Option<Tensor<D>>` expression)."""
        if self.parts:
            return self._joined([self._one(f).grad_sum(module, sums, rank) for f in self.parts])
        return f"{sums}.get::<{rank}>({self.path(module)}.id)"

    def change(self, module: str, change: str) -> list[str]:
        """The lines that apply `change` (`set_require_grad(false)`, `map(|t| ...)`) to each of its
        burn params, as the interpreter's `layers::set_require_grad` / `add_scalar` do."""
        lines = []
        for f in self._fields():
            path = f"{module}.{f}"
            if self.kind == "optional":
                lines.append(f"{path} = {path}.map(|b| b.{change});")
            else:
                lines.append(f"{path} = {path}.{change};")
        return lines

    def pieces(self, data: Sequence[float], shape: Sequence[int]) -> list[tuple[str, list[float], list[int]]]:
        """(burn's field, its data, its shape) for each burn tensor, from torch's data and shape:
        rows split among the `parts`, each transposed when `transposed` (`layers::load_projection`)."""
        out = []
        rows = shape[0] // len(self._fields())
        size = len(data) // len(self._fields())
        for i, f in enumerate(self._fields()):
            chunk = list(data[i * size : (i + 1) * size])
            part_shape = [rows, *shape[1:]]
            if self.transposed:
                chunk = literals.transpose_host(chunk, part_shape[0], part_shape[1])
                part_shape = [part_shape[1], part_shape[0]]
            out.append((f, chunk, part_shape))
        return out

    def load(self, tensor: str) -> str:
        """The field's value holding `tensor` (a `Tensor<D>` expression of the program's data)."""
        return {
            "param": f"Param::from_tensor({tensor})",
            "optional": f"Some(Param::from_tensor({tensor}))",
            "running": f"RunningState::new({tensor})",
        }[self.kind]

    def imports(self) -> tuple[str, ...]:
        return ("burn::module::RunningState",) if self.kind == "running" else ("burn::module::Param",)


@dataclass(frozen=True)
class ModuleRendering:
    """A module kind in `struct Model`: a field of type `rust_type`, built as a port writes it
    (`config(decl)`, then `.init(&device)`), its tensors then set to the program's data."""

    rust_type: str
    """The field's type (`Conv2d`); its path is in `imports`."""
    config: Callable[[Declaration], str]
    """The config a port writes from the declaration (`Conv2dConfig::new([2, 4], [3, 3])` and a
    `.with_*` for each attribute the program gives), without `.init(&device)`."""
    tensors: tuple[ModuleTensor, ...]
    """Every tensor of the table's `ParamSpec`s, by its short name."""
    imports: tuple[str, ...] = field(default=())
    """The paths the field's type and config always need (`burn::nn::conv::Conv2d`, ...)."""
    init_takes_device: bool = True
    """`config.init(&device)`; False: `config.init()` (a module without tensors: `Dropout`)."""

    def init(self, device: str) -> str:
        """The config's `.init(...)` call (`device`: the device variable, unused when
        `init_takes_device` is False)."""
        return f".init(&{device})" if self.init_takes_device else ".init()"

    def tensor(self, name: str) -> ModuleTensor:
        return next(t for t in self.tensors if t.name == name)


def spec_family(op: str) -> str:
    """The family module an operation's rendering lives in: the table's `family`, or for a
    machine-level statement (train/eval, optimizers, schedulers) `training`."""
    spec = OPS[op]
    if spec.family is not None:
        return spec.family
    return "training"


class Writer(Protocol):
    """What a machine-level statement's rendering (`training.STATEMENTS`) uses of the statement
    generator (`generate.Generator`)."""

    sketch: bool
    """Writing the report card's sketch (no comments, no printing)."""
    has_model: bool
    """The code has a `model` (a `struct Model` of the params and modules)."""
    model: Decl
    """The variable `model`."""

    def put(self, depth: int, text: str, st: Stmt | None = None, note: str = "") -> None:
        """A line of code at `depth`, commented with the statement's index and line and `note`."""

    def note(self, depth: int, st: Stmt, text: str) -> None:
        """A statement that is only a comment in the code."""

    def read_decl(self, decl: Decl) -> str:
        """A variable read: its identifier (counted, for the `_x` and `mut` decisions)."""
        raise NotImplementedError

    def own_variable(self, old: Binding | None, base: str, expr: str, depth: int, st: Stmt, note: str) -> Binding:
        """A variable of the code's own bound to `expr` (in place while `old`'s block is open)."""
        raise NotImplementedError

    def module(self, name: str, *, assigned: bool = False) -> str:
        """The program's module `name` in the training model (`model.target`), as the interpreter's
        machine changes it (never the `eval()` snapshot); `assigned`: the code assigns it."""
        raise NotImplementedError

    def use(self, *names: str) -> None:
        """Items the code names: a helper function of `support` (`soft_update`) or an import of
        `source._USED_IMPORTS` (`Param`)."""

    def import_(self, path: str) -> None:
        """A `use` path (one of `families.IMPORTS`)."""
