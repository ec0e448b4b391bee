//! From the IR to instructions: names resolved to slots once, the op table
//! checked, unsupported operations found, and a liveness pass that decides
//! where a value is moved out of its slot instead of cloned (so that, as in
//! hand-written burn code, a tensor's last use consumes it and its buffer can
//! be reused in place) and where a result nobody reads is dropped at once.

use std::collections::{HashMap, HashSet};

use crate::contract::{
    attrs, ArgKind, Layout, ModuleAttrs, ModuleKind, Op, OpAttrs, ResultKind, MAX_RANK,
};
use crate::program::families::layers::TensorData32;
use crate::program::ir::{self, AttrReader, Dtype, IrError, RawProgram, RawStmt, Role};
use crate::program::ops::{Binary, Unary};

pub type Slot = u32;

/// A parameter living in the burn module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamRef {
    /// `param(...)`: `Vec<Param<Tensor<rank>>>[index]`.
    Free { rank: u8, index: u32 },
    /// `lin.weight` of Linear number `.0` (burn `[d_in, d_out]`, flagged transposed).
    Weight(u32),
    /// `lin.bias`.
    Bias(u32),
    /// A param or buffer of another module kind (`conv.weight`, `bn.running_mean`): layer
    /// number `index`, its tensor number `tensor` in the kind's `tensor_names()`.
    Layer { index: u32, tensor: u8 },
}

/// A declared module: a Linear (kept apart for its layout flag) or another kind's layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleRef {
    Linear(u32),
    Layer(u32),
}

/// An argument of a family operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    Value(Src),
    Module(ModuleRef),
}

/// Where an operand comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// `take`: this is the value's last use: move it out of the slot.
    Slot { slot: Slot, take: bool },
    /// The module's current parameter (`Param::val()`).
    Param(ParamRef),
}

/// Where a result goes; `keep == false`: nobody reads it, drop it now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dst {
    pub slot: Slot,
    pub keep: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum OptimizerConfig {
    Sgd(attrs::Sgd),
    Adam(attrs::Adam),
    AdamW(attrs::Adamw),
    RmsProp(attrs::Rmsprop),
}

/// An optimizer's gradient clipping (`GradientClippingConfig`), from its attributes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Clipping {
    Norm(f64),
    Value(f64),
}

impl OptimizerConfig {
    pub fn lr(&self) -> f64 {
        match self {
            OptimizerConfig::Sgd(a) => a.lr,
            OptimizerConfig::Adam(a) => a.lr,
            OptimizerConfig::AdamW(a) => a.lr,
            OptimizerConfig::RmsProp(a) => a.lr,
        }
    }

    /// The clipping attributes given: (`clip_grad_norm`, `clip_grad_value`).
    fn clip_attrs(&self) -> (Option<f64>, Option<f64>) {
        match self {
            OptimizerConfig::Sgd(a) => (a.clip_grad_norm, a.clip_grad_value),
            OptimizerConfig::Adam(a) => (a.clip_grad_norm, a.clip_grad_value),
            OptimizerConfig::AdamW(a) => (a.clip_grad_norm, a.clip_grad_value),
            OptimizerConfig::RmsProp(a) => (a.clip_grad_norm, a.clip_grad_value),
        }
    }

    /// The clipping the program gives (at most one: the compiler refuses both).
    pub fn clipping(&self) -> Option<Clipping> {
        let (norm, value) = self.clip_attrs();
        norm.map(Clipping::Norm).or(value.map(Clipping::Value))
    }

    fn read(op: Op, r: &AttrReader<'_>) -> Result<Self, IrError> {
        let config = match op {
            Op::Sgd => OptimizerConfig::Sgd(attrs::Sgd::read(r)?),
            Op::Adam => OptimizerConfig::Adam(attrs::Adam::read(r)?),
            Op::Adamw => OptimizerConfig::AdamW(attrs::Adamw::read(r)?),
            _ => OptimizerConfig::RmsProp(attrs::Rmsprop::read(r)?),
        };
        if let (Some(_), Some(_)) = config.clip_attrs() {
            return Err(r.invalid(
                "clip_grad_value",
                "give clip_grad_norm or clip_grad_value, not both (burn's optimizer config holds \
                 one GradientClippingConfig)",
            ));
        }
        Ok(config)
    }
}

/// A learning-rate schedule's config.
#[derive(Clone, Debug, PartialEq)]
pub enum SchedulerConfig {
    Step(attrs::StepLr),
    Cosine(attrs::CosineLr),
    Linear(attrs::LinearLr),
    /// `sequential_lr(opt, s1, s2, ..)`: the schedules bound to these scheduler slots when it is
    /// made, one after another.
    Sequential {
        children: Vec<u32>,
        attrs: attrs::SequentialLr,
    },
}

