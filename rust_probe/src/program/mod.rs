//! The burn program interpreter: runs the IR of `docs/program-ir.md` on
//! burn 0.22.1 (Flex CPU backend with autodiff) and returns what happened as
//! plain data (the result of section 4).
//!
//! [`Program::from_json`] reads, checks and compiles the IR (bad IR is an
//! [`IrError`] naming its field); [`run`] executes it. Params, free ones and
//! the Linear ones, live in a burn [`Module`] ([`ProgramModel`]) so that
//! burn's own optimizers update them; a name that refers to a param reads the
//! module's current value, so after `step` it sees the updated param.

pub mod compile;
pub mod defaults;
pub mod families;
pub mod ir;
#[cfg(feature = "mutants")]
pub mod mutants;
pub mod ops;
pub mod p10_ir;
pub mod value;

use std::ops::ControlFlow;
use std::time::Instant;

use std::any::Any;
use std::collections::VecDeque;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::nn::Linear;
use burn::optim::decay::WeightDecayConfig;
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::optim::lr_scheduler::linear::LinearLrSchedulerConfig;
use burn::optim::lr_scheduler::module_lr_scheduler::{ModuleLearningRate, ModuleLrScheduler};
use burn::optim::lr_scheduler::sequential::SequentialLrSchedulerConfig;
use burn::optim::lr_scheduler::step::StepLrSchedulerConfig;
use burn::optim::lr_scheduler::LrSchedulerConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{
    AdamConfig, AdamWConfig, GradientsAccumulator, GradientsParams, ModuleOptimizer, RmsPropConfig,
    SgdConfig,
};
use burn::tensor::{Device, Gradients, Tensor, TensorData};

pub use crate::contract::IR_VERSION;
use crate::contract::{torch_defaults, Layout, Op};
pub use compile::Program;
use compile::{
    Arg, Clipping, Instr, Kind, ModuleRef, OptimizerConfig, ParamRef, SchedulerConfig, Src, Track,
};
use families::layers::{self, Layer};
use families::{Ctx, Failed, Operand};
use ir::Dtype;
pub use ir::IrError;
use value::{transpose_host, Dyn, DynBool, DynInt, Flags, TensorValue, Value};

use crate::panic_capture::capture;
use crate::rss;

/// Every param of a program, in a burn module: the Linears, the other module
/// kinds' layers, then the free params by rank (`p1` holds the rank-1 ones,
/// ...), each in declaration order.
#[derive(Module, Debug)]
pub struct ProgramModel {
    pub linears: Vec<Linear>,
    pub layers: Vec<Layer>,
    pub p1: Vec<Param<Tensor<1>>>,
    pub p2: Vec<Param<Tensor<2>>>,
    pub p3: Vec<Param<Tensor<3>>>,
    pub p4: Vec<Param<Tensor<4>>>,
}

macro_rules! free_param {
    ($model:expr, $rank:expr, $index:expr, $p:ident => $body:expr) => {
        match $rank {
            1 => {
                let $p = &mut $model.p1[$index as usize];
                $body
            }
            2 => {
                let $p = &mut $model.p2[$index as usize];
                $body
            }
            3 => {
                let $p = &mut $model.p3[$index as usize];
                $body
            }
            _ => {
                let $p = &mut $model.p4[$index as usize];
                $body
            }
        }
    };
}

impl ProgramModel {
    fn empty() -> Self {
        ProgramModel {
            linears: Vec::new(),
            layers: Vec::new(),
            p1: Vec::new(),
            p2: Vec::new(),
            p3: Vec::new(),
            p4: Vec::new(),
        }
    }

    fn bias(&self, m: u32) -> &Param<Tensor<1>> {
        self.linears[m as usize]
            .bias
            .as_ref()
            .expect("a bias param is only compiled for a Linear with bias")
    }

    /// The param's current value (`Param::val()`); a Linear weight carries
    /// the transposed flag.
    pub(crate) fn value(&self, p: ParamRef) -> TensorValue {
        match p {
            ParamRef::Weight(m) => TensorValue {
                t: Dyn::R2(self.linears[m as usize].weight.val()),
                transposed: true,
            },
            ParamRef::Bias(m) => TensorValue::plain(Dyn::R1(self.bias(m).val())),
            ParamRef::Free { rank, index } => TensorValue::plain(match rank {
                1 => Dyn::R1(self.p1[index as usize].val()),
                2 => Dyn::R2(self.p2[index as usize].val()),
                3 => Dyn::R3(self.p3[index as usize].val()),
                _ => Dyn::R4(self.p4[index as usize].val()),
            }),
            ParamRef::Layer { index, tensor } => {
                layers::tensor(&self.layers[index as usize], tensor)
            }
        }
    }

    fn set_param_require_grad(&mut self, p: ParamRef, require: bool) {
        match p {
            ParamRef::Weight(m) => {
                let w = &mut self.linears[m as usize].weight;
                *w = w.clone().set_require_grad(require);
            }
            ParamRef::Bias(m) => {
                let b = self.linears[m as usize].bias.as_mut().expect("bias");
                *b = b.clone().set_require_grad(require);
            }
            ParamRef::Free { rank, index } => {
                free_param!(self, rank, index, p => *p = p.clone().set_require_grad(require))
            }
            ParamRef::Layer { index, tensor } => {
                layers::set_require_grad(&mut self.layers[index as usize], tensor, require)
            }
        }
    }

