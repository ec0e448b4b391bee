//! The burn program interpreter on tiny programs with hand-checked values.
//! What is asserted about panics and flags is what burn 0.22.1 was observed
//! to do here.

use std::ops::ControlFlow;

use serde_json::{json, Value};

use rust_probe::config::P10Params;
use rust_probe::program::{self, op_table, p10_ir, Outcome, Program, ProgramResult, IR_VERSION};

/// A statement: `op`, its args, its out and its attrs (index and line are
/// numbered by [`ir`]).
fn st(op: &str, args: &[&str], out: Option<&str>, attrs: Value) -> Value {
    json!({"op": op, "args": args, "out": out, "attrs": attrs})
}

fn op(op: &str, args: &[&str], out: &str) -> Value {
    st(op, args, Some(out), json!({}))
}

fn call(op: &str, args: &[&str]) -> Value {
    st(op, args, None, json!({}))
}

fn repeat(count: u64, body: Vec<Value>) -> Value {
    json!({"op": "repeat", "args": [], "out": null, "attrs": {"count": count}, "body": body})
}

fn observe(name: &str) -> Value {
    call("observe", &[name])
}

fn number(stmts: &mut [Value], next: &mut u64) {
    for s in stmts {
        s["index"] = json!(*next);
        s["line"] = json!(*next + 1);
        *next += 1;
        if let Some(body) = s.get_mut("body").and_then(Value::as_array_mut) {
            number(body, next);
        }
    }
}

fn input(name: &str, shape: &[usize], data: &[f32]) -> Value {
    json!({"name": name, "role": "input", "shape": shape, "data": data})
}

fn param(name: &str, shape: &[usize], data: &[f32]) -> Value {
    json!({"name": name, "role": "param", "shape": shape, "data": data})
}

fn ir_with(
    tensors: Vec<Value>,
    modules: Vec<Value>,
    mut body: Vec<Value>,
    settings: Value,
) -> String {
    let mut next = 0;
    number(&mut body, &mut next);
    json!({
        "ir_version": IR_VERSION,
        "tensors": tensors,
        "modules": modules,
        "body": body,
        "settings": settings,
    })
    .to_string()
}

fn ir(tensors: Vec<Value>, body: Vec<Value>) -> String {
    ir_with(
        tensors,
        vec![],
        body,
        json!({"checkpoints": [], "rss_every": 0}),
    )
}

fn run_ir(text: &str) -> ProgramResult {
    let program = Program::from_json(text).unwrap_or_else(|e| panic!("bad IR: {e}"));
    program::run(&program, &mut |_| ControlFlow::Continue(()))
}

fn run_ok(text: &str) -> ProgramResult {
    let r = run_ir(text);
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.failure);
    r
}

/// The observation labelled `label` (the last one with it).
fn obs<'a>(r: &'a ProgramResult, label: &str) -> &'a program::Observation {
    r.observations
        .iter()
        .rev()
        .find(|o| o.label == label)
        .unwrap_or_else(|| panic!("no observation {label:?}"))
}

fn values(r: &ProgramResult, label: &str) -> Vec<f32> {
    obs(r, label).values.clone().expect("values recorded")
}

fn grad(r: &ProgramResult, label: &str) -> Vec<f32> {
    obs(r, label).grad.clone().expect("grad recorded")
}

fn close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

