"""What a row of the operation table says: an operation (`OpSpec`), its attributes
(`AttrSpec`), a module kind (`ModuleSpec`) and its params and buffers (`ParamSpec`).

Attribute names are the keys of a statement's `attrs` in the IR. An attribute
whose default is `REQUIRED` must be given; one whose default is `OMITTED` may
be left out, and is then absent from `attrs`: each framework uses its own
default, as a person porting the PyTorch line writes the burn one (an argument
the PyTorch code omits is omitted in burn too). Any other default is part of
the language: the parser and IR validation fill it in, so the interpreters
always see every such attribute.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

Category = Literal[
    "graph", "math", "autodiff", "module", "optimizer", "block", "observe", "layer", "tensor", "loss", "training"
]
ArgKind = Literal["tensor", "module", "optimizer", "scheduler"]
TensorDtype = Literal["float", "int", "bool"]
"""A tensor's element type: float32 (float64 in the fuzzer's reference run), integer indices, masks."""
ArgDtype = Literal["float", "int", "bool", "any"]
ResultDtype = Literal["float", "int", "bool", "arg0"]
"""`arg0`: the element type of the first tensor argument (`reshape`, `cat`, ...)."""
Family = Literal["layers", "tensors", "losses"]
"""Where an operation's two implementations live when it is a plain function of its arguments
(`runner/program/torch_ops/FAMILY.py`, `rust_probe/src/program/families/FAMILY.rs`)."""
AttrType = Literal["float", "int", "bool", "str", "int_list"]
# "tensor": gives a tensor (may be bound to a name or dropped); "none": a statement only;
# "optimizer" / "scheduler": must be bound to a name; "block": a block statement with a body.
Result = Literal["tensor", "none", "optimizer", "scheduler", "block"]
# What values a tensor argument should hold for the op to be well defined (the fuzzer reads it).
Domain = Literal["any", "positive", "nonzero"]
Framework = Literal["torch", "burn"]

FRAMEWORKS: Final[tuple[Framework, ...]] = ("torch", "burn")

AttrValue = float | int | bool | str | list[int]


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


class _Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


REQUIRED: Final = _Marker("REQUIRED")
"""The attribute must be given."""
OMITTED: Final = _Marker("OMITTED")
"""The attribute may be left out; it is then absent and each framework uses its own default."""
ARG_NAME: Final = _Marker("ARG_NAME")
"""The default is the name of the op's first argument (`observe`'s label)."""

Default = AttrValue | _Marker


@dataclass(frozen=True)
class AttrSpec:
    name: str
    type: AttrType
    default: Default = REQUIRED
    positional: bool = False
    """May be given positionally in the source, after the op's arguments (in table order)."""
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    minimum_exclusive: bool = False
    maximum: float | None = None
    maximum_exclusive: bool = False
    doc: str = ""
    torch_default: AttrValue | None = None
    """For an `OMITTED` attribute: torch's own default, as documented (a test reads it from torch).
    None: no value (torch's `None`: no clamp bound, no padding row). For a number, the name of
    another attribute of the op (`"kernel_size"`) is that attribute's value (a pool's stride)."""
    burn_default: AttrValue | None = None
    """For an `OMITTED` attribute: burn's own default, as documented (a test reads it from the probe);
    None and an attribute's name as for `torch_default`."""
    burn_writes_torch_default: bool = False
    """For an `OMITTED` attribute burn's config has no default for (`LinearLrSchedulerConfig::new` takes
    every value): a port writes torch's default, `torch_default` (generated into `contract.rs` as
    `torch_defaults::OP_ATTR`)."""
    enum: str | None = None
    """For a string with `choices`: the name of the Rust enum the probe reads it into."""
    burn_unsupported: tuple[tuple[AttrValue, ...], str] | None = None
    """Values burn 0.22.1 has no equivalent for, with the reason (the run's outcome is `unsupported`)."""
    torch_name: str | None = None
    """The keyword torch's call takes it as, when it is not `name` (None: `name`)."""
    sides: frozenset[Framework] = frozenset(("torch", "burn"))
    """Which frameworks' calls it is an argument of: `layout` is how the burn side loads a
    torch weight, and torch's call never sees it."""

    def describe_range(self) -> str:
        """The bounds in words (`>= 1 and <= 64`); of an integer list, each entry's (`each >= 0 ...`)."""
        parts = []
        if self.minimum is not None:
            parts.append(f"{'>' if self.minimum_exclusive else '>='} {_number(self.minimum)}")
        if self.maximum is not None:
            parts.append(f"{'<' if self.maximum_exclusive else '<='} {_number(self.maximum)}")
        text = " and ".join(parts)
        return f"each {text}" if text and self.type == "int_list" else text

    def _in_range(self, number: float) -> bool:
        low, high = self.minimum, self.maximum
        return not (
            (low is not None and (number < low or (self.minimum_exclusive and number == low)))
            or (high is not None and (number > high or (self.maximum_exclusive and number == high)))
        )

    def check(self, value: AttrValue) -> AttrValue:
        """The value normalized to the attribute's type (an int for a float attribute becomes a
        float); `ValueError` with a message that says what is valid."""
        if self.type == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"`{self.name}` must be True or False, not {value!r}")
            return value
        if self.type == "str":
            if not isinstance(value, str):
                raise ValueError(f"`{self.name}` must be a string, not {value!r}")
            if self.choices and value not in self.choices:
                valid = ", ".join(repr(c) for c in self.choices)
                raise ValueError(f"`{self.name}` must be one of {valid}, not {value!r}")
            if not value or len(value) > 200:
                raise ValueError(f"`{self.name}` must be a string of 1 to 200 characters")
            if not value.isprintable() or any(0xD800 <= ord(c) <= 0xDFFF for c in value):
                raise ValueError(
                    f"`{self.name}` must be printable text (no control characters, no lone surrogates), "
                    f"not {value.encode('unicode_escape').decode('ascii')[:80]!r}"
                )
            return value
        if self.type == "int_list":
            if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                raise ValueError(f"`{self.name}` must be a list of integers, not {value!r}")
            bad = next((v for v in value if not self._in_range(v)), None)
            if bad is not None:
                raise ValueError(
                    f"`{self.name}`: entries must be {self.describe_range().removeprefix('each ')}, not {bad!r}"
                )
            return list(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            kind = "an integer" if self.type == "int" else "a number"
            raise ValueError(f"`{self.name}` must be {kind}, not {value!r}")
        number: int | float
        if self.type == "int":
            if not isinstance(value, int):
                raise ValueError(f"`{self.name}` must be an integer, not {value!r}")
            number = value
        else:
            number = float(value)
            if not math.isfinite(number):
                raise ValueError(f"`{self.name}` must be a finite number, not {value!r}")
        if not self._in_range(number):
            raise ValueError(f"`{self.name}` must be {self.describe_range()}, not {value!r}")
        return number


@dataclass(frozen=True)
class OpSpec:
    name: str
    category: Category
    args: tuple[ArgKind, ...]
    result: Result
    source: str
    """The source column of the contract table (shared by the ops of one row)."""
    torch: str
    """The torch column of the contract table."""
    burn: str
    """The burn 0.22.1 column of the contract table."""
    summary: str
    attrs: tuple[AttrSpec, ...] = ()
    frameworks: frozenset[Framework] = frozenset(FRAMEWORKS)
    differentiable: bool = False
    """The result carries a gradient back to the tensor arguments."""
    domain: tuple[Domain, ...] = ()
    """Per tensor argument: the values for which the op is defined (empty: any)."""
    kinks: tuple[float, ...] = ()
    """Input values at which the op is not differentiable (finite differences avoid them)."""
    inplace: bool = False
    """Changes its first argument (torch: in place; burn: the name is rebound)."""
    infix: str | None = None
    """The source operator (`+`, `@`, unary `-`, `**`...), when the op is written infix."""
    torch_code: str | None = None
    """The renderer's template: `{a0}`, `{a1}` are the arguments, `{attr}` / `{attr!r}` the
    attributes; None when the renderer writes the op itself (blocks, optimizers, observe)."""
    row: str = ""
    """The contract table row the op is listed in (the first op of the row); empty: its own."""
    unsupported_reason: str = ""
    """Why the framework outside `frameworks` has no equivalent (the `unsupported` outcome's message)."""
    family: Family | None = None
    """Set for a plain function of its arguments: the family module that implements it on each side."""
    max_args: int | None = None
    """Variadic: the last argument kind repeats, up to this many arguments in all (`cat(a, b, c)`)."""
    arg_dtypes: tuple[ArgDtype, ...] = ()
    """Per tensor argument, the element type it takes (empty: float for every one; the last
    repeats for a variadic op)."""
    result_dtype: ResultDtype = "float"
    module: str | None = None
    """The module kind whose call this operation is (`conv(x)` with `conv = Conv2d(...)`): args[0] is the module."""
    torch_call: str | None = None
    """The torch function a port calls (`torch.nn.functional.gelu`): the torch interpreter and renderer
    call it with the tensor arguments and, by keyword, the attributes the program gives (an omitted
    one is omitted: torch's own default). None: the op is written by hand on the torch side."""
    torch_args: Literal["args", "list"] = "args"
    """How the tensor arguments go to `torch_call`: one by one, or as one list (`torch.cat([a, b])`)."""
    torch_signature: str | None = None
    """For an operation written by hand on the torch side (an optimizer, a scheduler): the torch callable
    whose signature holds torch's defaults of its attributes (`torch.optim.SGD`); a test reads them."""

    def arg_dtype(self, position: int) -> ArgDtype:
        if not self.arg_dtypes:
            return "float"
        return self.arg_dtypes[min(position, len(self.arg_dtypes) - 1)]

    def arity(self) -> tuple[int, int]:
        """The least and the most arguments it takes."""
        return len(self.args), self.max_args or len(self.args)

    @property
    def attr_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attrs)

    def attr(self, name: str) -> AttrSpec | None:
        for a in self.attrs:
            if a.name == name:
                return a
        return None

    @property
    def positional_attrs(self) -> tuple[AttrSpec, ...]:
        return tuple(a for a in self.attrs if a.positional)

    def supports(self, framework: Framework) -> bool:
        return framework in self.frameworks

    def signature(self) -> str:
        """The call form, e.g. `sum_dim(T, dim)` or `backward(T, retain_graph=False, ...)`."""
        names = {"tensor": "T", "module": "M", "optimizer": "opt", "scheduler": "sched"}
        parts = [names[k] for k in self.args]
        if self.max_args:
            parts.append("...")
        for a in self.attrs:
            if a.positional:
                parts.append(a.name)
            elif a.default is REQUIRED:
                parts.append(f"{a.name}=")
            elif a.default is OMITTED:
                parts.append(f"{a.name}=?")
            elif a.default is ARG_NAME:
                parts.append(f"{a.name}=<name>")
            else:
                parts.append(f"{a.name}={a.default!r}")
        return f"{self.name}({', '.join(parts)})"


