//! The six p10 modes on small sizes, through the same `run` the module and
//! the binary use. What is asserted for `target` is what burn 0.22.1 was
//! observed to do here (a panic at step 3, in backward), not what the seed says.

use std::ops::ControlFlow;

use rust_probe::config::{P10Config, P10Params};
use rust_probe::p10::{run, Outcome, P10Result, Phase};

fn small(mode: &str, steps: i64) -> P10Config {
    P10Params {
        mode: mode.into(),
        d_in: 32,
        d_out: 32,
        batch: 8,
        steps,
        checkpoints: None,
        ..P10Params::default()
    }
    .validate()
    .unwrap()
}

fn run_small(mode: &str, steps: i64) -> P10Result {
    run(&small(mode, steps), &mut |_| ControlFlow::Continue(()))
}

fn assert_completed(result: &P10Result, steps: u64) {
    assert_eq!(result.outcome, Outcome::Ok, "{:?}", result.panic);
    assert!(result.panic.is_none());
    assert_eq!(result.step_ms.len() as u64, steps);
    assert!(result.step_ms.iter().all(|ms| ms.is_finite() && *ms >= 0.0));
}

#[test]
fn detach_completes_and_the_ema_stays_tracked() {
    let result = run_small("detach", 40);
    assert_completed(&result, 40);
    let steps: Vec<u64> = result.checkpoints.iter().map(|c| c.step).collect();
    assert_eq!(steps, vec![1, 40]);
    for c in &result.checkpoints {
        assert!(
            c.flags.is_tracked,
            "detach EMA at step {} not tracked",
            c.step
        );
        assert!(!c.flags.is_require_grad);
        assert!(c.flags.is_autodiff);
    }
}

#[test]
fn without_autodiff_gives_an_untracked_constant() {
    for mode in ["without", "target-without"] {
        let result = run_small(mode, 40);
        assert_completed(&result, 40);
        for c in &result.checkpoints {
            assert!(!c.flags.is_tracked, "{mode} EMA tracked at step {}", c.step);
            assert!(!c.flags.is_require_grad);
            assert!(!c.flags.is_autodiff);
        }
    }
}

#[test]
fn target_panics_in_backward_with_the_consumed_tape_message() {
    let result = run_small("target", 40);
    assert_eq!(result.outcome, Outcome::Panic);
    let panic = result.panic.as_ref().expect("panic recorded");
    assert!(
        panic
            .message
            .contains("graph tape has already been consumed"),
        "{}",
        panic.message
    );
    assert!(
        panic.file.ends_with("src/runtime/server.rs"),
        "{}",
        panic.file
    );
    assert!(panic.file.contains("burn-autodiff"), "{}", panic.file);
    assert_eq!(panic.phase, Phase::Backward);
    // Observed with burn 0.22.1: steps 1 and 2 complete, step 3's backward panics.
    assert_eq!(panic.step, 3);
    assert_eq!(result.step_ms.len(), 2, "the completed steps are kept");
    assert_eq!(result.checkpoints.len(), 1, "the step-1 checkpoint is kept");
}

#[test]
fn the_process_stays_usable_after_a_caught_panic() {
    assert_eq!(run_small("target", 10).outcome, Outcome::Panic);
    assert_completed(&run_small("detach", 10), 10);
    assert_eq!(run_small("target", 10).panic.unwrap().step, 3);
}

#[test]
fn log_and_ema_only_complete() {
    let log = run_small("log", 40);
    assert_completed(&log, 40);
    // The logged snapshot is a detached parameter: still tracked and still
    // requiring grad, but it is dropped every step.
    assert!(log
        .checkpoints
        .iter()
        .all(|c| c.flags.is_tracked && c.flags.is_require_grad));
    let ema_only = run_small("ema-only", 40);
    assert_completed(&ema_only, 40);
    assert!(ema_only.checkpoints.iter().all(|c| c.flags.is_tracked));
}

#[test]
fn checkpoints_report_segment_means_and_rss() {
    let config = P10Params {
        checkpoints: Some(vec![2, 5, 9]),
        ..P10Params {
            mode: "without".into(),
            d_in: 16,
            d_out: 16,
            batch: 4,
            steps: 9,
            ..P10Params::default()
        }
    }
    .validate()
    .unwrap();
    let mut seen = Vec::new();
    let result = run(&config, &mut |c| {
        seen.push(c.step);
        ControlFlow::Continue(())
    });
    assert_eq!(seen, vec![2, 5, 9]);
    let mean = |a: usize, b: usize| result.step_ms[a..b].iter().sum::<f64>() / (b - a) as f64;
    let c = &result.checkpoints;
    assert!((c[0].ms_per_step - mean(0, 2)).abs() < 1e-9);
    assert!((c[1].ms_per_step - mean(2, 5)).abs() < 1e-9);
    assert!((c[2].ms_per_step - mean(5, 9)).abs() < 1e-9);
    if cfg!(target_os = "linux") {
        assert!(c
            .iter()
            .all(|c| c.rss_bytes.is_some() && c.rss_delta_mib.is_some()));
    }
}

#[test]
fn a_break_from_the_callback_stops_the_run_there() {
    let config = small("detach", 40);
    let result = run(&config, &mut |_| ControlFlow::Break(()));
    assert_eq!(result.outcome, Outcome::Stopped);
    assert_eq!(result.step_ms.len(), 1);
    assert_eq!(result.checkpoints.len(), 1);
}

#[test]
fn rss_is_sampled_every_n_steps() {
    let config = P10Params {
        mode: "without".into(),
        d_in: 16,
        d_out: 16,
        batch: 4,
        steps: 10,
        rss_every: 4,
        ..P10Params::default()
    }
    .validate()
    .unwrap();
    let result = run(&config, &mut |_| ControlFlow::Continue(()));
    if cfg!(target_os = "linux") {
        let steps: Vec<u64> = result.rss_samples.iter().map(|s| s.0).collect();
        assert_eq!(steps, vec![4, 8]);
    }
    let off = P10Config {
        rss_every: 0,
        ..config
    };
    let result = run(&off, &mut |_| ControlFlow::Continue(()));
    assert!(result.rss_samples.is_empty());
}

#[test]
fn a_calibration_busy_wait_lengthens_every_step() {
    // The wait spins inside the timed region: every step takes at least that long.
    let config = P10Params {
        mode: "without".into(),
        d_in: 8,
        d_out: 8,
        batch: 2,
        steps: 5,
        busy_wait_us: 2_000,
        ..P10Params::default()
    }
    .validate()
    .unwrap();
    let result = run(&config, &mut |_| ControlFlow::Continue(()));
    assert_completed(&result, 5);
    assert!(
        result.step_ms.iter().all(|&ms| ms >= 2.0),
        "{:?}",
        result.step_ms
    );
    assert_eq!(small("without", 5).busy_wait_us, 0, "off by default");
}