    fn param_add_scalar(&mut self, p: ParamRef, s: f64) {
        match p {
            ParamRef::Weight(m) => {
                let w = &mut self.linears[m as usize].weight;
                *w = w.clone().map(|t| t.add_scalar(s));
            }
            ParamRef::Bias(m) => {
                let b = self.linears[m as usize].bias.as_mut().expect("bias");
                *b = b.clone().map(|t| t.add_scalar(s));
            }
            ParamRef::Free { rank, index } => {
                free_param!(self, rank, index, p => *p = p.clone().map(|t| t.add_scalar(s)))
            }
            ParamRef::Layer { index, tensor } => {
                layers::add_scalar(&mut self.layers[index as usize], tensor, s)
            }
        }
    }

    fn param_id(&self, p: ParamRef) -> burn::module::ParamId {
        match p {
            ParamRef::Weight(m) => self.linears[m as usize].weight.id,
            ParamRef::Bias(m) => self.bias(m).id,
            ParamRef::Free { rank, index } => match rank {
                1 => self.p1[index as usize].id,
                2 => self.p2[index as usize].id,
                3 => self.p3[index as usize].id,
                _ => self.p4[index as usize].id,
            },
            ParamRef::Layer { index, tensor } => {
                layers::param_id(&self.layers[index as usize], tensor)
            }
        }
    }
}

pub use crate::record::{Failure, Observation, Outcome, ProgramCheckpoint, ProgramResult};

/// Gradients held between `backward` and `step` / `zero_grad`.
enum Held {
    None,
    /// The newest `backward()` result, untouched.
    Raw(Gradients),
    /// `backward(accumulate=True)`: the params' gradients summed by
    /// `GradientsAccumulator`; `raw` is the newest result for other tensors.
    Accumulated {
        params: GradientsParams,
        raw: Gradients,
    },
}

/// Why execution stopped early.
enum Stop {
    Fail(Outcome, String),
    Break,
}

fn error(message: String) -> Stop {
    Stop::Fail(Outcome::Error, message)
}

/// An optimizer of the run: burn's, the learning rate its `step` is given (the config's `lr` until
/// a scheduler step sets another), and which binding of its name it is.
struct Optim {
    optim: ModuleOptimizer,
    lr: ModuleLearningRate,
    initial_lr: f64,
    generation: u64,
}

/// A learning-rate schedule, burn's config of it (what a `sequential_lr` composes) and the
/// optimizer (slot and binding) it was made from.
struct Sched {
    scheduler: ModuleLrScheduler,
    config: LrSchedulerConfig,
    opt: u32,
    generation: u64,
}

/// burn state of a run: dropped inside `capture` since a drop after a burn
/// panic may itself panic.
struct State {
    model: ProgramModel,
    /// In eval mode: the `valid()` snapshot the module calls use (`eval()` takes it, `train()` drops it).
    eval_model: Option<ProgramModel>,
    slots: Vec<Option<Value>>,
    optimizers: Vec<Option<Optim>>,
    schedulers: Vec<Option<Sched>>,
    /// Counts the optimizers built (each binding of a name is a new one).
    generations: u64,
    grads: Held,
    /// Observations of the last timed iteration whose values are read once
    /// its clock stopped: (observation, value, gradient).
    pending: Vec<(usize, TensorValue, Option<TensorValue>)>,
}

struct Machine<'a> {
    program: &'a Program,
    on_checkpoint: &'a mut dyn FnMut(&ProgramCheckpoint) -> ControlFlow<()>,
    state: State,
    /// The statement executing now (position in `program.stmts`).
    current: Option<u32>,
    iteration: Option<u64>,
    /// Inside the timed loop: this iteration is a checkpoint / the last one.
    checkpoint_now: bool,
    last_now: bool,
    observations: Vec<Observation>,
    step_ms: Vec<f64>,
    checkpoints: Vec<ProgramCheckpoint>,
    rss_samples: Vec<(u64, f64)>,
    rss_start: Option<u64>,
    setup_ms: f64,
}

fn mib(bytes: i128) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn tensor_grad(t: &Dyn, grads: &Gradients) -> Option<Dyn> {
    match t {
        Dyn::R1(t) => t.grad(grads).map(Dyn::R1),
        Dyn::R2(t) => t.grad(grads).map(Dyn::R2),
        Dyn::R3(t) => t.grad(grads).map(Dyn::R3),
        Dyn::R4(t) => t.grad(grads).map(Dyn::R4),
    }
}

fn param_grad(t: &Dyn, params: &GradientsParams, id: burn::module::ParamId) -> Option<Dyn> {
    match t {
        Dyn::R1(_) => params.get::<1>(id).map(Dyn::R1),
        Dyn::R2(_) => params.get::<2>(id).map(Dyn::R2),
        Dyn::R3(_) => params.get::<3>(id).map(Dyn::R3),
        Dyn::R4(_) => params.get::<4>(id).map(Dyn::R4),
    }
}