#[derive(Clone, Debug)]
pub enum Kind {
    /// A family operation (`crate::program::families`): a plain function of its arguments.
    Apply {
        op: Op,
        attrs: OpAttrs,
        args: Vec<Arg>,
        out: Option<Dst>,
    },
    /// `train()` / `eval()`: the module calls use the training model, or its `valid()` snapshot.
    SetMode {
        training: bool,
    },
    /// `out = op(a)`; `alias`: the in-place ops (`require_grad`, `freeze`,
    /// `add_scalar_`) also rebind their argument.
    Unary {
        op: Unary,
        a: Src,
        out: Option<Dst>,
        alias: Option<Dst>,
    },
    Binary {
        op: Binary,
        a: Src,
        b: Src,
        out: Option<Dst>,
    },
    Reshape {
        a: Src,
        shape: Vec<i64>,
        out: Option<Dst>,
    },
    Item {
        a: Src,
        out: Option<Dst>,
    },
    Linear {
        module: u32,
        a: Src,
        out: Option<Dst>,
    },
    Backward {
        a: Src,
        accumulate: bool,
    },
    Grad {
        a: Src,
        out: Option<Dst>,
    },
    NewOptimizer {
        opt: u32,
        config: OptimizerConfig,
    },
    /// `sched = cosine_lr(opt, ...)`: a schedule starting from the optimizer's learning rate
    /// (`sequential_lr`: the schedules it composes, from theirs).
    NewScheduler {
        sched: u32,
        opt: u32,
        config: SchedulerConfig,
    },
    /// `sched_step(sched)`: `lr = sched.step()`, the optimizer's learning rate from then on.
    SchedStep {
        sched: u32,
    },
    /// `copy_module(target, online)`: `target = online.clone()`.
    CopyModule {
        target: ModuleRef,
        online: ModuleRef,
    },
    /// `soft_update(target, online, tau)`: each target param `map`ped to `t * (1 - tau) + o * tau`.
    SoftUpdate {
        target: ModuleRef,
        online: ModuleRef,
        tau: f64,
    },
    /// `module_no_grad(m)`: `m = m.no_grad()`.
    ModuleNoGrad {
        module: ModuleRef,
    },
    Step {
        opt: u32,
    },
    ZeroGrad {
        opt: u32,
    },
    /// `freeze` / `require_grad` of a parameter: `Param::set_require_grad`.
    ParamRequireGrad {
        param: ParamRef,
        require: bool,
        out: Option<Dst>,
    },
    /// `add_scalar_` of a parameter: `Param::map(|t| t.add_scalar(s))`.
    ParamAddScalar {
        param: ParamRef,
        value: f64,
        out: Option<Dst>,
    },
    Observe {
        a: Src,
        label: String,
        tensor: String,
        values: bool,
        /// In the timed loop: values and gradient at every checkpoint, not only the last iteration.
        every_checkpoint: bool,
    },
    Repeat {
        count: u64,
        body: Vec<Instr>,
        timed: bool,
    },
    /// An operation burn lacks; the program's outcome is `unsupported` before
    /// anything runs, so this is never executed.
    Unsupported,
}

#[derive(Clone, Debug)]
pub struct Instr {
    /// Position in [`Program::stmts`].
    pub stmt: u32,
    pub kind: Kind,
}

/// What a failure reports about the statement it happened at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StmtInfo {
    pub index: u64,
    pub line: u64,
    pub op: &'static str,
}

#[derive(Clone, Debug)]
pub struct InputInit {
    pub slot: Slot,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

#[derive(Clone, Debug)]
pub struct FreeParamInit {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Another kind's module: its declaration and its tensors' data, by the kind's `tensor_names()`.
#[derive(Clone, Debug)]
pub struct LayerInit {
    pub name: String,
    pub attrs: ModuleAttrs,
    pub tensors: Vec<Option<TensorData32>>,
}

#[derive(Clone, Debug)]
pub struct LinearInit {
    pub name: String,
    pub d_in: usize,
    pub d_out: usize,
    pub bias: bool,
    pub layout: Layout,
    /// Torch layout `[d_out, d_in]`, row-major.
    pub weight: Vec<f32>,
    pub bias_data: Option<Vec<f32>>,
}

/// What `settings.track` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Track {
    Slot(Slot),
    Param(ParamRef),
}

/// The first unsupported operation found by scanning the IR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsupportedOp {
    pub stmt: StmtInfo,
    pub message: String,
}

/// A checked, compiled program: what [`crate::program::run`] executes.
#[derive(Clone, Debug)]
pub struct Program {
    pub(crate) inputs: Vec<InputInit>,
    /// Free params per rank (index 0: rank 1), in declaration order.
    pub(crate) free_params: [Vec<FreeParamInit>; MAX_RANK],
    pub(crate) linears: Vec<LinearInit>,
    pub(crate) layers: Vec<LayerInit>,
    pub(crate) body: Vec<Instr>,
    pub(crate) stmts: Vec<StmtInfo>,
    pub(crate) slot_names: Vec<String>,
    pub(crate) optimizer_count: usize,
    pub(crate) scheduler_count: usize,
    pub(crate) checkpoints: Vec<u64>,
    pub(crate) rss_every: u64,
    pub(crate) track: Option<Track>,
    pub(crate) unsupported: Option<UnsupportedOp>,
}

impl Program {
    /// Reads, checks and compiles the IR. Every error names its field.
    pub fn from_json(json: &str) -> Result<Program, IrError> {
        compile(ir::parse(json)?)
    }

    /// The number of statements, blocks included.
    pub fn statement_count(&self) -> usize {
        self.stmts.len()
    }

    /// The first unsupported operation, if any (the run's outcome is then
    /// `unsupported` without running anything).
    pub fn unsupported(&self) -> Option<&UnsupportedOp> {
        self.unsupported.as_ref()
    }
}

