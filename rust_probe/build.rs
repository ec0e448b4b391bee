//! Records what went into this build so that every result can name it:
//! the burn version resolved in the lock file, rustc's version and the profile.
use std::path::{Path, PathBuf};
use std::process::Command;

fn find_lock(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join("Cargo.lock"))
        .find(|candidate| candidate.is_file())
}

/// The version of the `burn` package in a Cargo.lock, read without a TOML parser:
/// a `[[package]]` block whose `name = "burn"` line is followed by its `version` line.
fn burn_version_in(lock: &str) -> Option<String> {
    let mut in_burn = false;
    for line in lock.lines() {
        let line = line.trim();
        if line == "[[package]]" {
            in_burn = false;
        } else if line == "name = \"burn\"" {
            in_burn = true;
        } else if in_burn {
            if let Some(rest) = line.strip_prefix("version = \"") {
                return rest.strip_suffix('"').map(str::to_owned);
            }
        }
    }
    None
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let burn_version = match find_lock(&manifest_dir) {
        Some(lock) => {
            println!("cargo:rerun-if-changed={}", lock.display());
            std::fs::read_to_string(&lock)
                .ok()
                .and_then(|text| burn_version_in(&text))
                .unwrap_or_else(|| "unknown".into())
        }
        None => "unknown".into(),
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=PROBE_BURN_VERSION={burn_version}");
    println!("cargo:rustc-env=PROBE_RUSTC_VERSION={rustc_version}");
    println!("cargo:rustc-env=PROBE_BUILD_PROFILE={profile}");
    println!("cargo:rerun-if-changed=build.rs");
}
