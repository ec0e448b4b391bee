"""The language's first operations: the autodiff controls, elementwise math, `matmul`, sums,
`Linear`, SGD and Adam, observation and the blocks (`repeat`, `no_grad`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .. import limits
from .spec import (
    ARG_NAME,
    FRAMEWORKS,
    OMITTED,
    ArgKind,
    AttrSpec,
    AttrValue,
    Domain,
    ModuleSpec,
    OpSpec,
    ParamSpec,
    int_attr,
)

_T: Final[tuple[ArgKind, ...]] = ("tensor",)
_TT: Final[tuple[ArgKind, ...]] = ("tensor", "tensor")
_BOTH: Final = frozenset(FRAMEWORKS)
_SCALAR = AttrSpec("scalar", "float", positional=True, doc="the number")
_LR = AttrSpec("lr", "float", minimum=0, minimum_exclusive=True, doc="learning rate")
CLIP_ATTRS: Final[tuple[AttrSpec, AttrSpec]] = (
    AttrSpec(
        "clip_grad_norm",
        "float",
        OMITTED,
        minimum=0,
        minimum_exclusive=True,
        doc="clip the gradients by norm before each step: torch `torch.nn.utils.clip_grad_norm_(params, v)` "
        "(one norm over every param); burn `GradientClippingConfig::Norm(v)` on the optimizer's config "
        "(omitted: no clipping on either side)",
    ),
    AttrSpec(
        "clip_grad_value",
        "float",
        OMITTED,
        minimum=0,
        minimum_exclusive=True,
        doc="clip each gradient element to [-v, v] before each step: torch `torch.nn.utils.clip_grad_value_(params, v)`; "
        "burn `GradientClippingConfig::Value(v)` on the optimizer's config (omitted: no clipping)",
    ),
)
"""Every optimizer's clipping attributes: at most one of them (burn's config holds one `GradientClippingConfig`)."""


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


SPECS: Final[tuple[OpSpec, ...]] = (
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
        module="linear",
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
                    (True,),
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
        "`sgd(lr=, momentum=, dampening=, weight_decay=, nesterov=, clip_grad_norm=, clip_grad_value=)` "
        "(omitted: each framework's default)",
        "`torch.optim.SGD(params, lr=..., ...)` with only the given keywords",
        "`SgdConfig::new()`; `.with_momentum(Some(MomentumConfig::new().with_momentum(m)))` only if `momentum` is "
        "given and not 0, with `.with_dampening(d)` and `.with_nesterov(n)` only when given (an omitted `dampening` "
        "is burn's default **0.1**, torch's is 0); `.with_weight_decay(Some(WeightDecayConfig::new(wd)))` if given "
        "and not 0 (L2 added to the gradient, as torch); `.with_gradient_clipping(..)` for a clip; `.init()`. `lr` "
        "is required: burn has no default learning rate, it is an argument of `step` (burn-optim `src/optim/sgd.rs`, "
        "`momentum.rs`, `decay.rs`)",
        "SGD over every param (declaration order)",
        attrs=(
            _LR,
            AttrSpec(
                "momentum",
                "float",
                OMITTED,
                minimum=0,
                torch_default=0.0,
                burn_default=0.0,
                doc="burn: no `MomentumConfig` (plain SGD) when omitted or 0",
            ),
            AttrSpec(
                "dampening",
                "float",
                OMITTED,
                minimum=0,
                maximum=1,
                torch_default=0.0,
                burn_default=0.1,
                doc="burn: `MomentumConfig`'s dampening (only with a momentum)",
            ),
            AttrSpec("weight_decay", "float", OMITTED, minimum=0, torch_default=0.0, burn_default=0.0),
            AttrSpec(
                "nesterov",
                "bool",
                OMITTED,
                torch_default=False,
                burn_default=False,
                doc="burn: `MomentumConfig`'s nesterov (only with a momentum)",
            ),
            *CLIP_ATTRS,
        ),
        torch_signature="torch.optim.SGD",
    ),
    OpSpec(
        "adam",
        "optimizer",
        (),
        "optimizer",
        "`adam(lr=, beta1=, beta2=, eps=, weight_decay=, clip_grad_norm=, clip_grad_value=)` (omitted: each "
        "framework's default)",
        "`torch.optim.Adam(params, lr=..., ...)` with only the given keywords (`betas` when either beta is given)",
        "`AdamConfig::new().with_beta_1(..).with_beta_2(..).with_epsilon(..)` each only when given (defaults 0.9, "
        "0.999 and **1e-5**; torch's eps is 1e-8), weight decay as L2 on the gradient "
        "(`.with_weight_decay(Some(WeightDecayConfig::new(wd)))` if given and not 0), `.with_grad_clipping(..)` for a "
        "clip, `.init()`; `lr` required (burn-optim `src/optim/adam.rs`)",
        "Adam over every param (declaration order)",
        attrs=(
            _LR,
            AttrSpec(
                "beta1",
                "float",
                OMITTED,
                minimum=0,
                maximum=1,
                maximum_exclusive=True,
                torch_default=0.9,
                burn_default=0.9,
            ),
            AttrSpec(
                "beta2",
                "float",
                OMITTED,
                minimum=0,
                maximum=1,
                maximum_exclusive=True,
                torch_default=0.999,
                burn_default=0.999,
            ),
            AttrSpec("eps", "float", OMITTED, minimum=0, minimum_exclusive=True, torch_default=1e-8, burn_default=1e-5),
            AttrSpec("weight_decay", "float", OMITTED, minimum=0, torch_default=0.0, burn_default=0.0),
            *CLIP_ATTRS,
        ),
        torch_signature="torch.optim.Adam",
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
        '`observe(T, "label", values=True, every_checkpoint=False)`',
        "record value, grad and flags",
        "same; `flags.raw` is `{is_tracked, is_require_grad, is_autodiff}`",
        "records the tensor's values, gradient and flags",
        arg_dtypes=("any",),
        attrs=(
            AttrSpec("label", "str", ARG_NAME, positional=True, doc="the observation's label"),
            AttrSpec("values", "bool", True, doc="record values and gradient (False: flags only)"),
            AttrSpec(
                "every_checkpoint",
                "bool",
                False,
                doc="inside the timed loop: values and gradient at every checkpoint iteration, not only the "
                "loop's last (flags are recorded at every checkpoint either way)",
            ),
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


def _linear_fan_in(attrs: Mapping[str, AttrValue]) -> int:
    return int_attr(attrs, "d_in")


MODULES: Final[tuple[ModuleSpec, ...]] = (
    ModuleSpec(
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
                sides=frozenset({"burn"}),
            ),
        ),
        params=(
            ParamSpec("weight", "[d_out, d_in]", lambda a: [int_attr(a, "d_out"), int_attr(a, "d_in")], "fan_in"),
            ParamSpec("bias", "[d_out]", lambda a: [int_attr(a, "d_out")], "fan_in", when="bias"),
        ),
        call="linear",
        torch_class="torch.nn.Linear",
        fan_in=_linear_fan_in,
    ),
)
