//! `p10 MODE [STEPS] [--json]`: the p10 loop driven natively, one line per
//! checkpoint in the seed's format, or the whole result as JSON with `--json`.
//! It calls the same `rust_probe::p10::run` as the Python module.

use std::io::Write;
use std::ops::ControlFlow;
use std::process::ExitCode;

use rust_probe::config::{Mode, P10Params};
use rust_probe::p10::{self, Outcome};

const USAGE: &str = "usage: p10 MODE [STEPS] [--json]";

fn main() -> ExitCode {
    let mut json = false;
    let mut positional = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--json" => json = true,
            "-h" | "--help" => {
                println!(
                    "{USAGE}\nMODE: one of {}\nSTEPS: default 2000",
                    Mode::names()
                );
                return ExitCode::SUCCESS;
            }
            _ => positional.push(arg),
        }
    }
    let (mode, steps) = match positional.as_slice() {
        [mode] => (mode.clone(), None),
        [mode, steps] => (mode.clone(), Some(steps.clone())),
        _ => {
            eprintln!("{USAGE}\nMODE: one of {}", Mode::names());
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
                eprintln!("p10: STEPS must be a positive integer, got {steps:?}");
                return ExitCode::from(2);
            }
        }
    }
    let config = match params.validate() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("p10: {err}");
            return ExitCode::from(2);
        }
    };

    let mode_name = config.mode.name();
    let result = p10::run(&config, &mut |checkpoint| {
        if !json {
            println!("{}", p10::seed_line(mode_name, checkpoint));
            let _ = std::io::stdout().flush();
        }
        ControlFlow::Continue(())
    });
    if json {
        println!(
            "{}",
            serde_json::to_string(&result).expect("result serialises")
        );
    } else if let Some(panic) = &result.panic {
        eprintln!(
            "{mode_name} panicked at step {} ({}) at {}:\n{}",
            panic.step,
            panic.phase.name(),
            panic.location,
            panic.message
        );
    }
    match result.outcome {
        Outcome::Ok => ExitCode::SUCCESS,
        Outcome::Panic => ExitCode::from(101),
        Outcome::Stopped => ExitCode::from(130),
    }
}