ShapeRule = Callable[[Mapping[str, AttrValue]], list[int]]


def int_attr(attrs: Mapping[str, AttrValue], key: str) -> int:
    """An integer attribute of a module or statement, checked by the table."""
    value = attrs[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"attribute {key!r} is {value!r}, not an integer")
    return value


@dataclass(frozen=True)
class ParamSpec:
    """A module's tensor: a param (trained) or a buffer (running statistics), named after the
    module's (`conv.weight`, `bn.running_mean`), in torch's layout and torch's name."""

    name: str
    shape_doc: str
    """Its torch-layout shape in words (`[d_out, d_in]`), for the tables."""
    shape: ShapeRule
    """Its torch-layout shape from the module's attributes."""
    init: str
    """How its initial data is made (`runner.program.data`): `fan_in` (uniform in +-1/sqrt(fan in),
    torch's Linear and Conv init), `ones`, `zeros`, `normal`."""
    role: Literal["param", "buffer"] = "param"
    when: str | None = None
    """A bool attribute that must be true for the module to have it (`bias`)."""
    torch_path: str | None = None
    """Its attribute path in the torch module when not `name` (`out_proj.weight`)."""
    zero_row: str | None = None
    """An int attribute naming a row (dim 0; negative counts from the end) that the init sets to
    zero when the attribute is given: an Embedding's `padding_idx`, as torch's init does."""


