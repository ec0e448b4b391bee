"""The Rust a reproducer includes around its statements: the functions that print what the runner
records (one JSON line per observation, per checkpoint), and `soft_update`'s `ModuleMapper`; only
those the program calls."""

from __future__ import annotations

from collections.abc import Set

HEADING = r"""
// ---- printing what the runner records, as JSON lines ----
"""

FLAGS = r"""
/// `tracked` is burn's `is_tracked()`, `requires_grad` its `is_require_grad()`.
fn flags_json<const D: usize>(t: &Tensor<D>) -> String {
    let (tracked, require_grad, autodiff) = (t.is_tracked(), t.is_require_grad(), t.is_autodiff());
    format!(
        "{{\"tracked\": {tracked}, \"requires_grad\": {require_grad}, \"raw\": {{\"is_tracked\": {tracked}, \
         \"is_require_grad\": {require_grad}, \"is_autodiff\": {autodiff}}}}}"
    )
}
"""

STRING = r"""
fn string_json(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
"""

NUMBERS = r"""
/// A float as Python's json reads it (NaN and infinities kept).
fn number_json(x: f32) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        (if x > 0.0 { "Infinity" } else { "-Infinity" }).to_string()
    } else {
        format!("{:?}", x as f64)
    }
}

fn floats_json(values: Option<Vec<f32>>) -> String {
    match values {
        None => "null".to_string(),
        Some(v) => format!("[{}]", v.into_iter().map(number_json).collect::<Vec<_>>().join(", ")),
    }
}
"""

TORCH_VALUES = r"""
/// Row-major values in torch's layout: a rank-2 tensor held in burn's Linear-weight layout
/// (`transposed`) is transposed here, on the host (no burn operation).
fn torch_values<const D: usize>(t: &Tensor<D>, transposed: bool) -> Vec<f32> {
    let values = t.try_to_vec_as::<f32>().expect("reading the tensor's values");
    if !transposed {
        return values;
    }
    let (rows, cols) = (t.dims()[0], t.dims()[1]);
    let mut out = vec![0.0; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
    out
}
"""

VALUES = NUMBERS + TORCH_VALUES

RECORD_TIMED = r"""
/// One observation, as a JSON line. `iteration`: inside the timed loop, where it is recorded at
/// the checkpoints only, with values and gradient at the loop's last iteration only (at every
/// checkpoint for the statements in `EVERY_CHECKPOINT`); there it is printed when the iteration
/// ends, its values read then, as the runner reads them.
fn record<const D: usize>(
    label: &str,
    tensor: &str,
    op_index: u32,
    iteration: Option<usize>,
    grad: Option<Tensor<D>>,
    t: Tensor<D>,
    with_values: bool,
    transposed: bool,
) {
    if iteration.is_some_and(|it| !CHECKPOINTS.contains(&it)) {
        return;
    }
    let with_values =
        with_values && iteration.is_none_or(|it| it == LAST || EVERY_CHECKPOINT.contains(&op_index));
    let mut shape = t.dims().to_vec();
    if transposed {
        shape.reverse();
    }
    let head = format!(
        "{{\"label\": {}, \"tensor\": {}, \"op_index\": {op_index}, \"iteration\": {}, \"shape\": {shape:?}",
        string_json(label),
        string_json(tensor),
        iteration.map_or("null".to_string(), |it| it.to_string()),
    );
    let flags = flags_json(&t);
    // only an observation with values keeps its tensor (until the iteration ends)
    let held = with_values.then_some((t, grad));
    // `read` is false when a panic ends the iteration before the values are read
    let line = move |read: bool| {
        let (values, grad) = match held.as_ref().filter(|_| read) {
            Some((t, g)) => (Some(torch_values(t, transposed)), g.as_ref().map(|g| torch_values(g, transposed))),
            None => (None, None),
        };
        format!("{head}, \"values\": {}, \"grad\": {}, \"flags\": {flags}}}", floats_json(values), floats_json(grad))
    };
    if iteration.is_some() {
        PENDING.with(|pending| pending.borrow_mut().push(Box::new(line)));
    } else {
        println!("{}", line(true));
    }
}
"""

