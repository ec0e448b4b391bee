//! The operations that are plain functions of their arguments, by family:
//! each family module implements its operations the way a person porting the
//! PyTorch line writes them in burn 0.22.1 (an attribute the program omits is
//! omitted: burn's own default applies).
//!
//! The machine (`crate::program`) reads the arguments and calls [`apply`];
//! what an operation needs beyond its arguments (the module it calls, whether
//! the model is in training mode) comes in [`Ctx`].

pub mod layers;
pub mod losses;
pub mod tensors;

use burn::tensor::Device;

use crate::contract::{Family, Op, OpAttrs};
use crate::program::compile::ModuleRef;
use crate::program::value::{Dyn, TensorValue, Value};
use crate::program::ProgramModel;

/// An argument of an operation: a value, or a module (a module call's first).
// Made per argument as the operation runs, as `Value` is (see its note): boxing would allocate.
#[allow(clippy::large_enum_variant)]
pub enum Operand {
    Value(Value),
    Module(ModuleRef),
}

/// Why an operation did not give a value.
#[derive(Debug)]
pub enum Failed {
    /// The interpreter refused it at run time (a shape burn cannot take, a wrong kind of value).
    Error(String),
    /// burn 0.22.1 has no equivalent for this case (found only at run time, e.g. by rank).
    Unsupported(String),
}

/// What an operation may read besides its arguments.
pub struct Ctx<'a> {
    /// The model the module calls use: the training one, or the `valid()` snapshot in eval mode.
    pub model: &'a ProgramModel,
    pub device: &'a Device,
}

/// Applies a family's operation.
pub fn apply(op: Op, attrs: &OpAttrs, args: Vec<Operand>, ctx: &Ctx<'_>) -> Result<Value, Failed> {
    match op.family() {
        Some(Family::Layers) => layers::apply(op, attrs, args, ctx),
        Some(Family::Tensors) => tensors::apply(op, attrs, args, ctx),
        Some(Family::Losses) => losses::apply(op, attrs, args, ctx),
        None => Err(Failed::Error(format!(
            "{} is not a family operation",
            op.name()
        ))),
    }
}

/// The float tensor argument at `i`, in torch layout (a flagged Linear value is materialized).
pub fn float_arg(op: Op, args: &mut [Operand], i: usize) -> Result<Dyn, Failed> {
    match args
        .get_mut(i)
        .map(|a| std::mem::replace(a, Operand::Value(Value::Number(0.0))))
    {
        Some(Operand::Value(Value::Tensor(t))) => Ok(t.materialize()),
        Some(Operand::Value(other)) => Err(Failed::Error(format!(
            "{}: argument {} is {}, not a float tensor",
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

/// The module argument at `i`.
pub fn module_arg(op: Op, args: &[Operand], i: usize) -> Result<ModuleRef, Failed> {
    match args.get(i) {
        Some(Operand::Module(m)) => Ok(*m),
        _ => Err(Failed::Error(format!(
            "{}: argument {} is not a module",
            op.name(),
            i + 1
        ))),
    }
}

/// A float result in torch layout.
pub fn float(t: Dyn) -> Value {
    Value::Tensor(TensorValue::plain(t))
}

/// The rank a family operation needs, or its error.
pub fn wrong_rank(op: Op, what: &str, rank: usize) -> Failed {
    Failed::Error(format!("{}: {what}, got a rank-{rank} tensor", op.name()))
}
