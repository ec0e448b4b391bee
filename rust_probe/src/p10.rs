//! The p10 loop: a `Linear` trained by SGD with an EMA of its weight updated
//! after every optimizer step, in the six modes of `docs/p10-experiment.md`.
//!
//! This is the one implementation: the Python module and the `p10` binary both
//! call [`run`]. It measures and returns plain data; judging is Python's job.

use std::cell::Cell;
use std::hint::black_box;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use burn::nn::{Linear, LinearConfig};
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::{Device, Distribution, Tensor};

use crate::config::{Mode, P10Config};
use crate::panic_capture::{capture, PanicInfo};
use crate::rss;

pub use crate::record::{
    P10Checkpoint as Checkpoint, P10Outcome as Outcome, P10Result, Phase, RawFlags, StepPanic,
};

impl StepPanic {
    fn new(info: PanicInfo, step: u64, phase: Phase) -> Self {
        StepPanic {
            location: info.location(),
            message: info.message,
            file: info.file,
            line: info.line,
            column: info.column,
            step,
            phase,
        }
    }
}

fn flags_of(t: &Tensor<2>) -> RawFlags {
    RawFlags {
        is_tracked: t.is_tracked(),
        is_require_grad: t.is_require_grad(),
        is_autodiff: t.is_autodiff(),
    }
}

fn snapshot(model: &Linear, mode: Mode) -> Tensor<2> {
    let weight = model.weight.val();
    if mode.uses_without_autodiff() {
        weight.without_autodiff()
    } else {
        weight.detach()
    }
}

/// Spins (no sleep: the core stays busy, as real work would keep it) for `wait`.
/// Calibration only: a known slowdown added to every step.
fn busy_wait(wait: Duration) {
    let start = Instant::now();
    while start.elapsed() < wait {
        std::hint::spin_loop();
    }
}

fn mib(bytes: i128) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Runs one p10 loop. `on_checkpoint` is called after each checkpoint is
/// recorded, outside the timed region (progress reporting); returning
/// `ControlFlow::Break` ends the run there with outcome `Stopped`.
pub fn run(
    config: &P10Config,
    on_checkpoint: &mut dyn FnMut(&Checkpoint) -> ControlFlow<()>,
) -> P10Result {
    let mode = config.mode;
    let position = Cell::new((0u64, Phase::Setup));
    let set_phase = |phase: Phase| position.set((position.get().0, phase));
    let mut step_ms: Vec<f64> = Vec::with_capacity(config.steps as usize);
    let mut checkpoints: Vec<Checkpoint> = Vec::with_capacity(config.checkpoints.len());
    let mut rss_samples: Vec<(u64, f64)> = Vec::new();
    let mut setup_ms = 0.0;
    let rss_start = rss::current_bytes();

    let caught = capture(|| {
        let setup_start = Instant::now();
        let device = Device::flex().autodiff();
        device.seed(config.seed);
        let mut model: Linear = LinearConfig::new(config.d_in, config.d_out).init(&device);
        let x = Tensor::<2>::random(
            [config.batch, config.d_in],
            Distribution::Normal(0.0, 1.0),
            &device,
        );
        let mut optim = SgdConfig::new().init();
        let mut ema = snapshot(&model, mode);
        let keep = config.ema_decay;
        let blend = 1.0 - config.ema_decay;
        setup_ms = setup_start.elapsed().as_secs_f64() * 1e3;

        let mut next_checkpoint = config.checkpoints.iter().copied().peekable();
        let mut segment_start = 0usize;
        for step in 1..=config.steps {
            position.set((step, Phase::Forward));
            let started = Instant::now();
            if mode != Mode::EmaOnly {
                let out = model.forward(x.clone());
                let loss = if mode.ema_in_loss() {
                    // The EMA as a target network inside the loss.
                    (out - x.clone().matmul(ema.clone())).powi_scalar(2).mean()
                } else {
                    out.powi_scalar(2).mean()
                };
                set_phase(Phase::Backward);
                let grads = GradientsParams::from_grads(loss.backward(), &model);
                set_phase(Phase::Optimizer);
                model = optim.step(config.lr, model, grads);
            }
            if mode == Mode::Log {
                // A snapshot that is read and dropped, never kept.
                set_phase(Phase::Snapshot);
                let norm = snapshot(&model, mode).powi_scalar(2).sum().sqrt();
                black_box(norm.into_scalar::<f32>());
            } else {
                set_phase(Phase::Ema);
                ema = ema.mul_scalar(keep) + snapshot(&model, mode).mul_scalar(blend);
            }
            if config.busy_wait_us > 0 {
                busy_wait(Duration::from_micros(config.busy_wait_us));
            }
            step_ms.push(started.elapsed().as_secs_f64() * 1e3);

            if config.rss_every > 0 && step % config.rss_every == 0 {
                if let (Some(now), Some(start)) = (rss::current_bytes(), rss_start) {
                    rss_samples.push((step, mib(now as i128 - start as i128)));
                }
            }

            if next_checkpoint.peek() == Some(&step) {
                next_checkpoint.next();
                set_phase(Phase::Checkpoint);
                let segment = &step_ms[segment_start..];
                segment_start = step_ms.len();
                let flags = if mode == Mode::Log {
                    flags_of(&snapshot(&model, mode))
                } else {
                    flags_of(&ema)
                };
                let rss_bytes = rss::current_bytes();
                let checkpoint = Checkpoint {
                    step,
                    ms_per_step: segment.iter().sum::<f64>() / segment.len() as f64,
                    rss_bytes,
                    rss_delta_mib: rss_bytes
                        .zip(rss_start)
                        .map(|(now, start)| mib(now as i128 - start as i128)),
                    tracked: flags.is_tracked,
                    flags,
                };
                let flow = on_checkpoint(&checkpoint);
                checkpoints.push(checkpoint);
                if flow.is_break() {
                    return Outcome::Stopped;
                }
            }
        }
        Outcome::Ok
    });

    let (outcome, panic) = match caught {
        Ok(outcome) => (outcome, None),
        Err(info) => {
            let (step, phase) = position.get();
            (Outcome::Panic, Some(StepPanic::new(info, step, phase)))
        }
    };
    P10Result {
        outcome,
        panic,
        step_ms,
        checkpoints,
        rss_samples,
        setup_ms,
    }
}

/// One checkpoint in the seed's format:
/// `detach step 50: 1.03 ms/step rss + 7.9 MiB ema.is_tracked=true is_require_grad=false`.
pub fn seed_line(mode: &str, checkpoint: &Checkpoint) -> String {
    let rss = match checkpoint.rss_delta_mib {
        Some(delta) if delta < 0.0 => format!("rss - {:.1} MiB", -delta),
        Some(delta) => format!("rss + {delta:.1} MiB"),
        None => "rss n/a".to_owned(),
    };
    format!(
        "{mode} step {}: {:.2} ms/step {rss} ema.is_tracked={} is_require_grad={}",
        checkpoint.step,
        checkpoint.ms_per_step,
        checkpoint.flags.is_tracked,
        checkpoint.flags.is_require_grad
    )
}