/// The name of an IR `role: param` tensor belonging to a module.
fn module_param_field(name: &str, module: &str) -> Option<&'static str> {
    let rest = name.strip_prefix(module)?.strip_prefix('.')?;
    match rest {
        "weight" => Some("weight"),
        "bias" => Some("bias"),
        _ => None,
    }
}

#[derive(Default)]
struct Compiler {
    /// The kind of each module that is not a Linear.
    layer_kinds: HashMap<String, ModuleKind>,
    slots: HashMap<String, Slot>,
    slot_names: Vec<String>,
    params: HashMap<String, ParamRef>,
    modules: HashMap<String, ModuleRef>,
    optimizers: HashMap<String, u32>,
    schedulers: HashMap<String, u32>,
    /// Each Linear's (d_in, d_out, bias, layout) and each other module's attributes: what a
    /// (target, online) pair must share.
    linear_shapes: Vec<(usize, usize, bool, Layout)>,
    layer_attrs: Vec<ModuleAttrs>,
    stmts: Vec<StmtInfo>,
    indices: HashSet<u64>,
    unsupported: Option<UnsupportedOp>,
    timed_assigned: bool,
}

fn compile(raw: RawProgram) -> Result<Program, IrError> {
    let mut c = Compiler::default();
    let mut declared: HashSet<String> = HashSet::new();

    // Modules first: their params are listed among the tensors.
    let mut linears: Vec<LinearInit> = Vec::new();
    let mut layers: Vec<LayerInit> = Vec::new();
    for (i, m) in raw.modules.iter().enumerate() {
        if !declared.insert(m.name.clone()) {
            return Err(IrError::new(
                format!("modules[{i}].name"),
                format!("{:?} is declared twice", m.name),
            ));
        }
        match &m.decl {
            ModuleAttrs::Linear(decl) => {
                c.modules
                    .insert(m.name.clone(), ModuleRef::Linear(linears.len() as u32));
                linears.push(LinearInit {
                    name: m.name.clone(),
                    d_in: decl.d_in as usize,
                    d_out: decl.d_out as usize,
                    bias: decl.bias,
                    layout: decl.layout,
                    weight: Vec::new(),
                    bias_data: None,
                });
            }
            other => {
                c.modules
                    .insert(m.name.clone(), ModuleRef::Layer(layers.len() as u32));
                let kind = other.kind();
                c.layer_kinds.insert(m.name.clone(), kind);
                layers.push(LayerInit {
                    name: m.name.clone(),
                    attrs: other.clone(),
                    tensors: kind.tensor_names().iter().map(|_| None).collect(),
                });
            }
        }
        let _ = i;
    }

    let mut inputs = Vec::new();
    let mut free_params: [Vec<FreeParamInit>; MAX_RANK] = Default::default();
    let mut module_weight_seen = vec![false; linears.len()];
    for (i, t) in raw.tensors.into_iter().enumerate() {
        let path = format!("tensors[{i}]");
        if !declared.insert(t.name.clone()) {
            return Err(IrError::new(
                format!("{path}.name"),
                format!("{:?} is declared twice", t.name),
            ));
        }
        match (&t.module, t.role) {
            (Some(module), role) => {
                let Some(&mref) = c.modules.get(module) else {
                    return Err(IrError::new(
                        format!("{path}.module"),
                        format!("no module named {module:?}"),
                    ));
                };
                let m = match mref {
                    ModuleRef::Linear(m) => m,
                    ModuleRef::Layer(l) => {
                        let layer = &mut layers[l as usize];
                        let kind = layer.attrs.kind();
                        let short = t
                            .name
                            .strip_prefix(module.as_str())
                            .and_then(|r| r.strip_prefix('.'));
                        let index = short
                            .and_then(|short| kind.tensor_names().iter().position(|n| *n == short))
                            .ok_or_else(|| {
                                IrError::new(
                                    format!("{path}.name"),
                                    format!(
                                        "a {}'s tensors are {}",
                                        kind.name(),
                                        kind.tensor_names()
                                            .iter()
                                            .map(|n| format!("{module}.{n}"))
                                            .collect::<Vec<_>>()
                                            .join(", ")
                                    ),
                                )
                            })?;
                        layer.tensors[index] = Some(TensorData32 {
                            shape: t.shape,
                            data: t.data,
                        });
                        c.params.insert(
                            t.name,
                            ParamRef::Layer {
                                index: l,
                                tensor: index as u8,
                            },
                        );
                        continue;
                    }
                };
                if role != Role::Param {
                    return Err(IrError::new(
                        format!("{path}.role"),
                        "a Linear's tensors are params",
                    ));
                }
                let lin = &mut linears[m as usize];
                let field = module_param_field(&t.name, module).ok_or_else(|| {
                    IrError::new(
                        format!("{path}.name"),
                        format!("a Linear's params are named {module}.weight and {module}.bias"),
                    )
                })?;
                if field == "weight" {
                    if t.shape != [lin.d_out, lin.d_in] {
                        return Err(IrError::new(
                            format!("{path}.shape"),
                            format!(
                                "{}.weight is [d_out, d_in] = [{}, {}] (torch layout), got {:?}",
                                module, lin.d_out, lin.d_in, t.shape
                            ),
                        ));
                    }
                    lin.weight = t.data;
                    module_weight_seen[m as usize] = true;
                    c.params.insert(t.name, ParamRef::Weight(m));
                } else {
                    if !lin.bias {
                        return Err(IrError::new(
                            format!("{path}.name"),
                            format!("module {module:?} is declared with bias false"),
                        ));
                    }
                    if t.shape != [lin.d_out] {
                        return Err(IrError::new(
                            format!("{path}.shape"),
                            format!(
                                "{module}.bias is [d_out] = [{}], got {:?}",
                                lin.d_out, t.shape
                            ),
                        ));
                    }
                    lin.bias_data = Some(t.data);
                    c.params.insert(t.name, ParamRef::Bias(m));
                }
            }
            (None, Role::Param) => {
                let rank = t.shape.len();
                let list = &mut free_params[rank - 1];
                c.params.insert(
                    t.name,
                    ParamRef::Free {
                        rank: rank as u8,
                        index: list.len() as u32,
                    },
                );
                list.push(FreeParamInit {
                    shape: t.shape,
                    data: t.data,
                });
            }
            (None, Role::Buffer) => {
                return Err(IrError::new(
                    format!("{path}.role"),
                    "only a module's tensors are buffers",
                ))
            }
            (None, Role::Input) => {
                let slot = c.slot(&t.name);
                inputs.push(InputInit {
                    slot,
                    dtype: t.dtype,
                    shape: t.shape,
                    data: t.data,
                });
            }
        }
    }
    for (m, lin) in linears.iter().enumerate() {
        if !module_weight_seen[m] {
            return Err(IrError::new(
                format!("modules[{m}]"),
                format!(
                    "no tensor {}.weight with \"module\": {:?}",
                    lin.name, lin.name
                ),
            ));
        }
        if lin.bias && lin.bias_data.is_none() {
            return Err(IrError::new(
                format!("modules[{m}]"),
                format!("bias is true but no tensor {}.bias is listed", lin.name),
            ));
        }
    }

    c.linear_shapes = linears
        .iter()
        .map(|l| (l.d_in, l.d_out, l.bias, l.layout))
        .collect();
    c.layer_attrs = layers.iter().map(|l| l.attrs.clone()).collect();
    let mut defined: HashSet<String> = inputs
        .iter()
        .map(|i| c.slot_names[i.slot as usize].clone())
        .collect();
    let mut body = c.block(&raw.body, &mut defined, true)?;

    let track = match &raw.settings.track {
        None => None,
        Some(name) => Some(if let Some(&p) = c.params.get(name) {
            Track::Param(p)
        } else if let Some(&slot) = c.slots.get(name) {
            Track::Slot(slot)
        } else {
            return Err(IrError::new(
                "settings.track",
                format!("no tensor named {name:?} in the program"),
            ));
        }),
    };

    let slot_count = c.slot_names.len();
    let track_slot = match track {
        Some(Track::Slot(s)) => Some(s),
        _ => None,
    };
    liveness(&mut body, Live::new(slot_count), track_slot);

    Ok(Program {
        inputs,
        free_params,
        linears,
        layers,
        body,
        stmts: c.stmts,
        slot_names: c.slot_names,
        optimizer_count: c.optimizers.len(),
        scheduler_count: c.schedulers.len(),
        checkpoints: raw.settings.checkpoints,
        rss_every: raw.settings.rss_every,
        track,
        unsupported: c.unsupported,
    })
}

