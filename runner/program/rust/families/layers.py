"""Layers and activations in the Rust reproducer: what `rust_probe/src/program/families/layers.rs`
does, as code (see the package docstring for how to add one)."""

from __future__ import annotations

from typing import Final

from .base import Call, Declaration, Expr, ModuleRendering, ModuleTensor, Ty, block, literals

IMPORTS: Final = (
    "burn::nn::conv::Conv2d",
    "burn::nn::conv::Conv2dConfig",
    "burn::nn::conv::Conv1d",
    "burn::nn::conv::Conv1dConfig",
    "burn::nn::PaddingConfig2d",
    "burn::nn::PaddingConfig1d",
    "burn::nn::BatchNorm",
    "burn::nn::BatchNormConfig",
    "burn::nn::LayerNorm",
    "burn::nn::LayerNormConfig",
    "burn::nn::GroupNorm",
    "burn::nn::GroupNormConfig",
    "burn::nn::Embedding",
    "burn::nn::EmbeddingConfig",
    "burn::nn::Dropout",
    "burn::nn::DropoutConfig",
    "burn::nn::LeakyReluConfig",
    "burn::nn::attention::MhaInput",
    "burn::nn::attention::MultiHeadAttention",
    "burn::nn::attention::MultiHeadAttentionConfig",
    "burn::nn::pool::MaxPool2dConfig",
    "burn::nn::pool::AvgPool2dConfig",
    "burn::nn::pool::AdaptiveAvgPool2dConfig",
    "burn::tensor::activation",
)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _conv2d_config(d: Declaration) -> str:
    """`layers::build`'s Conv2d: a `with_*` for each attribute given, in its order."""
    i, o, k = d.integer("in_channels"), d.integer("out_channels"), d.integer("kernel_size")
    config = f"Conv2dConfig::new([{i}, {o}], [{k}, {k}])"
    if d.has("stride"):
        s = d.integer("stride")
        config += f".with_stride([{s}, {s}])"
    if d.has("padding"):
        d.use("burn::nn::PaddingConfig2d")
        p = d.integer("padding")
        config += f".with_padding(PaddingConfig2d::Explicit({p}, {p}, {p}, {p}))"
    if d.has("dilation"):
        n = d.integer("dilation")
        config += f".with_dilation([{n}, {n}])"
    if d.has("groups"):
        config += f".with_groups({d.integer('groups')})"
    if d.has("bias"):
        config += f".with_bias({'true' if d.flag('bias') else 'false'})"
    return config


def _conv1d_config(d: Declaration) -> str:
    """`layers::build`'s Conv1d."""
    i, o, k = d.integer("in_channels"), d.integer("out_channels"), d.integer("kernel_size")
    config = f"Conv1dConfig::new({i}, {o}, {k})"
    if d.has("stride"):
        config += f".with_stride({d.integer('stride')})"
    if d.has("padding"):
        d.use("burn::nn::PaddingConfig1d")
        p = d.integer("padding")
        config += f".with_padding(PaddingConfig1d::Explicit({p}, {p}))"
    if d.has("dilation"):
        config += f".with_dilation({d.integer('dilation')})"
    if d.has("groups"):
        config += f".with_groups({d.integer('groups')})"
    if d.has("bias"):
        config += f".with_bias({_bool(d.flag('bias'))})"
    return config


def _batch_norm_config(d: Declaration) -> str:
    """`layers::batch_norm`: `affine=False` has no burn spelling (gamma and beta stay: ones and
    zeros, trained like any param)."""
    config = f"BatchNormConfig::new({d.integer('num_features')})"
    if d.has("eps"):
        config += f".with_epsilon({literals.f64(d.num('eps'))})"
    if d.has("momentum"):
        config += f".with_momentum({literals.f64(d.num('momentum'))})"
    return config


def _layer_norm_config(d: Declaration) -> str:
    """`layers::build`'s LayerNorm: burn's always has gamma; without torch's affine the port drops beta."""
    config = f"LayerNormConfig::new({d.integer('normalized_shape')})"
    if d.has("eps"):
        config += f".with_epsilon({literals.f64(d.num('eps'))})"
    if d.has("elementwise_affine") and not d.flag("elementwise_affine"):
        config += ".with_bias(false)"
    return config