PENDING = r"""
thread_local! {
    /// The observations of a timed iteration (a checkpoint), printed when it ends.
    static PENDING: RefCell<Vec<Box<dyn Fn(bool) -> String>>> = const { RefCell::new(Vec::new()) };
}

/// The end of a timed iteration: the observations held back are printed, their values read now;
/// `read` false (a panic ended the iteration): without values, as the runner records them.
fn print_pending(read: bool) {
    let pending = PENDING.with(|p| p.try_borrow_mut().map(|mut p| std::mem::take(&mut *p)).unwrap_or_default());
    for line in &pending {
        println!("{}", line(read));
    }
    if !read {
        std::mem::forget(pending); // inside the panic hook: no burn tensor is dropped there
    }
}
"""

RECORD_TIMED_ALL = RECORD_TIMED + PENDING

UNTRACKED = r"""
/// The flags of an int or bool tensor: never tracked, no gradient (`autodiff`: its `is_autodiff()`).
fn untracked_json(autodiff: bool) -> String {
    format!(
        "{{\"tracked\": false, \"requires_grad\": false, \"raw\": {{\"is_tracked\": false, \
         \"is_require_grad\": false, \"is_autodiff\": {autodiff}}}}}"
    )
}
"""

RECORD_EXACT_PLAIN = r"""
/// One observation of an int or bool tensor as a JSON line: no gradient, never tracked.
fn record_exact(
    label: &str,
    tensor: &str,
    op_index: u32,
    shape: Vec<usize>,
    values: impl FnOnce() -> Vec<f32>,
    with_values: bool,
    autodiff: bool,
) {
    println!(
        "{{\"label\": {}, \"tensor\": {}, \"op_index\": {op_index}, \"iteration\": null, \"shape\": {shape:?}, \
         \"values\": {}, \"grad\": null, \"flags\": {}}}",
        string_json(label),
        string_json(tensor),
        floats_json(with_values.then(values)),
        untracked_json(autodiff),
    );
}
"""

RECORD_EXACT_TIMED = r"""
/// One observation of an int or bool tensor as a JSON line: no gradient, never tracked. Its
/// values are read at once (it holds no graph); in a timed iteration the line is printed with the
/// others when the iteration ends.
#[allow(clippy::too_many_arguments)]
fn record_exact(
    label: &str,
    tensor: &str,
    op_index: u32,
    iteration: Option<usize>,
    shape: Vec<usize>,
    values: impl FnOnce() -> Vec<f32>,
    with_values: bool,
    autodiff: bool,
) {
    if iteration.is_some_and(|it| !CHECKPOINTS.contains(&it)) {
        return;
    }
    let with_values =
        with_values && iteration.is_none_or(|it| it == LAST || EVERY_CHECKPOINT.contains(&op_index));
    let line = format!(
        "{{\"label\": {}, \"tensor\": {}, \"op_index\": {op_index}, \"iteration\": {}, \"shape\": {shape:?}, \
         \"values\": {}, \"grad\": null, \"flags\": {}}}",
        string_json(label),
        string_json(tensor),
        iteration.map_or("null".to_string(), |it| it.to_string()),
        floats_json(with_values.then(values)),
        untracked_json(autodiff),
    );
    if iteration.is_some() {
        PENDING.with(|pending| pending.borrow_mut().push(Box::new(move |_| line.clone())));
    } else {
        println!("{line}");
    }
}
"""

