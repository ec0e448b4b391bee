"""Build the probe against one burn source, in its own folder, cached: what
`upgrade-check` builds each side with and `fuzz --burn` fuzzes another burn with.

The committed `Cargo.toml`, `Cargo.lock` and `rust_probe/` are never touched:
each side gets a folder under `~/.cache/burn-torch-diff/upgrade/` holding a
copy of the probe whose burn dependency is rewritten, plus a copy of the
committed lock (cargo adjusts only what the other burn needs). The package is
renamed there (`rust_probe_upgrade`) so its library never lands on the main
build's file in the shared target directory, which lets the burn crates the
main build compiled be reused. A build is keyed by what went into it (source,
probe sources, lock, rustc, profile) and reused while that key holds.

A side that is what the installed probe (`runner._probe`) already is, is not
built at all: the same burn release, every burn crate of the committed lock at
it, the same rustc and profile, and built from this checkout's sources (the
probe carries their digest, `build.rs` computes it as `sources_digest` does).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import tomli_w
from pydantic import ValidationError

from .atomic import write_text
from .burn_sources import BurnSource
from .errors import Infrastructure
from .model.upgrade import Build
from .paths import PROJECT_ROOT, cache_dir, target_dir

PROFILE = "release"
# Bump when the way a side is built changes, so cached builds are redone.
RECIPE = 5
MAX_ERRORS = 5


def _rustc_version() -> str:
    try:
        return subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    except FileNotFoundError:
        raise Infrastructure("rustc is not installed: install Rust (1.95 or newer)") from None


def _probe_files(root: Path) -> list[str]:
    """The probe's source files, as `/`-separated paths relative to the workspace `root`,
    in the order of their UTF-8 bytes: the Cargo manifests, the lock, `build.rs` and every
    `*.rs` under `rust_probe/src`. `rust_probe/build.rs` lists the same."""
    fixed = ["Cargo.toml", "Cargo.lock", "rust_probe/Cargo.toml", "rust_probe/build.rs"]
    tree = [path.relative_to(root).as_posix() for path in (root / "rust_probe" / "src").rglob("*.rs") if path.is_file()]
    return sorted(fixed + tree, key=_utf8)


def _utf8(text: str) -> bytes:
    # A file name that is not UTF-8 makes this digest differ from build.rs's (which
    # reads it lossily): the side is then built, never wrongly reused.
    return text.encode("utf-8", "surrogateescape")


FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3


def fnv1a64(data: bytes, value: int = FNV_OFFSET) -> int:
    """64-bit FNV-1a of `data`, continuing from `value`."""
    for byte in data:
        value = ((value ^ byte) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return value


def sources_digest(root: Path = PROJECT_ROOT) -> str:
    """The digest of the probe's sources that `rust_probe/build.rs` builds into the probe
    (`build_info()["sources"]`): 64-bit FNV-1a over, for each file of `_probe_files` in
    that order, its relative path and then its bytes, each preceded by its length (8 bytes,
    little-endian) so that no bytes can move across a file boundary unnoticed; 16 hex
    digits. A file that cannot be read is left out, as build.rs leaves it out.

    FNV-1a, not SHA-256: this detects a change, it is no defence against a forged
    collision, and it must be as easy to compute in build.rs, which has no hash crate."""
    value = FNV_OFFSET
    for relative in _probe_files(root):
        try:
            content = (root / relative).read_bytes()
        except OSError:
            continue
        for field in (_utf8(relative), content):
            value = fnv1a64(len(field).to_bytes(8, "little") + field, value)
    return f"{value:016x}"


def build_key(source: BurnSource) -> str:
    digest = hashlib.sha256()
    digest.update(f"{RECIPE}\n{source.label}\n{_rustc_version()}\n{PROFILE}\n{sys.version_info[:2]}\n".encode())
    digest.update(sources_digest().encode())
    if source.path:
        # A local checkout changes under us: let cargo decide what to rebuild.
        digest.update(str(time.time_ns()).encode())
    return digest.hexdigest()[:16]


def _manifest_for(source: BurnSource) -> str:
    """The probe's manifest for one side, written by a TOML writer (a path is any
    text a folder name can hold: quotes, line breaks, emoji): burn from that
    source, the package renamed, the binaries left out."""
    manifest = tomllib.loads((PROJECT_ROOT / "rust_probe" / "Cargo.toml").read_text())
    burn = manifest.get("dependencies", {}).get("burn")
    if not isinstance(burn, dict) or "version" not in burn:
        raise Infrastructure("rust_probe/Cargo.toml: could not find its `burn = { version = ... }` dependency")
    del burn["version"]
    where = {"version": f"={source.version}"} if source.version else {"path": str(source.path)}
    manifest["dependencies"]["burn"] = {**where, **burn}
    manifest["package"]["name"] = "rust_probe_upgrade"
    if "lib" in manifest:
        manifest["lib"]["name"] = "rust_probe_upgrade"
    # Only the library is built; the binaries' `use rust_probe::...` must not be compiled.
    manifest.pop("bin", None)
    return tomli_w.dumps(manifest)


def _prepare(folder: Path, source: BurnSource) -> None:
    probe = folder / "rust_probe"
    if probe.exists():
        shutil.rmtree(probe)
    shutil.copytree(PROJECT_ROOT / "rust_probe" / "src", probe / "src", ignore=shutil.ignore_patterns("bin"))
    shutil.copy2(PROJECT_ROOT / "rust_probe" / "build.rs", probe / "build.rs")
    (probe / "Cargo.toml").write_text(_manifest_for(source))
    shutil.copy2(PROJECT_ROOT / "Cargo.toml", folder / "Cargo.toml")
    shutil.copy2(PROJECT_ROOT / "Cargo.lock", folder / "Cargo.lock")


def _first_errors(stderr: str) -> list[str]:
    """The first compiler errors of a `--message-format short` build (one line
    each, `file:line:col: error...`), or, when cargo failed before compiling
    (e.g. a feature the release lacks), the first lines of its explanation."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    chosen = [line for line in lines if re.match(r"^\S+:\d+:\d+: error", line)]
    if not chosen:
        chosen = [
            line
            for line in lines
            if not re.match(r"(Updating|Compiling|Downloaded|Downloading|Locking|Adding|Blocking|warning)\b", line)
        ]
    return [error if len(error) <= 300 else error[:297] + "..." for error in chosen[:MAX_ERRORS]]


