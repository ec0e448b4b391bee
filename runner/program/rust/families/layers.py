"""Layers and activations in the Rust reproducer: what `rust_probe/src/program/families/layers.rs`
does, as code (see the package docstring for how to add one)."""

from __future__ import annotations

from typing import Final

from .base import Call, Declaration, Expr, ModuleRendering, ModuleTensor, Ty

IMPORTS: Final = (
    "burn::nn::conv::Conv2d",
    "burn::nn::conv::Conv2dConfig",
    "burn::nn::PaddingConfig2d",
    "burn::tensor::activation",
)


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


MODULES: Final[dict[str, ModuleRendering]] = {
    "conv2d": ModuleRendering(
        "Conv2d",
        _conv2d_config,
        (ModuleTensor("weight", "weight"), ModuleTensor("bias", "bias", "optional")),
        imports=("burn::nn::conv::Conv2d", "burn::nn::conv::Conv2dConfig"),
    ),
}


def conv2d(c: Call) -> Expr:
    (x,) = c.args
    if x.ty.rank != 4:
        c.wrong_rank("a Conv2d takes [N, C, H, W]", x.ty.rank)
    return Expr(f"{c.module}.forward({x.expr})", Ty(4))


def gelu(c: Call) -> Expr:
    (x,) = c.args
    c.use("burn::tensor::activation")
    function = "gelu_approximate" if c.has("approximate") and c.text("approximate") == "tanh" else "gelu"
    return Expr(f"activation::{function}({x.expr})", Ty(x.ty.rank))


OPS: Final = {"conv2d": conv2d, "gelu": gelu}