@dataclass(frozen=True)
class ModuleSpec:
    """A module kind a program declares (`conv = Conv2d(3, 8, 3)`): its constructor's attributes
    (the IR's module object holds them under `attrs`), its params and buffers, and the operation
    that calls it (`conv(x)`)."""

    kind: str
    """The IR's `kind`."""
    source: str
    """The declaration call in the source syntax (`Conv2d`)."""
    torch: str
    burn: str
    attrs: tuple[AttrSpec, ...]
    params: tuple[ParamSpec, ...]
    call: str
    """The operation that applies it (`conv2d`)."""
    torch_class: str
    """The torch class a port starts from (`torch.nn.Conv2d`); its constructor takes the attributes
    that torch sees, positional ones in table order, the others by keyword (omitted when omitted)."""
    fan_in: Callable[[Mapping[str, AttrValue]], int] | None = None
    """For `fan_in` inits: the fan in from the attributes."""
    constraint: Callable[[Mapping[str, AttrValue]], str | None] | None = None
    """What the attributes must satisfy together, which a range cannot say (`groups` divides the
    channels): None when they do, else what is wrong (the declaration is refused as bad input)."""

    @property
    def attr_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attrs)

    def attr(self, name: str) -> AttrSpec | None:
        return next((a for a in self.attrs if a.name == name), None)

    def tensors(self, attrs: Mapping[str, AttrValue]) -> list[ParamSpec]:
        """Its params and buffers given its attributes (a bias only `when` it has one; an omitted
        `when` attribute counts as torch's default, which burn's agrees with wherever it is used)."""

        def present(p: ParamSpec) -> bool:
            if p.when is None:
                return True
            if p.when in attrs:
                return bool(attrs[p.when])
            spec = self.attr(p.when)
            return bool(spec is not None and (spec.default is True or spec.torch_default is True))

        return [p for p in self.params if present(p)]
