"""The one table of program operations.

Every part of the program machinery reads this table: the parser (which names
exist, their arity, argument kinds and attributes), the IR validation, the
torch interpreter and renderer (the torch spelling), the docs (the Markdown
table of `docs/program-ir.md` section 3 and `cases/README.md`) and, later, the
fuzz generator (categories, gradients, input domains, which frameworks support
an op).

Attribute names are the keys of a statement's `attrs` in the IR. An attribute
whose default is `REQUIRED` must be given; one whose default is `OMITTED` may
be left out, and is then absent from `attrs` (each framework uses its own
default, as `adam` does); any other default is filled in by the parser and by
IR validation, so the interpreters always see every such attribute.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Final, Literal

from . import limits

Category = Literal["graph", "math", "autodiff", "module", "optimizer", "block", "observe"]
ArgKind = Literal["tensor", "module", "optimizer"]
AttrType = Literal["float", "int", "bool", "str", "int_list"]
# "tensor": gives a tensor (may be bound to a name or dropped); "none": a statement only;
# "optimizer": must be bound to a name; "block": a block statement with a body.
Result = Literal["tensor", "none", "optimizer", "block"]
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
    """For an `OMITTED` attribute: torch's own default, as documented (a test reads it from torch)."""
    burn_default: AttrValue | None = None
    """For an `OMITTED` attribute: burn's own default, as documented (a test reads it from the probe)."""
    enum: str | None = None
    """For a string with `choices`: the name of the Rust enum the probe reads it into."""
    burn_unsupported: tuple[AttrValue, str] | None = None
    """A value burn 0.22.1 has no equivalent for, with the reason (the run's outcome is `unsupported`)."""

    def describe_range(self) -> str:
        parts = []
        if self.minimum is not None:
            parts.append(f"{'>' if self.minimum_exclusive else '>='} {_number(self.minimum)}")
        if self.maximum is not None:
            parts.append(f"{'<' if self.maximum_exclusive else '<='} {_number(self.maximum)}")
        return " and ".join(parts)

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
            return value
        if self.type == "int_list":
            if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                raise ValueError(f"`{self.name}` must be a list of integers, not {value!r}")
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
        low, high = self.minimum, self.maximum
        if (low is not None and (number < low or (self.minimum_exclusive and number == low))) or (
            high is not None and (number > high or (self.maximum_exclusive and number == high))
        ):
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
        names = {"tensor": "T", "module": "M", "optimizer": "opt"}
        parts = [names[k] for k in self.args]
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


_T: Final[tuple[ArgKind, ...]] = ("tensor",)
_TT: Final[tuple[ArgKind, ...]] = ("tensor", "tensor")
_BOTH: Final = frozenset(FRAMEWORKS)
_SCALAR = AttrSpec("scalar", "float", positional=True, doc="the number")


def _elementwise(name: str, *, domain: Domain = "any", kinks: tuple[float, ...] = ()) -> OpSpec:
    return OpSpec(
        name,
        "math",
        _T,
        "tensor",
        "`exp(T)` ...",
        "`torch.exp(t)` ...",
        "`t.exp()` ...",
        f"elementwise {name}",
        differentiable=True,
        domain=(domain,),
        kinks=kinks,
        torch_code=f"torch.{name}({{a0}})",
        row="exp",
    )


def _activation(name: str, *, kinks: tuple[float, ...] = ()) -> OpSpec:
    return OpSpec(
        name,
        "math",
        _T,
        "tensor",
        "`relu(T)`",
        "`torch.relu(t)`",
        "`burn::tensor::activation::relu(t)`",
        f"activation {name}",
        differentiable=True,
        kinks=kinks,
        torch_code=f"torch.{name}({{a0}})",
        row="relu",
    )


def _binary(name: str, infix: str, domain: tuple[Domain, ...] = ("any", "any")) -> OpSpec:
    return OpSpec(
        name,
        "math",
        _TT,
        "tensor",
        "`a + b` ...",
        "`a + b` ... (broadcasts across ranks)",
        "`a.add(b)` ... (equal ranks only, size-1 dims broadcast; unequal ranks: `unsupported` at that op)",
        f"elementwise {name}, broadcasting",
        differentiable=True,
        domain=domain,
        infix=infix,
        torch_code=f"{{a0}} {infix} {{a1}}",
        row="add",
    )


