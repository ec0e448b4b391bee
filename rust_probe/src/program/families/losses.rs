//! Losses, as a port writes them in burn 0.22.1: the loss module built from
//! its config with only what the program gives, then `forward`. Where the
//! module's `forward` takes a `Reduction` (MSE, Huber, smooth L1) the port
//! passes torch's (burn has no default), and `none` is its unreduced form;
//! burn has no NLL loss, so the port writes it with `gather`.

use burn::nn::loss::{
    BinaryCrossEntropyLossConfig, CrossEntropyLossConfig, HuberLossConfig, MseLoss,
    Reduction as BurnReduction, SmoothL1LossConfig,
};

use super::{float, float_arg, wrong_rank, Ctx, Failed, Operand};
use crate::contract::{Op, OpAttrs, Reduction};
use crate::program::value::{Dyn, DynInt, Value};

fn int_arg(op: Op, args: &mut [Operand], i: usize) -> Result<DynInt, Failed> {
    match args
        .get_mut(i)
        .map(|a| std::mem::replace(a, Operand::Value(Value::Number(0.0))))
    {
        Some(Operand::Value(Value::Int(t))) => Ok(t),
        Some(Operand::Value(other)) => Err(Failed::Error(format!(
            "{}: argument {} is {}, not an int tensor",
            op.name(),
            i + 1,
            other.kind()
        ))),
        _ => Err(Failed::Error(format!(
            "{}: argument {} is not a tensor",
            op.name(),
            i + 1
        ))),
    }
}

/// burn's `Reduction` for torch's; None for `none` (the module's unreduced form).
fn reduction(r: Reduction) -> Option<BurnReduction> {
    match r {
        Reduction::Mean => Some(BurnReduction::Mean),
        Reduction::Sum => Some(BurnReduction::Sum),
        Reduction::None => None,
    }
}

/// burn's loss modules take an input and a target of one rank `D`.
fn unequal_ranks(op: Op, a: &Dyn, b: &Dyn) -> Failed {
    Failed::Unsupported(format!(
        "{}: burn's loss modules take an input and a target of one rank, got shapes {:?} and {:?}; \
         torch broadcasts across ranks",
        op.name(),
        a.dims(),
        b.dims()
    ))
}

/// An elementwise loss (`forward(a, b, reduction)` gives `[1]`; `forward_no_reduction(a, b)`
/// keeps the shape) of two float tensors of one rank.
macro_rules! elementwise_loss {
    ($op:expr, $a:expr, $b:expr, $reduction:expr, |$x:ident, $y:ident, $r:ident| $reduced:expr, |$u:ident, $v:ident| $unreduced:expr) => {{
        let (a, b) = ($a, $b);
        if a.rank() != b.rank() {
            return Err(unequal_ranks($op, &a, &b));
        }
        let dyn_value = match reduction($reduction) {
            Some($r) => Dyn::R1(match (a, b) {
                (Dyn::R1($x), Dyn::R1($y)) => $reduced,
                (Dyn::R2($x), Dyn::R2($y)) => $reduced,
                (Dyn::R3($x), Dyn::R3($y)) => $reduced,
                (Dyn::R4($x), Dyn::R4($y)) => $reduced,
                _ => unreachable!("ranks were compared"),
            }),
            None => match (a, b) {
                (Dyn::R1($u), Dyn::R1($v)) => Dyn::R1($unreduced),
                (Dyn::R2($u), Dyn::R2($v)) => Dyn::R2($unreduced),
                (Dyn::R3($u), Dyn::R3($v)) => Dyn::R3($unreduced),
                (Dyn::R4($u), Dyn::R4($v)) => Dyn::R4($unreduced),
                _ => unreachable!("ranks were compared"),
            },
        };
        Ok(float(dyn_value))
    }};
}

