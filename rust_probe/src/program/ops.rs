//! The operation table (names, arity, what burn 0.22.1 supports) and the
//! tensor operations themselves, written once for every rank.

use burn::nn::Linear;
use burn::tensor::activation;

use crate::program::value::{map_dyn, with_dyn, Dyn, TensorValue};

/// Every operation of `docs/program-ir.md` section 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Detach,
    WithoutAutodiff,
    RequireGrad,
    RetainGrad,
    Clone,
    Add,
    Sub,
    Mul,
    Div,
    Neg,
    Matmul,
    Transpose,
    AddScalar,
    MulScalar,
    Powi,
    Exp,
    Log,
    Sqrt,
    Abs,
    Tanh,
    Relu,
    Sigmoid,
    Sum,
    Mean,
    SumDim,
    Reshape,
    Item,
    AddScalarInPlace,
    Linear,
    Backward,
    Grad,
    Sgd,
    Adam,
    Step,
    ZeroGrad,
    Freeze,
    Observe,
    Repeat,
    NoGrad,
}

/// One row of the table: the IR name and, for an operation burn lacks, why.
pub struct OpSpec {
    pub op: Op,
    pub name: &'static str,
    pub unsupported: Option<&'static str>,
}

const fn row(op: Op, name: &'static str) -> OpSpec {
    OpSpec {
        op,
        name,
        unsupported: None,
    }
}

/// Why `retain_grad` has no burn equivalent (burn-autodiff 0.22.1 `src/tensor.rs`
/// `require_grad` and burn-tensor `src/tensor/api/autodiff.rs` `grad`).
pub const RETAIN_GRAD_UNSUPPORTED: &str = "burn 0.22.1 cannot keep the gradient of a non-leaf \
     tensor: Tensor::grad returns None unless the tensor requires grad, and require_grad() \
     panics on a non-leaf (\"Can't convert a non leaf tensor into a tracked tensor\")";

/// Why `no_grad` has no burn equivalent.
pub const NO_GRAD_UNSUPPORTED: &str = "burn 0.22.1 has no no_grad scope (operations on tracked \
     tensors are always recorded); a port uses without_autodiff() or detach() on the tensors";

/// Why `backward(retain_graph=True)` has no burn equivalent.
pub const RETAIN_GRAPH_UNSUPPORTED: &str = "burn 0.22.1 backward() has no retain_graph: it \
     consumes the recorded steps (burn-tensor src/tensor/api/autodiff.rs, Tensor::backward)";

/// The operation table, in the order of the contract.
pub const OPS: &[OpSpec] = &[
    row(Op::Detach, "detach"),
    row(Op::WithoutAutodiff, "without_autodiff"),
    row(Op::RequireGrad, "require_grad"),
    OpSpec {
        op: Op::RetainGrad,
        name: "retain_grad",
        unsupported: Some(RETAIN_GRAD_UNSUPPORTED),
    },
    row(Op::Clone, "clone"),
    row(Op::Add, "add"),
    row(Op::Sub, "sub"),
    row(Op::Mul, "mul"),
    row(Op::Div, "div"),
    row(Op::Neg, "neg"),
    row(Op::Matmul, "matmul"),
    row(Op::Transpose, "transpose"),
    row(Op::AddScalar, "add_scalar"),
    row(Op::MulScalar, "mul_scalar"),
    row(Op::Powi, "powi"),
    row(Op::Exp, "exp"),
    row(Op::Log, "log"),
    row(Op::Sqrt, "sqrt"),
    row(Op::Abs, "abs"),
    row(Op::Tanh, "tanh"),
    row(Op::Relu, "relu"),
    row(Op::Sigmoid, "sigmoid"),
    row(Op::Sum, "sum"),
    row(Op::Mean, "mean"),
    row(Op::SumDim, "sum_dim"),
    row(Op::Reshape, "reshape"),
    row(Op::Item, "item"),
    row(Op::AddScalarInPlace, "add_scalar_"),
    row(Op::Linear, "linear"),
    row(Op::Backward, "backward"),
    row(Op::Grad, "grad"),
    row(Op::Sgd, "sgd"),
    row(Op::Adam, "adam"),
    row(Op::Step, "step"),
    row(Op::ZeroGrad, "zero_grad"),
    row(Op::Freeze, "freeze"),
    row(Op::Observe, "observe"),
    row(Op::Repeat, "repeat"),
    OpSpec {
        op: Op::NoGrad,
        name: "no_grad",
        unsupported: Some(NO_GRAD_UNSUPPORTED),
    },
];

pub fn lookup(name: &str) -> Option<&'static OpSpec> {
    OPS.iter().find(|spec| spec.name == name)
}

pub fn name_of(op: Op) -> &'static str {
    OPS.iter()
        .find(|spec| spec.op == op)
        .map(|spec| spec.name)
        .unwrap_or("?")
}

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
