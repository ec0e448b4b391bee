//! The tensor operations themselves, written once for every rank (the
//! operation table is `crate::contract`, generated from the Python side).

use burn::nn::Linear;
use burn::tensor::activation;

use crate::program::value::{map_dyn, with_dyn, Dyn, TensorValue};

/// Operations of one tensor that return one tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unary {
    Detach,
    WithoutAutodiff,
    RequireGrad,
    /// `set_require_grad(false)` (`freeze` of a tensor that is not a param).
    Freeze,
    Clone,
    Neg,
    Transpose,
    Exp,
    Log,
    Sqrt,
    Abs,
    Tanh,
    Relu,
    Sigmoid,
    Sum,
    Mean,
    AddScalar(f64),
    MulScalar(f64),
    Powi(i64),
    SumDim(i64),
}

/// Applies a unary operation. The transposed flag survives operations that
/// do not care about the layout (elementwise, scalar, autodiff flags, full
/// reductions); `transpose` flips it without a burn operation when it is set;
/// `sum_dim` materializes it first.
pub fn unary(op: Unary, v: TensorValue) -> TensorValue {
    #[cfg(feature = "mutants")]
    let v = match crate::program::mutants::unary(op, v) {
        crate::program::mutants::Mutated::Result(mutated) => return mutated,
        crate::program::mutants::Mutated::Unchanged(v) => v,
    };
    let flag = v.transposed;
    let keep = |t: Dyn| TensorValue {
        t,
        transposed: flag,
    };
    match op {
        Unary::Detach => keep(map_dyn!(v.t, t => t.detach())),
        Unary::WithoutAutodiff => keep(map_dyn!(v.t, t => t.without_autodiff())),
        Unary::RequireGrad => keep(map_dyn!(v.t, t => t.require_grad())),
        Unary::Freeze => keep(map_dyn!(v.t, t => t.set_require_grad(false))),
        Unary::Clone => keep(v.t),
        Unary::Neg => keep(map_dyn!(v.t, t => t.neg())),
        Unary::Transpose => {
            if flag && v.t.rank() == 2 {
                TensorValue {
                    t: v.t,
                    transposed: false,
                }
            } else {
                keep(map_dyn!(v.t, t => t.transpose()))
            }
        }
        Unary::Exp => keep(map_dyn!(v.t, t => t.exp())),
        Unary::Log => keep(map_dyn!(v.t, t => t.log())),
        Unary::Sqrt => keep(map_dyn!(v.t, t => t.sqrt())),
        Unary::Abs => keep(map_dyn!(v.t, t => t.abs())),
        Unary::Tanh => keep(map_dyn!(v.t, t => t.tanh())),
        Unary::Relu => keep(map_dyn!(v.t, t => activation::relu(t))),
        Unary::Sigmoid => keep(map_dyn!(v.t, t => activation::sigmoid(t))),
        Unary::Sum => TensorValue::plain(Dyn::R1(with_dyn!(v.t, t => t.sum()))),
        Unary::Mean => TensorValue::plain(Dyn::R1(with_dyn!(v.t, t => t.mean()))),
        Unary::AddScalar(s) => keep(map_dyn!(v.t, t => t.add_scalar(s))),
        Unary::MulScalar(s) => keep(map_dyn!(v.t, t => t.mul_scalar(s))),
        Unary::Powi(n) => keep(map_dyn!(v.t, t => t.powi_scalar(n))),
        Unary::SumDim(d) => TensorValue::plain(map_dyn!(v.materialize(), t => t.sum_dim(d))),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    Matmul,
}

impl Binary {
    fn name(self) -> &'static str {
        match self {
            Binary::Add => "add",
            Binary::Sub => "sub",
            Binary::Mul => "mul",
            Binary::Div => "div",
            Binary::Matmul => "matmul",
        }
    }
}

/// Applies a binary operation. `Err` (an `unsupported` outcome) when the
/// ranks differ: burn's `Tensor<D>` operations take two tensors of the same
/// `D`, where torch broadcasts across ranks.
pub fn binary(op: Binary, a: TensorValue, b: TensorValue) -> Result<TensorValue, String> {
    if a.t.rank() != b.t.rank() {
        return Err(format!(
            "{}: burn's tensor operations take operands of equal rank, got shapes {:?} and {:?} \
             (torch layout); torch broadcasts across ranks, burn has no such operation",
            op.name(),
            a.torch_shape(),
            b.torch_shape()
        ));
    }
    let (x, y, flag) = match op {
        Binary::Matmul => (a.materialize(), b.materialize(), false),
        _ if a.transposed == b.transposed => (a.t, b.t, a.transposed),
        _ => (a.materialize(), b.materialize(), false),
    };
    macro_rules! both {
        ($x:ident, $y:ident => $body:expr) => {
            match (x, y) {
                (Dyn::R1($x), Dyn::R1($y)) => Dyn::R1($body),
                (Dyn::R2($x), Dyn::R2($y)) => Dyn::R2($body),
                (Dyn::R3($x), Dyn::R3($y)) => Dyn::R3($body),
                (Dyn::R4($x), Dyn::R4($y)) => Dyn::R4($body),
                _ => unreachable!("ranks were compared above"),
            }
        };
    }
    let t = match op {
        Binary::Add => both!(x, y => x.add(y)),
        Binary::Sub => both!(x, y => x.sub(y)),
        Binary::Mul => both!(x, y => x.mul(y)),
        Binary::Div => both!(x, y => x.div(y)),
        Binary::Matmul => both!(x, y => x.matmul(y)),
    };
    Ok(TensorValue {
        t,
        transposed: flag,
    })
}

/// `reshape` to a rank 1 to 4 shape (checked when compiling); the entries
/// go to burn as they are (`-1` infers, and burn reads `0` as "keep").
pub fn reshape(v: TensorValue, shape: &[i64]) -> TensorValue {
    let t = v.materialize();
    let out = match shape.len() {
        1 => Dyn::R1(with_dyn!(t, t => t.reshape([shape[0]]))),
        2 => Dyn::R2(with_dyn!(t, t => t.reshape([shape[0], shape[1]]))),
        3 => Dyn::R3(with_dyn!(t, t => t.reshape([shape[0], shape[1], shape[2]]))),
        4 => Dyn::R4(with_dyn!(t, t => t.reshape([shape[0], shape[1], shape[2], shape[3]]))),
        n => unreachable!("reshape to rank {n} was rejected when compiling"),
    };
    TensorValue::plain(out)
}

/// `into_scalar()`; burn panics if the tensor does not have one element.
pub fn item(v: TensorValue) -> f64 {
    with_dyn!(v.t, t => t.into_scalar::<f32>()) as f64
}

/// `lin.forward(x)` at the input's rank.
pub fn linear(lin: &Linear, x: TensorValue) -> TensorValue {
    TensorValue::plain(map_dyn!(x.materialize(), t => lin.forward(t)))
}
