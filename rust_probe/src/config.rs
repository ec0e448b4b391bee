//! Parameters of one p10 run and their validation (the modes, defaults and
//! limits come from `crate::contract`, generated from the Python side).
//!
//! Every check names the parameter and what would be valid, so that the Python
//! module can raise `ValueError` and the binary can print the same text.
//! Nothing in here panics on bad input.

use std::fmt;

pub use crate::contract::Mode;
use crate::contract::{p10_defaults, MAX_BUSY_WAIT_US, MAX_DIM, MAX_STEPS, P10_MAX_ELEMENTS};

impl Mode {
    pub fn parse(name: &str) -> Result<Mode, ConfigError> {
        Mode::from_name(name).ok_or_else(|| ConfigError {
            parameter: "mode",
            message: format!("unknown mode {name:?}; valid modes: {}", Mode::names()),
        })
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A parameter that failed validation: which one, and why, with the valid values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub parameter: &'static str,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.parameter, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// The seed's checkpoints.
pub const DEFAULT_CHECKPOINTS: [u64; 7] = p10_defaults::CHECKPOINTS;

/// One p10 run's parameters, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct P10Config {
    pub mode: Mode,
    pub d_in: usize,
    pub d_out: usize,
    pub batch: usize,
    pub lr: f64,
    pub steps: u64,
    pub checkpoints: Vec<u64>,
    pub ema_decay: f64,
    pub seed: u64,
    /// Sample the process RSS every this many steps (outside the timed
    /// region); 0: only at checkpoints.
    pub rss_every: u64,
    /// Calibration only (off by default): spin this many microseconds at the
    /// end of every step, inside its timed region, to inject a known slowdown.
    pub busy_wait_us: u64,
}

/// Unvalidated parameters, as they come from Python or the command line.
/// Signed so that a negative value is reported as such rather than wrapped.
#[derive(Clone, Debug)]
pub struct P10Params {
    pub mode: String,
    pub d_in: i64,
    pub d_out: i64,
    pub batch: i64,
    pub lr: f64,
    pub steps: i64,
    /// `None`: the seed's checkpoints up to `steps`, and `steps` itself.
    pub checkpoints: Option<Vec<i64>>,
    pub ema_decay: f64,
    pub seed: i64,
    pub rss_every: i64,
    pub busy_wait_us: i64,
}

impl Default for P10Params {
    fn default() -> Self {
        P10Params {
            mode: "detach".into(),
            d_in: p10_defaults::D_IN,
            d_out: p10_defaults::D_OUT,
            batch: p10_defaults::BATCH,
            lr: p10_defaults::LR,
            steps: p10_defaults::STEPS,
            checkpoints: None,
            ema_decay: p10_defaults::EMA_DECAY,
            seed: p10_defaults::SEED,
            rss_every: p10_defaults::RSS_EVERY,
            busy_wait_us: p10_defaults::BUSY_WAIT_US,
        }
    }
}

fn dimension(parameter: &'static str, value: i64) -> Result<usize, ConfigError> {
    if value < 1 || value as u64 > MAX_DIM {
        return Err(ConfigError {
            parameter,
            message: format!("must be an integer from 1 to {MAX_DIM}, got {value}"),
        });
    }
    Ok(value as usize)
}

fn default_checkpoints(steps: u64) -> Vec<u64> {
    let mut points: Vec<u64> = DEFAULT_CHECKPOINTS
        .iter()
        .copied()
        .filter(|&s| s < steps)
        .collect();
    points.push(steps);
    points
}

impl P10Params {
    pub fn validate(&self) -> Result<P10Config, ConfigError> {
        let mode = Mode::parse(&self.mode)?;
        let d_in = dimension("d_in", self.d_in)?;
        let d_out = dimension("d_out", self.d_out)?;
        let batch = dimension("batch", self.batch)?;
        for (parameter, elements) in [
            ("d_out", (d_in as u64) * (d_out as u64)),
            ("batch", (batch as u64) * (d_in as u64)),
        ] {
            if elements > P10_MAX_ELEMENTS {
                return Err(ConfigError {
                    parameter,
                    message: format!(
                        "d_in x d_out and batch x d_in must each be at most {P10_MAX_ELEMENTS} \
                         elements, got {elements}"
                    ),
                });
            }
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(ConfigError {
                parameter: "lr",
                message: format!("must be a finite number greater than 0, got {}", self.lr),
            });
        }
        if self.steps < 1 || self.steps as u64 > MAX_STEPS {
            return Err(ConfigError {
                parameter: "steps",
                message: format!(
                    "must be an integer from 1 to {MAX_STEPS}, got {}",
                    self.steps
                ),
            });
        }
        let steps = self.steps as u64;
        let checkpoints = match &self.checkpoints {
            None => default_checkpoints(steps),
            Some(points) => validate_checkpoints(points, steps)?,
        };
        if !(self.ema_decay.is_finite() && (0.0..=1.0).contains(&self.ema_decay)) {
            return Err(ConfigError {
                parameter: "ema_decay",
                message: format!("must be a number from 0 to 1, got {}", self.ema_decay),
            });
        }
        if self.seed < 0 {
            return Err(ConfigError {
                parameter: "seed",
                message: format!("must be a non-negative integer, got {}", self.seed),
            });
        }
        if self.rss_every < 0 || self.rss_every as u64 > MAX_STEPS {
            return Err(ConfigError {
                parameter: "rss_every",
                message: format!(
                    "must be an integer from 0 (only at checkpoints) to {MAX_STEPS}, got {}",
                    self.rss_every
                ),
            });
        }
        if self.busy_wait_us < 0 || self.busy_wait_us as u64 > MAX_BUSY_WAIT_US {
            return Err(ConfigError {
                parameter: "busy_wait_us",
                message: format!(
                    "must be an integer from 0 (off) to {MAX_BUSY_WAIT_US}, got {}",
                    self.busy_wait_us
                ),
            });
        }
        Ok(P10Config {
            mode,
            d_in,
            d_out,
            batch,
            lr: self.lr,
            steps,
            checkpoints,
            ema_decay: self.ema_decay,
            seed: self.seed as u64,
            rss_every: self.rss_every as u64,
            busy_wait_us: self.busy_wait_us as u64,
        })
    }
}

fn validate_checkpoints(points: &[i64], steps: u64) -> Result<Vec<u64>, ConfigError> {
    let error = |message: String| ConfigError {
        parameter: "checkpoints",
        message,
    };
    if points.is_empty() {
        return Err(error(format!(
            "must list at least one step from 1 to steps ({steps})"
        )));
    }
    let mut previous = 0i64;
    for &point in points {
        if point < 1 || point as u64 > steps {
            return Err(error(format!(
                "every checkpoint must be a step from 1 to steps ({steps}), got {point}"
            )));
        }
        if point <= previous {
            return Err(error(format!(
                "must be strictly increasing, got {point} after {previous}"
            )));
        }
        previous = point;
    }
    Ok(points.iter().map(|&p| p as u64).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> P10Params {
        P10Params::default()
    }

    #[test]
    fn defaults_are_the_seeds() {
        let config = params().validate().unwrap();
        assert_eq!(config.mode, Mode::Detach);
        assert_eq!((config.d_in, config.d_out, config.batch), (512, 512, 64));
        assert_eq!(config.steps, 2000);
        assert_eq!(config.checkpoints, DEFAULT_CHECKPOINTS.to_vec());
        assert_eq!(config.ema_decay, 0.99);
        assert_eq!(config.busy_wait_us, 0);
    }

    #[test]
    fn default_checkpoints_stop_at_steps() {
        let config = P10Params {
            steps: 120,
            ..params()
        }
        .validate()
        .unwrap();
        assert_eq!(config.checkpoints, vec![1, 50, 100, 120]);
    }

    #[test]
    fn every_mode_name_round_trips() {
        for mode in Mode::ALL {
            assert_eq!(Mode::parse(mode.name()).unwrap(), mode);
        }
    }

    #[test]
    fn bad_values_name_their_parameter() {
        let cases: Vec<(P10Params, &str)> = vec![
            (
                P10Params {
                    mode: "detatch".into(),
                    ..params()
                },
                "mode",
            ),
            (
                P10Params {
                    d_in: 0,
                    ..params()
                },
                "d_in",
            ),
            (
                P10Params {
                    d_out: -3,
                    ..params()
                },
                "d_out",
            ),
            (
                P10Params {
                    batch: 1 << 20,
                    ..params()
                },
                "batch",
            ),
            (
                P10Params {
                    lr: f64::NAN,
                    ..params()
                },
                "lr",
            ),
            (
                P10Params {
                    steps: 0,
                    ..params()
                },
                "steps",
            ),
            (
                P10Params {
                    checkpoints: Some(vec![5, 5]),
                    ..params()
                },
                "checkpoints",
            ),
            (
                P10Params {
                    checkpoints: Some(vec![2500]),
                    ..params()
                },
                "checkpoints",
            ),
            (
                P10Params {
                    checkpoints: Some(vec![]),
                    ..params()
                },
                "checkpoints",
            ),
            (
                P10Params {
                    ema_decay: 1.5,
                    ..params()
                },
                "ema_decay",
            ),
            (
                P10Params {
                    seed: -1,
                    ..params()
                },
                "seed",
            ),
            (
                P10Params {
                    busy_wait_us: -1,
                    ..params()
                },
                "busy_wait_us",
            ),
            (
                P10Params {
                    busy_wait_us: 2_000_000,
                    ..params()
                },
                "busy_wait_us",
            ),
        ];
        for (bad, parameter) in cases {
            let err = bad.validate().unwrap_err();
            assert_eq!(err.parameter, parameter, "{err}");
        }
    }

    #[test]
    fn unknown_mode_lists_the_valid_ones() {
        let err = Mode::parse("nope").unwrap_err();
        for mode in Mode::ALL {
            assert!(err.message.contains(mode.name()), "{err}");
        }
    }
}