fn backward(t: &Dyn) -> Gradients {
    value::with_dyn!(t, t => t.backward())
}

/// L2 weight decay as a port writes it: a `WeightDecayConfig` only for a given, nonzero penalty.
fn weight_decay(penalty: Option<f64>) -> Option<WeightDecayConfig> {
    penalty
        .filter(|&w| w != 0.0)
        .map(|w| WeightDecayConfig::new(w as f32))
}

/// The optimizer a port builds: each `with_*` only for an attribute the program gives, so burn's
/// own default applies to the others (burn-optim `src/optim/`).
fn build_optimizer(config: &OptimizerConfig) -> ModuleOptimizer {
    let clipping = config.clipping().map(|c| match c {
        Clipping::Norm(v) => GradientClippingConfig::Norm(v as f32),
        Clipping::Value(v) => GradientClippingConfig::Value(v as f32),
    });
    match config {
        OptimizerConfig::Sgd(a) => {
            let mut c = SgdConfig::new();
            // Plain SGD unless a momentum is given (0 is torch's plain SGD too).
            if let Some(m) = a.momentum.filter(|&m| m != 0.0) {
                let mut momentum = MomentumConfig::new().with_momentum(m);
                if let Some(d) = a.dampening {
                    momentum = momentum.with_dampening(d);
                }
                if let Some(n) = a.nesterov {
                    momentum = momentum.with_nesterov(n);
                }
                c = c.with_momentum(Some(momentum));
            }
            #[cfg(feature = "mutants")]
            let penalty = a.weight_decay.map(mutants::sgd_weight_decay);
            #[cfg(not(feature = "mutants"))]
            let penalty = a.weight_decay;
            c = c.with_weight_decay(weight_decay(penalty));
            if clipping.is_some() {
                c = c.with_gradient_clipping(clipping);
            }
            c.init()
        }
        OptimizerConfig::Adam(a) => {
            let mut c = AdamConfig::new();
            if let Some(b) = a.beta1 {
                c = c.with_beta_1(b as f32);
            }
            if let Some(b) = a.beta2 {
                c = c.with_beta_2(b as f32);
            }
            if let Some(e) = a.eps {
                c = c.with_epsilon(e as f32);
            }
            c = c.with_weight_decay(weight_decay(a.weight_decay));
            if clipping.is_some() {
                c = c.with_grad_clipping(clipping);
            }
            c.init()
        }
        OptimizerConfig::AdamW(a) => {
            let mut c = AdamWConfig::new();
            if let Some(b) = a.beta1 {
                c = c.with_beta_1(b as f32);
            }
            if let Some(b) = a.beta2 {
                c = c.with_beta_2(b as f32);
            }
            if let Some(e) = a.eps {
                c = c.with_epsilon(e as f32);
            }
            if let Some(w) = a.weight_decay {
                c = c.with_weight_decay(w as f32);
            }
            if let Some(m) = a.amsgrad {
                c = c.with_amsgrad(m);
            }
            if clipping.is_some() {
                c = c.with_grad_clipping(clipping);
            }
            c.init()
        }
        OptimizerConfig::RmsProp(a) => {
            let mut c = RmsPropConfig::new();
            if let Some(v) = a.alpha {
                c = c.with_alpha(v as f32);
            }
            if let Some(e) = a.eps {
                c = c.with_epsilon(e as f32);
            }
            if let Some(m) = a.momentum {
                c = c.with_momentum(m as f32);
            }
            if let Some(v) = a.centered {
                c = c.with_centered(v);
            }
            c = c.with_weight_decay(weight_decay(a.weight_decay));
            if clipping.is_some() {
                c = c.with_grad_clipping(clipping);
            }
            c.init()
        }
    }
}

/// The schedule a port builds from the optimizer's learning rate (`initial`): `with_*` only for
/// what the program gives; `LinearLrSchedulerConfig::new` has no defaults, so an omitted factor
/// is torch's (`torch_defaults`). A `sequential_lr` is burn's `SequentialLrSchedulerConfig` of
/// the configs its schedules were built from (`built`: the schedules by slot), each from its own
/// optimizer's learning rate. burn's `init()` refuses some values (an initial learning rate
/// above 1): its message. With the schedule, the config it was built from.
fn build_scheduler(
    config: &SchedulerConfig,
    initial: f64,
    built: &[Option<Sched>],
) -> Result<(ModuleLrScheduler, LrSchedulerConfig), String> {
    match config {
        SchedulerConfig::Step(a) => {
            let mut c = StepLrSchedulerConfig::new(initial, a.step_size as usize);
            if let Some(g) = a.gamma {
                c = c.with_gamma(g);
            }
            let scheduler = c
                .init()
                .map_err(|e| format!("StepLrSchedulerConfig::init: {e}"))?;
            Ok((scheduler, LrSchedulerConfig::Step(c)))
        }
        SchedulerConfig::Cosine(a) => {
            let mut c = CosineAnnealingLrSchedulerConfig::new(initial, a.t_max as usize);
            if let Some(m) = a.eta_min {
                c = c.with_min_lr(m);
            }
            let scheduler = c
                .init()
                .map_err(|e| format!("CosineAnnealingLrSchedulerConfig::init: {e}"))?;
            Ok((scheduler, LrSchedulerConfig::Cosine(c)))
        }
        SchedulerConfig::Linear(a) => {
            let start = a
                .start_factor
                .unwrap_or(torch_defaults::LINEAR_LR_START_FACTOR);
            let end = a.end_factor.unwrap_or(torch_defaults::LINEAR_LR_END_FACTOR);
            let iters = a
                .total_iters
                .unwrap_or(torch_defaults::LINEAR_LR_TOTAL_ITERS);
            let c = LinearLrSchedulerConfig::new(initial * start, initial * end, iters as usize);
            let scheduler = c
                .init()
                .map_err(|e| format!("LinearLrSchedulerConfig::init: {e}"))?;
            Ok((scheduler, LrSchedulerConfig::Linear(c)))
        }
        SchedulerConfig::Sequential { children, attrs } => {
            let configs = children
                .iter()
                .map(|&slot| {
                    built[slot as usize]
                        .as_ref()
                        .map(|s| s.config.clone())
                        .ok_or_else(|| "sequential_lr: a schedule is not built yet".to_owned())
                })
                .collect::<Result<Vec<_>, _>>()?;
            let milestones = attrs.milestones.iter().map(|&m| m as usize).collect();
            let c = SequentialLrSchedulerConfig::new(configs, milestones);
            let scheduler = c
                .init()
                .map_err(|e| format!("SequentialLrSchedulerConfig::init: {e}"))?;
            Ok((scheduler, LrSchedulerConfig::Sequential(c)))
        }
    }
}