OBSERVE_EXACT = {
    ("observe_int", True): r"""
/// `observe(t)` of an int tensor (class indices): its values as numbers.
fn observe_int<const D: usize>(
    label: &str,
    tensor: &str,
    op_index: u32,
    iteration: Option<usize>,
    t: Tensor<D, Int>,
    with_values: bool,
) {
    let values = || t.try_to_vec_as::<i64>().expect("reading the tensor's values").into_iter().map(|v| v as f32).collect();
    record_exact(label, tensor, op_index, iteration, t.dims().to_vec(), values, with_values, t.is_autodiff());
}
""",
    ("observe_bool", True): r"""
/// `observe(t)` of a bool tensor (a mask): its values as 1 and 0.
fn observe_bool<const D: usize>(
    label: &str,
    tensor: &str,
    op_index: u32,
    iteration: Option<usize>,
    t: Tensor<D, Bool>,
    with_values: bool,
) {
    let values = || {
        let read = t.try_to_vec_as::<bool>().expect("reading the tensor's values");
        read.into_iter().map(|v| if v { 1.0 } else { 0.0 }).collect()
    };
    record_exact(label, tensor, op_index, iteration, t.dims().to_vec(), values, with_values, t.is_autodiff());
}
""",
    ("observe_int", False): r"""
/// `observe(t)` of an int tensor (class indices): its values as numbers.
fn observe_int<const D: usize>(label: &str, tensor: &str, op_index: u32, t: Tensor<D, Int>, with_values: bool) {
    let values = || t.try_to_vec_as::<i64>().expect("reading the tensor's values").into_iter().map(|v| v as f32).collect();
    record_exact(label, tensor, op_index, t.dims().to_vec(), values, with_values, t.is_autodiff());
}
""",
    ("observe_bool", False): r"""
/// `observe(t)` of a bool tensor (a mask): its values as 1 and 0.
fn observe_bool<const D: usize>(label: &str, tensor: &str, op_index: u32, t: Tensor<D, Bool>, with_values: bool) {
    let values = || {
        let read = t.try_to_vec_as::<bool>().expect("reading the tensor's values");
        read.into_iter().map(|v| if v { 1.0 } else { 0.0 }).collect()
    };
    record_exact(label, tensor, op_index, t.dims().to_vec(), values, with_values, t.is_autodiff());
}
""",
}

RECORD_PLAIN = r"""
/// One observation as a JSON line.
fn record<const D: usize>(
    label: &str,
    tensor: &str,
    op_index: u32,
    grad: Option<Tensor<D>>,
    t: Tensor<D>,
    with_values: bool,
    transposed: bool,
) {
    let mut shape = t.dims().to_vec();
    if transposed {
        shape.reverse();
    }
    let values = with_values.then(|| torch_values(&t, transposed));
    let grad = grad.filter(|_| with_values).map(|g| torch_values(&g, transposed));
    println!(
        "{{\"label\": {}, \"tensor\": {}, \"op_index\": {op_index}, \"iteration\": null, \"shape\": {shape:?}, \
         \"values\": {}, \"grad\": {}, \"flags\": {}}}",
        string_json(label),
        string_json(tensor),
        floats_json(values),
        floats_json(grad),
        flags_json(&t),
    );
}
"""

OBSERVE = {
    ("observe", True): r"""
/// `observe(t)`: its values, the gradient held for it and its flags, in torch's layout.
fn observe<const D: usize>(
    label: &str,
    tensor: &str,
    op_index: u32,
    iteration: Option<usize>,
    grad: Option<Tensor<D>>,
    t: Tensor<D>,
    with_values: bool,
) {
    record(label, tensor, op_index, iteration, grad, t, with_values, false);
}
""",
    ("observe_transposed", True): r"""
/// `observe(t)` of a value in burn's Linear-weight layout (`[d_in, d_out]`): printed transposed.
fn observe_transposed(
    label: &str,
    tensor: &str,
    op_index: u32,
    iteration: Option<usize>,
    grad: Option<Tensor<2>>,
    t: Tensor<2>,
    with_values: bool,
) {
    record(label, tensor, op_index, iteration, grad, t, with_values, true);
}
""",
    ("observe", False): r"""
/// `observe(t)`: its values, the gradient held for it and its flags, in torch's layout.
fn observe<const D: usize>(label: &str, tensor: &str, op_index: u32, grad: Option<Tensor<D>>, t: Tensor<D>, with_values: bool) {
    record(label, tensor, op_index, grad, t, with_values, false);
}
""",
    ("observe_transposed", False): r"""
/// `observe(t)` of a value in burn's Linear-weight layout (`[d_in, d_out]`): printed transposed.
fn observe_transposed(label: &str, tensor: &str, op_index: u32, grad: Option<Tensor<2>>, t: Tensor<2>, with_values: bool) {
    record(label, tensor, op_index, grad, t, with_values, true);
}
""",
}

