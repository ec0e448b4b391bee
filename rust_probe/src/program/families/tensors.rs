//! Tensor operations, as a port writes them in burn 0.22.1. burn keeps the
//! reduced dim where torch drops it by default (`keepdim=False`): the port
//! squeezes it, and so does this. burn's ranks are types: where torch's call
//! changes the rank, the port writes the new one (`t.unsqueeze_dim::<3>(1)`),
//! and this picks it from the tensor's rank at run time. A dim is resolved the
//! way torch resolves it (negative counts from the end; out of range is an
//! error on both sides); the rest is burn's own behaviour, panics included.

use burn::tensor::Tensor;

use super::{float, Ctx, Failed, Operand};
use crate::contract::{Op, OpAttrs};
use crate::program::value::{map_dyn, Dyn, DynBool, DynInt, Value, MAX_RANK};

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

/// A new dim's position in the rank-`rank + 1` result (`stack`, `unsqueeze`).
fn new_dim(op: Op, d: i64, rank: usize) -> Result<usize, Failed> {
    dim(op, d, rank + 1)
}

/// The result would have more dims than the interpreter's tensors (rank 1 to 4).
fn too_big(op: Op, rank: usize) -> Failed {
    Failed::Error(format!(
        "{}: the result would have rank {rank}; this interpreter's tensors have rank 1 to {MAX_RANK}",
        op.name()
    ))
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

fn not_a(op: Op, what: &str, v: &Value) -> Failed {
    Failed::Error(format!("{}: {} is not {what}", op.name(), v.kind()))
}

fn float_of(op: Op, v: Value) -> Result<Dyn, Failed> {
    match v {
        Value::Tensor(t) => Ok(t.materialize()),
        other => Err(not_a(op, "a float tensor", &other)),
    }
}

fn int_of(op: Op, v: Value) -> Result<DynInt, Failed> {
    match v {
        Value::Int(t) => Ok(t),
        other => Err(not_a(op, "an int tensor", &other)),
    }
}

fn bool_of(op: Op, v: Value) -> Result<DynBool, Failed> {
    match v {
        Value::Bool(t) => Ok(t),
        other => Err(not_a(op, "a bool tensor", &other)),
    }
}

/// burn's `Tensor<D>` operations take operands of one rank; torch broadcasts across ranks.
fn unequal_ranks(op: Op, shapes: &[Vec<usize>]) -> Failed {
    Failed::Unsupported(format!(
        "{}: burn's tensor operations take operands of equal rank, got shapes {} (torch layout); \
         torch broadcasts across ranks, burn has no such operation",
        op.name(),
        shapes
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(" and ")
    ))
}

/// Applies a kind-generic macro (`$m!(Kind, tensor, args...)`, giving `Result<Kind, Failed>`)
/// to a float, int or bool tensor, keeping its element type.
macro_rules! any_kind {
    ($op:expr, $value:expr, $m:ident ( $($arg:expr),* )) => {
        match $value {
            Value::Tensor(t) => $m!(Dyn, t.materialize() $(, $arg)*).map(float),
            Value::Int(t) => $m!(DynInt, t $(, $arg)*).map(Value::Int),
            Value::Bool(t) => $m!(DynBool, t $(, $arg)*).map(Value::Bool),
            other @ Value::Number(_) => Err(not_a($op, "a tensor", &other)),
        }
    };
}

/// `$body` on the tensor at its rank, the result at the same rank.
macro_rules! same_rank {
    ($kind:ident, $value:expr, $t:ident => $body:expr) => {
        match $value {
            $kind::R1($t) => $kind::R1($body),
            $kind::R2($t) => $kind::R2($body),
            $kind::R3($t) => $kind::R3($body),
            $kind::R4($t) => $kind::R4($body),
        }
    };
}

/// The rank of a `Dyn`, `DynInt` or `DynBool`.
macro_rules! rank_of {
    ($kind:ident, $value:expr) => {
        match &$value {
            $kind::R1(_) => 1,
            $kind::R2(_) => 2,
            $kind::R3(_) => 3,
            $kind::R4(_) => 4,
        }
    };
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

/// The tensors of a list, all of one rank (compared before).
macro_rules! all_of_rank {
    ($kind:ident, $items:expr, $variant:ident) => {
        $items
            .into_iter()
            .map(|t| match t {
                $kind::$variant(t) => t,
                _ => unreachable!("ranks were compared"),
            })
            .collect::<Vec<_>>()
    };
}

/// `Tensor::stack::<D2>(vec![a, b, ...], dim)` of tensors of one kind.
macro_rules! stack_kind {
    ($kind:ident, $op:expr, $items:expr, $d:expr) => {{
        let items: Vec<$kind> = $items;
        let rank = rank_of!($kind, items[0]);
        if items.iter().any(|t| rank_of!($kind, t) != rank) {
            return Err(Failed::Error(format!(
                "{}: the tensors have different ranks",
                $op.name()
            )));
        }
        let d = new_dim($op, $d, rank)?;
        match rank {
            1 => Ok($kind::R2(Tensor::stack(all_of_rank!($kind, items, R1), d))),
            2 => Ok($kind::R3(Tensor::stack(all_of_rank!($kind, items, R2), d))),
            3 => Ok($kind::R4(Tensor::stack(all_of_rank!($kind, items, R3), d))),
            _ => Err(too_big($op, rank + 1)),
        }
    }};
}

/// `Tensor::stack::<D2>(vec![a, b, ...], dim)`: tensors of one kind and rank (burn panics
/// when their shapes differ, as torch raises).
fn stack(op: Op, values: Vec<Value>, d: i64) -> Result<Value, Failed> {
    match &values[0] {
        Value::Tensor(_) => {
            let items = values.into_iter().map(|v| float_of(op, v));
            stack_kind!(Dyn, op, items.collect::<Result<_, _>>()?, d).map(float)
        }
        Value::Int(_) => {
            let items = values.into_iter().map(|v| int_of(op, v));
            stack_kind!(DynInt, op, items.collect::<Result<_, _>>()?, d).map(Value::Int)
        }
        Value::Bool(_) => {
            let items = values.into_iter().map(|v| bool_of(op, v));
            stack_kind!(DynBool, op, items.collect::<Result<_, _>>()?, d).map(Value::Bool)
        }
        other => Err(not_a(op, "a tensor", other)),
    }
}

/// `t.narrow(dim, start, length)`; torch's negative `start` is written as `size + start`.
macro_rules! narrow {
    ($kind:ident, $value:expr, $op:expr, $d:expr, $start:expr, $length:expr) => {{
        let value = $value;
        let dims = value.dims();
        let d = dim($op, $d, rank_of!($kind, value))?;
        let start = if $start < 0 {
            $start + dims[d] as i64
        } else {
            $start
        };
        if start < 0 {
            return Err(Failed::Error(format!(
                "{}: start {} is out of range for a dim of size {}",
                $op.name(),
                $start,
                dims[d]
            )));
        }
        let (start, length) = (start as usize, $length as usize);
        Ok::<_, Failed>(same_rank!($kind, value, t => t.narrow(d, start, length)))
    }};
}

/// `t.select(dim, indices)` with rank-1 indices.
macro_rules! index_select {
    ($kind:ident, $value:expr, $op:expr, $d:expr, $indices:expr) => {{
        let value = $value;
        let d = dim($op, $d, rank_of!($kind, value))?;
        let indices: DynInt = $indices;
        let shape = indices.dims();
        let DynInt::R1(indices) = indices else {
            return Err(Failed::Error(format!(
                "{}: the indices must be a rank-1 int tensor (torch: index_select(): Index is \
                 supposed to be a vector), got shape {shape:?}",
                $op.name()
            )));
        };
        Ok::<_, Failed>(same_rank!($kind, value, t => t.select(d, indices)))
    }};
}

/// `t.gather(dim, indices)`: the indices have the tensor's rank.
fn gather(op: Op, x: Dyn, indices: DynInt, d: i64) -> Result<Value, Failed> {
    let d = dim(op, d, x.rank())?;
    let shapes = [x.dims(), indices.dims()];
    Ok(float(match (x, indices) {
        (Dyn::R1(t), DynInt::R1(i)) => Dyn::R1(t.gather(d, i)),
        (Dyn::R2(t), DynInt::R2(i)) => Dyn::R2(t.gather(d, i)),
        (Dyn::R3(t), DynInt::R3(i)) => Dyn::R3(t.gather(d, i)),
        (Dyn::R4(t), DynInt::R4(i)) => Dyn::R4(t.gather(d, i)),
        _ => {
            return Err(Failed::Error(format!(
                "{}: the indices must have the tensor's rank (torch: Index tensor must have the \
                 same number of dimensions as input tensor), got shapes {:?} and {:?}",
                op.name(),
                shapes[0],
                shapes[1]
            )))
        }
    }))
}

/// A reduction that keeps the dim (burn's), squeezed unless `keepdim`; a rank-1 result keeps
/// its one dim (torch gives a scalar, shape `[]`; burn has no rank 0).
fn squeeze_reduced(kept: Dyn, d: usize, keepdim: bool) -> Dyn {
    if keepdim {
        return kept;
    }
    match kept {
        Dyn::R1(t) => Dyn::R1(t),
        Dyn::R2(t) => Dyn::R1(t.squeeze_dim(d)),
        Dyn::R3(t) => Dyn::R2(t.squeeze_dim(d)),
        Dyn::R4(t) => Dyn::R3(t.squeeze_dim(d)),
    }
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

/// How a port reduces along a dim (each keeps the dim).
#[derive(Clone, Copy)]
enum AlongDim {
    Max,
    Min,
    Mean,
    /// `var` (divides by n - 1).
    Var,
    /// `var_bias` (divides by n).
    VarBias,
}

fn along_dim(op: Op, x: Dyn, d: i64, keepdim: bool, how: AlongDim) -> Result<Value, Failed> {
    let d = dim(op, d, x.rank())?;
    let kept = match how {
        AlongDim::Max => same_rank!(Dyn, x, t => t.max_dim(d)),
        AlongDim::Min => same_rank!(Dyn, x, t => t.min_dim(d)),
        AlongDim::Mean => same_rank!(Dyn, x, t => t.mean_dim(d)),
        AlongDim::Var => same_rank!(Dyn, x, t => t.var(d)),
        AlongDim::VarBias => same_rank!(Dyn, x, t => t.var_bias(d)),
    };
    Ok(float(squeeze_reduced(kept, d, keepdim)))
}

/// torch's `var(t, dim)` is unbiased unless `unbiased=False` or `correction=0`; giving both raises.
fn var_method(op: Op, unbiased: Option<bool>, correction: Option<i64>) -> Result<AlongDim, Failed> {
    match (unbiased, correction) {
        (Some(_), Some(_)) => Err(Failed::Error(format!(
            "{}: give `unbiased` or `correction`, not both (torch: var() received an invalid \
             combination of arguments)",
            op.name()
        ))),
        (Some(false), None) | (None, Some(0)) => Ok(AlongDim::VarBias),
        _ => Ok(AlongDim::Var),
    }
}

/// `t.clamp(min, max)`, `t.clamp_min(min)` or `t.clamp_max(max)`, by what is given.
fn clamp(op: Op, x: Dyn, min: Option<f64>, max: Option<f64>) -> Result<Value, Failed> {
    Ok(float(match (min, max) {
        (Some(lo), Some(hi)) => same_rank!(Dyn, x, t => t.clamp(lo, hi)),
        (Some(lo), None) => same_rank!(Dyn, x, t => t.clamp_min(lo)),
        (None, Some(hi)) => same_rank!(Dyn, x, t => t.clamp_max(hi)),
        (None, None) => {
            return Err(Failed::Error(format!(
                "{}: give `min`, `max` or both (torch: At least one of 'min' or 'max' must not be None)",
                op.name()
            )))
        }
    }))
}

/// torch's `where(mask, a, b)`: `b.mask_where(mask, a)`.
fn where_(op: Op, mask: DynBool, a: Dyn, b: Dyn) -> Result<Value, Failed> {
    let shapes = [mask.dims(), a.dims(), b.dims()];
    Ok(float(match (mask, a, b) {
        (DynBool::R1(m), Dyn::R1(a), Dyn::R1(b)) => Dyn::R1(b.mask_where(m, a)),
        (DynBool::R2(m), Dyn::R2(a), Dyn::R2(b)) => Dyn::R2(b.mask_where(m, a)),
        (DynBool::R3(m), Dyn::R3(a), Dyn::R3(b)) => Dyn::R3(b.mask_where(m, a)),
        (DynBool::R4(m), Dyn::R4(a), Dyn::R4(b)) => Dyn::R4(b.mask_where(m, a)),
        _ => return Err(unequal_ranks(op, &shapes)),
    }))
}

/// `t.mask_fill(mask, value)`.
fn masked_fill(op: Op, x: Dyn, mask: DynBool, value: f64) -> Result<Value, Failed> {
    let shapes = [x.dims(), mask.dims()];
    Ok(float(match (x, mask) {
        (Dyn::R1(t), DynBool::R1(m)) => Dyn::R1(t.mask_fill(m, value)),
        (Dyn::R2(t), DynBool::R2(m)) => Dyn::R2(t.mask_fill(m, value)),
        (Dyn::R3(t), DynBool::R3(m)) => Dyn::R3(t.mask_fill(m, value)),
        (Dyn::R4(t), DynBool::R4(m)) => Dyn::R4(t.mask_fill(m, value)),
        _ => return Err(unequal_ranks(op, &shapes)),
    }))
}

/// `t.flatten::<D2>(start, end)` (burn checks `start <= end`, and panics otherwise).
macro_rules! flatten {
    ($kind:ident, $value:expr, $op:expr, $start:expr, $end:expr) => {{
        let value = $value;
        let rank = rank_of!($kind, value);
        let (s, e) = (dim($op, $start, rank)?, dim($op, $end, rank)?);
        // torch raises for start > end; burn's check panics: the port's rank is then its own.
        let to = rank - e.saturating_sub(s);
        Ok::<_, Failed>(match value {
            $kind::R1(t) => $kind::R1(t.flatten(s, e)),
            $kind::R2(t) => match to {
                1 => $kind::R1(t.flatten(s, e)),
                _ => $kind::R2(t.flatten(s, e)),
            },
            $kind::R3(t) => match to {
                1 => $kind::R1(t.flatten(s, e)),
                2 => $kind::R2(t.flatten(s, e)),
                _ => $kind::R3(t.flatten(s, e)),
            },
            $kind::R4(t) => match to {
                1 => $kind::R1(t.flatten(s, e)),
                2 => $kind::R2(t.flatten(s, e)),
                3 => $kind::R3(t.flatten(s, e)),
                _ => $kind::R4(t.flatten(s, e)),
            },
        })
    }};
}

/// `t.unsqueeze_dim::<D2>(dim)`.
macro_rules! unsqueeze {
    ($kind:ident, $value:expr, $op:expr, $d:expr) => {{
        let value = $value;
        let rank = rank_of!($kind, value);
        let d = new_dim($op, $d, rank)?;
        match value {
            $kind::R1(t) => Ok($kind::R2(t.unsqueeze_dim(d))),
            $kind::R2(t) => Ok($kind::R3(t.unsqueeze_dim(d))),
            $kind::R3(t) => Ok($kind::R4(t.unsqueeze_dim(d))),
            $kind::R4(_) => Err(too_big($op, rank + 1)),
        }
    }};
}

/// `t.squeeze_dim::<D2>(dim)`: burn panics when the dim's size is not 1 (torch leaves the
/// tensor as is). A rank-1 `[1]` stays `[1]` (burn has no rank 0; torch gives `[]`); a longer
/// rank-1 tensor is the port's `squeeze_dim::<1>`, which burn refuses as for any size but 1.
macro_rules! squeeze {
    ($kind:ident, $value:expr, $op:expr, $d:expr) => {{
        let value = $value;
        let d = dim($op, $d, rank_of!($kind, value))?;
        Ok::<_, Failed>(match value {
            $kind::R1(t) if t.dims()[0] == 1 => $kind::R1(t),
            $kind::R1(t) => $kind::R1(t.squeeze_dim::<1>(d)),
            $kind::R2(t) => $kind::R1(t.squeeze_dim(d)),
            $kind::R3(t) => $kind::R2(t.squeeze_dim(d)),
            $kind::R4(t) => $kind::R3(t.squeeze_dim(d)),
        })
    }};
}

/// `t.expand::<N, _>(shape)` for a tensor of any rank.
macro_rules! expand_to {
    ($kind:ident, $value:expr, $sizes:expr, $n:literal, $variant:ident) => {{
        let shape: [i64; $n] = $sizes.try_into().expect("the length was matched");
        $kind::$variant(match $value {
            $kind::R1(t) => t.expand(shape),
            $kind::R2(t) => t.expand(shape),
            $kind::R3(t) => t.expand(shape),
            $kind::R4(t) => t.expand(shape),
        })
    }};
}

/// `t.expand::<D2, _>([sizes])` (-1 keeps a dim; new dims in front).
macro_rules! expand {
    ($kind:ident, $value:expr, $op:expr, $sizes:expr) => {{
        let value = $value;
        let sizes: &[i64] = $sizes;
        let rank = rank_of!($kind, value);
        if sizes.len() < rank || sizes.len() > MAX_RANK {
            return Err(Failed::Error(format!(
                "{}: {} sizes for a rank-{rank} tensor (torch: the number of sizes provided must be \
                 greater or equal to the number of dimensions in the tensor; this interpreter: at most {MAX_RANK})",
                $op.name(),
                sizes.len()
            )));
        }
        Ok::<_, Failed>(match sizes.len() {
            1 => expand_to!($kind, value, sizes, 1, R1),
            2 => expand_to!($kind, value, sizes, 2, R2),
            3 => expand_to!($kind, value, sizes, 3, R3),
            _ => expand_to!($kind, value, sizes, 4, R4),
        })
    }};
}

/// How two tensors are compared.
#[derive(Clone, Copy)]
enum Compare {
    Greater,
    Lower,
}

/// `a.greater(b)` / `a.lower(b)`: a bool mask.
fn compare(op: Op, a: Dyn, b: Dyn, how: Compare) -> Result<Value, Failed> {
    let shapes = [a.dims(), b.dims()];
    macro_rules! cmp {
        ($a:ident, $b:ident) => {
            match how {
                Compare::Greater => $a.greater($b),
                Compare::Lower => $a.lower($b),
            }
        };
    }
    Ok(Value::Bool(match (a, b) {
        (Dyn::R1(a), Dyn::R1(b)) => DynBool::R1(cmp!(a, b)),
        (Dyn::R2(a), Dyn::R2(b)) => DynBool::R2(cmp!(a, b)),
        (Dyn::R3(a), Dyn::R3(b)) => DynBool::R3(cmp!(a, b)),
        (Dyn::R4(a), Dyn::R4(b)) => DynBool::R4(cmp!(a, b)),
        _ => return Err(unequal_ranks(op, &shapes)),
    }))
}

/// `t.greater_elem(s)` / `t.lower_elem(s)`.
fn compare_scalar(a: Dyn, s: f64, how: Compare) -> Value {
    macro_rules! cmp {
        ($variant:ident, $t:ident) => {
            DynBool::$variant(match how {
                Compare::Greater => $t.greater_elem(s),
                Compare::Lower => $t.lower_elem(s),
            })
        };
    }
    Value::Bool(match a {
        Dyn::R1(t) => cmp!(R1, t),
        Dyn::R2(t) => cmp!(R2, t),
        Dyn::R3(t) => cmp!(R3, t),
        Dyn::R4(t) => cmp!(R4, t),
    })
}

pub fn apply(op: Op, attrs: &OpAttrs, args: Vec<Operand>, _ctx: &Ctx<'_>) -> Result<Value, Failed> {
    let values = tensors_of(op, args)?;
    match (op, attrs) {
        (Op::Cat, OpAttrs::Cat(a)) => return cat(op, values, a.dim),
        (Op::Stack, OpAttrs::Stack(a)) => return stack(op, values, a.dim),
        _ => {}
    }
    let mut values = values.into_iter();
    let mut next = || {
        values
            .next()
            .ok_or_else(|| Failed::Error(format!("{}: too few arguments", op.name())))
    };
    match (op, attrs) {
        (Op::Narrow, OpAttrs::Narrow(a)) => {
            any_kind!(op, next()?, narrow(op, a.dim, a.start, a.length))
        }
        (Op::IndexSelect, OpAttrs::IndexSelect(a)) => {
            let x = next()?;
            let indices = int_of(op, next()?)?;
            any_kind!(op, x, index_select(op, a.dim, indices))
        }
        (Op::Gather, OpAttrs::Gather(a)) => {
            let x = float_of(op, next()?)?;
            let indices = int_of(op, next()?)?;
            gather(op, x, indices, a.dim)
        }
        (Op::Argmax, OpAttrs::Argmax(a)) => argmax(op, float_of(op, next()?)?, a.dim, a.keepdim),
        (Op::MaxDim, OpAttrs::MaxDim(a)) => {
            along_dim(op, float_of(op, next()?)?, a.dim, a.keepdim, AlongDim::Max)
        }
        (Op::MinDim, OpAttrs::MinDim(a)) => {
            along_dim(op, float_of(op, next()?)?, a.dim, a.keepdim, AlongDim::Min)
        }
        (Op::MeanDim, OpAttrs::MeanDim(a)) => {
            along_dim(op, float_of(op, next()?)?, a.dim, a.keepdim, AlongDim::Mean)
        }
        (Op::Square, _) => Ok(float(map_dyn!(float_of(op, next()?)?, t => t.square()))),
        (Op::Var, OpAttrs::Var(a)) => {
            let how = var_method(op, a.unbiased, a.correction)?;
            along_dim(op, float_of(op, next()?)?, a.dim, a.keepdim, how)
        }
        (Op::Clamp, OpAttrs::Clamp(a)) => clamp(op, float_of(op, next()?)?, a.min, a.max),
        (Op::Where, _) => {
            let mask = bool_of(op, next()?)?;
            let a = float_of(op, next()?)?;
            let b = float_of(op, next()?)?;
            where_(op, mask, a, b)
        }
        (Op::MaskedFill, OpAttrs::MaskedFill(a)) => {
            let x = float_of(op, next()?)?;
            let mask = bool_of(op, next()?)?;
            masked_fill(op, x, mask, a.value)
        }
        (Op::Flatten, OpAttrs::Flatten(a)) => {
            any_kind!(op, next()?, flatten(op, a.start_dim, a.end_dim))
        }
        (Op::Unsqueeze, OpAttrs::Unsqueeze(a)) => any_kind!(op, next()?, unsqueeze(op, a.dim)),
        (Op::Squeeze, OpAttrs::Squeeze(a)) => any_kind!(op, next()?, squeeze(op, a.dim)),
        (Op::Expand, OpAttrs::Expand(a)) => any_kind!(op, next()?, expand(op, &a.sizes)),
        (Op::Gt | Op::Lt, _) => {
            let a = float_of(op, next()?)?;
            let b = float_of(op, next()?)?;
            let how = if op == Op::Gt {
                Compare::Greater
            } else {
                Compare::Lower
            };
            compare(op, a, b, how)
        }
        (Op::GtScalar, OpAttrs::GtScalar(a)) => Ok(compare_scalar(
            float_of(op, next()?)?,
            a.scalar,
            Compare::Greater,
        )),
        (Op::LtScalar, OpAttrs::LtScalar(a)) => Ok(compare_scalar(
            float_of(op, next()?)?,
            a.scalar,
            Compare::Lower,
        )),
        _ => Err(Failed::Error(format!(
            "{}: not a tensors operation",
            op.name()
        ))),
    }
}
