//! What a run hands back: the one description of a run's result.
//!
//! Every struct here goes to Python as it is serialized (`pythonize` in
//! `python.rs`: NaN and infinities survive, which JSON would lose) and to the
//! binaries' `--json` output. The Python side validates it with its models in
//! `runner/model/results.py` (`RawRun`, `InterpreterResult`), and
//! `tests/test_contract.py` holds those models to these structs' JSON Schema
//! (`record_schemas()`), so a field added, renamed or retyped here fails a test
//! until Python reads it too.

use schemars::JsonSchema;
use serde::Serialize;

/// burn's own flags of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RawFlags {
    pub is_tracked: bool,
    pub is_require_grad: bool,
    pub is_autodiff: bool,
}

/// The flags an observation records: normalised, and as burn names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Flags {
    /// burn `is_tracked()`.
    pub tracked: bool,
    /// burn `is_require_grad()`.
    pub requires_grad: bool,
    pub raw: RawFlags,
}

impl From<RawFlags> for Flags {
    fn from(raw: RawFlags) -> Self {
        Flags {
            tracked: raw.is_tracked,
            requires_grad: raw.is_require_grad,
            raw,
        }
    }
}

// The p10 loop.

/// What the p10 loop was doing when it panicked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Setup,
    Forward,
    Backward,
    Optimizer,
    Snapshot,
    Ema,
    Checkpoint,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Setup => "setup",
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::Optimizer => "optimizer",
            Phase::Snapshot => "snapshot",
            Phase::Ema => "ema",
            Phase::Checkpoint => "checkpoint",
        }
    }
}

/// A panic inside the p10 loop, with the step it happened at (0 during setup).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StepPanic {
    pub message: String,
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// `file:line:column`.
    pub location: String,
    pub step: u64,
    pub phase: Phase,
}

/// How a p10 run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum P10Outcome {
    Ok,
    Panic,
    /// The checkpoint callback asked to stop (Python re-raises its exception).
    Stopped,
}

/// State at a p10 checkpoint, read after the step's clock stopped.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct P10Checkpoint {
    pub step: u64,
    /// Mean wall time per step over the steps since the previous checkpoint.
    pub ms_per_step: f64,
    /// Process RSS now; `None` where it cannot be read.
    pub rss_bytes: Option<u64>,
    /// RSS now minus RSS when the run started, in MiB.
    pub rss_delta_mib: Option<f64>,
    /// `is_tracked()` of the kept tensor: the EMA, or in `log` mode a fresh
    /// snapshot taken the same way as the logged one.
    pub tracked: bool,
    pub flags: RawFlags,
}

/// Everything one p10 run measured.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct P10Result {
    pub outcome: P10Outcome,
    pub panic: Option<StepPanic>,
    /// Wall time of every completed step, in milliseconds, step 1 first.
    pub step_ms: Vec<f64>,
    pub checkpoints: Vec<P10Checkpoint>,
    /// `(step, rss_delta_mib)` every `rss_every` steps (empty where RSS cannot be read).
    pub rss_samples: Vec<(u64, f64)>,
    /// Model, input and optimizer construction, not part of any step.
    pub setup_ms: f64,
}

// Programs (`docs/program-ir.md` section 4).

/// How a program run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Ok,
    /// burn panicked (an observation, with its message and location).
    Panic,
    /// The interpreter refused an operation at run time (e.g. `grad` of a
    /// tensor without gradient, a number used as a tensor).
    Error,
    /// An operation burn lacks.
    Unsupported,
    /// The checkpoint callback asked to stop (Python re-raises its exception).
    Stopped,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Panic => "panic",
            Outcome::Error => "error",
            Outcome::Unsupported => "unsupported",
            Outcome::Stopped => "stopped",
        }
    }
}

/// Where and why a program run failed.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Failure {
    /// The statement's `index`; `None` while the initial tensors were made.
    pub op_index: Option<u64>,
    pub op: Option<String>,
    pub line: Option<u64>,
    /// The timed loop's iteration (1-based) when it happened inside it.
    pub iteration: Option<u64>,
    pub message: String,
    /// A panic's `file:line:column`.
    pub location: Option<String>,
}

/// One executed `observe`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Observation {
    pub label: String,
    pub tensor: String,
    pub op_index: u64,
    /// The timed loop's iteration (1-based), `None` outside it.
    pub iteration: Option<u64>,
    /// Torch layout; burn's full reductions are `[1]`; `item`'s number is `[]`.
    pub shape: Vec<usize>,
    /// Flat, row-major, torch layout; NaN and infinities kept.
    pub values: Option<Vec<f32>>,
    /// The gradient burn holds for the tensor now, `None` if none.
    pub grad: Option<Vec<f32>>,
    pub flags: Flags,
}

/// State after a checkpoint iteration of a program's timed loop.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct ProgramCheckpoint {
    pub step: u64,
    /// Mean wall time per iteration since the previous checkpoint.
    pub ms_per_step: f64,
    pub rss_bytes: Option<u64>,
    pub rss_delta_mib: Option<f64>,
    /// The `track` tensor's `is_tracked()`, `None` without one (or before it is bound).
    pub tracked: Option<bool>,
    /// The `track` tensor's flags as burn names them; absent (never null) without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "RawFlags")]
    pub flags: Option<RawFlags>,
}

/// Everything one program run returned.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct ProgramResult {
    pub outcome: Outcome,
    pub failure: Option<Failure>,
    pub observations: Vec<Observation>,
    /// Wall time of each completed iteration of the timed loop (the first top-level `repeat`).
    pub step_ms: Vec<f64>,
    pub checkpoints: Vec<ProgramCheckpoint>,
    /// `(iteration, rss_delta_mib)` every `rss_every` iterations.
    pub rss_samples: Vec<(u64, f64)>,
    pub setup_ms: f64,
}

/// The JSON Schema of each record, by name (for the test that holds the Python models to them).
pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        (
            "P10Result",
            serde_json::to_value(schemars::schema_for!(P10Result)).expect("schema"),
        ),
        (
            "ProgramResult",
            serde_json::to_value(schemars::schema_for!(ProgramResult)).expect("schema"),
        ),
    ]
}