CHECKPOINT = r"""
/// After a checkpoint iteration of the timed loop: the flags of the tensor `settings.track` names
/// as burn names them, as the runner records them there (None while it is not bound).
fn checkpoint<const D: usize>(step: usize, track: &str, t: Option<&Tensor<D>>) {
    let tracked = t.map_or("null".to_string(), |t| t.is_tracked().to_string());
    let flags = t.map_or("null".to_string(), |t| {
        format!(
            "{{\"is_tracked\": {}, \"is_require_grad\": {}, \"is_autodiff\": {}}}",
            t.is_tracked(),
            t.is_require_grad(),
            t.is_autodiff(),
        )
    });
    println!(
        "{{\"checkpoint\": {step}, \"track\": {}, \"tracked\": {tracked}, \"flags\": {flags}}}",
        string_json(track),
    );
}
"""


CHECKPOINT_EXACT = r"""
/// After a checkpoint iteration of the timed loop: the flags of the int or bool tensor
/// `settings.track` names (never tracked; `autodiff`: its `is_autodiff()`).
fn checkpoint_exact(step: usize, track: &str, autodiff: Option<bool>) {
    let tracked = autodiff.map_or("null", |_| "false");
    let flags = autodiff.map_or("null".to_string(), |autodiff| {
        format!("{{\"is_tracked\": false, \"is_require_grad\": false, \"is_autodiff\": {autodiff}}}")
    });
    println!(
        "{{\"checkpoint\": {step}, \"track\": {}, \"tracked\": {tracked}, \"flags\": {flags}}}",
        string_json(track),
    );
}
"""


SOFT_UPDATE = r"""
// ---- soft_update(target, online, tau) ----

/// Collects a module's float params (and buffers) in visiting order: the online side.
struct CollectParams(VecDeque<Box<dyn Any>>);

impl ModuleVisitor for CollectParams {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0.push_back(Box::new(param.val()));
    }
}

/// Maps each of the target's float params to `t * (1 - tau) + o * tau`, `o` the online param of
/// the same place.
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

/// The target moved toward the online module: a `ModuleMapper` over the target.
fn soft_update<M: Module>(target: M, online: &M, tau: f64) -> M {
    let mut collect = CollectParams(VecDeque::new());
    online.visit(&mut collect);
    target.map(&mut SoftUpdater { online: collect.0, tau })
}
"""


def helpers(used: Set[str], timed_observes: bool) -> list[str]:
    """The helper functions for the names the statements use (`observe`, `observe_transposed`,
    `observe_int`, `observe_bool`, `checkpoint`, `soft_update`); `timed_observes`: observations inside the timed
    loop (recorded at the checkpoints, the last iteration's printed when it ends)."""
    observes = [f for f in ("observe", "observe_transposed") if f in used]
    exact = [f for f in ("observe_int", "observe_bool") if f in used]
    out: list[str] = []
    if observes or exact or "checkpoint" in used or "checkpoint_exact" in used:
        # `flags_json` only where an observation prints it (a checkpoint prints burn's raw flags)
        out.append(HEADING + (FLAGS if observes else "") + STRING)
    if observes:
        out.append(VALUES)
        out.append(RECORD_TIMED_ALL if timed_observes else RECORD_PLAIN)
    elif exact:
        out.append(NUMBERS)
        if timed_observes:
            out.append(PENDING)
    if exact:
        out.append(UNTRACKED)
        out.append(RECORD_EXACT_TIMED if timed_observes else RECORD_EXACT_PLAIN)
    out += [OBSERVE[(f, timed_observes)] for f in observes]
    out += [OBSERVE_EXACT[(f, timed_observes)] for f in exact]
    if "checkpoint" in used:
        out.append(CHECKPOINT)
    if "checkpoint_exact" in used:
        out.append(CHECKPOINT_EXACT)
    if "soft_update" in used:
        out.append(SOFT_UPDATE)
    return [text.rstrip("\n") for text in out]
