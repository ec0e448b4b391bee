//! Layers and activations, as a port writes them in burn 0.22.1: each module
//! kind is built from its config with only the attributes the program gives
//! (`with_*` for each; burn's own default for the rest), its params and
//! buffers then take the program's data; each activation or pooling is burn's
//! function or stateless module.
//!
//! A torch tensor is read back in torch layout: a burn Linear's weight (in
//! MultiheadAttention) is `[d_in, d_out]`, so its value carries the
//! *transposed* flag; torch's fused `in_proj_weight` / `in_proj_bias` are
//! made of three burn params (query, key, value), joined when read.

use burn::module::{Module, Param, ParamId, RunningState};
use burn::nn::attention::{MhaInput, MultiHeadAttention, MultiHeadAttentionConfig};
use burn::nn::conv::{Conv1d, Conv1dConfig, Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2dConfig, AvgPool2dConfig, MaxPool2dConfig};
use burn::nn::{
    BatchNorm, BatchNormConfig, Dropout, DropoutConfig, Embedding, EmbeddingConfig, GroupNorm,
    GroupNormConfig, LayerNorm, LayerNormConfig, LeakyReluConfig, Linear, PaddingConfig1d,
    PaddingConfig2d,
};
use burn::tensor::activation;
use burn::tensor::{Device, Tensor, TensorData};

use super::{float, float_arg, module_arg, wrong_rank, Ctx, Failed, Operand};
use crate::contract::{torch_defaults, GeluApproximate, ModuleAttrs, Op, OpAttrs};
use crate::program::compile::ModuleRef;
use crate::program::value::{map_dyn, transpose_host, Dyn, DynBool, DynInt, TensorValue, Value};

/// Every module kind but Linear (which the machine keeps apart for its layout flag).
// Built once per declared module and kept in a Vec: the size of the largest kind costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
pub enum Layer {
    Conv2d(Conv2d),
    Conv1d(Conv1d),
    BatchNorm1d(BatchNorm),
    BatchNorm2d(BatchNorm),
    LayerNorm(LayerNorm),
    GroupNorm(GroupNorm),
    Embedding(Embedding),
    Dropout(Dropout),
    MultiheadAttention(Attention),
}

/// burn's MultiHeadAttention (always batch first) and the layout torch's module was declared with.
#[derive(Module, Debug)]
pub struct Attention {
    pub mha: MultiHeadAttention,
    /// torch's `batch_first` (default false: the port swaps dims 0 and 1 around the call).
    pub batch_first: bool,
}

/// A module tensor's data from the IR: its torch-layout shape and values.
#[derive(Clone, Debug)]
pub struct TensorData32 {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

fn data<const D: usize>(t: &TensorData32, device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(t.data.clone(), t.shape.clone()), device)
}

fn param<const D: usize>(t: &Option<TensorData32>, device: &Device) -> Option<Param<Tensor<D>>> {
    t.as_ref().map(|t| Param::from_tensor(data(t, device)))
}

fn set<const D: usize>(target: &mut Param<Tensor<D>>, t: &Option<TensorData32>, device: &Device) {
    if let Some(p) = param(t, device) {
        *target = p;
    }
}

/// Loads rows `[part * d, (part + 1) * d)` of torch's `[3d, d]` in_proj_weight (and the
/// matching slice of in_proj_bias) into a burn Linear, whose weight is `[d_in, d_out]`.
fn load_projection(
    linear: &mut Linear,
    part: usize,
    d: usize,
    weight: &Option<TensorData32>,
    bias: &Option<TensorData32>,
    device: &Device,
) {
    if let Some(w) = weight {
        let rows = &w.data[part * d * d..(part + 1) * d * d];
        let t = Tensor::<2>::from_data(TensorData::new(transpose_host(rows, d, d), [d, d]), device);
        linear.weight = Param::from_tensor(t);
    }
    if let Some(b) = bias {
        let t = Tensor::<1>::from_data(
            TensorData::new(b.data[part * d..(part + 1) * d].to_vec(), [d]),
            device,
        );
        linear.bias = Some(Param::from_tensor(t));
    }
}