def _burn_family(lock: Path) -> dict[str, str]:
    text = lock.read_text() if lock.exists() else ""
    found = re.findall(
        r'\[\[package\]\]\nname = "(burn(?:-[a-z0-9-]+)?)"\nversion = "([^"]+)"\nsource = "registry', text
    )
    return dict(sorted(found))


def _pin_family(folder: Path, version: str, env: dict[str, str]) -> list[str]:
    """Move every burn-* crate of the lock to `version` too.

    burn's crates depend on each other with caret requirements, so `burn =
    "=0.22.0"` alone still compiles 0.22.1's burn-core, burn-autodiff, ...: the
    release would not be the one under test. cargo moves a crate only when no
    other locked crate needs the newer one, so this asks for all of them at
    once, round after round, until nothing moves. Crates that cannot be moved
    (e.g. one the release does not have) are returned as warnings."""
    for _ in range(10):
        behind = {n: v for n, v in _burn_family(folder / "Cargo.lock").items() if v != version}
        if not behind:
            return []
        specs = [arg for name, current in behind.items() for arg in ("-p", f"{name}@{current}")]
        out = subprocess.run(
            ["cargo", "update", *specs, "--precise", version],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        after = _burn_family(folder / "Cargo.lock")
        if all(after.get(name) == current for name, current in behind.items()):
            break  # nothing moved
    behind = {n: v for n, v in _burn_family(folder / "Cargo.lock").items() if v != version}
    last = out.stderr.strip().splitlines()[-1] if behind and out.stderr.strip() else ""
    return [f"{name} stays at {current}" + (f": {last}" if last else "") for name, current in behind.items()]


def installed_probe(source: BurnSource) -> Build | None:
    """The installed probe (`runner._probe`) as the build of `source`, if it is that build: `source`
    is its burn release, every burn crate of the committed lock is at that release (as a side's
    build pins them), and it was built by this rustc, in this profile, from this checkout's
    sources. None otherwise: a probe built before the sources were last edited, no installed
    probe, or a local checkout (it may have changed since any build)."""
    if source.version is None:
        return None
    try:
        probe = importlib.import_module(f"{__package__}._probe")
    except ImportError:
        return None
    location: str | None = getattr(probe, "__file__", None)
    info = probe.build_info()
    family = _burn_family(PROJECT_ROOT / "Cargo.lock")
    same = (
        info.get("burn") == source.version
        and set(family.values()) == {source.version}
        and info.get("profile") == PROFILE
        and info.get("rustc") == _rustc_version()
        and info.get("sources") == sources_digest()
    )
    if location is None or not same:
        return None
    return Build(
        source=source.label,
        ok=True,
        key=build_key(source),
        folder=str(Path(location).parent),
        probe=location,
        burn=source.version,
        burn_family=family,
        installed=True,
    )


def build(source: BurnSource, progress: Callable[[str], None] = lambda text: None) -> Build:
    """The probe built against `source`: the installed probe when it is that build
    (`installed_probe`), else the cached build while its key holds, else a new build."""
    installed = installed_probe(source)
    if installed is not None:
        return installed
    folder = cache_dir() / "upgrade" / source.slug
    key = build_key(source)
    record_path = folder / "build.json"
    if record_path.exists():
        try:
            previous: Build | None = Build.model_validate_json(record_path.read_text())
        except (OSError, ValidationError):
            previous = None
        if previous and previous.key == key and (not previous.ok or Path(previous.probe or "").is_file()):
            previous.cached = True
            return previous

    folder.mkdir(parents=True, exist_ok=True)
    _prepare(folder, source)
    env = {**os.environ, "CARGO_TARGET_DIR": str(target_dir()), "PYO3_PYTHON": sys.executable}
    command = [
        "cargo",
        "rustc",
        "--release",
        "-p",
        "rust_probe_upgrade",
        "--lib",
        "--features",
        "python",
        "--crate-type",
        "cdylib",
        "--message-format",
        "short",
    ]
    started = time.monotonic()
    warnings: list[str] = []
    if source.version:
        progress(f"pinning every burn crate in {folder / 'Cargo.lock'} to {source.version}")
        warnings = _pin_family(folder, source.version, env)
    progress(f"building the probe against burn {source.label} in {folder} (a cold build takes minutes)")
    try:
        out = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=3600)
    except FileNotFoundError:
        raise Infrastructure("cargo is not installed: install Rust (1.95 or newer)") from None
    except subprocess.TimeoutExpired:
        raise Infrastructure(f"the probe build against burn {source.label} took over an hour") from None
    seconds = time.monotonic() - started
    family = _burn_family(folder / "Cargo.lock")
    locked = family.get("burn")
    if source.version and locked != source.version:
        locked = None  # cargo never got as far as locking the requested release
    result = Build(
        source=source.label,
        ok=out.returncode == 0,
        key=key,
        folder=str(folder),
        burn=locked,
        seconds=round(seconds, 1),
        burn_family=family,
        warnings=warnings,
    )
    if result.ok:
        built = target_dir() / PROFILE / "librust_probe_upgrade.so"
        if not built.is_file():
            raise Infrastructure(f"cargo reported success but {built} is missing")
        probe = folder / "_probe.abi3.so"
        shutil.copy2(built, probe)
        result.probe = str(probe)
    else:
        result.errors = _first_errors(out.stderr)
        (folder / "build-stderr.txt").write_text(out.stderr)
    write_text(record_path, result.model_dump_json(indent=1) + "\n")
    return result