impl Compiler {
    fn slot(&mut self, name: &str) -> Slot {
        if let Some(&s) = self.slots.get(name) {
            return s;
        }
        let s = self.slot_names.len() as Slot;
        self.slot_names.push(name.to_owned());
        self.slots.insert(name.to_owned(), s);
        s
    }

    fn block(
        &mut self,
        stmts: &[RawStmt],
        defined: &mut HashSet<String>,
        top_level: bool,
    ) -> Result<Vec<Instr>, IrError> {
        stmts
            .iter()
            .map(|s| self.statement(s, defined, top_level))
            .collect()
    }

    /// A tensor operand: a param, or a tensor name bound before.
    fn tensor_arg(&self, s: &RawStmt, i: usize, defined: &HashSet<String>) -> Result<Src, IrError> {
        let name = &s.args[i];
        let field = format!("args[{i}]");
        if let Some(&p) = self.params.get(name) {
            return Ok(Src::Param(p));
        }
        if self.modules.contains_key(name) {
            return Err(s.error(&field, format!("{name:?} is a module, not a tensor")));
        }
        if self.optimizers.contains_key(name) {
            return Err(s.error(&field, format!("{name:?} is an optimizer, not a tensor")));
        }
        if self.schedulers.contains_key(name) {
            return Err(s.error(&field, format!("{name:?} is a scheduler, not a tensor")));
        }
        match self.slots.get(name) {
            Some(&slot) if defined.contains(name) => Ok(Src::Slot { slot, take: false }),
            _ => Err(s.error(
                &field,
                format!("no tensor named {name:?} is bound before this statement"),
            )),
        }
    }

    fn optimizer_arg(&self, s: &RawStmt, defined: &HashSet<String>) -> Result<u32, IrError> {
        let name = &s.args[0];
        match self.optimizers.get(name) {
            Some(&o) if defined.contains(name) => Ok(o),
            _ => Err(s.error(
                "args[0]",
                format!("no optimizer named {name:?} is bound before this statement"),
            )),
        }
    }