fn batch_norm(
    num_features: i64,
    eps: Option<f64>,
    momentum: Option<f64>,
    tensors: &[Option<TensorData32>],
    device: &Device,
) -> BatchNorm {
    let mut config = BatchNormConfig::new(num_features as usize);
    if let Some(e) = eps {
        config = config.with_epsilon(e);
    }
    if let Some(m) = momentum {
        config = config.with_momentum(m);
    }
    // `affine=False` has no burn spelling: gamma and beta stay (ones and zeros).
    let mut bn = config.init(device);
    set(&mut bn.gamma, &tensors[0], device);
    set(&mut bn.beta, &tensors[1], device);
    if let Some(t) = &tensors[2] {
        bn.running_mean = RunningState::new(data(t, device));
    }
    if let Some(t) = &tensors[3] {
        bn.running_var = RunningState::new(data(t, device));
    }
    bn
}

/// Builds the module a port writes from the declaration, then loads the program's data into its
/// params and buffers (`tensors`: by the kind's `tensor_names()`, None where it has none).
pub fn build(attrs: &ModuleAttrs, tensors: &[Option<TensorData32>], device: &Device) -> Layer {
    match attrs {
        ModuleAttrs::Conv2d(a) => {
            let (i, o, k) = (
                a.in_channels as usize,
                a.out_channels as usize,
                a.kernel_size as usize,
            );
            let mut config = Conv2dConfig::new([i, o], [k, k]);
            if let Some(s) = a.stride {
                config = config.with_stride([s as usize; 2]);
            }
            if let Some(p) = a.padding {
                let p = p as usize;
                config = config.with_padding(PaddingConfig2d::Explicit(p, p, p, p));
            }
            if let Some(d) = a.dilation {
                config = config.with_dilation([d as usize; 2]);
            }
            if let Some(g) = a.groups {
                config = config.with_groups(g as usize);
            }
            if let Some(b) = a.bias {
                config = config.with_bias(b);
            }
            let mut conv = config.init(device);
            set(&mut conv.weight, &tensors[0], device);
            conv.bias = param(&tensors[1], device);
            Layer::Conv2d(conv)
        }
        ModuleAttrs::Conv1d(a) => {
            let mut config = Conv1dConfig::new(
                a.in_channels as usize,
                a.out_channels as usize,
                a.kernel_size as usize,
            );
            if let Some(s) = a.stride {
                config = config.with_stride(s as usize);
            }
            if let Some(p) = a.padding {
                config = config.with_padding(PaddingConfig1d::Explicit(p as usize, p as usize));
            }
            if let Some(d) = a.dilation {
                config = config.with_dilation(d as usize);
            }
            if let Some(g) = a.groups {
                config = config.with_groups(g as usize);
            }
            if let Some(b) = a.bias {
                config = config.with_bias(b);
            }
            let mut conv = config.init(device);
            set(&mut conv.weight, &tensors[0], device);
            conv.bias = param(&tensors[1], device);
            Layer::Conv1d(conv)
        }
        ModuleAttrs::BatchNorm1d(a) => Layer::BatchNorm1d(batch_norm(
            a.num_features,
            a.eps,
            a.momentum,
            tensors,
            device,
        )),
        ModuleAttrs::BatchNorm2d(a) => Layer::BatchNorm2d(batch_norm(
            a.num_features,
            a.eps,
            a.momentum,
            tensors,
            device,
        )),
        ModuleAttrs::LayerNorm(a) => {
            let mut config = LayerNormConfig::new(a.normalized_shape as usize);
            if let Some(e) = a.eps {
                config = config.with_epsilon(e);
            }
            if a.elementwise_affine == Some(false) {
                // burn's LayerNorm always has gamma; without torch's affine the port drops beta.
                config = config.with_bias(false);
            }
            let mut ln = config.init(device);
            set(&mut ln.gamma, &tensors[0], device);
            if tensors[1].is_some() {
                ln.beta = param(&tensors[1], device);
            }
            Layer::LayerNorm(ln)
        }
        ModuleAttrs::GroupNorm(a) => {
            let mut config = GroupNormConfig::new(a.num_groups as usize, a.num_channels as usize);
            if let Some(e) = a.eps {
                config = config.with_epsilon(e);
            }
            if let Some(affine) = a.affine {
                config = config.with_affine(affine);
            }
            let mut gn = config.init(device);
            if tensors[0].is_some() {
                gn.gamma = param(&tensors[0], device);
            }
            if tensors[1].is_some() {
                gn.beta = param(&tensors[1], device);
            }
            Layer::GroupNorm(gn)
        }
        ModuleAttrs::Embedding(a) => {
            // burn's Embedding has no padding index: the port omits `padding_idx`.
            let mut emb = EmbeddingConfig::new(a.num_embeddings as usize, a.embedding_dim as usize)
                .init(device);
            set(&mut emb.weight, &tensors[0], device);
            Layer::Embedding(emb)
        }
        ModuleAttrs::Dropout(a) => {
            // `DropoutConfig::new` takes the probability: burn has no default, the port writes torch's.
            Layer::Dropout(DropoutConfig::new(a.p.unwrap_or(torch_defaults::DROPOUT_P)).init())
        }
        ModuleAttrs::MultiheadAttention(a) => {
            let d = a.embed_dim as usize;
            let mut config = MultiHeadAttentionConfig::new(d, a.num_heads as usize);
            if let Some(p) = a.dropout {
                config = config.with_dropout(p);
            }
            if let Some(b) = a.bias {
                config = config
                    .with_query_bias(b)
                    .with_key_bias(b)
                    .with_value_bias(b)
                    .with_output_bias(b);
            }
            let mut mha = config.init(device);
            load_projection(&mut mha.query, 0, d, &tensors[0], &tensors[1], device);
            load_projection(&mut mha.key, 1, d, &tensors[0], &tensors[1], device);
            load_projection(&mut mha.value, 2, d, &tensors[0], &tensors[1], device);
            if let Some(w) = &tensors[2] {
                let t = Tensor::<2>::from_data(
                    TensorData::new(transpose_host(&w.data, d, d), [d, d]),
                    device,
                );
                mha.output.weight = Param::from_tensor(t);
            }
            if tensors[3].is_some() {
                mha.output.bias = param(&tensors[3], device);
            }
            Layer::MultiheadAttention(Attention {
                mha,
                // burn has no such setting (always batch first): the port follows torch's default.
                batch_first: a
                    .batch_first
                    .unwrap_or(torch_defaults::MULTIHEADATTENTION_BATCH_FIRST),
            })
        }
        ModuleAttrs::Linear(_) => unreachable!("a Linear is the machine's own"),
    }
}

