//! The p10 loop expressed as a program: the same statements, in the same
//! order, as the hand-written `p10::run`, for the tests and for timing the
//! interpreter against it (`program --p10 MODE`).
//!
//! The initial tensors come from a small seeded generator here (the Python
//! side makes its own); their values do not matter for what p10 observes.

use serde_json::{json, Value};

use crate::config::{Mode, P10Config};

/// xorshift64*: deterministic, dependency-free numbers for the initial tensors.
struct Numbers(u64);

impl Numbers {
    fn new(seed: u64) -> Self {
        Numbers(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn uniform(&mut self, n: usize, bound: f64) -> Vec<f32> {
        (0..n)
            .map(|_| ((self.unit() * 2.0 - 1.0) * bound) as f32)
            .collect()
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| {
                let u = self.unit().max(f64::MIN_POSITIVE);
                let v = self.unit();
                ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
            })
            .collect()
    }
}

struct Body {
    stmts: Vec<Value>,
    next_index: u64,
}

impl Body {
    fn stmt(&mut self, op: &str, args: &[&str], out: Option<&str>, attrs: Value) -> Value {
        let s = json!({
            "index": self.next_index,
            "line": self.next_index + 1,
            "op": op,
            "args": args,
            "out": out,
            "attrs": attrs,
        });
        self.next_index += 1;
        s
    }

    fn push(&mut self, op: &str, args: &[&str], out: Option<&str>, attrs: Value) {
        let s = self.stmt(op, args, out, attrs);
        self.stmts.push(s);
    }
}

/// The IR of the p10 loop in `config.mode`, as JSON text.
pub fn p10_program(config: &P10Config) -> String {
    let mode = config.mode;
    let mut numbers = Numbers::new(config.seed);
    let bound = 1.0 / (config.d_in as f64).sqrt();
    let weight = numbers.uniform(config.d_out * config.d_in, bound);
    let bias = numbers.uniform(config.d_out, bound);
    let x = numbers.normal(config.batch * config.d_in);

    let snapshot = if mode.uses_without_autodiff() {
        "without_autodiff"
    } else {
        "detach"
    };
    let mut top = Body {
        stmts: Vec::new(),
        next_index: 0,
    };
    top.push("sgd", &[], Some("opt"), json!({"lr": config.lr}));
    if mode != Mode::Log {
        top.push(snapshot, &["lin.weight"], Some("ema"), json!({}));
    }
    let repeat_index = top.next_index;
    top.next_index += 1;
    let mut inner = Body {
        stmts: Vec::new(),
        next_index: top.next_index,
    };
    if mode != Mode::EmaOnly {
        inner.push("linear", &["lin", "x"], Some("out"), json!({}));
        if mode.ema_in_loss() {
            inner.push("transpose", &["ema"], Some("_t1"), json!({}));
            inner.push("matmul", &["x", "_t1"], Some("_t2"), json!({}));
            inner.push("sub", &["out", "_t2"], Some("_t3"), json!({}));
            inner.push("powi", &["_t3"], Some("_t4"), json!({"exponent": 2}));
        } else {
            inner.push("powi", &["out"], Some("_t4"), json!({"exponent": 2}));
        }
        inner.push("mean", &["_t4"], Some("loss"), json!({}));
        inner.push("zero_grad", &["opt"], None, json!({}));
        inner.push("backward", &["loss"], None, json!({}));
        inner.push("step", &["opt"], None, json!({}));
    }
    if mode == Mode::Log {
        inner.push(snapshot, &["lin.weight"], Some("_s"), json!({}));
        inner.push("powi", &["_s"], Some("_q"), json!({"exponent": 2}));
        inner.push("sum", &["_q"], Some("_n"), json!({}));
        inner.push("sqrt", &["_n"], Some("_r"), json!({}));
        inner.push("item", &["_r"], None, json!({}));
    } else {
        let keep = config.ema_decay;
        let blend = 1.0 - config.ema_decay;
        inner.push("mul_scalar", &["ema"], Some("_a"), json!({"scalar": keep}));
        inner.push(snapshot, &["lin.weight"], Some("_s"), json!({}));
        inner.push("mul_scalar", &["_s"], Some("_b"), json!({"scalar": blend}));
        inner.push("add", &["_a", "_b"], Some("ema"), json!({}));
        inner.push("observe", &["ema"], None, json!({"values": false}));
    }
    top.stmts.push(json!({
        "index": repeat_index,
        "line": repeat_index + 1,
        "op": "repeat",
        "args": [],
        "out": null,
        "attrs": {"count": config.steps},
        "body": inner.stmts,
    }));
    top.next_index = inner.next_index;
    if mode != Mode::Log {
        top.push("observe", &["ema"], None, json!({}));
    }
    top.push("observe", &["lin.weight"], None, json!({}));

    let track = if mode == Mode::Log {
        "lin.weight"
    } else {
        "ema"
    };
    json!({
        "ir_version": crate::program::IR_VERSION,
        "tensors": [
            {"name": "lin.weight", "role": "param", "shape": [config.d_out, config.d_in],
             "data": weight, "module": "lin"},
            {"name": "lin.bias", "role": "param", "shape": [config.d_out],
             "data": bias, "module": "lin"},
            {"name": "x", "role": "input", "shape": [config.batch, config.d_in], "data": x},
        ],
        "modules": [
            {"name": "lin", "kind": "linear",
             "attrs": {"d_in": config.d_in, "d_out": config.d_out, "bias": true, "layout": "transposed"}}
        ],
        "body": top.stmts,
        "settings": {
            "checkpoints": config.checkpoints,
            "rss_every": config.rss_every,
            "track": track,
        },
    })
    .to_string()
}
