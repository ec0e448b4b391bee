"""Losses in the Rust reproducer: what `rust_probe/src/program/families/losses.rs` does, as code
(see the package docstring for how to add one): the loss module built from its config with a
`with_*` for each attribute given, then `forward`. Where the module's `forward` takes a
`Reduction` (MSE, Huber, smooth L1) the port passes torch's (burn has no default), and `none` is
its unreduced form; burn has no NLL loss, so the port writes it with `gather`."""

from __future__ import annotations

from typing import Final

from .base import Arg, Call, Expr, Ty, block, literals

IMPORTS: Final = (
    "burn::nn::loss::CrossEntropyLossConfig",
    "burn::nn::loss::MseLoss",
    "burn::nn::loss::HuberLossConfig",
    "burn::nn::loss::SmoothL1LossConfig",
    "burn::nn::loss::BinaryCrossEntropyLossConfig",
    "burn::nn::loss::Reduction",
)


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


def _one_rank(c: Call, a: Arg, b: Arg) -> None:
    """burn's loss modules take an input and a target of one rank `D` (the interpreter's outcome
    is `unsupported`: torch broadcasts across ranks)."""
    if a.ty.rank != b.ty.rank:
        c.refuse(
            f"burn's loss modules take an input and a target of one rank, got a rank-{a.ty.rank} and a "
            f"rank-{b.ty.rank} tensor (the burn interpreter's outcome is `unsupported`; torch broadcasts)"
        )


def _elementwise(c: Call, module: str, reduced: str, unreduced: str) -> Expr:
    """`module.reduced(a, b, Reduction::Mean | Sum)` (`[1]`), or `module.unreduced(a, b)` for
    torch's 'none' (the input's shape)."""
    a, b = c.args
    _one_rank(c, a, b)
    reduction = c.text("reduction")
    if reduction == "none":
        return Expr(f"{module}.{unreduced}({a.expr}, {b.expr})", Ty(a.ty.rank))
    c.use("burn::nn::loss::Reduction")
    return Expr(f"{module}.{reduced}({a.expr}, {b.expr}, Reduction::{reduction.title()})", Ty(1))


def mse_loss(c: Call) -> Expr:
    c.use("burn::nn::loss::MseLoss")
    return _elementwise(c, "MseLoss::new()", "forward", "forward_no_reduction")


def huber_loss(c: Call) -> Expr:
    """`delta` is `HuberLossConfig::new`'s argument, with no default: the port writes torch's."""
    c.use("burn::nn::loss::HuberLossConfig")
    module = f"HuberLossConfig::new({literals.f32(c.num('delta'))}).init()"
    return _elementwise(c, module, "forward", "forward_no_reduction")


def smooth_l1_loss(c: Call) -> Expr:
    c.use("burn::nn::loss::SmoothL1LossConfig")
    config = "SmoothL1LossConfig::new()"
    if c.has("beta"):
        config += f".with_beta({literals.f32(c.num('beta'))})"
    return _elementwise(c, f"{config}.init()", "forward_with_reduction", "forward")


def binary_cross_entropy_with_logits(c: Call) -> Expr:
    """The mean (another `reduction` is the table's `burn_unsupported`); burn's forward takes
    integer targets: the port converts torch's float ones."""
    logits, target = c.args
    _one_rank(c, logits, target)
    c.use("burn::nn::loss::BinaryCrossEntropyLossConfig")
    bce = f"BinaryCrossEntropyLossConfig::new().with_logits(true).init({c.device})"
    return Expr(f"{bce}.forward({logits.expr}, {target.expr}.int())", Ty(1))


def nll_loss(c: Call) -> Expr:
    """burn has no NLL loss: `log_probs.gather(1, target.reshape([n, 1])).neg()`, then its mean,
    its sum, or (`none`) `reshape([n])`."""
    log_probs, target = c.args
    if log_probs.ty.rank != 2:
        c.wrong_rank("the port's NLL takes log-probabilities [N, C]", log_probs.ty.rank)
    if target.ty.rank != 1:
        c.refuse("the burn interpreter stops with `nll_loss: the port's NLL takes class indices [N]`")
    reduce = {"mean": ".mean()", "sum": ".sum()", "none": ".reshape([n])"}[c.text("reduction")]
    text = block(
        [f"let (log_probs, target) = ({log_probs.expr}, {target.expr});", "let [n, _] = log_probs.dims();"],
        f"log_probs.gather(1, target.reshape([n, 1])).neg(){reduce}",
    )
    return Expr(text, Ty(1))


OPS: Final = {
    "cross_entropy": cross_entropy,
    "mse_loss": mse_loss,
    "huber_loss": huber_loss,
    "smooth_l1_loss": smooth_l1_loss,
    "binary_cross_entropy_with_logits": binary_cross_entropy_with_logits,
    "nll_loss": nll_loss,
}
