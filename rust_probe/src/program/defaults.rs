//! burn's own defaults of the attributes a program may omit, read from burn 0.22.1's configs
//! (`Config::new()` of the config a port builds, serialized: the optimizers' fields are private),
//! in the language's terms: `"sgd.dampening"` (an operation's attribute) or `"Conv2d.stride"` (a
//! module kind's) -> the value burn uses when the port leaves the `with_*` call out.
//!
//! `tests/test_defaults.py` holds every `burn_default` of the table (`runner/contract/ops/`) against
//! this, so a documented default is burn's own and not a copy of torch's. An attribute burn has
//! no setting for is absent; `null` is a setting whose default is "none" (no clipping); a
//! default that is another attribute's value is that attribute's name (a pool's stride,
//! `"kernel_size"`).

use burn::nn::attention::MultiHeadAttentionConfig;
use burn::nn::conv::{Conv1dConfig, Conv2dConfig};
use burn::nn::loss::{CrossEntropyLossConfig, SmoothL1LossConfig};
use burn::nn::pool::{AvgPool2dConfig, MaxPool2dConfig};
use burn::nn::{
    BatchNormConfig, GroupNormConfig, LayerNormConfig, LeakyReluConfig, PaddingConfig1d,
    PaddingConfig2d,
};
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

/// A 2d padding as the language's one side: `Valid` is 0, `Same` is `"same"`.
fn padding_2d(padding: &PaddingConfig2d) -> Value {
    match padding {
        PaddingConfig2d::Valid => Value::from(0),
        PaddingConfig2d::Explicit(top, left, bottom, right) => {
            assert!(
                top == left && left == bottom && bottom == right,
                "a default of burn's 2d padding is the same on each side"
            );
            Value::from(*top)
        }
        PaddingConfig2d::Same => Value::from("same"),
    }
}

/// A 1d padding as the language's one side.
fn padding_1d(padding: &PaddingConfig1d) -> Value {
    match padding {
        PaddingConfig1d::Valid => Value::from(0),
        PaddingConfig1d::Explicit(left, right) => {
            assert_eq!(
                left, right,
                "a default of burn's 1d padding is the same on each side"
            );
            Value::from(*left)
        }
        PaddingConfig1d::Same => Value::from("same"),
    }
}

/// A pool's default strides for the window `kernel` it was built with: `"kernel_size"` (the
/// language's name of the attribute whose value it is) when they are the kernel's, else the side.
/// `kernel` is not square, so a fixed default cannot pass for the kernel's.
fn window_step(strides: &[usize; 2], kernel: &[usize; 2]) -> Value {
    if strides == kernel {
        Value::from("kernel_size")
    } else {
        square(strides)
    }
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
    put("Conv2d.padding", padding_2d(&conv.padding));
    put("Conv2d.dilation", square(&conv.dilation));
    put("Conv2d.groups", Value::from(conv.groups));
    put("Conv2d.bias", Value::from(conv.bias));

    let conv = Conv1dConfig::new(1, 1, 1);
    put("Conv1d.stride", Value::from(conv.stride));
    put("Conv1d.padding", padding_1d(&conv.padding));
    put("Conv1d.dilation", Value::from(conv.dilation));
    put("Conv1d.groups", Value::from(conv.groups));
    put("Conv1d.bias", Value::from(conv.bias));

    // One `BatchNormConfig` for both ranks (burn's `BatchNorm` is generic over it). `affine`:
    // no such setting (tests/test_defaults.py NO_BURN_SOURCE).
    let batch_norm = BatchNormConfig::new(1);
    for kind in ["BatchNorm1d", "BatchNorm2d"] {
        put(&format!("{kind}.eps"), Value::from(batch_norm.epsilon));
        put(
            &format!("{kind}.momentum"),
            Value::from(batch_norm.momentum),
        );
    }

    let layer_norm = LayerNormConfig::new(1);
    put("LayerNorm.eps", Value::from(layer_norm.epsilon));
    // gamma always exists; the port writes `elementwise_affine` as `.with_bias(..)` (beta).
    put("LayerNorm.elementwise_affine", Value::from(layer_norm.bias));

    let group_norm = GroupNormConfig::new(1, 1);
    put("GroupNorm.eps", Value::from(group_norm.epsilon));
    put("GroupNorm.affine", Value::from(group_norm.affine));

    let mha = MultiHeadAttentionConfig::new(8, 2);
    put("MultiheadAttention.dropout", Value::from(mha.dropout));
    // torch's one `bias` is the port's four `with_*_bias(b)`.
    let biases = [
        mha.query_bias,
        mha.key_bias,
        mha.value_bias,
        mha.output_bias,
    ];
    assert!(
        biases.iter().all(|b| *b == biases[0]),
        "burn's four attention biases share a default"
    );
    put("MultiheadAttention.bias", Value::from(biases[0]));

    put(
        "leaky_relu.negative_slope",
        Value::from(LeakyReluConfig::new().negative_slope),
    );

    let kernel = [2, 3];
    let max_pool = MaxPool2dConfig::new(kernel);
    put("max_pool2d.stride", window_step(&max_pool.strides, &kernel));
    put("max_pool2d.padding", padding_2d(&max_pool.padding));
    put("max_pool2d.dilation", square(&max_pool.dilation));
    let avg_pool = AvgPool2dConfig::new(kernel);
    put("avg_pool2d.stride", window_step(&avg_pool.strides, &kernel));
    put("avg_pool2d.padding", padding_2d(&avg_pool.padding));
    put(
        "avg_pool2d.count_include_pad",
        Value::from(avg_pool.count_include_pad),
    );

    let cross_entropy = CrossEntropyLossConfig::new();
    // `None`: no smoothing, which is a smoothing of 0.
    put(
        "cross_entropy.label_smoothing",
        Value::from(cross_entropy.smoothing.unwrap_or(0.0)),
    );
    put(
        "smooth_l1_loss.beta",
        Value::from(SmoothL1LossConfig::new().beta),
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
        // MultiHeadAttentionConfig's dropout is 0.1 (torch's 0); a pool's stride is its kernel.
        assert_eq!(d["MultiheadAttention.dropout"], Value::from(0.1));
        assert_eq!(d["max_pool2d.stride"], Value::from("kernel_size"));
        assert_eq!(d["avg_pool2d.stride"], Value::from("kernel_size"));
    }
}