/// Collects a module's float params in visiting order (`soft_update`'s online side).
struct CollectParams(VecDeque<Box<dyn Any>>);

impl ModuleVisitor for CollectParams {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0.push_back(Box::new(param.val()));
    }
}

/// `soft_update` as a port writes it: a `ModuleMapper` over the target whose `map_float` maps each
/// param to `t * (1 - tau) + o * tau`, `o` the online param of the same place.
struct SoftUpdater {
    online: VecDeque<Box<dyn Any>>,
    tau: f64,
}

impl ModuleMapper for SoftUpdater {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let online = self
            .online
            .pop_front()
            .and_then(|o| o.downcast::<Tensor<D>>().ok())
            .expect("soft_update pairs modules of one kind and shape");
        let tau = self.tau;
        param.map(|t| t.mul_scalar(1.0 - tau) + online.mul_scalar(tau))
    }
}

fn soft_update<M: Module>(target: M, online: &M, tau: f64) -> M {
    let mut collect = CollectParams(VecDeque::new());
    online.visit(&mut collect);
    target.map(&mut SoftUpdater {
        online: collect.0,
        tau,
    })
}

impl<'a> Machine<'a> {
    fn new(
        program: &'a Program,
        on_checkpoint: &'a mut dyn FnMut(&ProgramCheckpoint) -> ControlFlow<()>,
    ) -> Self {
        Machine {
            program,
            on_checkpoint,
            state: State {
                model: ProgramModel::empty(),
                eval_model: None,
                slots: vec![None; program.slot_names.len()],
                optimizers: (0..program.optimizer_count).map(|_| None).collect(),
                schedulers: (0..program.scheduler_count).map(|_| None).collect(),
                generations: 0,
                grads: Held::None,
                pending: Vec::new(),
            },
            current: None,
            iteration: None,
            checkpoint_now: false,
            last_now: false,
            observations: Vec::new(),
            step_ms: Vec::new(),
            checkpoints: Vec::new(),
            rss_samples: Vec::new(),
            rss_start: rss::current_bytes(),
            setup_ms: 0.0,
        }
    }

    /// The initial tensors and the module, from the IR's data.
    fn setup(&mut self) {
        let started = Instant::now();
        let p = self.program;
        let device = Device::flex().autodiff();
        let mut model = ProgramModel::empty();
        for lin in &p.linears {
            // burn keeps the weight as [d_in, d_out]; the IR has torch's [d_out, d_in].
            let data = match lin.layout {
                Layout::Transposed => transpose_host(&lin.weight, lin.d_out, lin.d_in),
                Layout::Copied => lin.weight.clone(),
            };
            let weight =
                Tensor::<2>::from_data(TensorData::new(data, [lin.d_in, lin.d_out]), &device);
            let bias = lin.bias_data.as_ref().map(|b| {
                Param::from_tensor(Tensor::<1>::from_data(
                    TensorData::new(b.clone(), [lin.d_out]),
                    &device,
                ))
            });
            model.linears.push(Linear {
                weight: Param::from_tensor(weight),
                bias,
            });
        }
        for layer in &p.layers {
            model
                .layers
                .push(layers::build(&layer.attrs, &layer.tensors, &device));
        }
        for (rank, list) in p.free_params.iter().enumerate() {
            for init in list {
                let t = Dyn::from_data(init.data.clone(), &init.shape, &device);
                match (rank + 1, t) {
                    (1, Dyn::R1(t)) => model.p1.push(Param::from_tensor(t)),
                    (2, Dyn::R2(t)) => model.p2.push(Param::from_tensor(t)),
                    (3, Dyn::R3(t)) => model.p3.push(Param::from_tensor(t)),
                    (_, Dyn::R4(t)) => model.p4.push(Param::from_tensor(t)),
                    _ => unreachable!("free params are grouped by rank"),
                }
            }
        }
        self.state.model = model;
        for input in &p.inputs {
            let value = match input.dtype {
                Dtype::Float => Value::Tensor(TensorValue::plain(Dyn::from_data(
                    input.data.clone(),
                    &input.shape,
                    &device,
                ))),
                Dtype::Int => Value::Int(DynInt::from_data(&input.data, &input.shape, &device)),
                Dtype::Bool => Value::Bool(DynBool::from_data(&input.data, &input.shape, &device)),
            };
            self.state.slots[input.slot as usize] = Some(value);
        }
        self.setup_ms = started.elapsed().as_secs_f64() * 1e3;
    }