    fn scheduler_arg(
        &self,
        s: &RawStmt,
        i: usize,
        defined: &HashSet<String>,
    ) -> Result<u32, IrError> {
        let name = &s.args[i];
        match self.schedulers.get(name) {
            Some(&o) if defined.contains(name) => Ok(o),
            _ => Err(s.error(
                &format!("args[{i}]"),
                format!("no scheduler named {name:?} is bound before this statement"),
            )),
        }
    }

    /// The slot a tensor result is bound to.
    fn out_slot(
        &mut self,
        s: &RawStmt,
        name: &str,
        defined: &mut HashSet<String>,
    ) -> Result<Dst, IrError> {
        if self.params.contains_key(name) || self.modules.contains_key(name) {
            return Err(s.error(
                "out",
                format!("{name:?} is a param or a module: they cannot be reassigned"),
            ));
        }
        if self.optimizers.contains_key(name) || self.schedulers.contains_key(name) {
            return Err(s.error(
                "out",
                format!(
                    "{name:?} names an optimizer or a scheduler; a name is a tensor, an optimizer \
                     or a scheduler"
                ),
            ));
        }
        defined.insert(name.to_owned());
        Ok(Dst {
            slot: self.slot(name),
            keep: true,
        })
    }

    fn out(&mut self, s: &RawStmt, defined: &mut HashSet<String>) -> Result<Option<Dst>, IrError> {
        match &s.out {
            None => Ok(None),
            Some(name) => self.out_slot(s, name, defined).map(Some),
        }
    }

