//! `runner._probe`: the p10 loop and the program interpreter for Python.
//!
//! Rust measures and hands back plain dicts and lists (the structs of
//! `crate::record`, serialized by pythonize); Python owns the API around it
//! (`runner/_probe.pyi` describes it, `runner/model/results.py` validates it). Bad arguments raise
//! `ValueError` naming the parameter; a panic inside burn is returned as data.

use std::ops::ControlFlow;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString};

use crate::build_info;
use crate::config::{Mode, P10Params};
use crate::p10;
use crate::panic_capture::capture;
use crate::program::{self, Failure, Outcome, Program, ProgramResult};
use crate::record;

/// An integer argument, with `ValueError` (not `TypeError`/`OverflowError`)
/// naming the parameter when it is not an integer that fits.
fn int_arg(name: &str, value: &Bound<'_, PyAny>) -> PyResult<i64> {
    if value.is_instance_of::<PyBool>() {
        return Err(PyValueError::new_err(format!(
            "{name}: must be an integer, got a bool ({value})"
        )));
    }
    value.extract::<i64>().map_err(|_| {
        PyValueError::new_err(format!(
            "{name}: must be an integer within 64 bits, got {}",
            value.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })
}

fn float_arg(name: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    if value.is_instance_of::<PyBool>() {
        return Err(PyValueError::new_err(format!(
            "{name}: must be a number, got a bool ({value})"
        )));
    }
    value.extract::<f64>().map_err(|_| {
        PyValueError::new_err(format!(
            "{name}: must be a number, got {}",
            value.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })
}

/// A record as Python data (dicts, lists, floats: NaN and infinities survive).
fn to_python<'py, T: serde::Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, value).map_err(|err| PyValueError::new_err(err.to_string()))
}

/// Runs `run` with the GIL released, calling `progress` (unless it is absent or `None`) with
/// each checkpoint it reports, as a dict; an exception the callback raises stops the run at
/// that checkpoint and is re-raised. Returns the run's result as a dict.
fn with_progress<'py, C, R>(
    py: Python<'py>,
    progress: Option<Bound<'py, PyAny>>,
    run: impl Send + FnOnce(&mut dyn FnMut(&C) -> ControlFlow<()>) -> R,
) -> PyResult<Bound<'py, PyAny>>
where
    C: serde::Serialize,
    R: serde::Serialize + Send,
{
    let progress: Option<Py<PyAny>> = progress.filter(|p| !p.is_none()).map(Bound::unbind);
    let mut callback_error: Option<PyErr> = None;
    let result = py.detach(|| {
        run(&mut |checkpoint| {
            let Some(callback) = progress.as_ref() else {
                return ControlFlow::Continue(());
            };
            Python::attach(|py| {
                match to_python(py, checkpoint).and_then(|d| callback.bind(py).call1((d,))) {
                    Ok(_) => ControlFlow::Continue(()),
                    Err(err) => {
                        callback_error = Some(err);
                        ControlFlow::Break(())
                    }
                }
            })
        })
    });
    if let Some(err) = callback_error {
        return Err(err);
    }
    to_python(py, &result)
}

/// Runs the p10 loop once and returns what it measured as a dict.
///
/// `progress`, if given, is called with each checkpoint's dict as it is
/// recorded (outside the timed region). An exception it raises (Ctrl-C
/// included) stops the run at that checkpoint and is re-raised.
#[pyfunction]
#[pyo3(signature = (
    mode, *, d_in=None, d_out=None, batch=None, lr=None, steps=None,
    checkpoints=None, ema_decay=None, seed=None, rss_every=None, busy_wait_us=None,
    progress=None
))]
#[allow(clippy::too_many_arguments)]
fn run_p10<'py>(
    py: Python<'py>,
    mode: &Bound<'py, PyAny>,
    d_in: Option<&Bound<'py, PyAny>>,
    d_out: Option<&Bound<'py, PyAny>>,
    batch: Option<&Bound<'py, PyAny>>,
    lr: Option<&Bound<'py, PyAny>>,
    steps: Option<&Bound<'py, PyAny>>,
    checkpoints: Option<&Bound<'py, PyAny>>,
    ema_decay: Option<&Bound<'py, PyAny>>,
    seed: Option<&Bound<'py, PyAny>>,
    rss_every: Option<&Bound<'py, PyAny>>,
    busy_wait_us: Option<&Bound<'py, PyAny>>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut params = P10Params {
        mode: mode.extract::<String>().map_err(|_| {
            PyValueError::new_err(format!(
                "mode: must be one of {}, got {mode}",
                Mode::names()
            ))
        })?,
        ..P10Params::default()
    };
    let ints: [(&str, Option<&Bound<'py, PyAny>>, &mut i64); 7] = [
        ("d_in", d_in, &mut params.d_in),
        ("d_out", d_out, &mut params.d_out),
        ("batch", batch, &mut params.batch),
        ("steps", steps, &mut params.steps),
        ("seed", seed, &mut params.seed),
        ("rss_every", rss_every, &mut params.rss_every),
        ("busy_wait_us", busy_wait_us, &mut params.busy_wait_us),
    ];
    for (name, value, slot) in ints {
        if let Some(value) = value {
            *slot = int_arg(name, value)?;
        }
    }
    if let Some(value) = lr {
        params.lr = float_arg("lr", value)?;
    }
    if let Some(value) = ema_decay {
        params.ema_decay = float_arg("ema_decay", value)?;
    }
    if let Some(value) = checkpoints.filter(|v| !v.is_none()) {
        let items: Vec<Bound<'py, PyAny>> = value
            .try_iter()
            .map_err(|_| PyValueError::new_err("checkpoints: must be a list of step numbers"))?
            .collect::<PyResult<_>>()?;
        params.checkpoints = Some(
            items
                .iter()
                .map(|item| int_arg("checkpoints", item))
                .collect::<PyResult<_>>()?,
        );
    }
    let config = params
        .validate()
        .map_err(|err| PyValueError::new_err(err.to_string()))?;

    with_progress(py, progress, |on_checkpoint| {
        p10::run(&config, on_checkpoint)
    })
}