pub fn apply(
    op: Op,
    attrs: &OpAttrs,
    mut args: Vec<Operand>,
    ctx: &Ctx<'_>,
) -> Result<Value, Failed> {
    match (op, attrs) {
        (Op::CrossEntropy, OpAttrs::CrossEntropy(a)) => {
            let logits = float_arg(op, &mut args, 0)?;
            let target = int_arg(op, &mut args, 1)?;
            let Dyn::R2(logits) = logits else {
                return Err(wrong_rank(
                    op,
                    "burn's CrossEntropyLoss takes logits [N, C]",
                    logits.rank(),
                ));
            };
            let DynInt::R1(target) = target else {
                return Err(Failed::Error(format!(
                    "{}: burn's CrossEntropyLoss takes class indices [N]",
                    op.name()
                )));
            };
            let mut config = CrossEntropyLossConfig::new();
            if let Some(s) = a.label_smoothing {
                config = config.with_smoothing(Some(s as f32));
            }
            let loss = config.init(ctx.device).forward(logits, target);
            Ok(float(Dyn::R1(loss)))
        }
        (Op::MseLoss, OpAttrs::MseLoss(a)) => {
            let input = float_arg(op, &mut args, 0)?;
            let target = float_arg(op, &mut args, 1)?;
            let mse = MseLoss::new();
            elementwise_loss!(
                op,
                input,
                target,
                a.reduction,
                |x, y, r| mse.forward(x, y, r),
                |x, y| mse.forward_no_reduction(x, y)
            )
        }
        (Op::HuberLoss, OpAttrs::HuberLoss(a)) => {
            let input = float_arg(op, &mut args, 0)?;
            let target = float_arg(op, &mut args, 1)?;
            let huber = HuberLossConfig::new(a.delta as f32).init();
            elementwise_loss!(
                op,
                input,
                target,
                a.reduction,
                |x, y, r| huber.forward(x, y, r),
                |x, y| huber.forward_no_reduction(x, y)
            )
        }
        (Op::SmoothL1Loss, OpAttrs::SmoothL1Loss(a)) => {
            let input = float_arg(op, &mut args, 0)?;
            let target = float_arg(op, &mut args, 1)?;
            let mut config = SmoothL1LossConfig::new();
            if let Some(beta) = a.beta {
                config = config.with_beta(beta as f32);
            }
            let smooth_l1 = config.init();
            elementwise_loss!(
                op,
                input,
                target,
                a.reduction,
                |x, y, r| smooth_l1.forward_with_reduction(x, y, r),
                |x, y| smooth_l1.forward(x, y)
            )
        }
        (Op::BinaryCrossEntropyWithLogits, OpAttrs::BinaryCrossEntropyWithLogits(_)) => {
            // `reduction` other than the mean was refused when compiling (burn_unsupported).
            let logits = float_arg(op, &mut args, 0)?;
            let target = float_arg(op, &mut args, 1)?;
            if logits.rank() != target.rank() {
                return Err(unequal_ranks(op, &logits, &target));
            }
            let bce = BinaryCrossEntropyLossConfig::new()
                .with_logits(true)
                .init(ctx.device);
            // burn's forward takes integer targets: the port converts torch's float ones.
            let loss = match (logits, target) {
                (Dyn::R1(x), Dyn::R1(t)) => bce.forward(x, t.int()),
                (Dyn::R2(x), Dyn::R2(t)) => bce.forward(x, t.int()),
                (Dyn::R3(x), Dyn::R3(t)) => bce.forward(x, t.int()),
                (Dyn::R4(x), Dyn::R4(t)) => bce.forward(x, t.int()),
                _ => unreachable!("ranks were compared"),
            };
            Ok(float(Dyn::R1(loss)))
        }
        (Op::NllLoss, OpAttrs::NllLoss(a)) => {
            let log_probs = float_arg(op, &mut args, 0)?;
            let target = int_arg(op, &mut args, 1)?;
            let Dyn::R2(log_probs) = log_probs else {
                return Err(wrong_rank(
                    op,
                    "the port's NLL takes log-probabilities [N, C]",
                    log_probs.rank(),
                ));
            };
            let DynInt::R1(target) = target else {
                return Err(Failed::Error(format!(
                    "{}: the port's NLL takes class indices [N]",
                    op.name()
                )));
            };
            let [n, _] = log_probs.dims();
            let picked = log_probs.gather(1, target.reshape([n, 1])).neg();
            let loss = match a.reduction {
                Reduction::Mean => picked.mean(),
                Reduction::Sum => picked.sum(),
                Reduction::None => picked.reshape([n]),
            };
            Ok(float(Dyn::R1(loss)))
        }
        _ => Err(Failed::Error(format!(
            "{}: not a losses operation",
            op.name()
        ))),
    }
}