    fn statement(
        &mut self,
        s: &RawStmt,
        defined: &mut HashSet<String>,
        top_level: bool,
    ) -> Result<Instr, IrError> {
        if !self.indices.insert(s.index) {
            return Err(s.error("index", format!("index {} is used twice", s.index)));
        }
        let op = Op::from_name(&s.op).ok_or_else(|| {
            s.error(
                "op",
                format!("unknown operation {:?}; known: {}", s.op, Op::names()),
            )
        })?;
        let stmt = self.stmts.len() as u32;
        self.stmts.push(StmtInfo {
            index: s.index,
            line: s.line,
            op: op.name(),
        });
        // What the table says of every operation: its body, arity, `out` and attribute keys.
        let result = op.result();
        if result != ResultKind::Block && s.body.is_some() {
            return Err(s.error("body", format!("{:?} is not a block", s.op)));
        }
        if s.args.len() < op.args().len() || s.args.len() > op.max_args() {
            let more = if op.max_args() > op.args().len() {
                format!(" (up to {} in all)", op.max_args())
            } else {
                String::new()
            };
            return Err(s.error(
                "args",
                format!(
                    "{:?} takes {}{more}, got {} args",
                    s.op,
                    describe_args(op.args()),
                    s.args.len()
                ),
            ));
        }
        match (result, &s.out) {
            (ResultKind::Nothing | ResultKind::Block, Some(name)) => {
                return Err(s.error(
                    "out",
                    format!("{:?} returns nothing; out must be null, got {name:?}", s.op),
                ))
            }
            (ResultKind::Optimizer, None) => {
                return Err(s.error("out", "an optimizer must be bound to a name"))
            }
            (ResultKind::Scheduler, None) => {
                return Err(s.error("out", "a scheduler must be bound to a name"))
            }
            _ => {}
        }
        let r = AttrReader::of_stmt(s);
        r.only(op.attr_keys())?;
        let mut unsupported: Option<String> = op.burn_unsupported().map(str::to_owned);

        if op.family().is_some() {
            let attrs = OpAttrs::read(op, &r)?;
            if let Some(reason) = attrs.burn_unsupported() {
                unsupported = Some(reason.to_owned());
            }
            let kinds = op.args();
            let mut args = Vec::with_capacity(s.args.len());
            for i in 0..s.args.len() {
                let kind = kinds.get(i).or(kinds.last()).copied();
                args.push(match kind {
                    Some(ArgKind::Module) => Arg::Module(self.module_arg(s, i, op)?),
                    _ => Arg::Value(self.tensor_arg(s, i, defined)?),
                });
            }
            let kind = Kind::Apply {
                op,
                attrs,
                args,
                out: self.out(s, defined)?,
            };
            return Ok(self.finish(stmt, kind, unsupported));
        }

        let kind = match op {
            Op::Train | Op::Eval => Kind::SetMode {
                training: op == Op::Train,
            },
            Op::Repeat => {
                let a = attrs::Repeat::read(&r)?;
                let body = Self::body_of(s)?;
                let timed = top_level && !self.timed_assigned;
                self.timed_assigned |= timed;
                let mut inner = defined.clone();
                let body = self.block(body, &mut inner, false)?;
                *defined = inner;
                Kind::Repeat {
                    count: a.count as u64,
                    body,
                    timed,
                }
            }
            Op::NoGrad => {
                let body = Self::body_of(s)?;
                self.block(body, defined, false)?;
                Kind::Unsupported
            }
            Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Matmul => {
                let a = self.tensor_arg(s, 0, defined)?;
                let b = self.tensor_arg(s, 1, defined)?;
                let op = match op {
                    Op::Add => Binary::Add,
                    Op::Sub => Binary::Sub,
                    Op::Mul => Binary::Mul,
                    Op::Div => Binary::Div,
                    _ => Binary::Matmul,
                };
                Kind::Binary {
                    op,
                    a,
                    b,
                    out: self.out(s, defined)?,
                }
            }
            Op::Linear => {
                let ModuleRef::Linear(module) = self.module_arg(s, 0, op)? else {
                    unreachable!("module_arg checks the kind")
                };
                let a = self.tensor_arg(s, 1, defined)?;
                Kind::Linear {
                    module,
                    a,
                    out: self.out(s, defined)?,
                }
            }
            Op::Step | Op::ZeroGrad => {
                let opt = self.optimizer_arg(s, defined)?;
                if op == Op::Step {
                    Kind::Step { opt }
                } else {
                    Kind::ZeroGrad { opt }
                }
            }
            Op::Sgd | Op::Adam | Op::Adamw | Op::Rmsprop => {
                let config = OptimizerConfig::read(op, &r)?;
                let opt = self.optimizer_out(s, defined)?;
                Kind::NewOptimizer { opt, config }
            }
            Op::StepLr | Op::CosineLr | Op::LinearLr => {
                let config = match op {
                    Op::StepLr => SchedulerConfig::Step(attrs::StepLr::read(&r)?),
                    Op::CosineLr => SchedulerConfig::Cosine(attrs::CosineLr::read(&r)?),
                    _ => SchedulerConfig::Linear(attrs::LinearLr::read(&r)?),
                };
                let opt = self.optimizer_arg(s, defined)?;
                let sched = self.scheduler_out(s, defined)?;
                Kind::NewScheduler { sched, opt, config }
            }
            Op::SequentialLr => {
                let attrs = attrs::SequentialLr::read(&r)?;
                let opt = self.optimizer_arg(s, defined)?;
                let children = (1..s.args.len())
                    .map(|i| self.scheduler_arg(s, i, defined))
                    .collect::<Result<Vec<_>, _>>()?;
                let sched = self.scheduler_out(s, defined)?;
                Kind::NewScheduler {
                    sched,
                    opt,
                    config: SchedulerConfig::Sequential { children, attrs },
                }
            }
            Op::SchedStep => Kind::SchedStep {
                sched: self.scheduler_arg(s, 0, defined)?,
            },
            Op::CopyModule | Op::SoftUpdate => {
                let target = self.module_arg(s, 0, op)?;
                let online = self.module_arg(s, 1, op)?;
                self.same_shape(s, target, online)?;
                if op == Op::CopyModule {
                    Kind::CopyModule { target, online }
                } else {
                    Kind::SoftUpdate {
                        target,
                        online,
                        tau: attrs::SoftUpdate::read(&r)?.tau,
                    }
                }
            }
            Op::ModuleNoGrad => Kind::ModuleNoGrad {
                module: self.module_arg(s, 0, op)?,
            },
            Op::Backward => {
                let a = attrs::Backward::read(&r)?;
                if let Some(reason) = a.burn_unsupported() {
                    unsupported = Some(reason.to_owned());
                }
                Kind::Backward {
                    a: self.tensor_arg(s, 0, defined)?,
                    accumulate: a.accumulate,
                }
            }
            Op::Observe => {
                let attrs = attrs::Observe::read(&r)?;
                let a = self.tensor_arg(s, 0, defined)?;
                let tensor = s.args[0].clone();
                Kind::Observe {
                    a,
                    label: attrs.label.unwrap_or_else(|| tensor.clone()),
                    tensor,
                    values: attrs.values,
                    every_checkpoint: attrs.every_checkpoint,
                }
            }
            Op::RequireGrad | Op::Freeze | Op::AddScalarInPlace => {
                let value = if op == Op::AddScalarInPlace {
                    Some(attrs::AddScalarInPlace::read(&r)?.scalar)
                } else {
                    None
                };
                let target = self.tensor_arg(s, 0, defined)?;
                // `y = op_(x)` binds y too; `x = op_(x)` is the same as no out.
                let out = match &s.out {
                    Some(name) if name != &s.args[0] => Some(self.out_slot(s, name, defined)?),
                    _ => None,
                };
                match target {
                    Src::Param(param) => match value {
                        Some(value) => Kind::ParamAddScalar { param, value, out },
                        None => Kind::ParamRequireGrad {
                            param,
                            require: op == Op::RequireGrad,
                            out,
                        },
                    },
                    Src::Slot { slot, .. } => Kind::Unary {
                        op: match (op, value) {
                            (_, Some(v)) => Unary::AddScalar(v),
                            (Op::RequireGrad, _) => Unary::RequireGrad,
                            _ => Unary::Freeze,
                        },
                        a: target,
                        out,
                        alias: Some(Dst { slot, keep: true }),
                    },
                }
            }
            Op::Reshape => {
                let shape = attrs::Reshape::read(&r)?.shape;
                if shape.is_empty() || shape.len() > MAX_RANK {
                    return Err(s.error(
                        "attrs.shape",
                        format!(
                            "burn tensors here have rank 1 to {MAX_RANK}, got {} dimensions",
                            shape.len()
                        ),
                    ));
                }
                Kind::Reshape {
                    a: self.tensor_arg(s, 0, defined)?,
                    shape,
                    out: self.out(s, defined)?,
                }
            }
            Op::Item => Kind::Item {
                a: self.tensor_arg(s, 0, defined)?,
                out: self.out(s, defined)?,
            },
            Op::Grad => Kind::Grad {
                a: self.tensor_arg(s, 0, defined)?,
                out: self.out(s, defined)?,
            },
            other => {
                let unary = match other {
                    Op::AddScalar => Unary::AddScalar(attrs::AddScalar::read(&r)?.scalar),
                    Op::MulScalar => Unary::MulScalar(attrs::MulScalar::read(&r)?.scalar),
                    Op::Powi => Unary::Powi(attrs::Powi::read(&r)?.exponent),
                    Op::SumDim => Unary::SumDim(attrs::SumDim::read(&r)?.dim),
                    Op::Detach => Unary::Detach,
                    Op::WithoutAutodiff => Unary::WithoutAutodiff,
                    // Never executed: the program is unsupported.
                    Op::RetainGrad | Op::Clone => Unary::Clone,
                    Op::Neg => Unary::Neg,
                    Op::Transpose => Unary::Transpose,
                    Op::Exp => Unary::Exp,
                    Op::Log => Unary::Log,
                    Op::Sqrt => Unary::Sqrt,
                    Op::Abs => Unary::Abs,
                    Op::Tanh => Unary::Tanh,
                    Op::Relu => Unary::Relu,
                    Op::Sigmoid => Unary::Sigmoid,
                    Op::Sum => Unary::Sum,
                    Op::Mean => Unary::Mean,
                    _ => unreachable!("every op has an arm"),
                };
                Kind::Unary {
                    op: unary,
                    a: self.tensor_arg(s, 0, defined)?,
                    out: self.out(s, defined)?,
                    alias: None,
                }
            }
        };

        Ok(self.finish(stmt, kind, unsupported))
    }