def _group_norm_config(d: Declaration) -> str:
    config = f"GroupNormConfig::new({d.integer('num_groups')}, {d.integer('num_channels')})"
    if d.has("eps"):
        config += f".with_epsilon({literals.f64(d.num('eps'))})"
    if d.has("affine"):
        config += f".with_affine({_bool(d.flag('affine'))})"
    return config


def _embedding_config(d: Declaration) -> str:
    """burn's Embedding has no padding index: the port omits `padding_idx`."""
    return f"EmbeddingConfig::new({d.integer('num_embeddings')}, {d.integer('embedding_dim')})"


def _dropout_config(d: Declaration) -> str:
    """`DropoutConfig::new` takes the probability: burn has no default, the port writes torch's 0.5."""
    return f"DropoutConfig::new({literals.f64(d.num('p') if d.has('p') else 0.5)})"


def _mha_config(d: Declaration) -> str:
    config = f"MultiHeadAttentionConfig::new({d.integer('embed_dim')}, {d.integer('num_heads')})"
    if d.has("dropout"):
        config += f".with_dropout({literals.f64(d.num('dropout'))})"
    if d.has("bias"):
        b = _bool(d.flag("bias"))
        config += f".with_query_bias({b}).with_key_bias({b}).with_value_bias({b}).with_output_bias({b})"
    return config


def _norm_tensors(weight: str, bias: str) -> tuple[ModuleTensor, ...]:
    """weight -> gamma, bias -> beta (each a `param` or an `optional`)."""
    return (
        ModuleTensor("weight", "gamma", "optional" if weight == "optional" else "param"),
        ModuleTensor("bias", "beta", "optional" if bias == "optional" else "param"),
    )


_BATCH_NORM = ModuleRendering(
    "BatchNorm",
    _batch_norm_config,
    (
        *_norm_tensors("param", "param"),
        ModuleTensor("running_mean", "running_mean", "running"),
        ModuleTensor("running_var", "running_var", "running"),
    ),
    imports=("burn::nn::BatchNorm", "burn::nn::BatchNormConfig"),
)

MODULES: Final[dict[str, ModuleRendering]] = {
    "conv2d": ModuleRendering(
        "Conv2d",
        _conv2d_config,
        (ModuleTensor("weight", "weight"), ModuleTensor("bias", "bias", "optional")),
        imports=("burn::nn::conv::Conv2d", "burn::nn::conv::Conv2dConfig"),
    ),
    "conv1d": ModuleRendering(
        "Conv1d",
        _conv1d_config,
        (ModuleTensor("weight", "weight"), ModuleTensor("bias", "bias", "optional")),
        imports=("burn::nn::conv::Conv1d", "burn::nn::conv::Conv1dConfig"),
    ),
    "batch_norm1d": _BATCH_NORM,
    "batch_norm2d": _BATCH_NORM,
    "layer_norm": ModuleRendering(
        "LayerNorm",
        _layer_norm_config,
        _norm_tensors("param", "optional"),
        imports=("burn::nn::LayerNorm", "burn::nn::LayerNormConfig"),
    ),
    "group_norm": ModuleRendering(
        "GroupNorm",
        _group_norm_config,
        _norm_tensors("optional", "optional"),
        imports=("burn::nn::GroupNorm", "burn::nn::GroupNormConfig"),
    ),
    "embedding": ModuleRendering(
        "Embedding",
        _embedding_config,
        (ModuleTensor("weight", "weight"),),
        imports=("burn::nn::Embedding", "burn::nn::EmbeddingConfig"),
    ),
    "dropout": ModuleRendering(
        "Dropout",
        _dropout_config,
        (),
        imports=("burn::nn::Dropout", "burn::nn::DropoutConfig"),
        init_takes_device=False,
    ),
    "multihead_attention": ModuleRendering(
        "MultiHeadAttention",
        _mha_config,
        (
            # torch's fused [3d, d] in_proj: three burn Linears, each weight [d_in, d_out]
            ModuleTensor(
                "in_proj_weight",
                "",
                transposed=True,
                parts=("query.weight", "key.weight", "value.weight"),
                join_dim=1,
            ),
            ModuleTensor("in_proj_bias", "", "optional", parts=("query.bias", "key.bias", "value.bias")),
            ModuleTensor("out_proj_weight", "output.weight", transposed=True),
            ModuleTensor("out_proj_bias", "output.bias", "optional"),
        ),
        imports=("burn::nn::attention::MultiHeadAttention", "burn::nn::attention::MultiHeadAttentionConfig"),
    ),
}


