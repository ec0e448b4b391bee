//! burn's own defaults of the attributes a program may omit, read from burn 0.22.1's configs
//! (`Config::new()` of the config a port builds, serialized: the optimizers' fields are private),
//! in the language's terms: `"sgd.dampening"` (an operation's attribute) or `"Conv2d.stride"` (a
//! module kind's) -> the value burn uses when the port leaves the `with_*` call out.
//!
//! `tests/test_defaults.py` holds every `burn_default` of the table (`runner/contract/ops/`) against
//! this, so a documented default is burn's own and not a copy of torch's. An attribute burn has
//! no setting for is absent; `null` is a setting whose default is "none" (no clipping).

use burn::nn::conv::Conv2dConfig;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::PaddingConfig2d;
use burn::optim::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::optim::lr_scheduler::step::StepLrSchedulerConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdamConfig, AdamWConfig, RmsPropConfig, SgdConfig};
use serde_json::{Map, Value};

/// A config's fields by name, as its serialization has them.
fn fields<C: serde::Serialize>(config: &C) -> Map<String, Value> {
    match serde_json::to_value(config) {
        Ok(Value::Object(map)) => map,
        other => panic!("a burn config serializes as an object, got {other:?}"),
    }
}

/// A field of `map`: `absent` is what a `None` (an `Option` config left out) means in the
/// language (`0.0`: no weight decay, no momentum).
fn field(map: &Map<String, Value>, key: &str, absent: Value) -> Value {
    match map.get(key) {
        Some(Value::Null) | None => absent,
        Some(v) => v.clone(),
    }
}

/// `[s, s]` as the language's one side `s` (a square kernel's stride, dilation).
fn square(value: &[usize; 2]) -> Value {
    assert_eq!(
        value[0], value[1],
        "a default of burn's 2d config is square"
    );
    Value::from(value[0])
}

/// Every omittable attribute's burn default that burn's configs hold, in table order.
pub fn burn_defaults() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut put = |key: &str, value: Value| out.push((key.to_owned(), value));
    let zero = || Value::from(0.0);

    let sgd = fields(&SgdConfig::new());
    let momentum = MomentumConfig::new();
    // No `MomentumConfig` unless a port adds one: plain SGD, momentum 0.
    put("sgd.momentum", field(&sgd, "momentum", zero()));
    put("sgd.dampening", Value::from(momentum.dampening));
    put("sgd.weight_decay", field(&sgd, "weight_decay", zero()));
    put("sgd.nesterov", Value::from(momentum.nesterov));
    put(
        "sgd.clip_grad_norm",
        field(&sgd, "gradient_clipping", Value::Null),
    );
    put(
        "sgd.clip_grad_value",
        field(&sgd, "gradient_clipping", Value::Null),
    );

    let adam = fields(&AdamConfig::new());
    put("adam.beta1", field(&adam, "beta_1", Value::Null));
    put("adam.beta2", field(&adam, "beta_2", Value::Null));
    put("adam.eps", field(&adam, "epsilon", Value::Null));
    put("adam.weight_decay", field(&adam, "weight_decay", zero()));
    put(
        "adam.clip_grad_norm",
        field(&adam, "grad_clipping", Value::Null),
    );
    put(
        "adam.clip_grad_value",
        field(&adam, "grad_clipping", Value::Null),
    );

    let adamw = fields(&AdamWConfig::new());
    put("adamw.beta1", field(&adamw, "beta_1", Value::Null));
    put("adamw.beta2", field(&adamw, "beta_2", Value::Null));
    put("adamw.eps", field(&adamw, "epsilon", Value::Null));
    put(
        "adamw.weight_decay",
        field(&adamw, "weight_decay", Value::Null),
    );
    put("adamw.amsgrad", field(&adamw, "amsgrad", Value::Null));
    put(
        "adamw.clip_grad_norm",
        field(&adamw, "grad_clipping", Value::Null),
    );
    put(
        "adamw.clip_grad_value",
        field(&adamw, "grad_clipping", Value::Null),
    );

    let rmsprop = fields(&RmsPropConfig::new());
    put("rmsprop.alpha", field(&rmsprop, "alpha", Value::Null));
    put("rmsprop.eps", field(&rmsprop, "epsilon", Value::Null));
    put(
        "rmsprop.weight_decay",
        field(&rmsprop, "weight_decay", zero()),
    );
    put("rmsprop.momentum", field(&rmsprop, "momentum", Value::Null));
    put("rmsprop.centered", field(&rmsprop, "centered", Value::Null));
    put(
        "rmsprop.clip_grad_norm",
        field(&rmsprop, "grad_clipping", Value::Null),
    );
    put(
        "rmsprop.clip_grad_value",
        field(&rmsprop, "grad_clipping", Value::Null),
    );

    // The schedules' required values are placeholders: only the defaults are read.
    let step = fields(&StepLrSchedulerConfig::new(1.0, 1));
    put("step_lr.gamma", field(&step, "gamma", Value::Null));
    let cosine = fields(&CosineAnnealingLrSchedulerConfig::new(1.0, 1));
    put("cosine_lr.eta_min", field(&cosine, "min_lr", Value::Null));

    let conv = Conv2dConfig::new([1, 1], [1, 1]);
    put("Conv2d.stride", square(&conv.stride));
    put(
        "Conv2d.padding",
        match conv.padding {
            PaddingConfig2d::Valid => Value::from(0),
            PaddingConfig2d::Explicit(top, ..) => Value::from(top),
            PaddingConfig2d::Same => Value::from("same"),
        },
    );
    put("Conv2d.dilation", square(&conv.dilation));
    put("Conv2d.groups", Value::from(conv.groups));
    put("Conv2d.bias", Value::from(conv.bias));

    let cross_entropy = CrossEntropyLossConfig::new();
    put(
        "cross_entropy.label_smoothing",
        Value::from(cross_entropy.smoothing.unwrap_or(0.0)),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_burns_own() {
        let d: std::collections::HashMap<String, Value> = burn_defaults().into_iter().collect();
        // MomentumConfig's dampening is 0.1 (torch's is 0); AdamW's weight decay 1e-4 (torch: 1e-2).
        assert_eq!(d["sgd.dampening"], Value::from(0.1));
        let wd = d["adamw.weight_decay"].as_f64().unwrap();
        assert!((wd - 1e-4).abs() < 1e-10, "{wd}");
        assert_eq!(d["sgd.clip_grad_norm"], Value::Null);
        assert_eq!(d["Conv2d.padding"], Value::from(0));
    }
}
