//! The burn side of the torch-vs-burn differential runner.
//!
//! [`p10::run`] runs the p10 EMA loop on burn's Flex CPU backend with autodiff
//! and returns what it measured as plain data. The `p10` binary and, with the
//! `python` feature, the `runner._probe` extension module both call it.
//!
//! [`program`] is the burn program interpreter: it runs the program IR of
//! `docs/program-ir.md` (the `program` binary and `run_program` in Python).

pub mod config;
#[rustfmt::skip]
pub mod contract;
pub mod p10;
pub mod panic_capture;
pub mod program;
pub mod record;
pub mod rss;

#[cfg(feature = "python")]
mod python;

/// What went into this build, recorded by `build.rs`.
pub mod build_info {
    /// The burn version resolved in the lock file this crate was built with.
    pub const BURN_VERSION: &str = env!("PROBE_BURN_VERSION");
    pub const RUSTC_VERSION: &str = env!("PROBE_RUSTC_VERSION");
    /// Cargo's profile: `release` or `debug`.
    pub const PROFILE: &str = env!("PROBE_BUILD_PROFILE");
    pub const PROBE_VERSION: &str = env!("CARGO_PKG_VERSION");
    /// A digest of the probe's sources (the Cargo manifests, the lock, `build.rs` and
    /// `src/**/*.rs`), as `runner.probe_build.sources_digest` computes it from a checkout.
    pub const SOURCES: &str = env!("PROBE_SOURCES");
}