const A: [f32; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
const B: [f32; 6] = [6.0, 5.0, 4.0, 3.0, 2.0, -1.0];

fn ab() -> Vec<Value> {
    vec![input("a", &[2, 3], &A), input("b", &[2, 3], &B)]
}

fn elementwise(f: impl Fn(f32) -> f32) -> Vec<f32> {
    A.iter().map(|&x| f(x)).collect()
}

#[test]
fn every_tensor_op_on_tiny_shapes() {
    let r = run_ok(&ir(
        ab(),
        vec![
            op("add", &["a", "b"], "add"),
            op("sub", &["a", "b"], "sub"),
            op("mul", &["a", "b"], "mul"),
            op("div", &["a", "b"], "div"),
            op("neg", &["a"], "neg"),
            op("exp", &["a"], "exp"),
            op("log", &["a"], "log"),
            op("sqrt", &["a"], "sqrt"),
            op("abs", &["b"], "abs"),
            op("tanh", &["a"], "tanh"),
            op("relu", &["b"], "relu"),
            op("sigmoid", &["a"], "sigmoid"),
            st("add_scalar", &["a"], Some("adds"), json!({"scalar": 2.5})),
            st("mul_scalar", &["a"], Some("muls"), json!({"scalar": -2.0})),
            st("powi", &["a"], Some("powi"), json!({"exponent": 3})),
            op("sum", &["a"], "sum"),
            op("mean", &["a"], "mean"),
            st("sum_dim", &["a"], Some("sum1"), json!({"dim": 1})),
            st("sum_dim", &["a"], Some("sum0"), json!({"dim": 0})),
            st(
                "reshape",
                &["a"],
                Some("reshaped"),
                json!({"shape": [3, 2]}),
            ),
            st("reshape", &["a"], Some("flat"), json!({"shape": [6]})),
            st(
                "reshape",
                &["a"],
                Some("r4"),
                json!({"shape": [1, 2, 1, 3]}),
            ),
            op("transpose", &["a"], "at"),
            op("transpose", &["b"], "bt"),
            op("matmul", &["a", "bt"], "mm"),
            op("detach", &["a"], "detached"),
            op("without_autodiff", &["a"], "without"),
            op("clone", &["a"], "cloned"),
            op("sum", &["a"], "s"),
            st("item", &["s"], None, json!({})),
            st("add_scalar_", &["a"], None, json!({"scalar": 1.0})),
            observe("add"),
            observe("sub"),
            observe("mul"),
            observe("div"),
            observe("neg"),
            observe("exp"),
            observe("log"),
            observe("sqrt"),
            observe("abs"),
            observe("tanh"),
            observe("relu"),
            observe("sigmoid"),
            observe("adds"),
            observe("muls"),
            observe("powi"),
            observe("sum"),
            observe("mean"),
            observe("sum1"),
            observe("sum0"),
            observe("reshaped"),
            observe("flat"),
            observe("r4"),
            observe("at"),
            observe("mm"),
            observe("detached"),
            observe("without"),
            observe("cloned"),
            observe("a"),
        ],
    ));
    let pairs = |f: fn(f32, f32) -> f32| -> Vec<f32> {
        A.iter().zip(B.iter()).map(|(&x, &y)| f(x, y)).collect()
    };
    close(&values(&r, "add"), &pairs(|x, y| x + y));
    close(&values(&r, "sub"), &pairs(|x, y| x - y));
    close(&values(&r, "mul"), &pairs(|x, y| x * y));
    close(&values(&r, "div"), &pairs(|x, y| x / y));
    close(&values(&r, "neg"), &elementwise(|x| -x));
    close(&values(&r, "exp"), &elementwise(f32::exp));
    close(&values(&r, "log"), &elementwise(f32::ln));
    close(&values(&r, "sqrt"), &elementwise(f32::sqrt));
    close(&values(&r, "abs"), &[6.0, 5.0, 4.0, 3.0, 2.0, 1.0]);
    close(&values(&r, "tanh"), &elementwise(f32::tanh));
    close(&values(&r, "relu"), &[6.0, 5.0, 4.0, 3.0, 2.0, 0.0]);
    close(
        &values(&r, "sigmoid"),
        &elementwise(|x| 1.0 / (1.0 + (-x).exp())),
    );
    close(&values(&r, "adds"), &elementwise(|x| x + 2.5));
    close(&values(&r, "muls"), &elementwise(|x| x * -2.0));
    close(&values(&r, "powi"), &elementwise(|x| x * x * x));
    // Full reductions are [1] in burn (torch: []).
    close(&values(&r, "sum"), &[21.0]);
    assert_eq!(obs(&r, "sum").shape, vec![1]);
    close(&values(&r, "mean"), &[3.5]);
    assert_eq!(obs(&r, "mean").shape, vec![1]);
    close(&values(&r, "sum1"), &[6.0, 15.0]);
    assert_eq!(obs(&r, "sum1").shape, vec![2, 1], "sum_dim keeps the dim");
    close(&values(&r, "sum0"), &[5.0, 7.0, 9.0]);
    assert_eq!(obs(&r, "sum0").shape, vec![1, 3]);
    close(&values(&r, "reshaped"), &A);
    assert_eq!(obs(&r, "reshaped").shape, vec![3, 2]);
    assert_eq!(obs(&r, "flat").shape, vec![6]);
    assert_eq!(obs(&r, "r4").shape, vec![1, 2, 1, 3]);
    close(&values(&r, "at"), &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    assert_eq!(obs(&r, "at").shape, vec![3, 2]);
    // a @ b^T: [[1*6+2*5+3*4, 1*3+2*2-3], [4*6+5*5+6*4, 12+10-6]]
    close(&values(&r, "mm"), &[28.0, 4.0, 73.0, 16.0]);
    close(&values(&r, "detached"), &A);
    close(&values(&r, "without"), &A);
    assert!(!obs(&r, "without").flags.raw.is_autodiff);
    assert!(obs(&r, "detached").flags.raw.is_autodiff);
    close(&values(&r, "cloned"), &A);
    // add_scalar_ rebinds `a`; the values taken from `a` before are unchanged.
    close(&values(&r, "a"), &elementwise(|x| x + 1.0));
    // Inputs are constants: autodiff enabled, not tracked.
    let f = obs(&r, "a").flags;
    assert!(!f.tracked && !f.requires_grad && f.raw.is_autodiff);
}

#[test]
fn gradients_of_compositions() {
    let w = [0.5f32, -1.0, 2.0, 0.25];
    let x = [1.0f32, 2.0, -3.0, 4.0];
    let r = run_ok(&ir(
        vec![param("w", &[2, 2], &w), input("x", &[2, 2], &x)],
        vec![
            // loss1 = sum(w * w): dL/dw = 2w
            op("mul", &["w", "w"], "ww"),
            op("sum", &["ww"], "l1"),
            call("backward", &["l1"]),
            op("grad", &["w"], "g1"),
            observe("g1"),
            // loss2 = mean(relu(x @ w)): dL/dw = x^T @ (mask / 4)
            op("matmul", &["x", "w"], "xw"),
            op("relu", &["xw"], "h"),
            op("mean", &["h"], "l2"),
            call("backward", &["l2"]),
            observe("w"),
            // loss3 = sum(exp(w) * x + w^2 / 2)
            op("exp", &["w"], "ew"),
            op("mul", &["ew", "x"], "ewx"),
            st("powi", &["w"], Some("w2"), json!({"exponent": 2})),
            st("mul_scalar", &["w2"], Some("w2h"), json!({"scalar": 0.5})),
            op("add", &["ewx", "w2h"], "s"),
            op("sum", &["s"], "l3"),
            call("backward", &["l3"]),
            st("observe", &["w"], None, json!({"label": "w3"})),
        ],
    ));
    close(&values(&r, "g1"), &[1.0, -2.0, 4.0, 0.5]);
    // x @ w = [[1*.5+2*2, 1*-1+2*.25], [-3*.5+4*2, -3*-1+4*.25]] = [[4.5, -0.5], [6.5, 4]]
    // mask = [[1, 0], [1, 1]] / 4; x^T @ mask/4 = [[1-3, -3], [2+4, 4]] / 4
    close(&grad(&r, "w"), &[-0.5, -0.75, 1.5, 1.0]);
    let expected: Vec<f32> = w
        .iter()
        .zip(x.iter())
        .map(|(&w, &x)| w.exp() * x + w)
        .collect();
    close(&grad(&r, "w3"), &expected);
    // The param itself: a tracked leaf requiring grad.
    let f = obs(&r, "w3").flags;
    assert!(f.tracked && f.requires_grad);
}

fn linear_ir(layout: &str) -> String {
    ir_with(
        vec![
            json!({"name": "lin.weight", "role": "param", "shape": [2, 3],
                   "data": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "module": "lin"}),
            json!({"name": "lin.bias", "role": "param", "shape": [2],
                   "data": [0.5, -0.5], "module": "lin"}),
            input("x", &[1, 3], &[1.0, 0.0, 0.0]),
        ],
        vec![json!({"name": "lin", "kind": "linear",
                    "attrs": {"d_in": 3, "d_out": 2, "bias": true, "layout": layout}})],
        vec![
            op("linear", &["lin", "x"], "out"),
            op("sum", &["out"], "loss"),
            call("backward", &["loss"]),
            observe("out"),
            observe("lin.weight"),
            observe("lin.bias"),
            op("detach", &["lin.weight"], "snap"),
            op("transpose", &["snap"], "snap_t"),
            op("matmul", &["x", "snap_t"], "manual"),
            op("matmul", &["snap", "snap_t"], "gram"),
            observe("snap"),
            observe("manual"),
            observe("gram"),
        ],
        json!({"checkpoints": [], "rss_every": 0}),
    )
}

#[test]
fn linear_layout_transposed_is_the_torch_module() {
    let r = run_ok(&linear_ir("transposed"));
    // torch: x @ W^T + b with W = [[1, 2, 3], [4, 5, 6]]
    close(&values(&r, "out"), &[1.5, 3.5]);
    // Reported in torch layout: the weight as given, its gradient ones^T x.
    assert_eq!(obs(&r, "lin.weight").shape, vec![2, 3]);
    close(&values(&r, "lin.weight"), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    close(&grad(&r, "lin.weight"), &[1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    close(&grad(&r, "lin.bias"), &[1.0, 1.0]);
    // A detached weight keeps the flag: x @ transpose(snap) is burn's x.matmul(w).
    assert_eq!(obs(&r, "snap").shape, vec![2, 3]);
    close(&values(&r, "manual"), &[1.0, 4.0]);
    // W @ W^T = [[14, 32], [32, 77]]
    close(&values(&r, "gram"), &[14.0, 32.0, 32.0, 77.0]);
}

#[test]
fn linear_layout_copied_loads_the_buffer_as_is() {
    let r = run_ok(&linear_ir("copied"));
    // burn's [d_in, d_out] weight holds [[1, 2], [3, 4], [5, 6]]: x @ it + b.
    close(&values(&r, "out"), &[1.5, 1.5]);
    // In torch layout the module's weight is the transpose of that buffer.
    assert_eq!(obs(&r, "lin.weight").shape, vec![2, 3]);
    close(&values(&r, "lin.weight"), &[1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);
    close(&grad(&r, "lin.weight"), &[1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    close(&values(&r, "manual"), &[1.0, 2.0]);
}

fn p10_program(mode: &str, steps: i64) -> String {
    let config = P10Params {
        mode: mode.into(),
        d_in: 32,
        d_out: 32,
        batch: 8,
        steps,
        rss_every: 5,
        ..P10Params::default()
    }
    .validate()
    .unwrap();
    p10_ir::p10_program(&config)
}

#[test]
fn p10_detach_ema_stays_tracked_as_a_program() {
    let r = run_ok(&p10_program("detach", 20));
    assert_eq!(r.step_ms.len(), 20);
    let steps: Vec<u64> = r.checkpoints.iter().map(|c| c.step).collect();
    assert_eq!(steps, vec![1, 20]);
    for c in &r.checkpoints {
        assert_eq!(
            c.tracked,
            Some(true),
            "detach EMA at {} not tracked",
            c.step
        );
        let flags = c.flags.unwrap();
        assert!(!flags.is_require_grad && flags.is_autodiff);
    }
    if cfg!(target_os = "linux") {
        let sampled: Vec<u64> = r.rss_samples.iter().map(|s| s.0).collect();
        assert_eq!(sampled, vec![5, 10, 15, 20]);
    }
    // Inside the loop: flags at checkpoints, values only at the last iteration.
    let inside: Vec<_> = r
        .observations
        .iter()
        .filter(|o| o.iteration.is_some())
        .collect();
    assert_eq!(inside.len(), 2);
    assert!(inside.iter().all(|o| o.values.is_none() && o.flags.tracked));
    let after = obs(&r, "lin.weight");
    assert_eq!(after.iteration, None);
    assert_eq!(after.values.as_ref().unwrap().len(), 32 * 32);
}

#[test]
fn p10_without_autodiff_is_an_untracked_constant_as_a_program() {
    for mode in ["without", "target-without"] {
        let r = run_ok(&p10_program(mode, 20));
        for c in &r.checkpoints {
            let flags = c.flags.unwrap();
            assert!(!flags.is_tracked && !flags.is_require_grad && !flags.is_autodiff);
        }
    }
}

#[test]
fn p10_target_panics_at_iteration_3_as_a_program() {
    let r = run_ir(&p10_program("target", 20));
    assert_eq!(r.outcome, Outcome::Panic);
    let f = r.failure.as_ref().unwrap();
    assert!(
        f.message.contains("graph tape has already been consumed"),
        "{}",
        f.message
    );
    assert_eq!(f.iteration, Some(3));
    assert_eq!(f.op.as_deref(), Some("backward"));
    let location = f.location.as_deref().unwrap();
    assert!(
        location.contains("burn-autodiff") && location.contains("src/runtime/server.rs"),
        "{location}"
    );
    assert_eq!(r.step_ms.len(), 2, "the completed iterations are kept");
    assert_eq!(r.checkpoints.len(), 1);
}

#[test]
fn p10_log_and_ema_only_complete_as_programs() {
    run_ok(&p10_program("log", 10));
    let r = run_ok(&p10_program("ema-only", 10));
    assert!(r.checkpoints.iter().all(|c| c.tracked == Some(true)));
}

#[test]
fn backward_twice_on_the_same_loss_panics() {
    let r = run_ir(&ir(
        vec![param("w", &[2], &[1.0, 2.0])],
        vec![
            op("mul", &["w", "w"], "ww"),
            op("sum", &["ww"], "loss"),
            call("backward", &["loss"]),
            call("backward", &["loss"]),
        ],
    ));
    assert_eq!(r.outcome, Outcome::Panic);
    let f = r.failure.unwrap();
    assert_eq!(f.op_index, Some(3));
    assert!(f.message.contains("consumed"), "{}", f.message);
}

fn two_losses(accumulate: bool, tail: Vec<Value>) -> String {
    let mut body: Vec<Value> = vec![
        st("mul_scalar", &["w"], Some("w2"), json!({"scalar": 2.0})),
        op("sum", &["w2"], "l1"),
        st("mul_scalar", &["w"], Some("w3"), json!({"scalar": 3.0})),
        op("sum", &["w3"], "l2"),
        call("backward", &["l1"]),
        st("backward", &["l2"], None, json!({"accumulate": accumulate})),
        st("observe", &["w"], None, json!({"label": "after"})),
    ];
    body.extend(tail);
    ir(vec![param("w", &[2], &[1.0, 2.0])], body)
}

#[test]
fn the_newest_backward_replaces_the_gradients() {
    let r = run_ok(&two_losses(false, vec![]));
    close(&grad(&r, "after"), &[3.0, 3.0]);
}

#[test]
fn accumulate_sums_until_zero_grad_or_step() {
    close(
        &grad(&run_ok(&two_losses(true, vec![])), "after"),
        &[5.0, 5.0],
    );
    let r = run_ok(&ir(
        vec![param("w", &[2], &[1.0, 2.0])],
        vec![
            st("sgd", &[], Some("opt"), json!({"lr": 0.5})),
            st("mul_scalar", &["w"], Some("w2"), json!({"scalar": 2.0})),
            op("sum", &["w2"], "l1"),
            st("mul_scalar", &["w"], Some("w3"), json!({"scalar": 3.0})),
            op("sum", &["w3"], "l2"),
            call("backward", &["l1"]),
            st("backward", &["l2"], None, json!({"accumulate": true})),
            st("observe", &["w"], None, json!({"label": "summed"})),
            call("zero_grad", &["opt"]),
            st("observe", &["w"], None, json!({"label": "zeroed"})),
            // Again, then a step with the sum.
            st("mul_scalar", &["w"], Some("w4"), json!({"scalar": 2.0})),
            op("sum", &["w4"], "l3"),
            st("mul_scalar", &["w"], Some("w5"), json!({"scalar": 3.0})),
            op("sum", &["w5"], "l4"),
            st("backward", &["l3"], None, json!({"accumulate": true})),
            st("backward", &["l4"], None, json!({"accumulate": true})),
            call("step", &["opt"]),
            st("observe", &["w"], None, json!({"label": "stepped"})),
        ],
    ));
    close(&grad(&r, "summed"), &[5.0, 5.0]);
    assert!(
        obs(&r, "zeroed").grad.is_none(),
        "zero_grad drops the gradients"
    );
    // w - 0.5 * 5; step consumed the gradients.
    close(&values(&r, "stepped"), &[-1.5, -0.5]);
    assert!(obs(&r, "stepped").grad.is_none());
}

#[test]
fn optimizers_move_params_and_frozen_ones_stay() {
    let body = |opt: Value| {
        vec![
            opt,
            call("freeze", &["v"]),
            op("mul", &["w", "w"], "ww"),
            op("mul", &["v", "v"], "vv"),
            op("sum", &["ww"], "lw"),
            op("sum", &["vv"], "lv"),
            op("add", &["lw", "lv"], "loss"),
            call("backward", &["loss"]),
            call("step", &["opt"]),
            observe("w"),
            observe("v"),
        ]
    };
    let tensors = || {
        vec![
            param("w", &[2], &[1.0, -2.0]),
            param("v", &[2], &[3.0, 4.0]),
        ]
    };
    let sgd = run_ok(&ir(
        tensors(),
        body(st("sgd", &[], Some("opt"), json!({"lr": 0.1}))),
    ));
    // w - 0.1 * 2w
    close(&values(&sgd, "w"), &[0.8, -1.6]);
    close(&values(&sgd, "v"), &[3.0, 4.0]);
    let v = obs(&sgd, "v").flags;
    assert!(
        !v.tracked && !v.requires_grad,
        "a frozen param is a constant"
    );

    let adam = run_ok(&ir(
        tensors(),
        body(st("adam", &[], Some("opt"), json!({"lr": 0.1}))),
    ));
    // The first Adam step moves each element by about lr against its gradient.
    let w = values(&adam, "w");
    close(&w, &[0.9, -1.9]);
    close(&values(&adam, "v"), &[3.0, 4.0]);
}

#[test]
fn sgd_momentum_takes_burns_dampening_default() {
    // burn MomentumConfig: dampening defaults to 0.1 (torch: 0).
    let r = run_ok(&ir(
        vec![param("w", &[1], &[1.0])],
        vec![
            st("sgd", &[], Some("opt"), json!({"lr": 1.0, "momentum": 0.5})),
            repeat(
                2,
                vec![
                    op("sum", &["w"], "loss"),
                    call("backward", &["loss"]),
                    call("step", &["opt"]),
                ],
            ),
            observe("w"),
        ],
    ));
    // gradient 1 each step; v1 = 1, v2 = 0.9 * 1 + 0.5 * 1 = 1.4; w = 1 - 1 - 1.4
    close(&values(&r, "w"), &[-1.4]);
}

#[test]
fn unsupported_operations_are_found_before_anything_runs() {
    for (stmt, op_name) in [
        (st("retain_grad", &["x"], None, json!({})), "retain_grad"),
        (
            json!({"op": "no_grad", "args": [], "out": null, "attrs": {},
                   "body": [op("detach", &["x"], "z")]}),
            "no_grad",
        ),
        (
            st("backward", &["x"], None, json!({"retain_graph": true})),
            "backward",
        ),
    ] {
        let r = run_ir(&ir(
            vec![input("x", &[2], &[1.0, 2.0])],
            vec![observe("x"), op("neg", &["x"], "n"), stmt],
        ));
        assert_eq!(r.outcome, Outcome::Unsupported, "{op_name}");
        let f = r.failure.unwrap();
        assert_eq!(f.op.as_deref(), Some(op_name));
        assert_eq!(f.op_index, Some(2));
        assert!(r.observations.is_empty(), "nothing ran");
    }
}

#[test]
fn a_broadcast_across_ranks_is_unsupported_at_the_op() {
    let r = run_ir(&ir(
        vec![input("x", &[2, 3], &A), input("v", &[3], &[1.0, 2.0, 3.0])],
        vec![observe("x"), repeat(2, vec![op("add", &["x", "v"], "y")])],
    ));
    assert_eq!(r.outcome, Outcome::Unsupported);
    let f = r.failure.unwrap();
    assert_eq!((f.op.as_deref(), f.op_index), (Some("add"), Some(2)));
    assert_eq!(f.iteration, Some(1));
    assert!(f.message.contains("equal rank"), "{}", f.message);
    assert_eq!(r.observations.len(), 1, "what ran before is kept");
}

#[test]
fn burn_panics_are_observations() {
    // Incompatible matmul.
    let r = run_ir(&ir(
        vec![input("x", &[2, 3], &A), input("y", &[2, 3], &B)],
        vec![op("matmul", &["x", "y"], "z")],
    ));
    assert_eq!(r.outcome, Outcome::Panic);
    let f = r.failure.unwrap();
    assert_eq!(f.op.as_deref(), Some("matmul"));
    assert!(f.message.contains("Matmul"), "{}", f.message);
    assert!(f.location.is_some());
    // require_grad on a tensor without autodiff.
    let r = run_ir(&ir(
        vec![input("x", &[2], &[1.0, 2.0])],
        vec![
            op("without_autodiff", &["x"], "c"),
            call("require_grad", &["c"]),
        ],
    ));
    assert_eq!(r.outcome, Outcome::Panic);
    assert!(
        r.failure.unwrap().message.contains("requires autodiff"),
        "require_grad without autodiff"
    );
}

#[test]
fn runtime_errors_are_outcome_error() {
    let r = run_ir(&ir(
        vec![param("w", &[2], &[1.0, 2.0])],
        vec![op("grad", &["w"], "g")],
    ));
    assert_eq!(r.outcome, Outcome::Error);
    assert!(r.failure.unwrap().message.contains("no gradient"));
    let r = run_ir(&ir(
        vec![
            json!({"name": "i", "role": "input", "dtype": "int", "shape": [2], "data": [1.0, 2.0]}),
        ],
        vec![op("neg", &["i"], "m")],
    ));
    assert_eq!(r.outcome, Outcome::Error);
    assert!(r
        .failure
        .unwrap()
        .message
        .contains("an int tensor, not a float tensor"));
}

#[test]
fn bad_ir_is_an_error_naming_the_field() {
    let good_tensors = || vec![input("x", &[2], &[1.0, 2.0])];
    let cases: Vec<(String, &str)> = vec![
        ("{".into(), "<json>"),
        (
            ir(good_tensors(), vec![op("frobnicate", &["x"], "y")]),
            "op",
        ),
        (
            ir(good_tensors(), vec![op("neg", &["nope"], "y")]),
            "args[0]",
        ),
        (ir(good_tensors(), vec![op("add", &["x"], "y")]), "args"),
        (
            ir(vec![input("x", &[2, 0], &[])], vec![]),
            "tensors[0].shape[1]",
        ),
        (
            ir(vec![input("x", &[3], &[1.0, 2.0])], vec![]),
            "tensors[0].data",
        ),
        (
            ir(vec![input("x", &[1, 1, 1, 1, 1], &[1.0])], vec![]),
            "tensors[0].shape",
        ),
        (
            ir(vec![input("x", &[1], &[1.0])], vec![]).replace("[1.0]", "[1e39]"),
            "tensors[0].data[0]",
        ),
        (
            ir(
                good_tensors(),
                vec![st(
                    "reshape",
                    &["x"],
                    Some("y"),
                    json!({"shape": [1, 1, 1, 1, 2]}),
                )],
            ),
            "attrs.shape",
        ),
        (
            ir(
                good_tensors(),
                vec![st("mul_scalar", &["x"], Some("y"), json!({"value": 2.0}))],
            ),
            "attrs.value",
        ),
        (
            ir(
                vec![param("w", &[2], &[1.0, 2.0])],
                vec![op("neg", &["w"], "w")],
            ),
            "out",
        ),
        (
            ir(good_tensors(), vec![st("sgd", &[], Some("opt"), json!({}))]),
            "attrs.lr",
        ),
        (
            ir_with(good_tensors(), vec![], vec![], json!({"track": "nope"})),
            "settings.track",
        ),
        (
            ir_with(
                good_tensors(),
                vec![],
                vec![],
                json!({"checkpoints": [5, 2]}),
            ),
            "settings.checkpoints[1]",
        ),
        (
            ir(good_tensors(), vec![])
                .replace(&format!("\"ir_version\":{IR_VERSION}"), "\"ir_version\":7"),
            "ir_version",
        ),
    ];
    for (text, field) in cases {
        match Program::from_json(&text) {
            Ok(_) => panic!("accepted bad IR (expected an error on {field}): {text}"),
            Err(err) => assert!(err.field.ends_with(field), "{field}: {err}"),
        }
    }
    // A statement's error names it: path, index, line and op.
    let err = Program::from_json(&ir(
        good_tensors(),
        vec![observe("x"), op("neg", &["y"], "z")],
    ))
    .unwrap_err();
    assert!(
        err.field
            .starts_with("body[1] (index 1, line 2, op \"neg\")"),
        "{err}"
    );
}

#[test]
fn a_loop_of_no_iterations_is_refused() {
    let text = ir(
        vec![input("x", &[2], &[1.0, 2.0])],
        vec![repeat(0, vec![op("neg", &["x"], "y")]), observe("y")],
    );
    // A loop runs at least once: a count of 0 is refused (the language's range starts at 1).
    let err = Program::from_json(&text).unwrap_err();
    assert!(err.field.ends_with("attrs.count"), "{err}");
}

#[test]
fn loop_carried_values_and_observations_in_the_timed_loop() {
    let text = ir_with(
        vec![input("x", &[2], &[1.0, 2.0])],
        vec![],
        vec![
            op("clone", &["x"], "acc"),
            repeat(4, vec![op("add", &["acc", "x"], "acc"), observe("acc")]),
            repeat(2, vec![op("add", &["acc", "x"], "acc")]),
            st("observe", &["acc"], None, json!({"label": "end"})),
        ],
        json!({"checkpoints": [2, 4], "rss_every": 0, "track": "acc"}),
    );
    let r = run_ok(&text);
    let inside: Vec<_> = r.observations.iter().filter(|o| o.label == "acc").collect();
    assert_eq!(
        inside.iter().map(|o| o.iteration).collect::<Vec<_>>(),
        vec![Some(2), Some(4)]
    );
    assert!(inside[0].values.is_none());
    close(inside[1].values.as_ref().unwrap(), &[5.0, 10.0]);
    close(&values(&r, "end"), &[7.0, 14.0]);
    assert_eq!(
        r.step_ms.len(),
        4,
        "only the first top-level repeat is timed"
    );
    assert_eq!(r.checkpoints.len(), 2);
    assert_eq!(r.checkpoints[0].tracked, Some(false));
}

#[test]
fn a_panic_does_not_affect_the_next_program() {
    assert_eq!(run_ir(&p10_program("target", 5)).outcome, Outcome::Panic);
    run_ok(&p10_program("detach", 5));
    let again = run_ir(&p10_program("target", 5));
    assert_eq!(again.failure.unwrap().iteration, Some(3));
}

#[test]
fn a_break_from_the_callback_stops_the_run() {
    let program = Program::from_json(&p10_program("detach", 20)).unwrap();
    let r = program::run(&program, &mut |_| ControlFlow::Break(()));
    assert_eq!(r.outcome, Outcome::Stopped);
    assert_eq!(r.step_ms.len(), 1);
}

#[test]
fn the_op_table_marks_what_burn_lacks() {
    let table = op_table();
    let unsupported: Vec<&str> = table
        .iter()
        .filter(|(_, supported)| !supported)
        .map(|(name, _)| *name)
        .collect();
    assert_eq!(unsupported, vec!["retain_grad", "no_grad"]);
    assert!(table.len() >= 39);
}

/// `w = [1]`, loss `sum(w * w)` (gradient 2) or `sum(w)` (gradient 1), one
/// step of `opt`; returns the new `w`.
fn one_step(opt: Value, square: bool) -> f32 {
    let mut body = vec![opt];
    if square {
        body.push(op("mul", &["w", "w"], "ww"));
        body.push(op("sum", &["ww"], "loss"));
    } else {
        body.push(op("sum", &["w"], "loss"));
    }
    body.push(call("backward", &["loss"]));
    body.push(call("step", &["opt"]));
    body.push(observe("w"));
    values(&run_ok(&ir(vec![param("w", &[1], &[1.0])], body)), "w")[0]
}

#[test]
fn optimizer_hyperparameters_reach_burn() {
    let sgd = |attrs: Value| one_step(st("sgd", &[], Some("opt"), attrs), false);
    // L2 weight decay on the gradient: 1 + 0.5 * w.
    close(
        &[sgd(json!({"lr": 0.1, "weight_decay": 0.5}))],
        &[1.0 - 0.1 * 1.5],
    );
    // Nesterov, first step: v = g, update g + momentum * v.
    close(
        &[sgd(
            json!({"lr": 1.0, "momentum": 0.5, "dampening": 0.0, "nesterov": true}),
        )],
        &[1.0 - 1.5],
    );
    // momentum 0 is plain SGD (no momentum state, no dampening).
    close(&[sgd(json!({"lr": 0.1, "momentum": 0.0}))], &[0.9]);
    let adam = |attrs: Value| one_step(st("adam", &[], Some("opt"), attrs), true);
    // First Adam step: lr * g / (|g| + eps), g = 2.
    close(
        &[adam(json!({"lr": 0.1, "eps": 1.0}))],
        &[1.0 - 0.1 * 2.0 / 3.0],
    );
    // weight decay adds wd * w to the gradient: g = 2 + 2 = 4.
    close(
        &[adam(json!({"lr": 0.1, "eps": 1.0, "weight_decay": 2.0}))],
        &[1.0 - 0.1 * 4.0 / 5.0],
    );
    close(
        &[adam(
            json!({"lr": 0.1, "eps": 1.0, "beta1": 0.5, "beta2": 0.9}),
        )],
        &[1.0 - 0.1 * 2.0 / 3.0],
    );
}

#[test]
fn freeze_and_require_grad_of_a_param_switch_the_optimizer_off_and_on() {
    let r = run_ok(&ir(
        vec![param("w", &[1], &[1.0])],
        vec![
            st("sgd", &[], Some("opt"), json!({"lr": 0.5})),
            call("freeze", &["w"]),
            repeat(
                1,
                vec![
                    st("mul_scalar", &["w"], Some("unused"), json!({"scalar": 2.0})),
                    op("sum", &["w"], "loss"),
                    call("step", &["opt"]),
                ],
            ),
            st("observe", &["w"], None, json!({"label": "frozen"})),
            st("require_grad", &["w"], Some("again"), json!({})),
            op("sum", &["w"], "loss2"),
            call("backward", &["loss2"]),
            call("step", &["opt"]),
            st("observe", &["w"], None, json!({"label": "trained"})),
            observe("again"),
        ],
    ));
    let frozen = obs(&r, "frozen");
    assert_eq!(frozen.values.as_deref(), Some(&[1.0f32][..]));
    assert!(!frozen.flags.tracked && !frozen.flags.requires_grad);
    close(&values(&r, "trained"), &[0.5]);
    let again = obs(&r, "again").flags;
    assert!(
        again.tracked && again.requires_grad,
        "out binds the param's value"
    );
}

#[test]
fn add_scalar_in_place_on_a_param_silently_stops_its_training() {
    let r = run_ok(&ir(
        vec![param("w", &[2], &[1.0, 2.0])],
        vec![
            st("sgd", &[], Some("opt"), json!({"lr": 0.5})),
            st("add_scalar_", &["w"], None, json!({"scalar": 1.0})),
            op("mul", &["w", "w"], "ww"),
            op("sum", &["ww"], "loss"),
            call("backward", &["loss"]),
            st("observe", &["w"], None, json!({"label": "after_backward"})),
            call("step", &["opt"]),
            observe("w"),
        ],
    ));
    // Param::map leaves a tracked non-leaf that does not require grad: no
    // gradient, and the optimizer skips it.
    let after = obs(&r, "after_backward");
    assert!(after.flags.tracked && !after.flags.requires_grad);
    assert!(after.grad.is_none());
    close(&values(&r, "w"), &[2.0, 3.0]);
}

#[test]
fn a_detached_param_is_a_new_leaf_with_its_own_gradient() {
    let r = run_ok(&ir(
        vec![param("w", &[2], &[1.0, 2.0])],
        vec![
            op("detach", &["w"], "d"),
            op("mul", &["d", "w"], "dw"),
            op("sum", &["dw"], "loss"),
            call("backward", &["loss"]),
            observe("d"),
            observe("w"),
        ],
    ));
    // d * w: each gets the other's values; the param gets nothing through d.
    close(&grad(&r, "d"), &[1.0, 2.0]);
    close(&grad(&r, "w"), &[1.0, 2.0]);
    let d = obs(&r, "d").flags;
    assert!(d.tracked && d.requires_grad);
}

#[test]
fn the_layout_flag_mixes_with_torch_layout_values() {
    let text = ir_with(
        vec![
            json!({"name": "lin.weight", "role": "param", "shape": [2, 3],
                   "data": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "module": "lin"}),
            input("m", &[2, 3], &[10.0, 20.0, 30.0, 40.0, 50.0, 60.0]),
        ],
        vec![json!({"name": "lin", "kind": "linear",
                    "attrs": {"d_in": 3, "d_out": 2, "bias": false, "layout": "transposed"}})],
        vec![
            op("add", &["lin.weight", "m"], "sum_wm"),
            op("mul", &["lin.weight", "lin.weight"], "square"),
            st(
                "reshape",
                &["lin.weight"],
                Some("flat"),
                json!({"shape": [6]}),
            ),
            st("sum_dim", &["lin.weight"], Some("rows"), json!({"dim": 1})),
            op("sum", &["lin.weight"], "total"),
            observe("sum_wm"),
            observe("square"),
            observe("flat"),
            observe("rows"),
            observe("total"),
        ],
        json!({"checkpoints": [], "rss_every": 0}),
    );
    let r = run_ok(&text);
    close(&values(&r, "sum_wm"), &[11.0, 22.0, 33.0, 44.0, 55.0, 66.0]);
    close(&values(&r, "square"), &[1.0, 4.0, 9.0, 16.0, 25.0, 36.0]);
    assert_eq!(obs(&r, "square").shape, vec![2, 3]);
    close(&values(&r, "flat"), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    close(&values(&r, "rows"), &[6.0, 15.0]);
    assert_eq!(obs(&r, "rows").shape, vec![2, 1]);
    close(&values(&r, "total"), &[21.0]);
}