def _reduction(name: str) -> OpSpec:
    return OpSpec(
        name,
        "math",
        _T,
        "tensor",
        "`sum(T)`",
        "`t.sum()` (shape `[]`)",
        "`t.sum()` (shape `[1]`)",
        f"{name} of all elements: a scalar",
        differentiable=True,
        torch_code=f"{{a0}}.{name}()",
        row="sum",
    )


_SPECS: Final[tuple[OpSpec, ...]] = (
    OpSpec(
        "detach",
        "graph",
        _T,
        "tensor",
        "`detach(T)`",
        "`t.detach()`",
        "`t.detach()`: a leaf that requires grad (a param) gives a *new* leaf that still requires grad, so it is tracked and gets its own gradient (none flows to the param); a non-leaf gives an untracked constant (burn-autodiff `src/ops/tensor.rs` `float_detach`)",
        "the same values, cut from the graph",
        torch_code="{a0}.detach()",
    ),
    OpSpec(
        "without_autodiff",
        "graph",
        _T,
        "tensor",
        "`without_autodiff(T)`",
        "unsupported (`detach()` is already a constant)",
        "`t.without_autodiff()`: the same type `Tensor<D>` (not a separate inner-backend type), `is_autodiff()` false; combined with an autodiff tensor it is a constant (burn-tensor `src/tensor/api/autodiff.rs`)",
        "the values as a tensor without autodiff",
        frameworks=frozenset({"burn"}),
        unsupported_reason="torch has no without_autodiff(): detach() already gives a constant",
    ),
    OpSpec(
        "require_grad",
        "autodiff",
        _T,
        "tensor",
        "`require_grad(T)`",
        "`t.requires_grad_()`",
        "`t = t.require_grad()` (rebinds `T`, and `out` if given); a param: `Param::set_require_grad(true)`. Panics on a tracked non-leaf (`Can't convert a non leaf tensor into a tracked tensor`, burn-autodiff `src/tensor.rs:190`) and without autodiff (`Tensor::require_grad requires autodiff; call Tensor::autodiff first`); an untracked computed tensor becomes a new leaf",
        "marks the tensor as a leaf that requires grad",
        inplace=True,
        torch_code="{a0}.requires_grad_()",
    ),
    OpSpec(
        "retain_grad",
        "autodiff",
        _T,
        "none",
        "`retain_grad(T)`",
        "`t.retain_grad()`",
        "unsupported: `Tensor::grad` returns None unless the tensor requires grad, and `require_grad()` panics on a non-leaf (burn-tensor `src/tensor/api/autodiff.rs` `grad`, burn-autodiff `src/tensor.rs`)",
        "keeps the gradient of a non-leaf tensor",
        torch_code="{a0}.retain_grad()",
        frameworks=frozenset({"torch"}),
        unsupported_reason=(
            "burn 0.22.1 cannot keep the gradient of a non-leaf tensor: Tensor::grad returns None unless the "
            "tensor requires grad, and require_grad() panics on a non-leaf (\"Can't convert a non leaf tensor "
            'into a tracked tensor")'
        ),
    ),
    OpSpec(
        "clone",
        "graph",
        _T,
        "tensor",
        "`clone(T)`",
        "`t.clone()`",
        "`t.clone()` (the same graph node)",
        "a copy (in the graph)",
        differentiable=True,
        torch_code="{a0}.clone()",
    ),
    _binary("add", "+"),
    _binary("sub", "-"),
    _binary("mul", "*"),
    _binary("div", "/", ("any", "nonzero")),
    OpSpec(
        "neg",
        "math",
        _T,
        "tensor",
        "`-a`",
        "`-a`",
        "`a.neg()`",
        "negation",
        differentiable=True,
        infix="-",
        torch_code="-{a0}",
    ),
    OpSpec(
        "matmul",
        "math",
        _TT,
        "tensor",
        "`a @ b`",
        "`a @ b`",
        "`a.matmul(b)`; unequal ranks: `unsupported` at that op; rank 1 panics (`Matmul requires tensors with at least 2 dimensions`), incompatible shapes panic (`The inner dimension of matmul should be the same`)",
        "matrix product",
        differentiable=True,
        infix="@",
        torch_code="{a0} @ {a1}",
    ),
    OpSpec(
        "transpose",
        "math",
        _T,
        "tensor",
        "`transpose(T)`",
        "`t.transpose(-2, -1)`",
        "`t.transpose()`; on a rank-1 tensor burn-flex panics (`index out of bounds: the len is 1 but the index is 18446744073709551615`, `burn-flex-0.22.1/src/layout.rs:151`)",
        "swaps the last two dimensions",
        differentiable=True,
        torch_code="{a0}.transpose(-2, -1)",
    ),
    OpSpec(
        "add_scalar",
        "math",
        _T,
        "tensor",
        "`T + s`",
        "`t + s`",
        "`t.add_scalar(s)`",
        "adds a number (`T - s` is `add_scalar` of `-s`)",
        attrs=(_SCALAR,),
        differentiable=True,
        infix="+",
        torch_code="{a0} + {scalar!r}",
    ),
    OpSpec(
        "mul_scalar",
        "math",
        _T,
        "tensor",
        "`T * s`",
        "`t * s`",
        "`t.mul_scalar(s)`",
        "multiplies by a number (`T / s` is `mul_scalar` of `1 / s`)",
        attrs=(_SCALAR,),
        differentiable=True,
        infix="*",
        torch_code="{a0} * {scalar!r}",
    ),
    OpSpec(
        "powi",
        "math",
        _T,
        "tensor",
        "`T ** n`",
        "`t.pow(n)`",
        "`t.powi_scalar(n)`",
        "integer power (a negative exponent needs nonzero inputs)",
        attrs=(AttrSpec("exponent", "int", positional=True, minimum=-64, maximum=64, doc="the integer exponent"),),
        differentiable=True,
        infix="**",
        torch_code="{a0}.pow({exponent})",
    ),
    _elementwise("exp"),
    _elementwise("log", domain="positive"),
    _elementwise("sqrt", domain="positive", kinks=(0.0,)),
    _elementwise("abs", kinks=(0.0,)),
    _elementwise("tanh"),
    _activation("relu", kinks=(0.0,)),
    _activation("sigmoid"),
    _reduction("sum"),
    _reduction("mean"),
    OpSpec(
        "sum_dim",
        "math",
        _T,
        "tensor",
        "`sum_dim(T, d)`",
        "`t.sum(d, keepdim=True)`",
        "`t.sum_dim(d)` (keeps the dim; a negative `d` counts from the end; out of range panics with a `BoundsError`)",
        "sum along one dimension, kept with size 1",
        attrs=(AttrSpec("dim", "int", positional=True, minimum=0, maximum=3, doc="the dimension"),),
        differentiable=True,
        torch_code="{a0}.sum({dim}, keepdim=True)",
    ),
    OpSpec(
        "reshape",
        "math",
        _T,
        "tensor",
        "`reshape(T, [..])`",
        "`t.reshape(shape)`",
        "`t.reshape(shape)`: `-1` infers as in torch, but `0` copies the source's dim (torch: a size-0 dim, an error for a non-empty tensor); a wrong element count panics",
        "the same elements in a new shape (one entry may be -1)",
        attrs=(AttrSpec("shape", "int_list", positional=True, doc="the new shape, rank 1 to 4"),),
        differentiable=True,
        torch_code="{a0}.reshape({shape})",
    ),
    OpSpec(
        "item",
        "graph",
        _T,
        "none",
        "`item(T)`",
        "`t.item()`",
        "`t.into_scalar::<f32>()`: a Rust number (observed with shape `[]`); more than one element panics (`Error while reading data: ... InvalidShape`); a number used as a tensor is outcome `error`",
        "reads a one-element tensor's value on the host and drops it",
        torch_code="{a0}.item()",
    ),
    OpSpec(
        "add_scalar_",
        "graph",
        _T,
        "none",
        "`add_scalar_(T, s)`",
        "`t.add_(s)` (in place: aliases change)",
        "`t = t.add_scalar(s)` (tensors are values: no aliasing). A param: `param.map(|t| t.add_scalar(s))`, after which the param is a tracked non-leaf that no longer requires grad: it gets no gradient and the optimizer skips it, silently (torch raises for a leaf that requires grad)",
        "adds a number in place",
        attrs=(_SCALAR,),
        inplace=True,
        torch_code="{a0}.add_({scalar!r})",
    ),
    OpSpec(
        "linear",
        "module",
        ("module", "tensor"),
        "tensor",
        "`lin(x)`",
        "`lin(x)`",
        "`lin.forward(x)` (weight `[d_in, d_out]`, see below)",
        "applies a Linear module: x @ weight^T + bias",
        differentiable=True,
        torch_code="{a0}({a1})",
    ),
    OpSpec(
        "backward",
        "autodiff",
        _T,
        "none",
        "`backward(L, retain_graph=False, accumulate=False)`",
        "`l.backward(retain_graph=...)` (grads accumulate into `.grad`)",
        "`let grads = l.backward()`. `retain_graph=True`: unsupported. The newest gradients replace the previous ones; with `accumulate=True` the params' gradients are summed with `GradientsAccumulator` (other tensors: the newest only) until `zero_grad`/`step`. A second backward through a consumed graph panics (`Cannot run backward: graph tape has already been consumed at NodeId(..)`); backward of an untracked tensor panics (`Tensor::backward requires a tracked autodiff tensor; ...`); a non-scalar `L` is accepted (seeded with ones; torch raises)",
        "backpropagates from a scalar",
        attrs=(
            AttrSpec(
                "retain_graph",
                "bool",
                False,
                doc="torch: keep the graph for another backward",
                burn_unsupported=(
                    True,
                    "burn 0.22.1 backward() has no retain_graph: it consumes the recorded steps "
                    "(burn-tensor src/tensor/api/autodiff.rs, Tensor::backward)",
                ),
            ),
            AttrSpec("accumulate", "bool", False, doc="burn: sum the gradients of successive backwards"),
        ),
    ),
    OpSpec(
        "grad",
        "autodiff",
        _T,
        "tensor",
        "`grad(T)`",
        "`t.grad` (error if None)",
        "`t.grad(&grads)`, or `GradientsParams::get` of the accumulated sum (outcome `error` if None; a non-leaf has none)",
        "the gradient the framework holds for the tensor",
    ),
    OpSpec(
        "sgd",
        "optimizer",
        (),
        "optimizer",
        "`sgd(lr=, momentum=0, dampening=0, weight_decay=0, nesterov=False)`",
        "`torch.optim.SGD(params, ...)`",
        "`SgdConfig::new()`, `.with_momentum(Some(MomentumConfig { momentum, dampening, nesterov }))` only if `momentum` is given and not 0 (then an omitted `dampening` is burn's default **0.1**, torch's is 0; `nesterov` false), `.with_weight_decay(Some(WeightDecayConfig::new(wd)))` if not 0 (L2 added to the gradient, as torch), `.init()`. `lr` is required: burn has no default learning rate, it is an argument of `step` (burn-optim `src/optim/sgd.rs`, `momentum.rs`, `decay.rs`)",
        "SGD over every param (declaration order)",
        attrs=(
            AttrSpec("lr", "float", minimum=0, minimum_exclusive=True, doc="learning rate"),
            AttrSpec("momentum", "float", 0.0, minimum=0),
            AttrSpec("dampening", "float", 0.0, minimum=0, maximum=1),
            AttrSpec("weight_decay", "float", 0.0, minimum=0),
            AttrSpec("nesterov", "bool", False),
        ),
    ),
    OpSpec(
        "adam",
        "optimizer",
        (),
        "optimizer",
        "`adam(lr=, beta1=, beta2=, eps=, weight_decay=)` (omitted: each framework's default)",
        "`torch.optim.Adam(params, ...)`",
        "`AdamConfig::new().with_beta_1(..).with_beta_2(..).with_epsilon(..)` (defaults 0.9, 0.999 and **1e-5**; torch's eps is 1e-8), weight decay as L2 on the gradient, `.init()`; `lr` required (burn-optim `src/optim/adam.rs`)",
        "Adam over every param (declaration order)",
        attrs=(
            AttrSpec("lr", "float", minimum=0, minimum_exclusive=True, doc="learning rate"),
            AttrSpec("beta1", "float", OMITTED, minimum=0, maximum=1, maximum_exclusive=True),
            AttrSpec("beta2", "float", OMITTED, minimum=0, maximum=1, maximum_exclusive=True),
            AttrSpec("eps", "float", OMITTED, minimum=0, minimum_exclusive=True),
            AttrSpec("weight_decay", "float", OMITTED, minimum=0),
        ),
    ),
    OpSpec(
        "step",
        "optimizer",
        ("optimizer",),
        "none",
        "`step(opt)`",
        "`opt.step()`",
        "`model = opt.step(lr, model, GradientsParams::from_grads(grads, &model))`: consumes the held gradients, so afterwards `grad` / `observe` see none (torch keeps `.grad`); without gradients it does nothing",
        "one optimizer step",
        torch_code="{a0}.step()",
    ),
    OpSpec(
        "zero_grad",
        "optimizer",
        ("optimizer",),
        "none",
        "`zero_grad(opt)`",
        "`opt.zero_grad()` (`.grad` becomes None)",
        "drops the held gradients (what a port does with its `grads` value; also resets the accumulated sum): `grad` / `observe` see none, as after torch's `zero_grad()` (set to None)",
        "clears the gradients",
        torch_code="{a0}.zero_grad()",
    ),
    OpSpec(
        "freeze",
        "autodiff",
        _T,
        "none",
        "`freeze(P)`",
        "`p.requires_grad_(False)`",
        "a param: `param.set_require_grad(false)` (a new untracked leaf; `GradientsParams` and the optimizer skip it). Another tensor: `t = t.set_require_grad(false)` (a non-leaf starts a new lineage without error; torch raises for a non-leaf)",
        "stops a param from requiring grad",
        inplace=True,
        torch_code="{a0}.requires_grad_(False)",
    ),
    OpSpec(
        "observe",
        "observe",
        _T,
        "none",
        '`observe(T, "label", values=True)`',
        "record value, grad and flags",
        "same; `flags.raw` is `{is_tracked, is_require_grad, is_autodiff}`",
        "records the tensor's values, gradient and flags",
        attrs=(
            AttrSpec("label", "str", ARG_NAME, positional=True, doc="the observation's label"),
            AttrSpec("values", "bool", True, doc="record values and gradient (False: flags only)"),
        ),
    ),
    OpSpec(
        "repeat",
        "block",
        (),
        "block",
        "`for i in range(N):`",
        "`for i in range(n):`",
        "`for i in 0..n`",
        "runs its body N times; the first top-level one is the timed loop",
        attrs=(
            AttrSpec("count", "int", minimum=1, maximum=10_000_000, doc="iterations"),
            AttrSpec("var", "str", "_", doc="the source's loop variable (not a value)"),
        ),
    ),
    OpSpec(
        "no_grad",
        "block",
        (),
        "block",
        "`with no_grad():`",
        "`with torch.no_grad():`",
        "unsupported (burn has no no_grad scope; use `without_autodiff`)",
        "runs its body without recording a graph",
        frameworks=frozenset({"torch"}),
        unsupported_reason=(
            "burn 0.22.1 has no no_grad scope (operations on tracked tensors are always recorded); "
            "a port uses without_autodiff() or detach() on the tensors"
        ),
    ),
)


