//! Losses, as a port writes them in burn 0.22.1: the loss module built from
//! its config with only what the program gives, then `forward` (the mean).

use burn::nn::loss::CrossEntropyLossConfig;

use super::{float, float_arg, wrong_rank, Ctx, Failed, Operand};
use crate::contract::{Op, OpAttrs};
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
        _ => Err(Failed::Error(format!(
            "{}: not a losses operation",
            op.name()
        ))),
    }
}