    fn slot_name(&self, slot: u32) -> &str {
        &self.program.slot_names[slot as usize]
    }

    fn read(&mut self, src: Src) -> Result<Value, Stop> {
        match src {
            Src::Param(p) => Ok(Value::Tensor(self.state.model.value(p))),
            Src::Slot { slot, take } => {
                let cell = &mut self.state.slots[slot as usize];
                let value = if take { cell.take() } else { cell.clone() };
                value.ok_or_else(|| {
                    error(format!(
                        "{:?} has no value here (bound in a loop that did not run?)",
                        self.slot_name(slot)
                    ))
                })
            }
        }
    }

    fn tensor(&mut self, src: Src) -> Result<TensorValue, Stop> {
        match self.read(src)? {
            Value::Tensor(t) => Ok(t),
            other => {
                let name = match src {
                    Src::Slot { slot, .. } => self.slot_name(slot).to_owned(),
                    Src::Param(_) => "?".to_owned(),
                };
                Err(error(format!(
                    "{name:?} is {}, not a float tensor",
                    other.kind()
                )))
            }
        }
    }

    fn write(&mut self, dst: Option<compile::Dst>, value: Value) {
        if let Some(d) = dst {
            if d.keep {
                self.state.slots[d.slot as usize] = Some(value);
            }
        }
    }

    fn write_tensor(&mut self, dst: Option<compile::Dst>, t: TensorValue) {
        self.write(dst, Value::Tensor(t));
    }

    /// The gradient held for a tensor now.
    fn grad_of(&self, src: Src, t: &TensorValue) -> Option<TensorValue> {
        if let Src::Param(ParamRef::Layer { index, tensor }) = src {
            // A module's tensor may be made of several burn params (MultiheadAttention's in_proj).
            let layer = &self.state.model.layers[index as usize];
            return layers::grad(layer, tensor, |part, id| match &self.state.grads {
                Held::None => None,
                Held::Raw(grads) => tensor_grad(part, grads),
                Held::Accumulated { params, .. } => param_grad(part, params, id),
            });
        }
        let g = match &self.state.grads {
            Held::None => None,
            Held::Raw(grads) => tensor_grad(&t.t, grads),
            Held::Accumulated { params, raw } => match src {
                Src::Param(p) => param_grad(&t.t, params, self.state.model.param_id(p)),
                Src::Slot { .. } => tensor_grad(&t.t, raw),
            },
        };
        g.map(|g| TensorValue {
            t: g,
            transposed: t.transposed,
        })
    }