@dataclass(frozen=True)
class ParamSpec:
    """A module's param: its name after the module's (`lin.weight`) and its torch-layout shape,
    each entry an attribute's name or a number."""

    name: str
    shape: tuple[str | int, ...]
    when: str | None = None
    """A bool attribute that must be true for the module to have this param (`bias`)."""


@dataclass(frozen=True)
class ModuleSpec:
    """A module kind a program declares (`lin = Linear(4, 3)`): its constructor's attributes
    (the IR's module object holds them next to `name` and `kind`) and its params."""

    kind: str
    """The IR's `kind`."""
    source: str
    """The declaration call in the source syntax."""
    torch: str
    burn: str
    attrs: tuple[AttrSpec, ...]
    params: tuple[ParamSpec, ...]

    @property
    def attr_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attrs)

    def attr(self, name: str) -> AttrSpec | None:
        return next((a for a in self.attrs if a.name == name), None)


MODULES: Final[dict[str, ModuleSpec]] = {
    "linear": ModuleSpec(
        "linear",
        "Linear",
        "`torch.nn.Linear(d_in, d_out, bias=...)`: weight `[d_out, d_in]`",
        "`LinearConfig::new(d_in, d_out).with_bias(..).init(&device)`: weight `[d_in, d_out]`",
        attrs=(
            AttrSpec("d_in", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="input features"),
            AttrSpec("d_out", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="output features"),
            AttrSpec("bias", "bool", True, doc="with a bias"),
            AttrSpec(
                "layout",
                "str",
                "transposed",
                choices=("transposed", "copied"),
                enum="Layout",
                doc="how burn loads torch's [d_out, d_in] weight: transposed (the correct port) or copied as is",
            ),
        ),
        params=(ParamSpec("weight", ("d_out", "d_in")), ParamSpec("bias", ("d_out",), when="bias")),
    ),
}
"""Every module kind by its IR `kind`."""

