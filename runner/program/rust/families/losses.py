"""Losses in the Rust reproducer: what `rust_probe/src/program/families/losses.rs` does, as code
(see the package docstring for how to add one): the loss module built from its config with a
`with_*` for each attribute given, `.init(&device)`, then `forward` (the mean)."""

from __future__ import annotations

from typing import Final

from .base import Call, Expr, Ty, literals

IMPORTS: Final = ("burn::nn::loss::CrossEntropyLossConfig",)


def cross_entropy(c: Call) -> Expr:
    logits, target = c.args
    if logits.ty.rank != 2:
        c.wrong_rank("burn's CrossEntropyLoss takes logits [N, C]", logits.ty.rank)
    if target.ty.rank != 1:
        c.refuse("the burn interpreter stops with `cross_entropy: burn's CrossEntropyLoss takes class indices [N]`")
    c.use("burn::nn::loss::CrossEntropyLossConfig")
    config = "CrossEntropyLossConfig::new()"
    if c.has("label_smoothing"):
        config += f".with_smoothing(Some({literals.f32(c.num('label_smoothing'))}))"
    # `reduction`: "mean" is what burn's module returns; "sum" and "none" never reach here
    # (the table's `burn_unsupported`: `render` refuses them first)
    return Expr(f"{config}.init({c.device}).forward({logits.expr}, {target.expr})", Ty(1))


OPS: Final = {"cross_entropy": cross_entropy}