    fn exec(&mut self, body: &[Instr]) -> Result<(), Stop> {
        for instr in body {
            self.current = Some(instr.stmt);
            match &instr.kind {
                Kind::Unary { op, a, out, alias } => {
                    let v = self.tensor(*a)?;
                    let r = ops::unary(*op, v);
                    match (out, alias) {
                        (Some(o), Some(al)) if o.keep && al.keep => {
                            self.write_tensor(*out, r.clone());
                            self.write_tensor(*alias, r);
                        }
                        (Some(o), _) if o.keep => self.write_tensor(*out, r),
                        (_, al) => self.write_tensor(*al, r),
                    }
                }
                Kind::Apply {
                    op,
                    attrs,
                    args,
                    out,
                } => {
                    let mut operands = Vec::with_capacity(args.len());
                    for arg in args {
                        operands.push(match arg {
                            Arg::Value(src) => Operand::Value(self.read(*src)?),
                            Arg::Module(m) => Operand::Module(*m),
                        });
                    }
                    let device = Device::flex().autodiff();
                    let ctx = Ctx {
                        model: self.state.eval_model.as_ref().unwrap_or(&self.state.model),
                        device: &device,
                    };
                    let value =
                        families::apply(*op, attrs, operands, &ctx).map_err(|f| match f {
                            Failed::Error(message) => error(message),
                            Failed::Unsupported(message) => {
                                Stop::Fail(Outcome::Unsupported, message)
                            }
                        })?;
                    self.write(*out, value);
                }
                Kind::SetMode { training } => {
                    self.state.eval_model = if *training {
                        None
                    } else {
                        Some(self.state.model.valid())
                    };
                }
                Kind::Binary { op, a, b, out } => {
                    let x = self.tensor(*a)?;
                    let y = self.tensor(*b)?;
                    let r = ops::binary(*op, x, y)
                        .map_err(|message| Stop::Fail(Outcome::Unsupported, message))?;
                    self.write_tensor(*out, r);
                }
                Kind::Reshape { a, shape, out } => {
                    let v = self.tensor(*a)?;
                    let r = ops::reshape(v, shape);
                    self.write_tensor(*out, r);
                }
                Kind::Item { a, out } => {
                    let v = self.tensor(*a)?;
                    let x = ops::item(v);
                    self.write(*out, Value::Number(x));
                }
                Kind::Linear { module, a, out } => {
                    let x = self.tensor(*a)?;
                    // In eval mode a module call uses the `valid()` snapshot, as a port does.
                    let model = self.state.eval_model.as_ref().unwrap_or(&self.state.model);
                    let r = ops::linear(&model.linears[*module as usize], x);
                    self.write_tensor(*out, r);
                }
                Kind::Backward { a, accumulate } => {
                    let loss = self.tensor(*a)?;
                    let mut fresh = backward(&loss.t);
                    drop(loss);
                    let held = std::mem::replace(&mut self.state.grads, Held::None);
                    self.state.grads = match (accumulate, held) {
                        (false, _) | (true, Held::None) => Held::Raw(fresh),
                        (true, previous) => {
                            let model = &self.state.model;
                            let old = match previous {
                                Held::Raw(mut g) => GradientsParams::from_module(&mut g, model),
                                Held::Accumulated { params, .. } => params,
                                Held::None => GradientsParams::new(),
                            };
                            let new = GradientsParams::from_module(&mut fresh, model);
                            let mut acc = GradientsAccumulator::<ProgramModel>::new();
                            acc.accumulate(model, old);
                            acc.accumulate(model, new);
                            Held::Accumulated {
                                params: acc.grads(),
                                raw: fresh,
                            }
                        }
                    };
                }
                Kind::Grad { a, out } => {
                    let v = self.tensor(*a)?;
                    let g = self.grad_of(*a, &v).ok_or_else(|| {
                        let name = match a {
                            Src::Slot { slot, .. } => self.slot_name(*slot).to_owned(),
                            Src::Param(_) => "the param".to_owned(),
                        };
                        error(format!(
                            "grad: no gradient held for {name:?} (none since the last \
                             backward, or consumed by step, or reset by zero_grad)"
                        ))
                    })?;
                    self.write_tensor(*out, g);
                }
                Kind::NewOptimizer { opt, config } => {
                    self.state.generations += 1;
                    self.state.optimizers[*opt as usize] = Some(Optim {
                        optim: build_optimizer(config),
                        lr: config.lr().into(),
                        initial_lr: config.lr(),
                        generation: self.state.generations,
                    });
                }
                Kind::NewScheduler { sched, opt, config } => {
                    let optim = self.state.optimizers[*opt as usize]
                        .as_ref()
                        .ok_or_else(|| error("scheduler: its optimizer is not built yet".into()))?;
                    let (scheduler, config) =
                        build_scheduler(config, optim.initial_lr, &self.state.schedulers)
                            .map_err(error)?;
                    self.state.schedulers[*sched as usize] = Some(Sched {
                        scheduler,
                        config,
                        opt: *opt,
                        generation: optim.generation,
                    });
                }
                Kind::SchedStep { sched } => {
                    let sched =
                        self.state.schedulers[*sched as usize]
                            .as_mut()
                            .ok_or_else(|| {
                                error("sched_step: the scheduler is not built yet".into())
                            })?;
                    let lr = sched.scheduler.step();
                    // The port's `lr` for the optimizer's next steps (an optimizer bound to the
                    // name since is another one: the schedule no longer reaches it).
                    if let Some(optim) = self.state.optimizers[sched.opt as usize]
                        .as_mut()
                        .filter(|o| o.generation == sched.generation)
                    {
                        optim.lr = lr;
                    }
                }
                Kind::CopyModule { target, online } => {
                    let model = &mut self.state.model;
                    match (*target, *online) {
                        (ModuleRef::Linear(t), ModuleRef::Linear(o)) => {
                            model.linears[t as usize] = model.linears[o as usize].clone();
                        }
                        (ModuleRef::Layer(t), ModuleRef::Layer(o)) => {
                            model.layers[t as usize] = model.layers[o as usize].clone();
                        }
                        _ => unreachable!("the compiler pairs modules of one kind"),
                    }
                }
                Kind::SoftUpdate {
                    target,
                    online,
                    tau,
                } => {
                    let model = &mut self.state.model;
                    match (*target, *online) {
                        (ModuleRef::Linear(t), ModuleRef::Linear(o)) => {
                            let old = model.linears[t as usize].clone();
                            model.linears[t as usize] =
                                soft_update(old, &model.linears[o as usize], *tau);
                        }
                        (ModuleRef::Layer(t), ModuleRef::Layer(o)) => {
                            let old = model.layers[t as usize].clone();
                            model.layers[t as usize] =
                                soft_update(old, &model.layers[o as usize], *tau);
                        }
                        _ => unreachable!("the compiler pairs modules of one kind"),
                    }
                }
                Kind::ModuleNoGrad { module } => {
                    let model = &mut self.state.model;
                    match *module {
                        ModuleRef::Linear(i) => {
                            model.linears[i as usize] = model.linears[i as usize].clone().no_grad();
                        }
                        ModuleRef::Layer(i) => {
                            model.layers[i as usize] = model.layers[i as usize].clone().no_grad();
                        }
                    }
                }
                Kind::Step { opt } => {
                    let grads = match std::mem::replace(&mut self.state.grads, Held::None) {
                        Held::None => GradientsParams::new(),
                        Held::Raw(g) => GradientsParams::from_grads(g, &self.state.model),
                        Held::Accumulated { params, .. } => params,
                    };
                    let optim = self.state.optimizers[*opt as usize]
                        .as_mut()
                        .ok_or_else(|| error("step: the optimizer is not built yet".into()))?;
                    let model = std::mem::replace(&mut self.state.model, ProgramModel::empty());
                    self.state.model = optim.optim.step(optim.lr.clone(), model, grads);
                }
                Kind::ZeroGrad { .. } => {
                    self.state.grads = Held::None;
                }
                Kind::ParamRequireGrad {
                    param,
                    require,
                    out,
                } => {
                    self.state.model.set_param_require_grad(*param, *require);
                    if out.is_some_and(|o| o.keep) {
                        let v = self.state.model.value(*param);
                        self.write_tensor(*out, v);
                    }
                }
                Kind::ParamAddScalar { param, value, out } => {
                    self.state.model.param_add_scalar(*param, *value);
                    if out.is_some_and(|o| o.keep) {
                        let v = self.state.model.value(*param);
                        self.write_tensor(*out, v);
                    }
                }
                Kind::Observe {
                    a,
                    label,
                    tensor,
                    values,
                    every_checkpoint,
                } => self.observe(*a, label, tensor, *values, *every_checkpoint)?,
                Kind::Repeat { count, body, timed } => {
                    if *timed {
                        self.timed_loop(*count, body)?;
                    } else {
                        for _ in 0..*count {
                            self.exec(body)?;
                        }
                    }
                }
                Kind::Unsupported => {
                    return Err(Stop::Fail(
                        Outcome::Unsupported,
                        "unsupported operation reached".into(),
                    ))
                }
            }
        }
        Ok(())
    }