OPS: Final[dict[str, OpSpec]] = {spec.name: spec for spec in _SPECS}
"""Every operation by name, in table order."""

BLOCK_OPS: Final[frozenset[str]] = frozenset(n for n, s in OPS.items() if s.result == "block")
DECLARATIONS: Final[tuple[str, ...]] = ("param", "input", "Linear")
"""The source's declaration calls (not operations)."""
INITS: Final[tuple[str, ...]] = ("normal", "uniform", "positive", "ones", "zeros", "arange")
"""The `init=` choices of `param(...)` / `input(...)`."""
RESERVED_NAMES: Final[frozenset[str]] = frozenset(OPS) | frozenset(DECLARATIONS) | {"range", "torch"}
"""Names a program cannot bind (besides Python keywords and names starting with `_`)."""


def unsupported(framework: Framework, op: str, attrs: dict[str, AttrValue]) -> tuple[str, str] | None:
    """What `framework` cannot run in this statement and why: (`no_grad`, reason) for an
    operation it lacks, (`backward(retain_graph=True)`, reason) for an attribute's value; or None."""
    spec = OPS[op]
    if not spec.supports(framework):
        return op, spec.unsupported_reason
    if framework == "burn":
        for a in spec.attrs:
            if a.burn_unsupported is not None and attrs.get(a.name) == a.burn_unsupported[0]:
                return f"{op}({a.name}={a.burn_unsupported[0]!r})", a.burn_unsupported[1]
    return None


