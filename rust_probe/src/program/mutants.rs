//! Planted bugs for the fuzzer's recall test: compiled only with the `mutants` feature (never
//! in the default probe), each switched on by naming it in `BURN_TORCH_DIFF_MUTANT`.
//!
//! - `sigmoid-grad`: sigmoid's gradient 2 % too large, its value unchanged
//!   (`s + 0.02 * (s - s.detach())`);
//! - `tanh-edge`: tanh clamped to +-0.999 (its value and gradient wrong for |x| > 3.8);
//! - `sgd-weight-decay`: SGD's weight decay doubled;
//! - `detach-nonleaf`: `detach` of a computed (tracked non-leaf) tensor returns it still tracked.

use std::sync::OnceLock;

use burn::tensor::activation;

use crate::program::ops::Unary;
use crate::program::value::{map_dyn, with_dyn, TensorValue};

pub const ENV: &str = "BURN_TORCH_DIFF_MUTANT";
pub const NAMES: [&str; 4] = [
    "sigmoid-grad",
    "tanh-edge",
    "sgd-weight-decay",
    "detach-nonleaf",
];

fn active() -> Option<&'static str> {
    static MUTANT: OnceLock<Option<&'static str>> = OnceLock::new();
    *MUTANT.get_or_init(|| {
        let name = std::env::var(ENV).ok()?;
        NAMES.iter().copied().find(|n| *n == name)
    })
}

/// What a mutant does to a unary operation.
pub enum Mutated {
    /// The mutated result.
    Result(TensorValue),
    /// Not mutated: the argument back, for the operation itself.
    Unchanged(TensorValue),
}

/// The mutated result of a unary operation, or its argument back.
pub fn unary(op: Unary, v: TensorValue) -> Mutated {
    let flag = v.transposed;
    let keep = |t| TensorValue {
        t,
        transposed: flag,
    };
    match (active(), op) {
        (Some("sigmoid-grad"), Unary::Sigmoid) => Mutated::Result(keep(map_dyn!(v.t, t => {
            let s = activation::sigmoid(t);
            s.clone() + (s.clone() - s.detach()).mul_scalar(0.02)
        }))),
        (Some("tanh-edge"), Unary::Tanh) => {
            Mutated::Result(keep(map_dyn!(v.t, t => t.tanh().clamp(-0.999, 0.999))))
        }
        (Some("detach-nonleaf"), Unary::Detach) => {
            let nonleaf = with_dyn!(&v.t, t => t.is_tracked() && !t.is_require_grad());
            if nonleaf {
                Mutated::Result(v)
            } else {
                Mutated::Unchanged(v)
            }
        }
        _ => Mutated::Unchanged(v),
    }
}

/// SGD's weight decay as the optimizer gets it.
pub fn sgd_weight_decay(weight_decay: f64) -> f64 {
    if active() == Some("sgd-weight-decay") {
        2.0 * weight_decay
    } else {
        weight_decay
    }
}
