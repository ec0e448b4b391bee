//! The interpreter's dynamic values: a burn float tensor of rank 1 to 4 with
//! the *transposed* layout flag of `docs/program-ir.md` section 3, an integer
//! or bool tensor (class indices, masks), or a number (what `item` returns).

use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

/// The largest rank the interpreter handles (burn's ranks are type parameters).
pub use crate::contract::MAX_RANK;

/// A float tensor whose rank is known at run time only.
#[derive(Clone, Debug)]
pub enum Dyn {
    R1(Tensor<1>),
    R2(Tensor<2>),
    R3(Tensor<3>),
    R4(Tensor<4>),
}

/// Applies a rank-generic tensor expression to every rank, keeping the rank.
macro_rules! map_dyn {
    ($value:expr, $t:ident => $body:expr) => {
        match $value {
            $crate::program::value::Dyn::R1($t) => $crate::program::value::Dyn::R1($body),
            $crate::program::value::Dyn::R2($t) => $crate::program::value::Dyn::R2($body),
            $crate::program::value::Dyn::R3($t) => $crate::program::value::Dyn::R3($body),
            $crate::program::value::Dyn::R4($t) => $crate::program::value::Dyn::R4($body),
        }
    };
}

/// Evaluates a rank-generic expression on whatever rank the tensor has.
macro_rules! with_dyn {
    ($value:expr, $t:ident => $body:expr) => {
        match $value {
            $crate::program::value::Dyn::R1($t) => $body,
            $crate::program::value::Dyn::R2($t) => $body,
            $crate::program::value::Dyn::R3($t) => $body,
            $crate::program::value::Dyn::R4($t) => $body,
        }
    };
}

pub(crate) use {map_dyn, with_dyn};

/// An integer tensor (indices) whose rank is known at run time only.
#[derive(Clone, Debug)]
pub enum DynInt {
    R1(Tensor<1, Int>),
    R2(Tensor<2, Int>),
    R3(Tensor<3, Int>),
    R4(Tensor<4, Int>),
}

/// A bool tensor (a mask) whose rank is known at run time only.
#[derive(Clone, Debug)]
pub enum DynBool {
    R1(Tensor<1, Bool>),
    R2(Tensor<2, Bool>),
    R3(Tensor<3, Bool>),
    R4(Tensor<4, Bool>),
}

/// Evaluates a rank-generic expression on an integer or bool tensor (`DynInt` / `DynBool`).
macro_rules! with_rank {
    ($kind:ident, $value:expr, $t:ident => $body:expr) => {
        match $value {
            $crate::program::value::$kind::R1($t) => $body,
            $crate::program::value::$kind::R2($t) => $body,
            $crate::program::value::$kind::R3($t) => $body,
            $crate::program::value::$kind::R4($t) => $body,
        }
    };
}

#[allow(unused_imports)] // for the families that match on an int or bool tensor's rank
pub(crate) use with_rank;

impl DynInt {
    pub fn from_data(values: &[f32], shape: &[usize], device: &Device) -> DynInt {
        let data = TensorData::new(
            values.iter().map(|&v| v as i64).collect::<Vec<_>>(),
            shape.to_vec(),
        );
        match shape.len() {
            1 => DynInt::R1(Tensor::from_data(data, device)),
            2 => DynInt::R2(Tensor::from_data(data, device)),
            3 => DynInt::R3(Tensor::from_data(data, device)),
            4 => DynInt::R4(Tensor::from_data(data, device)),
            rank => unreachable!("rank {rank} was rejected when the IR was read"),
        }
    }

    pub fn dims(&self) -> Vec<usize> {
        with_rank!(DynInt, self, t => t.dims().to_vec())
    }

    pub fn values(&self) -> Result<Vec<f32>, String> {
        with_rank!(DynInt, self, t => t.try_to_vec_as::<i64>())
            .map(|v| v.into_iter().map(|x| x as f32).collect())
            .map_err(|err| format!("reading the tensor's values failed: {err:?}"))
    }
}

impl DynBool {
    pub fn from_data(values: &[f32], shape: &[usize], device: &Device) -> DynBool {
        let data = TensorData::new(
            values.iter().map(|&v| v != 0.0).collect::<Vec<_>>(),
            shape.to_vec(),
        );
        match shape.len() {
            1 => DynBool::R1(Tensor::from_data(data, device)),
            2 => DynBool::R2(Tensor::from_data(data, device)),
            3 => DynBool::R3(Tensor::from_data(data, device)),
            4 => DynBool::R4(Tensor::from_data(data, device)),
            rank => unreachable!("rank {rank} was rejected when the IR was read"),
        }
    }

    pub fn dims(&self) -> Vec<usize> {
        with_rank!(DynBool, self, t => t.dims().to_vec())
    }