    /// The instruction, or `Unsupported` (the first such one is the run's outcome).
    fn finish(&mut self, stmt: u32, kind: Kind, unsupported: Option<String>) -> Instr {
        if let Some(message) = unsupported {
            if self.unsupported.is_none() {
                self.unsupported = Some(UnsupportedOp {
                    stmt: self.stmts[stmt as usize].clone(),
                    message,
                });
            }
            return Instr {
                stmt,
                kind: Kind::Unsupported,
            };
        }
        Instr { stmt, kind }
    }

    /// A module argument, of the kind the operation calls.
    fn module_arg(&self, s: &RawStmt, i: usize, op: Op) -> Result<ModuleRef, IrError> {
        let name = &s.args[i];
        let m = *self
            .modules
            .get(name)
            .ok_or_else(|| s.error(&format!("args[{i}]"), format!("no module named {name:?}")))?;
        if let Some(want) = op.module() {
            let have = match m {
                ModuleRef::Linear(_) => ModuleKind::Linear,
                ModuleRef::Layer(_) => self.layer_kinds[name],
            };
            if have != want {
                return Err(s.error(
                    &format!("args[{i}]"),
                    format!("{name:?} is a {}, not a {}", have.name(), want.name()),
                ));
            }
        }
        Ok(m)
    }

    fn body_of(s: &RawStmt) -> Result<&Vec<RawStmt>, IrError> {
        s.body
            .as_ref()
            .ok_or_else(|| s.error("body", "a block needs a body"))
    }

    /// The optimizer a statement binds (`out`, checked present by the table).
    fn optimizer_out(
        &mut self,
        s: &RawStmt,
        defined: &mut HashSet<String>,
    ) -> Result<u32, IrError> {
        let name = s.out.clone().unwrap_or_default();
        if self.slots.contains_key(&name)
            || self.params.contains_key(&name)
            || self.modules.contains_key(&name)
        {
            return Err(s.error(
                "out",
                format!("{name:?} already names a tensor or a module"),
            ));
        }
        if self.schedulers.contains_key(&name) {
            return Err(s.error("out", format!("{name:?} already names a scheduler")));
        }
        let next = self.optimizers.len() as u32;
        let opt = *self.optimizers.entry(name.clone()).or_insert(next);
        defined.insert(name);
        Ok(opt)
    }

    /// The scheduler a statement binds (`out`, checked present by the table).
    fn scheduler_out(
        &mut self,
        s: &RawStmt,
        defined: &mut HashSet<String>,
    ) -> Result<u32, IrError> {
        let name = s.out.clone().unwrap_or_default();
        if self.slots.contains_key(&name)
            || self.params.contains_key(&name)
            || self.modules.contains_key(&name)
            || self.optimizers.contains_key(&name)
        {
            return Err(s.error(
                "out",
                format!("{name:?} already names a tensor, a module or an optimizer"),
            ));
        }
        let next = self.schedulers.len() as u32;
        let sched = *self.schedulers.entry(name.clone()).or_insert(next);
        defined.insert(name);
        Ok(sched)
    }

