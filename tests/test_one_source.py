"""Every fact written once: the p10 modes and defaults live in the probe
(`rust_probe/src/config.rs`) and in one Python table each, held together here;
the torch pin lives in pyproject.toml only."""

from __future__ import annotations

import re
import tomllib

from runner import _probe
from runner.frameworks import ADAPTERS, P10_MODES, adapter_for
from runner.model.case import P10Params
from runner.paths import PROJECT_ROOT


def test_the_p10_modes_are_the_probes():
    assert list(P10_MODES) == list(_probe.MODES)
    assert adapter_for("p10", "burn").modes == tuple(_probe.MODES)
    # torch has no without_autodiff(): its modes are the rest, in the same order
    assert adapter_for("p10", "torch").modes == tuple(m for m in _probe.MODES if "without" not in m)


def test_the_p10_defaults_are_the_probes():
    defaults = dict(_probe.P10_DEFAULTS)
    params = P10Params().model_dump()
    assert params["checkpoints"] == list(defaults.pop("checkpoints"))
    for key, value in defaults.items():
        assert params[key] == value, key
    assert set(params) == set(defaults) | {"checkpoints"}


def test_the_torch_pin_is_written_once():
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    pins = [d for d in pyproject["project"]["dependencies"] if d.startswith("torch")]
    assert pins == ["torch==2.15.0"]
    for path in ("scripts/bootstrap", ".ci/run", "runner/frameworks.py"):
        text = (PROJECT_ROOT / path).read_text()
        assert not re.search(r"torch\s*==\s*\d", text), f"{path} repeats the torch pin"
    assert "torch==2.15.0" in ADAPTERS[("p10", "torch")].install_hint  # read from the installed metadata


def test_the_program_operations_are_the_probes():
    from runner.program.ops import OPS

    assert set(_probe.PROGRAM_OPS) == set(OPS)
    for name, spec in OPS.items():
        assert spec.supports("burn") == (_probe.PROGRAM_OPS[name] == "supported"), name
    assert _probe.PROGRAM_IR_VERSION == 1


def test_the_case_readme_shows_the_generated_operation_table():
    from runner.program.ops import attrs_table, markdown_table

    readme = (PROJECT_ROOT / "cases" / "README.md").read_text()
    assert markdown_table() in readme, "cases/README.md: paste `python3 -m runner.program.ops`"
    assert attrs_table() in readme
