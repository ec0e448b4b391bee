//! `program FILE.json [--json]`: runs one program IR file on burn and prints
//! one line per checkpoint of its timed loop and its outcome, or the whole
//! result as JSON with `--json` (non-finite floats become `null` there).
//!
//! `program --p10 MODE [STEPS] [--json | --emit]` runs the p10 loop written
//! as a program (`--emit` prints that IR instead), for timing the interpreter
//! against the hand-written `p10` binary.

use std::io::Write;
use std::ops::ControlFlow;
use std::process::ExitCode;

use rust_probe::config::{Mode, P10Params};
use rust_probe::program::{self, p10_ir, Outcome, Program, ProgramCheckpoint};

const USAGE: &str =
    "usage: program FILE.json [--json]\n       program --p10 MODE [STEPS] [--json | --emit]";

fn checkpoint_line(c: &ProgramCheckpoint) -> String {
    let rss = match c.rss_delta_mib {
        Some(delta) if delta < 0.0 => format!("rss - {:.1} MiB", -delta),
        Some(delta) => format!("rss + {delta:.1} MiB"),
        None => "rss n/a".to_owned(),
    };
    let tracked = match c.flags {
        Some(f) => format!(
            " track.is_tracked={} is_require_grad={}",
            f.is_tracked, f.is_require_grad
        ),
        None => String::new(),
    };
    format!(
        "step {}: {:.2} ms/step {rss}{tracked}",
        c.step, c.ms_per_step
    )
}

fn main() -> ExitCode {
    let mut json = false;
    let mut emit = false;
    let mut p10 = false;
    let mut positional = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--json" => json = true,
            "--emit" => emit = true,
            "--p10" => p10 = true,
            "-h" | "--help" => {
                println!("{USAGE}\nMODE: one of {}", Mode::names());
                return ExitCode::SUCCESS;
            }
            _ => positional.push(arg),
        }
    }
    let text = if p10 {
        let (mode, steps) = match positional.as_slice() {
            [mode] => (mode.clone(), None),
            [mode, steps] => (mode.clone(), Some(steps.clone())),
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        };
        let mut params = P10Params {
            mode,
            ..P10Params::default()
        };
        if let Some(steps) = steps {
            match steps.parse::<i64>() {
                Ok(n) => params.steps = n,
                Err(_) => {
                    eprintln!("program: STEPS must be a positive integer, got {steps:?}");
                    return ExitCode::from(2);
                }
            }
        }
        match params.validate() {
            Ok(config) => p10_ir::p10_program(&config),
            Err(err) => {
                eprintln!("program: {err}");
                return ExitCode::from(2);
            }
        }
    } else {
        let [path] = positional.as_slice() else {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        };
        match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) => {
                eprintln!("program: cannot read {path}: {err}");
                return ExitCode::from(2);
            }
        }
    };
    if emit {
        println!("{text}");
        return ExitCode::SUCCESS;
    }
    let program = match Program::from_json(&text) {
        Ok(program) => program,
        Err(err) => {
            eprintln!("program: bad IR: {err}");
            return ExitCode::from(2);
        }
    };
    drop(text);
    let result = program::run(&program, &mut |checkpoint| {
        if !json {
            println!("{}", checkpoint_line(checkpoint));
            let _ = std::io::stdout().flush();
        }
        ControlFlow::Continue(())
    });
    if json {
        println!(
            "{}",
            serde_json::to_string(&result).expect("result serialises")
        );
    } else {
        for obs in &result.observations {
            println!(
                "observe {:?} (index {}, iteration {:?}): shape {:?} tracked={} requires_grad={}",
                obs.label,
                obs.op_index,
                obs.iteration,
                obs.shape,
                obs.flags.tracked,
                obs.flags.requires_grad
            );
        }
        println!("outcome: {}", result.outcome.name());
        if let Some(f) = &result.failure {
            eprintln!(
                "{} at index {:?} ({:?}, line {:?}), iteration {:?}{}:\n{}",
                result.outcome.name(),
                f.op_index,
                f.op,
                f.line,
                f.iteration,
                f.location
                    .as_ref()
                    .map(|l| format!(", at {l}"))
                    .unwrap_or_default(),
                f.message
            );
        }
    }
    match result.outcome {
        Outcome::Ok => ExitCode::SUCCESS,
        Outcome::Panic => ExitCode::from(101),
        Outcome::Error | Outcome::Unsupported => ExitCode::from(1),
        Outcome::Stopped => ExitCode::from(130),
    }
}