fn program_arg(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Program> {
    let not_str = || {
        PyValueError::new_err(format!(
            "{name}: must be a str holding the program IR as JSON, got {}",
            value
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    };
    // Borrowed from the Python str (no copy of a JSON text of megabytes).
    let text = value.cast::<PyString>().map_err(|_| not_str())?;
    let text = text.to_str().map_err(|_| not_str())?;
    Program::from_json(text).map_err(|err| PyValueError::new_err(format!("{name}: {err}")))
}

/// Runs one program IR (JSON text) on burn and returns the result dict of
/// `docs/program-ir.md` section 4. Bad IR raises `ValueError` naming the
/// field; a burn panic comes back as outcome `panic`.
///
/// `progress`, if given, is called with each checkpoint's dict of the timed
/// loop as it is recorded (outside the timed region). An exception it raises
/// stops the run there and is re-raised.
#[pyfunction]
#[pyo3(signature = (ir_json, *, progress=None))]
fn run_program<'py>(
    py: Python<'py>,
    ir_json: &Bound<'py, PyAny>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let program = program_arg("ir_json", ir_json)?;
    with_progress(py, progress, |on_checkpoint| {
        program::run(&program, on_checkpoint)
    })
}

/// A result for a panic that escaped the interpreter's own capture.
fn escaped_panic(message: String, location: String) -> ProgramResult {
    ProgramResult {
        outcome: Outcome::Panic,
        failure: Some(Failure {
            op_index: None,
            op: None,
            line: None,
            iteration: None,
            message,
            location: Some(location),
        }),
        observations: Vec::new(),
        step_ms: Vec::new(),
        checkpoints: Vec::new(),
        rss_samples: Vec::new(),
        setup_ms: 0.0,
    }
}

/// Runs a batch of program IRs, one after the other, each isolated: a panic
/// in one is that program's outcome and the next runs normally. Every IR is
/// checked before any runs; bad IR raises `ValueError` naming
/// `ir_jsons[i]` and the field.
#[pyfunction]
fn run_programs<'py>(
    py: Python<'py>,
    ir_jsons: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let items: Vec<Bound<'py, PyAny>> = ir_jsons
        .try_iter()
        .map_err(|_| PyValueError::new_err("ir_jsons: must be a list of str"))?
        .collect::<PyResult<_>>()?;
    let programs: Vec<Program> = items
        .iter()
        .enumerate()
        .map(|(i, item)| program_arg(&format!("ir_jsons[{i}]"), item))
        .collect::<PyResult<_>>()?;
    let results: Vec<ProgramResult> = py.detach(|| {
        programs
            .iter()
            .map(|p| {
                capture(|| program::run(p, &mut |_| ControlFlow::Continue(())))
                    .unwrap_or_else(|info| escaped_panic(info.message.clone(), info.location()))
            })
            .collect()
    });
    let out = PyList::empty(py);
    for r in &results {
        out.append(to_python(py, r)?)?;
    }
    Ok(out)
}

/// Each record's JSON Schema, as JSON text by name (`crate::record`).
#[pyfunction]
fn record_schemas(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (name, schema) in record::schemas() {
        d.set_item(name, schema.to_string())?;
    }
    Ok(d)
}

/// burn's own default of each omittable attribute, read from burn's configs:
/// `"sgd.dampening"` / `"Conv2d.stride"` -> the value (`crate::program::defaults`).
#[pyfunction]
fn burn_defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (key, value) in program::defaults::burn_defaults() {
        d.set_item(key, to_python(py, &value)?)?;
    }
    Ok(d)
}

/// What went into this build: burn version, rustc, profile.
#[pyfunction]
#[pyo3(name = "build_info")]
fn py_build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("burn", build_info::BURN_VERSION)?;
    d.set_item("rustc", build_info::RUSTC_VERSION)?;
    d.set_item("profile", build_info::PROFILE)?;
    d.set_item("probe", build_info::PROBE_VERSION)?;
    d.set_item("sources", build_info::SOURCES)?;
    d.set_item("backend", "flex+autodiff")?;
    Ok(d)
}

#[pymodule]
fn _probe(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_p10, m)?)?;
    m.add_function(wrap_pyfunction!(py_build_info, m)?)?;
    m.add_function(wrap_pyfunction!(run_program, m)?)?;
    m.add_function(wrap_pyfunction!(run_programs, m)?)?;
    m.add_function(wrap_pyfunction!(record_schemas, m)?)?;
    m.add_function(wrap_pyfunction!(burn_defaults, m)?)?;
    let ops = PyDict::new(m.py());
    for (name, supported) in program::op_table() {
        ops.set_item(
            name,
            if supported {
                "supported"
            } else {
                "unsupported"
            },
        )?;
    }
    m.add("PROGRAM_OPS", ops)?;
    m.add("PROGRAM_IR_VERSION", program::IR_VERSION)?;
    m.add("CONTRACT_DIGEST", crate::contract::CONTRACT_DIGEST)?;
    m.add(
        "MODES",
        Mode::ALL.iter().map(|mode| mode.name()).collect::<Vec<_>>(),
    )?;
    m.add("BURN_VERSION", build_info::BURN_VERSION)?;
    Ok(())
}