# ---- module calls (`layers::module_call`) ----------------------------------------------------


def conv2d(c: Call) -> Expr:
    (x,) = c.args
    if x.ty.rank != 4:
        c.wrong_rank("a Conv2d takes [N, C, H, W]", x.ty.rank)
    return Expr(f"{c.module}.forward({x.expr})", Ty(4))


def conv1d(c: Call) -> Expr:
    (x,) = c.args
    if x.ty.rank != 3:
        c.wrong_rank("a Conv1d takes [N, C, L]", x.ty.rank)
    return Expr(f"{c.module}.forward({x.expr})", Ty(3))


def batch_norm1d(c: Call) -> Expr:
    (x,) = c.args
    if x.ty.rank not in (2, 3):
        c.wrong_rank("a BatchNorm1d takes [N, C] or [N, C, L]", x.ty.rank)
    return Expr(f"{c.module}.forward({x.expr})", Ty(x.ty.rank))


def batch_norm2d(c: Call) -> Expr:
    (x,) = c.args
    if x.ty.rank != 4:
        c.wrong_rank("a BatchNorm2d takes [N, C, H, W]", x.ty.rank)
    return Expr(f"{c.module}.forward({x.expr})", Ty(4))


def layer_norm(c: Call) -> Expr:
    (x,) = c.args
    return Expr(f"{c.module}.forward({x.expr})", Ty(x.ty.rank))


def group_norm(c: Call) -> Expr:
    (x,) = c.args
    if x.ty.rank == 1:
        c.wrong_rank("a GroupNorm takes [N, C, ...]", 1)
    return Expr(f"{c.module}.forward({x.expr})", Ty(x.ty.rank))


def dropout(c: Call) -> Expr:
    """Random in training mode: burn's generator (the interpreter's run draws from it in its own
    process, so only the shape and the outcome can be compared there)."""
    (x,) = c.args
    return Expr(f"{c.module}.forward({x.expr})", Ty(x.ty.rank))


def embedding(c: Call) -> Expr:
    (ids,) = c.args  # an int tensor (the table's `arg_dtypes`, checked when the program is read)
    if ids.ty.rank == 1:
        # burn's Embedding takes [N, L]: the port unsqueezes [L] and squeezes the result
        return Expr(f"{c.module}.forward({ids.expr}.unsqueeze::<2>()).squeeze_dim::<2>(0)", Ty(2))
    if ids.ty.rank != 2:
        c.wrong_rank("burn's Embedding takes ids [N, L] (or [L])", ids.ty.rank)
    return Expr(f"{c.module}.forward({ids.expr})", Ty(3))


def multihead_attention(c: Call) -> Expr:
    """burn's MultiHeadAttention is always batch first: without torch's `batch_first` the port
    swaps dims 0 and 1 around the call; a bool mask `[L, S]` is expanded to `[N, L, S]`."""
    q, k, v, *mask = c.args
    for x in (q, k, v):
        if x.ty.rank != 3:
            c.wrong_rank("MultiheadAttention takes [L, N, d] (batch_first: [N, L, d])", x.ty.rank)
    c.use("burn::nn::attention::MhaInput")
    batch_first = c.module_attrs.get("batch_first", False) is True
    swap = "" if batch_first else ".swap_dims(0, 1)"
    if not mask:
        return Expr(
            f"{c.module}.forward(MhaInput::new({q.expr}{swap}, {k.expr}{swap}, {v.expr}{swap})).context{swap}", Ty(3)
        )
    (m,) = mask
    if m.ty.dtype != "bool" or m.ty.rank != 2:
        c.refuse(
            f"the burn interpreter stops with `multihead_attention: the port takes a bool attention mask [L, S], "
            f"got a rank-{m.ty.rank} one`"
        )
    text = block(
        [
            # every operand first, in the interpreter's order
            f"let (query, key, value, mask) = ({q.expr}{swap}, {k.expr}{swap}, {v.expr}{swap}, {m.expr});",
            "let [n, l, _] = query.dims();",
            "let s = key.dims()[1];",
            "let input = MhaInput::new(query, key, value).mask_attn(mask.unsqueeze::<3>().expand([n, l, s]));",
        ],
        f"{c.module}.forward(input).context{swap}",
    )
    return Expr(text, Ty(3))