    /// A (target, online) pair: two modules of one kind with the same attributes.
    fn same_shape(&self, s: &RawStmt, target: ModuleRef, online: ModuleRef) -> Result<(), IrError> {
        let same = target != online
            && match (target, online) {
                (ModuleRef::Linear(t), ModuleRef::Linear(o)) => {
                    let (t, o) = (
                        &self.linear_shapes[t as usize],
                        &self.linear_shapes[o as usize],
                    );
                    t == o
                }
                (ModuleRef::Layer(t), ModuleRef::Layer(o)) => {
                    self.layer_attrs[t as usize] == self.layer_attrs[o as usize]
                }
                _ => false,
            };
        if same {
            Ok(())
        } else {
            Err(s.error(
                "args",
                format!(
                    "{:?} and {:?} must be two modules of the same kind with the same attributes",
                    s.args[0], s.args[1]
                ),
            ))
        }
    }
}

/// `a tensor`, `two tensors`, `a module and a tensor`, `no args`: an argument list in words.
fn describe_args(args: &[ArgKind]) -> String {
    let word = |k: &ArgKind| match k {
        ArgKind::Tensor => "tensor",
        ArgKind::Module => "module",
        ArgKind::Optimizer => "optimizer",
        ArgKind::Scheduler => "scheduler",
    };
    match args {
        [] => "no args".to_owned(),
        [a] => format!("a {}", word(a)),
        [a, b] if a == b => format!("two {}s", word(a)),
        _ => args
            .iter()
            .map(|k| format!("a {}", word(k)))
            .collect::<Vec<_>>()
            .join(" and "),
    }
}

/// A set of slots.
#[derive(Clone, PartialEq, Eq)]
struct Live(Vec<bool>);

impl Live {
    fn new(n: usize) -> Self {
        Live(vec![false; n])
    }
    fn has(&self, s: Slot) -> bool {
        self.0[s as usize]
    }
    fn add(&mut self, s: Slot) {
        self.0[s as usize] = true;
    }
    fn remove(&mut self, s: Slot) {
        self.0[s as usize] = false;
    }
    fn union(&mut self, other: &Live) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= *b;
        }
    }
}

/// Backward liveness over the structured body: sets `Src::Slot::take` on a
/// value's last use and `Dst::keep` on results read later. Returns the slots
/// live before `body`. `track`: read after every iteration of the timed loop.
fn liveness(body: &mut [Instr], live_out: Live, track: Option<Slot>) -> Live {
    let mut live = live_out;
    for instr in body.iter_mut().rev() {
        match &mut instr.kind {
            Kind::Repeat {
                body: inner, timed, ..
            } => {
                // Live at the end of an iteration: what the next iteration
                // reads, and what is read after the loop.
                let mut end = live.clone();
                if *timed {
                    if let Some(t) = track {
                        end.add(t);
                    }
                }
                loop {
                    let mut scratch = inner.clone();
                    let start = liveness(&mut scratch, end.clone(), track);
                    let mut next = end.clone();
                    next.union(&start);
                    if next == end {
                        break;
                    }
                    end = next;
                }
                let start = liveness(inner, end, track);
                // A loop may run zero times: what is live after it stays live.
                live.union(&start);
            }
            kind => {
                let (mut reads, mut defs) = operands(kind);
                for d in defs.iter_mut() {
                    d.keep = live.has(d.slot);
                }
                for d in &defs {
                    live.remove(d.slot);
                }
                // The last read of a slot inside one instruction is the one
                // that may take it: walk the reads backwards.
                for src in reads.iter_mut().rev() {
                    if let Src::Slot { slot, take } = &mut **src {
                        *take = !live.has(*slot);
                        live.add(*slot);
                    }
                }
            }
        }
    }
    live
}

/// The slot reads and the slot writes of a (non-block) instruction.
fn operands(kind: &mut Kind) -> (Vec<&mut Src>, Vec<&mut Dst>) {
    let mut uses: Vec<&mut Src> = Vec::new();
    let mut defs: Vec<&mut Dst> = Vec::new();
    match kind {
        Kind::Unary { a, out, alias, .. } => {
            uses.push(a);
            defs.extend(out.as_mut());
            defs.extend(alias.as_mut());
        }
        Kind::Apply { args, out, .. } => {
            for arg in args.iter_mut() {
                if let Arg::Value(src) = arg {
                    uses.push(src);
                }
            }
            defs.extend(out.as_mut());
        }
        Kind::Binary { a, b, out, .. } => {
            uses.push(a);
            uses.push(b);
            defs.extend(out.as_mut());
        }
        Kind::Reshape { a, out, .. }
        | Kind::Item { a, out }
        | Kind::Linear { a, out, .. }
        | Kind::Grad { a, out } => {
            uses.push(a);
            defs.extend(out.as_mut());
        }
        Kind::Backward { a, .. } | Kind::Observe { a, .. } => uses.push(a),
        Kind::ParamRequireGrad { out, .. } | Kind::ParamAddScalar { out, .. } => {
            defs.extend(out.as_mut());
        }
        Kind::NewOptimizer { .. }
        | Kind::NewScheduler { .. }
        | Kind::SchedStep { .. }
        | Kind::CopyModule { .. }
        | Kind::SoftUpdate { .. }
        | Kind::ModuleNoGrad { .. }
        | Kind::SetMode { .. }
        | Kind::Step { .. }
        | Kind::ZeroGrad { .. }
        | Kind::Unsupported
        | Kind::Repeat { .. } => {}
    }
    (uses, defs)
}
