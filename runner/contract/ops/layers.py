"""Layers and activations: convolution, pooling, normalization, embedding, dropout, attention,
GELU, SiLU, LeakyReLU, softmax.

Each module kind is declared (`conv = Conv2d(3, 8, 3, padding=1)`) with torch's parameter names,
and called (`conv(x)`); what the program omits is omitted on both sides, so each framework
applies its own default (the `torch_default` / `burn_default` columns say which, and a test
reads them from the frameworks)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from .. import limits
from .spec import OMITTED, ArgDtype, AttrSpec, AttrValue, ModuleSpec, OpSpec, ParamSpec, ShapeRule, int_attr


def _ints(attrs: Mapping[str, AttrValue], *keys: str) -> list[int]:
    return [int_attr(attrs, k) for k in keys]


def _groups(attrs: Mapping[str, AttrValue]) -> int:
    return int_attr(attrs, "groups") if "groups" in attrs else 1


def _conv_fan_in(attrs: Mapping[str, AttrValue]) -> int:
    kernel = int_attr(attrs, "kernel_size")
    return int_attr(attrs, "in_channels") // _groups(attrs) * kernel * kernel


def _conv1d_fan_in(attrs: Mapping[str, AttrValue]) -> int:
    return int_attr(attrs, "in_channels") // _groups(attrs) * int_attr(attrs, "kernel_size")


def _divides(by: str, *keys: str) -> Callable[[Mapping[str, AttrValue]], str | None]:
    """The constraint that attribute `by` (when given) divides each of `keys`."""

    def check(attrs: Mapping[str, AttrValue]) -> str | None:
        if by not in attrs:
            return None
        d = int_attr(attrs, by)
        for key in keys:
            if int_attr(attrs, key) % d:
                return f"`{by}` ({d}) must divide `{key}` ({int_attr(attrs, key)})"
        return None

    return check


def _conv2d_weight(attrs: Mapping[str, AttrValue]) -> list[int]:
    kernel = int_attr(attrs, "kernel_size")
    return [int_attr(attrs, "out_channels"), int_attr(attrs, "in_channels") // _groups(attrs), kernel, kernel]


def _conv1d_weight(attrs: Mapping[str, AttrValue]) -> list[int]:
    kernel = int_attr(attrs, "kernel_size")
    return [int_attr(attrs, "out_channels"), int_attr(attrs, "in_channels") // _groups(attrs), kernel]


def _conv_attrs(kernel_doc: str) -> tuple[AttrSpec, ...]:
    return (
        AttrSpec("in_channels", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="input channels"),
        AttrSpec("out_channels", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="output channels"),
        AttrSpec("kernel_size", "int", positional=True, minimum=1, maximum=64, doc=kernel_doc),
        AttrSpec("stride", "int", OMITTED, minimum=1, maximum=64, torch_default=1, burn_default=1),
        AttrSpec(
            "padding", "int", OMITTED, minimum=0, maximum=64, torch_default=0, burn_default=0, doc="zeros on each side"
        ),
        AttrSpec("dilation", "int", OMITTED, minimum=1, maximum=64, torch_default=1, burn_default=1),
        AttrSpec("groups", "int", OMITTED, minimum=1, maximum=limits.MAX_DIM, torch_default=1, burn_default=1),
        AttrSpec("bias", "bool", OMITTED, torch_default=True, burn_default=True),
    )


_EPS = AttrSpec(
    "eps",
    "float",
    OMITTED,
    minimum=0,
    minimum_exclusive=True,
    maximum=1,
    torch_default=1e-5,
    burn_default=1e-5,
    doc="added to the variance",
)
_NO_AFFINE = (
    "burn's {config} has no such option: {params} always exist (ones and zeros, trained like any param); "
    "`affine=False` is omitted on the burn side, so its forward agrees and only what trains them differs"
)


def _one(key: str) -> ShapeRule:
    return lambda attrs: [int_attr(attrs, key)]


def _batch_norm(kind: str, source: str, rank_doc: str) -> ModuleSpec:
    return ModuleSpec(
        kind,
        source,
        f"`torch.nn.{source}(num_features, eps=1e-5, momentum=0.1, affine=True)` (x {rank_doc}); `train()`: "
        "the batch's statistics, running_var updated with the *unbiased* batch variance; `eval()`: the running ones",
        "`BatchNormConfig::new(num_features)` `.with_epsilon(eps)` `.with_momentum(m)` when given, `.init(&device)`, "
        "`bn.forward(x)`: the batch's statistics on an autodiff device while its `training` flag is on "
        "(`valid()` turns it off); running_var updated with the *biased* batch variance (burn-nn "
        "`modules/norm/batch.rs`, burn-backend `batch_norm_train`). "
        + _NO_AFFINE.format(config="BatchNormConfig", params="gamma and beta"),
        attrs=(
            AttrSpec("num_features", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="channels (dim 1)"),
            _EPS,
            AttrSpec(
                "momentum",
                "float",
                OMITTED,
                minimum=0,
                maximum=1,
                torch_default=0.1,
                burn_default=0.1,
                doc="the weight of the batch's statistics in the running ones",
            ),
            AttrSpec(
                "affine",
                "bool",
                OMITTED,
                torch_default=True,
                burn_default=True,
                doc="learnable weight and bias (burn: no such setting, gamma and beta always exist)",
            ),
        ),
        params=(
            ParamSpec("weight", "[C]", _one("num_features"), "ones", when="affine"),
            ParamSpec("bias", "[C]", _one("num_features"), "zeros", when="affine"),
            ParamSpec("running_mean", "[C]", _one("num_features"), "zeros", role="buffer"),
            ParamSpec("running_var", "[C]", _one("num_features"), "ones", role="buffer"),
        ),
        call=kind,
        torch_class=f"torch.nn.{source}",
    )


def _mha_in_proj(attrs: Mapping[str, AttrValue]) -> list[int]:
    d = int_attr(attrs, "embed_dim")
    return [3 * d, d]


def _mha_square(attrs: Mapping[str, AttrValue]) -> list[int]:
    d = int_attr(attrs, "embed_dim")
    return [d, d]


MODULES: Final[tuple[ModuleSpec, ...]] = (
    ModuleSpec(
        "conv2d",
        "Conv2d",
        "`torch.nn.Conv2d(in, out, k, stride=, padding=, dilation=, groups=, bias=)`: weight `[out, in/groups, k, k]`",
        "`Conv2dConfig::new([in, out], [k, k])` `.with_stride([s, s])` `.with_padding(PaddingConfig2d::Explicit(p, p))` "
        "`.with_dilation([d, d])` `.with_groups(g)` `.with_bias(b)`, each only when given; weight `[out, in/groups, k, k]` "
        "as torch's",
        attrs=_conv_attrs("the square kernel's side"),
        params=(
            ParamSpec("weight", "[out, in/groups, k, k]", _conv2d_weight, "fan_in"),
            ParamSpec("bias", "[out]", lambda a: [int_attr(a, "out_channels")], "fan_in", when="bias"),
        ),
        call="conv2d",
        torch_class="torch.nn.Conv2d",
        fan_in=_conv_fan_in,
        constraint=_divides("groups", "in_channels", "out_channels"),
    ),
    ModuleSpec(
        "conv1d",
        "Conv1d",
        "`torch.nn.Conv1d(in, out, k, stride=, padding=, dilation=, groups=, bias=)`: weight `[out, in/groups, k]`",
        "`Conv1dConfig::new(in, out, k)` `.with_stride(s)` `.with_padding(PaddingConfig1d::Explicit(p, p))` "
        "`.with_dilation(d)` `.with_groups(g)` `.with_bias(b)`, each only when given; weight `[out, in/groups, k]` "
        "as torch's",
        attrs=_conv_attrs("the kernel's length"),
        params=(
            ParamSpec("weight", "[out, in/groups, k]", _conv1d_weight, "fan_in"),
            ParamSpec("bias", "[out]", lambda a: [int_attr(a, "out_channels")], "fan_in", when="bias"),
        ),
        call="conv1d",
        torch_class="torch.nn.Conv1d",
        fan_in=_conv1d_fan_in,
        constraint=_divides("groups", "in_channels", "out_channels"),
    ),
    _batch_norm("batch_norm1d", "BatchNorm1d", "`[N, C]` or `[N, C, L]`"),
    _batch_norm("batch_norm2d", "BatchNorm2d", "`[N, C, H, W]`"),
    ModuleSpec(
        "layer_norm",
        "LayerNorm",
        "`torch.nn.LayerNorm(d, eps=1e-5, elementwise_affine=True)`: over the last dim",
        "`LayerNormConfig::new(d)` `.with_epsilon(eps)` when given; `elementwise_affine=False`: `.with_bias(false)` "
        "(burn's LayerNorm always has gamma: ones, trained like any param), `.init(&device)`, `ln.forward(x)`",
        attrs=(
            AttrSpec(
                "normalized_shape",
                "int",
                positional=True,
                minimum=1,
                maximum=limits.MAX_DIM,
                doc="the size of the last dim (the one normalized)",
            ),
            _EPS,
            AttrSpec(
                "elementwise_affine",
                "bool",
                OMITTED,
                torch_default=True,
                burn_default=True,
                doc="learnable weight and bias (burn: gamma always, beta optional)",
            ),
        ),
        params=(
            ParamSpec("weight", "[d]", _one("normalized_shape"), "ones", when="elementwise_affine"),
            ParamSpec("bias", "[d]", _one("normalized_shape"), "zeros", when="elementwise_affine"),
        ),
        call="layer_norm",
        torch_class="torch.nn.LayerNorm",
    ),
    ModuleSpec(
        "group_norm",
        "GroupNorm",
        "`torch.nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=True)` (x `[N, C, ...]`)",
        "`GroupNormConfig::new(num_groups, num_channels)` `.with_epsilon(eps)` `.with_affine(a)` when given, "
        "`.init(&device)`, `gn.forward(x)`",
        attrs=(
            AttrSpec("num_groups", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="groups of channels"),
            AttrSpec("num_channels", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="channels (dim 1)"),
            _EPS,
            AttrSpec("affine", "bool", OMITTED, torch_default=True, burn_default=True, doc="learnable weight and bias"),
        ),
        params=(
            ParamSpec("weight", "[C]", _one("num_channels"), "ones", when="affine"),
            ParamSpec("bias", "[C]", _one("num_channels"), "zeros", when="affine"),
        ),
        call="group_norm",
        torch_class="torch.nn.GroupNorm",
        constraint=_divides("num_groups", "num_channels"),
    ),
    ModuleSpec(
        "embedding",
        "Embedding",
        "`torch.nn.Embedding(num_embeddings, embedding_dim, padding_idx=None)`: weight `[num, dim]` standard normal, "
        "the `padding_idx` row zeroed at init and given no gradient",
        "`EmbeddingConfig::new(num, dim).init(&device)`, `emb.forward(ids)` (ids `[N, L]`; a port unsqueezes `[L]`): "
        "burn's Embedding has no padding index, so a port omits it: the row starts at zero (the shared data "
        "zeroes it, as torch's init does) but gets its gradient and is trained",
        attrs=(
            AttrSpec("num_embeddings", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="rows"),
            AttrSpec("embedding_dim", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="columns"),
            AttrSpec(
                "padding_idx",
                "int",
                OMITTED,
                minimum=-limits.MAX_DIM,
                maximum=limits.MAX_DIM,
                doc="the row that stays zero and gets no gradient (torch only; negative counts from the end)",
            ),
        ),
        params=(
            ParamSpec(
                "weight",
                "[num, dim]",
                lambda a: _ints(a, "num_embeddings", "embedding_dim"),
                "normal",
                zero_row="padding_idx",
            ),
        ),
        call="embedding",
        torch_class="torch.nn.Embedding",
    ),
    ModuleSpec(
        "dropout",
        "Dropout",
        "`torch.nn.Dropout(p=0.5)`: in `train()` each element is zeroed with probability p and the rest scaled by "
        "1/(1-p) (torch's generator); `eval()`: the identity",
        "`DropoutConfig::new(p).init()`, `drop.forward(x)`: `p` has no default in burn (a port writes torch's 0.5); "
        "random (burn's generator) only on an autodiff device while its `training` flag is on (`valid()` turns it "
        "off); `p = 1` panics at `init` (burn takes [0, 1))",
        attrs=(
            AttrSpec(
                "p",
                "float",
                OMITTED,
                minimum=0,
                maximum=1,
                torch_default=0.5,
                burn_writes_torch_default=True,
                doc="the probability of zeroing an element (burn: required, the port writes torch's 0.5)",
            ),
        ),
        params=(),
        call="dropout",
        torch_class="torch.nn.Dropout",
    ),
    ModuleSpec(
        "multihead_attention",
        "MultiheadAttention",
        "`torch.nn.MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False)`: one fused "
        "`in_proj_weight` `[3d, d]` (query, key, value rows) and `in_proj_bias` `[3d]`, `out_proj` a Linear; "
        "inputs `[L, N, d]` unless `batch_first`",
        "`MultiHeadAttentionConfig::new(d, heads)` `.with_dropout(p)` when given (burn's default **0.1**), "
        "`bias`: `.with_query_bias(b)` `.with_key_bias(b)` `.with_value_bias(b)` `.with_output_bias(b)`, "
        "`.init(&device)`; separate `query`, `key`, `value`, `output` Linears (weight `[d_in, d_out]`: the port "
        "splits `in_proj_weight` in three and transposes each); always batch first (the port swaps dims 0 and 1 "
        "when torch's `batch_first` is False)",
        attrs=(
            AttrSpec("embed_dim", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="the model's width"),
            AttrSpec(
                "num_heads",
                "int",
                positional=True,
                minimum=1,
                maximum=limits.MAX_DIM,
                doc="heads (must divide embed_dim)",
            ),
            AttrSpec(
                "dropout",
                "float",
                OMITTED,
                minimum=0,
                maximum=1,
                maximum_exclusive=True,
                torch_default=0.0,
                burn_default=0.1,
                doc="dropout of the attention weights in training",
            ),
            AttrSpec("bias", "bool", OMITTED, torch_default=True, burn_default=True, doc="biases of the projections"),
            AttrSpec(
                "batch_first",
                "bool",
                OMITTED,
                torch_default=False,
                burn_writes_torch_default=True,
                doc="inputs `[N, L, d]` rather than `[L, N, d]` (burn: always batch first)",
            ),
        ),
        params=(
            ParamSpec("in_proj_weight", "[3d, d]", _mha_in_proj, "fan_in"),
            ParamSpec("in_proj_bias", "[3d]", lambda a: [3 * int_attr(a, "embed_dim")], "zeros", when="bias"),
            ParamSpec("out_proj_weight", "[d, d]", _mha_square, "fan_in", torch_path="out_proj.weight"),
            ParamSpec("out_proj_bias", "[d]", _one("embed_dim"), "zeros", when="bias", torch_path="out_proj.bias"),
        ),
        call="multihead_attention",
        torch_class="torch.nn.MultiheadAttention",
        fan_in=lambda a: int_attr(a, "embed_dim"),
        constraint=_divides("num_heads", "embed_dim"),
    ),
)


def _module_call(
    name: str, source: str, torch: str, burn: str, summary: str, arg_dtypes: tuple[ArgDtype, ...] = ()
) -> OpSpec:
    return OpSpec(
        name,
        "layer",
        ("module", "tensor"),
        "tensor",
        source,
        torch,
        burn,
        summary,
        differentiable=True,
        family="layers",
        module=name,
        arg_dtypes=arg_dtypes,
    )


_KERNEL = AttrSpec("kernel_size", "int", positional=True, minimum=1, maximum=64, doc="the square window's side")
_POOL_STRIDE = AttrSpec(
    "stride",
    "int",
    OMITTED,
    minimum=1,
    maximum=64,
    torch_default="kernel_size",
    burn_default="kernel_size",
    doc="the window's step",
)
_POOL_PADDING = AttrSpec(
    "padding",
    "int",
    OMITTED,
    minimum=0,
    maximum=32,
    torch_default=0,
    burn_default=0,
    doc="on each side (at most half the kernel)",
)
_SOFTMAX_DIM = AttrSpec(
    "dim", "int", positional=True, minimum=-limits.MAX_RANK, maximum=limits.MAX_RANK - 1, doc="the dimension"
)

SPECS: Final[tuple[OpSpec, ...]] = (
    _module_call("conv2d", "`conv(x)`", "`conv(x)` (x `[N, C, H, W]`)", "`conv.forward(x)`", "applies a Conv2d module"),
    _module_call("conv1d", "`conv(x)`", "`conv(x)` (x `[N, C, L]`)", "`conv.forward(x)`", "applies a Conv1d module"),
    _module_call(
        "batch_norm1d",
        "`bn(x)`",
        "`bn(x)` (x `[N, C]` or `[N, C, L]`)",
        "`bn.forward(x)`",
        "applies a BatchNorm1d module (updates its running statistics in training mode)",
    ),
    _module_call(
        "batch_norm2d",
        "`bn(x)`",
        "`bn(x)` (x `[N, C, H, W]`)",
        "`bn.forward(x)`",
        "applies a BatchNorm2d module (updates its running statistics in training mode)",
    ),
    _module_call("layer_norm", "`ln(x)`", "`ln(x)`", "`ln.forward(x)`", "applies a LayerNorm module"),
    _module_call("group_norm", "`gn(x)`", "`gn(x)` (x `[N, C, ...]`)", "`gn.forward(x)`", "applies a GroupNorm module"),
    _module_call(
        "embedding",
        "`emb(ids)`",
        "`emb(ids)` (int ids, any shape)",
        "`emb.forward(ids)` (ids `[N, L]`; `[L]`: `emb.forward(ids.unsqueeze()).squeeze_dim(0)`)",
        "looks rows of an Embedding up",
        arg_dtypes=("int",),
    ),
    _module_call(
        "dropout", "`drop(x)`", "`drop(x)`", "`drop.forward(x)`", "applies a Dropout module (random in training mode)"
    ),
    OpSpec(
        "multihead_attention",
        "layer",
        ("module", "tensor", "tensor", "tensor"),
        "tensor",
        "`mha(q, k, v)`, `mha(q, k, v, mask)`",
        "`mha(q, k, v, attn_mask=mask, need_weights=False)[0]` (mask: bool `[L, S]`, True: not attended)",
        "`mha.forward(MhaInput::new(q, k, v).mask_attn(mask.unsqueeze().expand([n, l, s]))).context`; a masked "
        "score is filled with burn's `min_float` -1e4 (torch: -inf)",
        "applies a MultiheadAttention module: the attention output, without the weights",
        differentiable=True,
        family="layers",
        module="multihead_attention",
        max_args=5,
        arg_dtypes=("float", "float", "float", "bool"),
    ),
    OpSpec(
        "gelu",
        "layer",
        ("tensor",),
        "tensor",
        "`gelu(T, approximate=)`",
        "`torch.nn.functional.gelu(t, approximate=...)` (default `'none'`: exact)",
        "`activation::gelu(t)` (exact); `approximate='tanh'`: `activation::gelu_approximate(t)`",
        "GELU, exact or with the tanh approximation",
        attrs=(
            AttrSpec(
                "approximate",
                "str",
                OMITTED,
                choices=("none", "tanh"),
                enum="GeluApproximate",
                torch_default="none",
                burn_default="none",
                doc="the tanh approximation or the exact erf form",
            ),
        ),
        differentiable=True,
        family="layers",
        torch_call="torch.nn.functional.gelu",
    ),
    OpSpec(
        "silu",
        "layer",
        ("tensor",),
        "tensor",
        "`silu(T)`",
        "`torch.nn.functional.silu(t)`",
        "`activation::silu(t)`",
        "SiLU (x * sigmoid(x))",
        differentiable=True,
        family="layers",
        torch_call="torch.nn.functional.silu",
    ),
    OpSpec(
        "leaky_relu",
        "layer",
        ("tensor",),
        "tensor",
        "`leaky_relu(T, negative_slope=)`",
        "`torch.nn.functional.leaky_relu(t, negative_slope=0.01)`",
        "`LeakyReluConfig::new()` `.with_negative_slope(s)` when given, `.init().forward(t)` (default 0.01); "
        "at exactly 0 its gradient is 1 (torch's: the slope)",
        "LeakyReLU",
        attrs=(
            AttrSpec(
                "negative_slope",
                "float",
                OMITTED,
                minimum=-1e6,
                maximum=1e6,
                torch_default=0.01,
                burn_default=0.01,
                doc="the slope below zero",
            ),
        ),
        differentiable=True,
        kinks=(0.0,),
        family="layers",
        torch_call="torch.nn.functional.leaky_relu",
    ),
    OpSpec(
        "softmax",
        "layer",
        ("tensor",),
        "tensor",
        "`softmax(T, dim)`",
        "`torch.nn.functional.softmax(t, dim=d)`",
        "`activation::softmax(t, d)` (a negative `d` counts from the end)",
        "softmax along a dim",
        attrs=(_SOFTMAX_DIM,),
        differentiable=True,
        family="layers",
        torch_call="torch.nn.functional.softmax",
    ),
    OpSpec(
        "log_softmax",
        "layer",
        ("tensor",),
        "tensor",
        "`log_softmax(T, dim)`",
        "`torch.nn.functional.log_softmax(t, dim=d)`",
        "`activation::log_softmax(t, d)`",
        "log-softmax along a dim",
        attrs=(_SOFTMAX_DIM,),
        differentiable=True,
        family="layers",
        torch_call="torch.nn.functional.log_softmax",
    ),
    OpSpec(
        "max_pool2d",
        "layer",
        ("tensor",),
        "tensor",
        "`max_pool2d(T, kernel_size, stride=, padding=, dilation=)`",
        "`torch.nn.functional.max_pool2d(x, kernel_size, stride=, padding=, dilation=)` (x `[N, C, H, W]`)",
        "`MaxPool2dConfig::new([k, k])` `.with_strides([s, s])` `.with_padding(PaddingConfig2d::Explicit(p, p, p, p))` "
        "`.with_dilation([d, d])` when given, `.init().forward(x)`",
        "max pooling over square windows",
        attrs=(
            _KERNEL,
            _POOL_STRIDE,
            _POOL_PADDING,
            AttrSpec("dilation", "int", OMITTED, minimum=1, maximum=16, torch_default=1, burn_default=1),
        ),
        differentiable=True,
        family="layers",
        torch_call="torch.nn.functional.max_pool2d",
    ),
    OpSpec(
        "avg_pool2d",
        "layer",
        ("tensor",),
        "tensor",
        "`avg_pool2d(T, kernel_size, stride=, padding=, count_include_pad=)`",
        "`torch.nn.functional.avg_pool2d(x, kernel_size, stride=, padding=, count_include_pad=True)`",
        "`AvgPool2dConfig::new([k, k])` `.with_strides([s, s])` `.with_padding(PaddingConfig2d::Explicit(p, p, p, p))` "
        "`.with_count_include_pad(c)` when given (default true), `.init().forward(x)`",
        "average pooling over square windows",
        attrs=(
            _KERNEL,
            _POOL_STRIDE,
            _POOL_PADDING,
            AttrSpec(
                "count_include_pad",
                "bool",
                OMITTED,
                torch_default=True,
                burn_default=True,
                doc="the padding zeros count in the average",
            ),
        ),
        differentiable=True,
        family="layers",
        torch_call="torch.nn.functional.avg_pool2d",
    ),
    OpSpec(
        "adaptive_avg_pool2d",
        "layer",
        ("tensor",),
        "tensor",
        "`adaptive_avg_pool2d(T, output_size)`",
        "`torch.nn.functional.adaptive_avg_pool2d(x, output_size)`",
        "`AdaptiveAvgPool2dConfig::new([o, o]).init().forward(x)`",
        "average pooling to a square output size",
        attrs=(
            AttrSpec("output_size", "int", positional=True, minimum=1, maximum=limits.MAX_DIM, doc="the output's side"),
        ),
        differentiable=True,
        family="layers",
        torch_call="torch.nn.functional.adaptive_avg_pool2d",
    ),
)