/// A param of a module, of its rank, or a buffer (a running statistic).
enum Slot<'a> {
    R1(&'a mut Param<Tensor<1>>),
    R2(&'a mut Param<Tensor<2>>),
    R3(&'a mut Param<Tensor<3>>),
    R4(&'a mut Param<Tensor<4>>),
    Buffer(&'a mut RunningState<Tensor<1>>),
}

fn present<T>(p: &mut Option<T>) -> &mut T {
    p.as_mut().expect("a tensor is compiled only when present")
}

/// The burn params (or buffer) behind a module's tensor, by its index in the kind's
/// `tensor_names()`: one, or three for MultiheadAttention's fused in_proj_weight / in_proj_bias.
fn slots(layer: &mut Layer, index: u8) -> Vec<Slot<'_>> {
    match (layer, index) {
        (Layer::Conv2d(c), 0) => vec![Slot::R4(&mut c.weight)],
        (Layer::Conv2d(c), _) => vec![Slot::R1(present(&mut c.bias))],
        (Layer::Conv1d(c), 0) => vec![Slot::R3(&mut c.weight)],
        (Layer::Conv1d(c), _) => vec![Slot::R1(present(&mut c.bias))],
        (Layer::BatchNorm1d(b) | Layer::BatchNorm2d(b), 0) => vec![Slot::R1(&mut b.gamma)],
        (Layer::BatchNorm1d(b) | Layer::BatchNorm2d(b), 1) => vec![Slot::R1(&mut b.beta)],
        (Layer::BatchNorm1d(b) | Layer::BatchNorm2d(b), 2) => {
            vec![Slot::Buffer(&mut b.running_mean)]
        }
        (Layer::BatchNorm1d(b) | Layer::BatchNorm2d(b), _) => {
            vec![Slot::Buffer(&mut b.running_var)]
        }
        (Layer::LayerNorm(l), 0) => vec![Slot::R1(&mut l.gamma)],
        (Layer::LayerNorm(l), _) => vec![Slot::R1(present(&mut l.beta))],
        (Layer::GroupNorm(g), 0) => vec![Slot::R1(present(&mut g.gamma))],
        (Layer::GroupNorm(g), _) => vec![Slot::R1(present(&mut g.beta))],
        (Layer::Embedding(e), _) => vec![Slot::R2(&mut e.weight)],
        (Layer::Dropout(_), _) => unreachable!("a Dropout has no tensors"),
        (Layer::MultiheadAttention(a), 0) => {
            let m = &mut a.mha;
            vec![
                Slot::R2(&mut m.query.weight),
                Slot::R2(&mut m.key.weight),
                Slot::R2(&mut m.value.weight),
            ]
        }
        (Layer::MultiheadAttention(a), 1) => {
            let m = &mut a.mha;
            vec![
                Slot::R1(present(&mut m.query.bias)),
                Slot::R1(present(&mut m.key.bias)),
                Slot::R1(present(&mut m.value.bias)),
            ]
        }
        (Layer::MultiheadAttention(a), 2) => vec![Slot::R2(&mut a.mha.output.weight)],
        (Layer::MultiheadAttention(a), _) => vec![Slot::R1(present(&mut a.mha.output.bias))],
    }
}

/// The same, read only: each burn tensor with its param id.
fn values(layer: &Layer, index: u8) -> Vec<(Dyn, ParamId)> {
    fn r1(p: &Param<Tensor<1>>) -> (Dyn, ParamId) {
        (Dyn::R1(p.val()), p.id)
    }
    fn r2(p: &Param<Tensor<2>>) -> (Dyn, ParamId) {
        (Dyn::R2(p.val()), p.id)
    }
    fn some<T>(p: &Option<T>) -> &T {
        p.as_ref().expect("a tensor is compiled only when present")
    }
    fn buffer(s: &RunningState<Tensor<1>>) -> (Dyn, ParamId) {
        // `value_sync`: `value()` may be one update behind (burn-core `running.rs`). A running
        // state is no param (its id is private): a fresh id, which no gradient has.
        (Dyn::R1(s.value_sync()), ParamId::new())
    }
    match (layer, index) {
        (Layer::Conv2d(c), 0) => vec![(Dyn::R4(c.weight.val()), c.weight.id)],
        (Layer::Conv2d(c), _) => vec![r1(some(&c.bias))],
        (Layer::Conv1d(c), 0) => vec![(Dyn::R3(c.weight.val()), c.weight.id)],
        (Layer::Conv1d(c), _) => vec![r1(some(&c.bias))],
        (Layer::BatchNorm1d(b) | Layer::BatchNorm2d(b), 0) => vec![r1(&b.gamma)],
        (Layer::BatchNorm1d(b) | Layer::BatchNorm2d(b), 1) => vec![r1(&b.beta)],
        (Layer::BatchNorm1d(b) | Layer::BatchNorm2d(b), 2) => vec![buffer(&b.running_mean)],
        (Layer::BatchNorm1d(b) | Layer::BatchNorm2d(b), _) => vec![buffer(&b.running_var)],
        (Layer::LayerNorm(l), 0) => vec![r1(&l.gamma)],
        (Layer::LayerNorm(l), _) => vec![r1(some(&l.beta))],
        (Layer::GroupNorm(g), 0) => vec![r1(some(&g.gamma))],
        (Layer::GroupNorm(g), _) => vec![r1(some(&g.beta))],
        (Layer::Embedding(e), _) => vec![r2(&e.weight)],
        (Layer::Dropout(_), _) => unreachable!("a Dropout has no tensors"),
        (Layer::MultiheadAttention(a), 0) => {
            let m = &a.mha;
            vec![r2(&m.query.weight), r2(&m.key.weight), r2(&m.value.weight)]
        }
        (Layer::MultiheadAttention(a), 1) => {
            let m = &a.mha;
            vec![
                r1(some(&m.query.bias)),
                r1(some(&m.key.bias)),
                r1(some(&m.value.bias)),
            ]
        }
        (Layer::MultiheadAttention(a), 2) => vec![r2(&a.mha.output.weight)],
        (Layer::MultiheadAttention(a), _) => vec![r1(some(&a.mha.output.bias))],
    }
}

/// Whether the tensor is kept `[d_in, d_out]` by burn (a Linear's weight inside a module).
fn transposed(layer: &Layer, index: u8) -> bool {
    matches!(layer, Layer::MultiheadAttention(_)) && (index == 0 || index == 2)
}

/// Joins the burn tensors (or their gradients) of one torch tensor: one stays as it is; the
/// query, key and value parts of an in_proj are concatenated (weights `[d, 3d]`, read
/// transposed as torch's `[3d, d]`; biases `[3d]`).
fn join(layer: &Layer, index: u8, mut parts: Vec<Dyn>) -> TensorValue {
    let t = if parts.len() == 1 {
        parts.pop().expect("one part")
    } else {
        match parts.first() {
            Some(Dyn::R2(_)) => Dyn::R2(Tensor::cat(
                parts
                    .into_iter()
                    .map(|p| match p {
                        Dyn::R2(t) => t,
                        _ => unreachable!("the parts of an in_proj weight are rank 2"),
                    })
                    .collect(),
                1,
            )),
            _ => Dyn::R1(Tensor::cat(
                parts
                    .into_iter()
                    .map(|p| match p {
                        Dyn::R1(t) => t,
                        _ => unreachable!("the parts of an in_proj bias are rank 1"),
                    })
                    .collect(),
                0,
            )),
        }
    };
    TensorValue {
        t,
        transposed: transposed(layer, index),
    }
}

/// The current value of a module's tensor (by its index in the kind's `tensor_names()`).
pub fn tensor(layer: &Layer, index: u8) -> TensorValue {
    let parts = values(layer, index).into_iter().map(|(t, _)| t).collect();
    join(layer, index, parts)
}

/// The gradient of a module's tensor, from each of its burn params' (`grad` of one part; None
/// when a part has none).
pub fn grad(
    layer: &Layer,
    index: u8,
    mut grad: impl FnMut(&Dyn, ParamId) -> Option<Dyn>,
) -> Option<TensorValue> {
    let mut parts = Vec::new();
    for (t, id) in values(layer, index) {
        parts.push(grad(&t, id)?);
    }
    Some(join(layer, index, parts))
}

pub fn param_id(layer: &Layer, index: u8) -> ParamId {
    values(layer, index)[0].1
}

/// `Param::set_require_grad` of a module's param (`freeze`, `require_grad`); a buffer is not a
/// param in burn (a `RunningState` never requires grad): unchanged.
pub fn set_require_grad(layer: &mut Layer, index: u8, require: bool) {
    for slot in slots(layer, index) {
        match slot {
            Slot::R1(p) => *p = p.clone().set_require_grad(require),
            Slot::R2(p) => *p = p.clone().set_require_grad(require),
            Slot::R3(p) => *p = p.clone().set_require_grad(require),
            Slot::R4(p) => *p = p.clone().set_require_grad(require),
            Slot::Buffer(_) => {}
        }
    }
}

/// `Param::map(|t| t.add_scalar(s))` of a module's param (`add_scalar_`); a buffer's state is
/// replaced by its value plus `s`.
pub fn add_scalar(layer: &mut Layer, index: u8, s: f64) {
    for slot in slots(layer, index) {
        match slot {
            Slot::R1(p) => *p = p.clone().map(|t| t.add_scalar(s)),
            Slot::R2(p) => *p = p.clone().map(|t| t.add_scalar(s)),
            Slot::R3(p) => *p = p.clone().map(|t| t.add_scalar(s)),
            Slot::R4(p) => *p = p.clone().map(|t| t.add_scalar(s)),
            Slot::Buffer(b) => *b = RunningState::new(b.value_sync().add_scalar(s)),
        }
    }
}

fn layer<'a>(op: Op, args: &[Operand], ctx: &'a Ctx<'_>) -> Result<&'a Layer, Failed> {
    match module_arg(op, args, 0)? {
        ModuleRef::Layer(i) => Ok(&ctx.model.layers[i as usize]),
        ModuleRef::Linear(_) => Err(Failed::Error(format!(
            "{}: the module is a Linear",
            op.name()
        ))),
    }
}

fn not_the_kind(op: Op) -> Failed {
    Failed::Error(format!("{}: the module is of another kind", op.name()))
}

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

fn bool_arg(op: Op, args: &mut [Operand], i: usize) -> Result<DynBool, Failed> {
    match args
        .get_mut(i)
        .map(|a| std::mem::replace(a, Operand::Value(Value::Number(0.0))))
    {
        Some(Operand::Value(Value::Bool(t))) => Ok(t),
        Some(Operand::Value(other)) => Err(Failed::Error(format!(
            "{}: argument {} is {}, not a bool tensor",
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

fn rank3(op: Op, x: Dyn, what: &str) -> Result<Tensor<3>, Failed> {
    match x {
        Dyn::R3(t) => Ok(t),
        other => Err(wrong_rank(op, what, other.rank())),
    }
}

fn rank4(op: Op, x: Dyn, what: &str) -> Result<Tensor<4>, Failed> {
    match x {
        Dyn::R4(t) => Ok(t),
        other => Err(wrong_rank(op, what, other.rank())),
    }
}

fn multihead_attention(
    op: Op,
    attention: &Attention,
    mut args: Vec<Operand>,
) -> Result<Value, Failed> {
    let what = "MultiheadAttention takes [L, N, d] (batch_first: [N, L, d])";
    let mut q = rank3(op, float_arg(op, &mut args, 1)?, what)?;
    let mut k = rank3(op, float_arg(op, &mut args, 2)?, what)?;
    let mut v = rank3(op, float_arg(op, &mut args, 3)?, what)?;
    if !attention.batch_first {
        q = q.swap_dims(0, 1);
        k = k.swap_dims(0, 1);
        v = v.swap_dims(0, 1);
    }
    let [n, l, _] = q.dims();
    let s = k.dims()[1];
    let mut input = MhaInput::new(q, k, v);
    if args.len() > 4 {
        match bool_arg(op, &mut args, 4)? {
            DynBool::R2(mask) => {
                input = input.mask_attn(mask.unsqueeze::<3>().expand([n, l, s]));
            }
            other => {
                return Err(Failed::Error(format!(
                    "{}: the port takes a bool attention mask [L, S], got a rank-{} one",
                    op.name(),
                    other.dims().len()
                )))
            }
        }
    }
    let out = attention.mha.forward(input).context;
    let out = if attention.batch_first {
        out
    } else {
        out.swap_dims(0, 1)
    };
    Ok(float(Dyn::R3(out)))
}

fn module_call(op: Op, mut args: Vec<Operand>, ctx: &Ctx<'_>) -> Result<Value, Failed> {
    let layer = layer(op, &args, ctx)?;
    if let (Op::MultiheadAttention, Layer::MultiheadAttention(a)) = (op, layer) {
        return multihead_attention(op, a, args);
    }
    if let (Op::Embedding, Layer::Embedding(e)) = (op, layer) {
        return Ok(float(match int_arg(op, &mut args, 1)? {
            DynInt::R1(ids) => Dyn::R2(e.forward(ids.unsqueeze::<2>()).squeeze_dim::<2>(0)),
            DynInt::R2(ids) => Dyn::R3(e.forward(ids)),
            other => {
                return Err(wrong_rank(
                    op,
                    "burn's Embedding takes ids [N, L] (or [L])",
                    other.dims().len(),
                ))
            }
        }));
    }
    let x = float_arg(op, &mut args, 1)?;
    let y = match (op, layer, x) {
        (Op::Conv2d, Layer::Conv2d(c), x) => {
            Dyn::R4(c.forward(rank4(op, x, "a Conv2d takes [N, C, H, W]")?))
        }
        (Op::Conv1d, Layer::Conv1d(c), x) => {
            Dyn::R3(c.forward(rank3(op, x, "a Conv1d takes [N, C, L]")?))
        }
        (Op::BatchNorm1d, Layer::BatchNorm1d(b), Dyn::R2(x)) => Dyn::R2(b.forward(x)),
        (Op::BatchNorm1d, Layer::BatchNorm1d(b), Dyn::R3(x)) => Dyn::R3(b.forward(x)),
        (Op::BatchNorm1d, Layer::BatchNorm1d(_), x) => {
            return Err(wrong_rank(
                op,
                "a BatchNorm1d takes [N, C] or [N, C, L]",
                x.rank(),
            ))
        }
        (Op::BatchNorm2d, Layer::BatchNorm2d(b), x) => {
            Dyn::R4(b.forward(rank4(op, x, "a BatchNorm2d takes [N, C, H, W]")?))
        }
        (Op::LayerNorm, Layer::LayerNorm(l), x) => map_dyn!(x, t => l.forward(t)),
        (Op::GroupNorm, Layer::GroupNorm(_), Dyn::R1(_)) => {
            return Err(wrong_rank(op, "a GroupNorm takes [N, C, ...]", 1))
        }
        (Op::GroupNorm, Layer::GroupNorm(g), x) => map_dyn!(x, t => g.forward(t)),
        (Op::Dropout, Layer::Dropout(d), x) => map_dyn!(x, t => d.forward(t)),
        _ => return Err(not_the_kind(op)),
    };
    Ok(float(y))
}

fn pool_input(op: Op, args: &mut [Operand]) -> Result<Tensor<4>, Failed> {
    rank4(
        op,
        float_arg(op, args, 0)?,
        "burn's 2-d pooling takes [N, C, H, W]",
    )
}

pub fn apply(
    op: Op,
    attrs: &OpAttrs,
    mut args: Vec<Operand>,
    ctx: &Ctx<'_>,
) -> Result<Value, Failed> {
    match (op, attrs) {
        (
            Op::Conv2d
            | Op::Conv1d
            | Op::BatchNorm1d
            | Op::BatchNorm2d
            | Op::LayerNorm
            | Op::GroupNorm
            | Op::Embedding
            | Op::Dropout
            | Op::MultiheadAttention,
            _,
        ) => module_call(op, args, ctx),
        (Op::Gelu, OpAttrs::Gelu(a)) => {
            let x = float_arg(op, &mut args, 0)?;
            Ok(float(match a.approximate {
                Some(GeluApproximate::Tanh) => map_dyn!(x, t => activation::gelu_approximate(t)),
                _ => map_dyn!(x, t => activation::gelu(t)),
            }))
        }
        (Op::Silu, _) => {
            let x = float_arg(op, &mut args, 0)?;
            Ok(float(map_dyn!(x, t => activation::silu(t))))
        }
        (Op::LeakyRelu, OpAttrs::LeakyRelu(a)) => {
            let x = float_arg(op, &mut args, 0)?;
            let mut config = LeakyReluConfig::new();
            if let Some(s) = a.negative_slope {
                config = config.with_negative_slope(s);
            }
            let relu = config.init();
            Ok(float(map_dyn!(x, t => relu.forward(t))))
        }
        (Op::Softmax, OpAttrs::Softmax(a)) => {
            let x = float_arg(op, &mut args, 0)?;
            Ok(float(map_dyn!(x, t => activation::softmax(t, a.dim))))
        }
        (Op::LogSoftmax, OpAttrs::LogSoftmax(a)) => {
            let x = float_arg(op, &mut args, 0)?;
            Ok(float(map_dyn!(x, t => activation::log_softmax(t, a.dim))))
        }
        (Op::MaxPool2d, OpAttrs::MaxPool2d(a)) => {
            let x = pool_input(op, &mut args)?;
            let k = a.kernel_size as usize;
            let mut config = MaxPool2dConfig::new([k, k]);
            if let Some(s) = a.stride {
                config = config.with_strides([s as usize; 2]);
            }
            if let Some(p) = a.padding {
                let p = p as usize;
                config = config.with_padding(PaddingConfig2d::Explicit(p, p, p, p));
            }
            if let Some(d) = a.dilation {
                config = config.with_dilation([d as usize; 2]);
            }
            Ok(float(Dyn::R4(config.init().forward(x))))
        }
        (Op::AvgPool2d, OpAttrs::AvgPool2d(a)) => {
            let x = pool_input(op, &mut args)?;
            let k = a.kernel_size as usize;
            let mut config = AvgPool2dConfig::new([k, k]);
            if let Some(s) = a.stride {
                config = config.with_strides([s as usize; 2]);
            }
            if let Some(p) = a.padding {
                let p = p as usize;
                config = config.with_padding(PaddingConfig2d::Explicit(p, p, p, p));
            }
            if let Some(c) = a.count_include_pad {
                config = config.with_count_include_pad(c);
            }
            Ok(float(Dyn::R4(config.init().forward(x))))
        }
        (Op::AdaptiveAvgPool2d, OpAttrs::AdaptiveAvgPool2d(a)) => {
            let x = pool_input(op, &mut args)?;
            let o = a.output_size as usize;
            Ok(float(Dyn::R4(
                AdaptiveAvgPool2dConfig::new([o, o]).init().forward(x),
            )))
        }
        _ => Err(Failed::Error(format!(
            "{}: not a layers operation",
            op.name()
        ))),
    }
}