    pub fn values(&self) -> Result<Vec<f32>, String> {
        with_rank!(DynBool, self, t => t.try_to_vec_as::<bool>())
            .map(|v| v.into_iter().map(|x| if x { 1.0 } else { 0.0 }).collect())
            .map_err(|err| format!("reading the tensor's values failed: {err:?}"))
    }
}

impl Dyn {
    /// A tensor of `shape` (rank 1 to 4, checked by the caller) from row-major data.
    pub fn from_data(values: Vec<f32>, shape: &[usize], device: &Device) -> Dyn {
        let data = TensorData::new(values, shape.to_vec());
        match shape.len() {
            1 => Dyn::R1(Tensor::from_data(data, device)),
            2 => Dyn::R2(Tensor::from_data(data, device)),
            3 => Dyn::R3(Tensor::from_data(data, device)),
            4 => Dyn::R4(Tensor::from_data(data, device)),
            rank => unreachable!("rank {rank} was rejected when the IR was read"),
        }
    }

    pub fn rank(&self) -> usize {
        match self {
            Dyn::R1(_) => 1,
            Dyn::R2(_) => 2,
            Dyn::R3(_) => 3,
            Dyn::R4(_) => 4,
        }
    }

    /// The shape burn has.
    pub fn dims(&self) -> Vec<usize> {
        with_dyn!(self, t => t.dims().to_vec())
    }

    pub fn flags(&self) -> RawFlags {
        with_dyn!(self, t => RawFlags {
            is_tracked: t.is_tracked(),
            is_require_grad: t.is_require_grad(),
            is_autodiff: t.is_autodiff(),
        })
    }
}

pub use crate::record::{Flags, RawFlags};

/// A tensor value of the interpreter.
///
/// `transposed`: the value is derived from a Linear weight, which burn keeps
/// as `[d_in, d_out]`; the torch-layout value is the transpose of the burn
/// tensor. Only rank-2 values carry it.
#[derive(Clone, Debug)]
pub struct TensorValue {
    pub t: Dyn,
    pub transposed: bool,
}

impl TensorValue {
    pub fn plain(t: Dyn) -> Self {
        TensorValue {
            t,
            transposed: false,
        }
    }

    /// The burn tensor in torch layout: a flagged value gets burn's
    /// `transpose()` here (the only place the flag costs an operation).
    pub fn materialize(self) -> Dyn {
        match (self.transposed, self.t) {
            (true, Dyn::R2(t)) => Dyn::R2(t.transpose()),
            (_, t) => t,
        }
    }

    /// The shape in torch layout.
    pub fn torch_shape(&self) -> Vec<usize> {
        let mut dims = self.t.dims();
        if self.transposed && dims.len() == 2 {
            dims.swap(0, 1);
        }
        dims
    }

    /// The values, row-major in torch layout (a flagged value is transposed
    /// on the host: reading adds no burn operation).
    pub fn torch_values(&self) -> Result<Vec<f32>, String> {
        let values = with_dyn!(&self.t, t => t.try_to_vec_as::<f32>())
            .map_err(|err| format!("reading the tensor's values failed: {err:?}"))?;
        if !(self.transposed && self.t.rank() == 2) {
            return Ok(values);
        }
        let dims = self.t.dims();
        Ok(transpose_host(&values, dims[0], dims[1]))
    }

    pub fn flags(&self) -> Flags {
        self.t.flags().into()
    }
}

/// What a name is bound to.
// A burn tensor is a few hundred bytes inline; boxing it would cost an
// allocation per operation in the timed loop.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Value {
    Tensor(TensorValue),
    /// An integer tensor (class indices, rows); never tracked.
    Int(DynInt),
    /// A bool tensor (a mask); never tracked.
    Bool(DynBool),
    /// The result of `item`: burn's `into_scalar()` is a plain Rust number.
    Number(f64),
}

impl Value {
    pub fn flags(&self) -> Flags {
        let untracked = |is_autodiff| RawFlags {
            is_tracked: false,
            is_require_grad: false,
            is_autodiff,
        };
        match self {
            Value::Tensor(t) => t.flags(),
            Value::Int(t) => untracked(with_rank!(DynInt, t, t => t.is_autodiff())).into(),
            Value::Bool(t) => untracked(with_rank!(DynBool, t, t => t.is_autodiff())).into(),
            Value::Number(_) => untracked(false).into(),
        }
    }

    /// What kind of value it is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Tensor(_) => "a float tensor",
            Value::Int(_) => "an int tensor",
            Value::Bool(_) => "a bool tensor",
            Value::Number(_) => "a number (the result of item)",
        }
    }
}

/// Host-side transpose of a row-major `[rows, cols]` buffer.
pub fn transpose_host(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
    out
}