    /// Inside the timed loop: at the checkpoints only, with values and gradient at the last
    /// iteration (`every_checkpoint`: at every checkpoint).
    fn observe(
        &mut self,
        a: Src,
        label: &str,
        tensor: &str,
        values: bool,
        every_checkpoint: bool,
    ) -> Result<(), Stop> {
        let in_timed = self.iteration.is_some();
        let values = values && (!in_timed || self.last_now || every_checkpoint);
        if in_timed && !self.checkpoint_now {
            // Not recorded; a last use still releases the value.
            if let Src::Slot { slot, take: true } = a {
                self.state.slots[slot as usize] = None;
            }
            return Ok(());
        }
        let op_index = self.program.stmts[self.current.unwrap_or(0) as usize].index;
        let value = self.read(a)?;
        let mut obs = Observation {
            label: label.to_owned(),
            tensor: tensor.to_owned(),
            op_index,
            iteration: self.iteration,
            shape: Vec::new(),
            values: None,
            grad: None,
            flags: value.flags(),
        };
        match value {
            Value::Number(x) => {
                if values {
                    obs.values = Some(vec![x as f32]);
                }
                self.observations.push(obs);
            }
            Value::Int(_) | Value::Bool(_) => {
                // Indices and masks: read at once (they hold no graph and no gradient).
                let (shape, read) = match &value {
                    Value::Int(t) => (t.dims(), t.values()),
                    Value::Bool(t) => (t.dims(), t.values()),
                    _ => unreachable!("matched above"),
                };
                obs.shape = shape;
                if values {
                    obs.values = Some(read.map_err(error)?);
                }
                self.observations.push(obs);
            }
            Value::Tensor(t) => {
                obs.shape = t.torch_shape();
                let grad = if values { self.grad_of(a, &t) } else { None };
                self.observations.push(obs);
                if values {
                    let index = self.observations.len() - 1;
                    if in_timed {
                        // Read once the iteration's clock has stopped.
                        self.state.pending.push((index, t, grad));
                    } else {
                        self.fill(index, &t, grad.as_ref())?;
                    }
                }
            }
        }
        Ok(())
    }

    fn fill(
        &mut self,
        index: usize,
        t: &TensorValue,
        grad: Option<&TensorValue>,
    ) -> Result<(), Stop> {
        let values = t.torch_values().map_err(error)?;
        let grad = match grad {
            Some(g) => Some(g.torch_values().map_err(error)?),
            None => None,
        };
        let obs = &mut self.observations[index];
        obs.values = Some(values);
        obs.grad = grad;
        Ok(())
    }

    fn track_flags(&self) -> Option<Flags> {
        match self.program.track? {
            Track::Slot(s) => self.state.slots[s as usize].as_ref().map(Value::flags),
            Track::Param(p) => Some(self.state.model.value(p).flags()),
        }
    }

