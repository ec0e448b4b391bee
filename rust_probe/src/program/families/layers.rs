//! Layers and activations, as a port writes them in burn 0.22.1: each module
//! kind is built from its config with only the attributes the program gives
//! (`with_*` for each; burn's own default for the rest), its params and
//! buffers then take the program's data; each activation is burn's function.

use burn::module::{Module, Param, ParamId};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::PaddingConfig2d;
use burn::tensor::activation;
use burn::tensor::{Device, Tensor, TensorData};

use super::{float, float_arg, module_arg, wrong_rank, Ctx, Failed, Operand};
use crate::contract::{GeluApproximate, ModuleAttrs, Op, OpAttrs};
use crate::program::compile::ModuleRef;
use crate::program::value::{map_dyn, Dyn, Value};

/// Every module kind but Linear (which the machine keeps apart for its layout flag).
#[derive(Module, Debug)]
pub enum Layer {
    Conv2d(Conv2d),
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
            if let Some(w) = param(&tensors[0], device) {
                conv.weight = w;
            }
            conv.bias = param(&tensors[1], device);
            Layer::Conv2d(conv)
        }
        ModuleAttrs::Linear(_) => unreachable!("a Linear is the machine's own"),
    }
}

/// The current value of a module's tensor (by its index in the kind's `tensor_names()`).
pub fn tensor(layer: &Layer, index: u8) -> Dyn {
    match (layer, index) {
        (Layer::Conv2d(c), 0) => Dyn::R4(c.weight.val()),
        (Layer::Conv2d(c), _) => Dyn::R1(
            c.bias
                .as_ref()
                .expect("a bias is compiled only when present")
                .val(),
        ),
    }
}

pub fn param_id(layer: &Layer, index: u8) -> ParamId {
    match (layer, index) {
        (Layer::Conv2d(c), 0) => c.weight.id,
        (Layer::Conv2d(c), _) => c.bias.as_ref().expect("bias").id,
    }
}

/// A module's param as `$p` (a `&mut Param<Tensor<D>>` of its rank), for `$body`.
macro_rules! with_param {
    ($layer:expr, $index:expr, $p:ident => $body:expr) => {
        match ($layer, $index) {
            (Layer::Conv2d(c), 0) => {
                let $p = &mut c.weight;
                $body
            }
            (Layer::Conv2d(c), _) => {
                let $p = c.bias.as_mut().expect("bias");
                $body
            }
        }
    };
}

/// `Param::set_require_grad` of a module's param (`freeze`, `require_grad`).
pub fn set_require_grad(layer: &mut Layer, index: u8, require: bool) {
    with_param!(layer, index, p => *p = p.clone().set_require_grad(require))
}

/// `Param::map(|t| t.add_scalar(s))` of a module's param (`add_scalar_`).
pub fn add_scalar(layer: &mut Layer, index: u8, s: f64) {
    with_param!(layer, index, p => *p = p.clone().map(|t| t.add_scalar(s)))
}

pub fn apply(
    op: Op,
    attrs: &OpAttrs,
    mut args: Vec<Operand>,
    ctx: &Ctx<'_>,
) -> Result<Value, Failed> {
    match (op, attrs) {
        (Op::Conv2d, _) => {
            let m = module_arg(op, &args, 0)?;
            let x = float_arg(op, &mut args, 1)?;
            let Dyn::R4(x) = x else {
                return Err(wrong_rank(op, "a Conv2d takes [N, C, H, W]", x.rank()));
            };
            let ModuleRef::Layer(i) = m else {
                return Err(Failed::Error("conv2d: not a Conv2d".into()));
            };
            match &ctx.model.layers[i as usize] {
                Layer::Conv2d(conv) => Ok(float(Dyn::R4(conv.forward(x)))),
            }
        }
        (Op::Gelu, OpAttrs::Gelu(a)) => {
            let x = float_arg(op, &mut args, 0)?;
            Ok(float(match a.approximate {
                Some(GeluApproximate::Tanh) => map_dyn!(x, t => activation::gelu_approximate(t)),
                _ => map_dyn!(x, t => activation::gelu(t)),
            }))
        }
        _ => Err(Failed::Error(format!(
            "{}: not a layers operation",
            op.name()
        ))),
    }
}
