"""Where things are: the checkout, its cases, and what the project builds
outside the checkout.

The cargo target directory is shared by `scripts/bootstrap` (same default),
the upgrade check and the tools, so a fresh clone reuses compiled crates.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = PROJECT_ROOT / "cases"
SCHEMAS_DIR = PROJECT_ROOT / "schemas"
PROBE_MANIFEST = PROJECT_ROOT / "rust_probe" / "Cargo.toml"


def cache_dir() -> Path:
    """`RUNNER_CACHE` if set, else `~/.cache/burn-torch-diff`."""
    return Path(os.environ.get("RUNNER_CACHE", Path.home() / ".cache" / "burn-torch-diff"))


def target_dir() -> Path:
    """`CARGO_TARGET_DIR` if set, else `~/.cache/burn-torch-diff/target`."""
    return Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "burn-torch-diff" / "target"))