    /// The timed loop: per-iteration wall time, RSS samples and checkpoints
    /// outside the timed region, as `p10::run` does.
    fn timed_loop(&mut self, count: u64, body: &[Instr]) -> Result<(), Stop> {
        let program = self.program;
        let mut next_checkpoint = program.checkpoints.iter().copied().peekable();
        let mut segment_start = 0usize;
        self.step_ms.reserve(count as usize);
        for iteration in 1..=count {
            self.iteration = Some(iteration);
            self.checkpoint_now = next_checkpoint.peek() == Some(&iteration);
            self.last_now = iteration == count;
            let started = Instant::now();
            self.exec(body)?;
            self.step_ms.push(started.elapsed().as_secs_f64() * 1e3);

            for (index, t, grad) in std::mem::take(&mut self.state.pending) {
                self.fill(index, &t, grad.as_ref())?;
            }

            if program.rss_every > 0 && iteration % program.rss_every == 0 {
                if let (Some(now), Some(start)) = (rss::current_bytes(), self.rss_start) {
                    self.rss_samples
                        .push((iteration, mib(now as i128 - start as i128)));
                }
            }

            if self.checkpoint_now {
                next_checkpoint.next();
                let segment = &self.step_ms[segment_start..];
                segment_start = self.step_ms.len();
                let flags = self.track_flags();
                let rss_bytes = rss::current_bytes();
                let checkpoint = ProgramCheckpoint {
                    step: iteration,
                    ms_per_step: segment.iter().sum::<f64>() / segment.len() as f64,
                    rss_bytes,
                    rss_delta_mib: rss_bytes
                        .zip(self.rss_start)
                        .map(|(now, start)| mib(now as i128 - start as i128)),
                    tracked: flags.map(|f| f.tracked),
                    flags: flags.map(|f| f.raw),
                };
                let flow = (self.on_checkpoint)(&checkpoint);
                self.checkpoints.push(checkpoint);
                if flow.is_break() {
                    return Err(Stop::Break);
                }
            }
        }
        self.iteration = None;
        self.checkpoint_now = false;
        self.last_now = false;
        Ok(())
    }

    fn failure(&self, message: String, location: Option<String>) -> Failure {
        let stmt = self.current.map(|s| &self.program.stmts[s as usize]);
        Failure {
            op_index: stmt.map(|s| s.index),
            op: stmt.map(|s| s.op.to_owned()),
            line: stmt.map(|s| s.line),
            iteration: self.iteration,
            message,
            location,
        }
    }
}

/// Runs a compiled program once. `on_checkpoint` is called after each
/// checkpoint of the timed loop is recorded, outside the timed region;
/// `ControlFlow::Break` ends the run there with outcome `Stopped`.
///
/// Nothing here panics on account of the program: a burn panic is caught and
/// returned as outcome `panic` with its message, location, statement and
/// iteration.
pub fn run(
    program: &Program,
    on_checkpoint: &mut dyn FnMut(&ProgramCheckpoint) -> ControlFlow<()>,
) -> ProgramResult {
    if let Some(u) = program.unsupported() {
        return ProgramResult {
            outcome: Outcome::Unsupported,
            failure: Some(Failure {
                op_index: Some(u.stmt.index),
                op: Some(u.stmt.op.to_owned()),
                line: Some(u.stmt.line),
                iteration: None,
                message: u.message.clone(),
                location: None,
            }),
            observations: Vec::new(),
            step_ms: Vec::new(),
            checkpoints: Vec::new(),
            rss_samples: Vec::new(),
            setup_ms: 0.0,
        };
    }
    let mut machine = Machine::new(program, on_checkpoint);
    let caught = capture(|| {
        machine.setup();
        machine.exec(&program.body)
    });
    let (outcome, failure) = match caught {
        Ok(Ok(())) => (Outcome::Ok, None),
        Ok(Err(Stop::Break)) => (Outcome::Stopped, None),
        Ok(Err(Stop::Fail(outcome, message))) => (outcome, Some(machine.failure(message, None))),
        Err(info) => (
            Outcome::Panic,
            Some(machine.failure(info.message.clone(), Some(info.location()))),
        ),
    };
    let state = std::mem::replace(
        &mut machine.state,
        State {
            model: ProgramModel::empty(),
            eval_model: None,
            slots: Vec::new(),
            optimizers: Vec::new(),
            schedulers: Vec::new(),
            generations: 0,
            grads: Held::None,
            pending: Vec::new(),
        },
    );
    // Tensors left after a burn panic are dropped where a panic is caught too.
    let _ = capture(move || drop(state));
    ProgramResult {
        outcome,
        failure,
        observations: machine.observations,
        step_ms: machine.step_ms,
        checkpoints: machine.checkpoints,
        rss_samples: machine.rss_samples,
        setup_ms: machine.setup_ms,
    }
}

/// Reads, checks and runs one IR document: the programmatic form of the
/// Python `run_program`.
pub fn run_json(
    json: &str,
    on_checkpoint: &mut dyn FnMut(&ProgramCheckpoint) -> ControlFlow<()>,
) -> Result<ProgramResult, IrError> {
    let program = Program::from_json(json)?;
    Ok(run(&program, on_checkpoint))
}

/// The operation names with their status in burn 0.22.1.
pub fn op_table() -> Vec<(&'static str, bool)> {
    Op::ALL
        .iter()
        .map(|op| (op.name(), op.burn_unsupported().is_none()))
        .collect()
}
