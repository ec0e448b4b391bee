//! Tensor operations, as a port writes them in burn 0.22.1. burn keeps the
//! reduced dim where torch drops it by default (`keepdim=False`): the port
//! squeezes it, and so does this.

use burn::tensor::Tensor;

use super::{float, Ctx, Failed, Operand};
use crate::contract::{Op, OpAttrs};
use crate::program::value::{Dyn, DynInt, Value};

/// A dim of a rank-`rank` tensor, torch's way (negative counts from the end).
pub fn dim(op: Op, d: i64, rank: usize) -> Result<usize, Failed> {
    let r = rank as i64;
    let resolved = if d < 0 { d + r } else { d };
    if !(0..r).contains(&resolved) {
        return Err(Failed::Error(format!(
            "{}: dim {d} is out of range for a rank-{rank} tensor",
            op.name()
        )));
    }
    Ok(resolved as usize)
}

fn tensors_of(op: Op, args: Vec<Operand>) -> Result<Vec<Value>, Failed> {
    args.into_iter()
        .map(|a| match a {
            Operand::Value(v) => Ok(v),
            Operand::Module(_) => Err(Failed::Error(format!(
                "{}: a module is not a tensor",
                op.name()
            ))),
        })
        .collect()
}

/// `Tensor::cat(vec![a, b, ...], dim)` of float tensors of one rank.
fn cat(op: Op, values: Vec<Value>, d: i64) -> Result<Value, Failed> {
    let mut floats = Vec::with_capacity(values.len());
    for v in values {
        match v {
            Value::Tensor(t) => floats.push(t.materialize()),
            other => {
                return Err(Failed::Unsupported(format!(
                    "{}: this interpreter joins float tensors; got {}",
                    op.name(),
                    other.kind()
                )))
            }
        }
    }
    let rank = floats[0].rank();
    if floats.iter().any(|t| t.rank() != rank) {
        return Err(Failed::Error(format!(
            "{}: the tensors have different ranks",
            op.name()
        )));
    }
    let d = dim(op, d, rank)?;
    macro_rules! join {
        ($variant:ident) => {
            Dyn::$variant(Tensor::cat(
                floats
                    .into_iter()
                    .map(|t| match t {
                        Dyn::$variant(t) => t,
                        _ => unreachable!("ranks were compared"),
                    })
                    .collect(),
                d,
            ))
        };
    }
    Ok(float(match rank {
        1 => join!(R1),
        2 => join!(R2),
        3 => join!(R3),
        _ => join!(R4),
    }))
}

/// `t.argmax(dim)` (burn keeps the dim), squeezed unless `keepdim`.
fn argmax(op: Op, x: Dyn, d: i64, keepdim: bool) -> Result<Value, Failed> {
    let rank = x.rank();
    let d = dim(op, d, rank)?;
    let kept: DynInt = match x {
        Dyn::R1(t) => DynInt::R1(t.argmax(d)),
        Dyn::R2(t) => DynInt::R2(t.argmax(d)),
        Dyn::R3(t) => DynInt::R3(t.argmax(d)),
        Dyn::R4(t) => DynInt::R4(t.argmax(d)),
    };
    if keepdim {
        return Ok(Value::Int(kept));
    }
    Ok(Value::Int(match kept {
        DynInt::R1(t) => DynInt::R1(t), // a rank-1 result keeps its one dim: torch gives a scalar, shape []
        DynInt::R2(t) => DynInt::R1(t.squeeze_dim(d)),
        DynInt::R3(t) => DynInt::R2(t.squeeze_dim(d)),
        DynInt::R4(t) => DynInt::R3(t.squeeze_dim(d)),
    }))
}

pub fn apply(op: Op, attrs: &OpAttrs, args: Vec<Operand>, _ctx: &Ctx<'_>) -> Result<Value, Failed> {
    let mut values = tensors_of(op, args)?;
    match (op, attrs) {
        (Op::Cat, OpAttrs::Cat(a)) => cat(op, values, a.dim),
        (Op::Argmax, OpAttrs::Argmax(a)) => match values.remove(0) {
            Value::Tensor(t) => argmax(op, t.materialize(), a.dim, a.keepdim),
            other => Err(Failed::Error(format!(
                "{}: {} is not a float tensor",
                op.name(),
                other.kind()
            ))),
        },
        _ => Err(Failed::Error(format!(
            "{}: not a tensors operation",
            op.name()
        ))),
    }
}
