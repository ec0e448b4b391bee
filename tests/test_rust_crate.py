"""`cargo test` of rust_probe (the loop's own tests on small sizes), from pytest,
so that the README's one test command covers both halves."""

import os
import subprocess
from pathlib import Path

import pytest

from runner.paths import target_dir

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.cargo
def test_cargo_test_passes():
    env = dict(os.environ)
    env.setdefault("CARGO_TARGET_DIR", str(target_dir()))
    out = subprocess.run(
        ["cargo", "test", "--release", "-p", "rust_probe", "--locked"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    assert "test result: ok" in out.stdout
    # The probe really ran the loop tests, not zero of them.
    assert "target_panics_in_backward_with_the_consumed_tape_message ... ok" in out.stdout