def supported_ops(framework: Framework) -> tuple[str, ...]:
    return tuple(name for name, spec in OPS.items() if spec.supports(framework))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table(*, detailed: bool = False) -> str:
    """The operations as a Markdown table: the contract's columns (op, source, torch, burn), one row per
    contract row; `detailed=True` adds the IR attributes, gradient and input domain of each op."""
    header = ["op", "source", "torch", "burn 0.22.1"]
    if detailed:
        header += ["attrs", "gradient", "domain"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    rows: dict[str, list[OpSpec]] = {}
    for spec in OPS.values():
        rows.setdefault(spec.row or spec.name, []).append(spec)
    for specs in rows.values():
        first = specs[0]
        cells = [" ".join(f"`{s.name}`" for s in specs), first.source, first.torch, first.burn]
        if detailed:
            attrs = "; ".join(
                f"`{s.name}`: " + ", ".join(f"`{a.name}` ({a.type})" for a in s.attrs) for s in specs if s.attrs
            )
            grads = ", ".join(sorted({"yes" if s.differentiable else "no" for s in specs}))
            domains = "; ".join(
                f"`{s.name}`: " + ", ".join(s.domain) for s in specs if any(d != "any" for d in s.domain)
            )
            cells += [attrs, grads, domains]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


_TYPE_NAMES: Final[dict[AttrType, str]] = {
    "float": "number",
    "int": "integer",
    "bool": "boolean",
    "str": "string",
    "int_list": "integer list",
}


def attrs_table() -> str:
    """The IR `attrs` of every op that has any, as a Markdown table."""
    lines = ["| op | attr | type | default | meaning |", "|---|---|---|---|---|"]
    for spec in OPS.values():
        for a in spec.attrs:
            if a.default is REQUIRED:
                default = "required"
            elif a.default is OMITTED:
                default = "omitted: the framework's default"
            elif a.default is ARG_NAME:
                default = "the tensor's name"
            else:
                default = f"`{json.dumps(a.default)}`"
            meaning = a.doc
            constraint = a.describe_range()
            if a.choices:
                constraint = "one of " + ", ".join(a.choices)
            if constraint:
                meaning = f"{meaning} ({constraint})" if meaning else constraint
            kind = _TYPE_NAMES[a.type]
            if a.positional:
                kind += ", positional"
            lines.append(f"| `{spec.name}` | `{a.name}` | {kind} | {default} | {_cell(meaning)} |")
    return "\n".join(lines) + "\n"


def modules_table() -> str:
    """The module kinds a program declares, with their attributes, as a Markdown table."""
    lines = ["| declaration | torch | burn 0.22.1 | attrs | params (torch layout) |", "|---|---|---|---|---|"]
    for spec in MODULES.values():
        attrs = ", ".join(
            f"`{a.name}`" + (f"={json.dumps(a.default)}" if not isinstance(a.default, _Marker) else "")
            for a in spec.attrs
        )
        params = ", ".join(
            f"`{p.name}` [{', '.join(str(d) for d in p.shape)}]" + (f" if `{p.when}`" if p.when else "")
            for p in spec.params
        )
        lines.append(f"| `{spec.source}(...)` | {_cell(spec.torch)} | {_cell(spec.burn)} | {attrs} | {params} |")
    return "\n".join(lines) + "\n"
