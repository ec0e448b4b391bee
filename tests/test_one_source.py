"""Every fact written once: the torch pin lives in pyproject.toml only, the burn
dependency in rust_probe/Cargo.toml only, the operation table in runner/contract/
(the probe's side: tests/test_contract.py)."""

from __future__ import annotations

import re
import tomllib

from runner.contract import burn
from runner.frameworks import ADAPTERS
from runner.paths import PROJECT_ROOT
from runner.program import data, syntax
from runner.program.rust.crate import render

PROGRAM = data.materialize(syntax.parse("a = param(2)\nobserve(a)", where="test"), seed=0)


def test_the_torch_pin_is_written_once():
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    pins = [d for d in pyproject["project"]["dependencies"] if d.startswith("torch")]
    assert pins == ["torch==2.15.0"]
    for path in ("scripts/bootstrap", ".ci/run", "runner/frameworks.py"):
        text = (PROJECT_ROOT / path).read_text()
        assert not re.search(r"torch\s*==\s*\d", text), f"{path} repeats the torch pin"
    assert "torch==2.15.0" in ADAPTERS[("p10", "torch")].install_hint  # read from the installed metadata


def test_the_burn_dependency_is_written_once():
    """rust_probe/Cargo.toml names burn's version and features; the reproducers and the upgrade
    check's builds read them from there."""
    dependency = burn.dependency()
    assert dependency.version == "0.22.1" and "autodiff" in dependency.features
    for path in sorted((PROJECT_ROOT / "runner").rglob("*.py")):
        text = path.read_text()
        quoted = re.escape(dependency.version)
        assert not re.search(rf"""['"]=?{quoted}['"]""", text), f"{path} writes the burn version"
    assert dependency.toml_line() in render(PROGRAM)["Cargo.toml"]
