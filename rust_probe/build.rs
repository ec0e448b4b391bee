//! Records what went into this build so that every result can name it:
//! the burn version resolved in the lock file, rustc's version, the profile,
//! and a digest of the probe's sources (`runner.probe_build.sources_digest`
//! computes the same from a checkout, to know whether the installed probe was
//! built from it).
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

/// The files the sources digest covers, relative to the workspace root: these four,
/// and every `*.rs` under `rust_probe/src` (the list of `runner.probe_build._probe_files`).
const FIXED_SOURCES: [&str; 4] = [
    "Cargo.toml",
    "Cargo.lock",
    "rust_probe/Cargo.toml",
    "rust_probe/build.rs",
];
const SOURCE_TREE: &str = "rust_probe/src";

/// 64-bit FNV-1a. The digest only detects that the sources changed (nobody forges a
/// collision against it), and it must be computed the same way in Python; sha2 would
/// add crates to every cold build for no gain here.
struct Fnv1a(u64);

impl Fnv1a {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn update(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(Self::PRIME);
        }
    }

    /// A field preceded by its length (8 bytes, little-endian), so that no two
    /// different sequences of fields hash the same byte stream.
    fn field(&mut self, bytes: &[u8]) {
        self.update(&(bytes.len() as u64).to_le_bytes());
        self.update(bytes);
    }
}

/// Every `*.rs` file under `root/relative`, as `/`-separated paths relative to `root`.
/// A folder that cannot be read adds nothing; symbolic links to folders are not followed.
fn rust_files(root: &Path, relative: &str, into: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(root.join(relative)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{relative}/{name}");
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            rust_files(root, &path, into);
        } else if name.ends_with(".rs") && entry.path().is_file() {
            into.push(path);
        }
    }
}

/// FNV-1a over, for each source file in the order of its relative path's UTF-8 bytes,
/// that path and then the file's bytes, each as a length-prefixed field; 16 hex digits.
/// A file that is missing or cannot be read is left out (the upgrade folders' copy of
/// the probe has no `src/bin`): this never fails the build.
fn sources_digest(root: &Path) -> String {
    let mut files: Vec<String> = FIXED_SOURCES.iter().map(|&file| file.to_owned()).collect();
    rust_files(root, SOURCE_TREE, &mut files);
    files.sort(); // `String`'s order is its UTF-8 bytes' order
    let mut hash = Fnv1a(Fnv1a::OFFSET);
    for relative in files {
        if let Ok(bytes) = std::fs::read(root.join(&relative)) {
            hash.field(relative.as_bytes());
            hash.field(&bytes);
        }
    }
    format!("{:016x}", hash.0)
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
    // The workspace root: the checkout, or an upgrade side's folder (same layout).
    let root = manifest_dir.parent().unwrap_or(&manifest_dir);
    println!("cargo:rustc-env=PROBE_BURN_VERSION={burn_version}");
    println!("cargo:rustc-env=PROBE_RUSTC_VERSION={rustc_version}");
    println!("cargo:rustc-env=PROBE_BUILD_PROFILE={profile}");
    println!("cargo:rustc-env=PROBE_SOURCES={}", sources_digest(root));
    // Whatever the digest covers reruns this script when it changes (a folder: anything in it).
    for relative in FIXED_SOURCES.iter().chain([&SOURCE_TREE]) {
        println!("cargo:rerun-if-changed={}", root.join(relative).display());
    }
}