# ---- activations and pooling -------------------------------------------------------------------


def gelu(c: Call) -> Expr:
    (x,) = c.args
    c.use("burn::tensor::activation")
    function = "gelu_approximate" if c.has("approximate") and c.text("approximate") == "tanh" else "gelu"
    return Expr(f"activation::{function}({x.expr})", Ty(x.ty.rank))


def silu(c: Call) -> Expr:
    (x,) = c.args
    c.use("burn::tensor::activation")
    return Expr(f"activation::silu({x.expr})", Ty(x.ty.rank))


def leaky_relu(c: Call) -> Expr:
    (x,) = c.args
    c.use("burn::nn::LeakyReluConfig")
    config = "LeakyReluConfig::new()"
    if c.has("negative_slope"):
        config += f".with_negative_slope({literals.f64(c.num('negative_slope'))})"
    return Expr(f"{config}.init().forward({x.expr})", Ty(x.ty.rank))


def softmax(c: Call) -> Expr:
    """The dim as given: burn's `softmax` takes a negative one as torch does (out of range: burn
    panics, as in the interpreter)."""
    (x,) = c.args
    c.use("burn::tensor::activation")
    return Expr(f"activation::softmax({x.expr}, {c.integer('dim')})", Ty(x.ty.rank))


def log_softmax(c: Call) -> Expr:
    (x,) = c.args
    c.use("burn::tensor::activation")
    return Expr(f"activation::log_softmax({x.expr}, {c.integer('dim')})", Ty(x.ty.rank))


def _pool_input(c: Call) -> str:
    (x,) = c.args
    if x.ty.rank != 4:
        c.wrong_rank("burn's 2-d pooling takes [N, C, H, W]", x.ty.rank)
    return x.expr


def _strides_and_padding(c: Call) -> str:
    config = ""
    if c.has("stride"):
        s = c.integer("stride")
        config += f".with_strides([{s}, {s}])"
    if c.has("padding"):
        c.use("burn::nn::PaddingConfig2d")
        p = c.integer("padding")
        config += f".with_padding(PaddingConfig2d::Explicit({p}, {p}, {p}, {p}))"
    return config


def max_pool2d(c: Call) -> Expr:
    x = _pool_input(c)
    c.use("burn::nn::pool::MaxPool2dConfig")
    k = c.integer("kernel_size")
    config = f"MaxPool2dConfig::new([{k}, {k}])" + _strides_and_padding(c)
    if c.has("dilation"):
        d = c.integer("dilation")
        config += f".with_dilation([{d}, {d}])"
    return Expr(f"{config}.init().forward({x})", Ty(4))


def avg_pool2d(c: Call) -> Expr:
    x = _pool_input(c)
    c.use("burn::nn::pool::AvgPool2dConfig")
    k = c.integer("kernel_size")
    config = f"AvgPool2dConfig::new([{k}, {k}])" + _strides_and_padding(c)
    if c.has("count_include_pad"):
        config += f".with_count_include_pad({_bool(c.flag('count_include_pad'))})"
    return Expr(f"{config}.init().forward({x})", Ty(4))


def adaptive_avg_pool2d(c: Call) -> Expr:
    x = _pool_input(c)
    c.use("burn::nn::pool::AdaptiveAvgPool2dConfig")
    o = c.integer("output_size")
    return Expr(f"AdaptiveAvgPool2dConfig::new([{o}, {o}]).init().forward({x})", Ty(4))


OPS: Final = {
    "conv2d": conv2d,
    "conv1d": conv1d,
    "batch_norm1d": batch_norm1d,
    "batch_norm2d": batch_norm2d,
    "layer_norm": layer_norm,
    "group_norm": group_norm,
    "embedding": embedding,
    "dropout": dropout,
    "multihead_attention": multihead_attention,
    "gelu": gelu,
    "silu": silu,
    "leaky_relu": leaky_relu,
    "softmax": softmax,
    "log_softmax": log_softmax,
    "max_pool2d": max_pool2d,
    "avg_pool2d": avg_pool2d,
    "adaptive_avg_pool2d": adaptive_avg_pool2d,
}
