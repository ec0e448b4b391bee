"""The contract between Python and Rust is written once (`runner/contract/`) and the
probe's side is generated from it or checked against it here:

- the generated files (`rust_probe/src/contract.rs`, the documentation tables) are
  what `python3 -m runner.contract` writes;
- the probe in use was built from this contract (its digest), so its operation table,
  modes and limits are these;
- what the probe returns (`rust_probe/src/record.rs`) fits the Python models that read
  it (`RawRun`, `InterpreterResult`): every field Rust writes is one the model reads,
  with a type the model accepts, and every field the model requires is one Rust writes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from runner import _probe
from runner.contract import generated, limits, p10, rust
from runner.contract.ops import OPS
from runner.model.case import P10Params
from runner.model.results import InterpreterResult, RawRun
from runner.paths import PROJECT_ROOT


def test_the_generated_files_are_what_the_contract_writes():
    stale = [str(p.relative_to(PROJECT_ROOT)) for p in generated.check()]
    assert stale == [], f"stale generated files {stale}: run `python3 -m runner.contract`"


def test_the_check_command_names_a_stale_file(tmp_path, monkeypatch):
    target = tmp_path / "contract.rs"
    target.write_text("// an old contract\n")
    monkeypatch.setattr(generated, "RUST_FILE", target)
    assert target in generated.check()
    out = subprocess.run(
        [sys.executable, "-m", "runner.contract", "--check"], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr  # the real tree is current
    bad = subprocess.run(
        [sys.executable, "-m", "runner.contract", "--frobnicate"], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_the_probe_was_built_from_this_contract():
    assert _probe.CONTRACT_DIGEST == rust.digest(), "rebuild the probe: scripts/bootstrap"
    assert _probe.PROGRAM_IR_VERSION == limits.IR_VERSION
    assert list(_probe.MODES) == [m.name for m in p10.MODES]
    assert set(_probe.PROGRAM_OPS) == set(OPS)
    for name, spec in OPS.items():
        assert spec.supports("burn") == (_probe.PROGRAM_OPS[name] == "supported"), name


def test_the_probe_refuses_what_the_contract_refuses():
    """A limit and an attribute range, as the probe applies them: both from the contract."""
    too_long = P10Params.model_fields["d_in"].metadata  # the model's bound is the contract's
    assert any(getattr(m, "le", None) == limits.MAX_DIM for m in too_long)
    with pytest.raises(ValueError, match=f"d_in: must be an integer from 1 to {limits.MAX_DIM}"):
        _probe.run_p10("detach", d_in=limits.MAX_DIM + 1, steps=1)
    ir = {
        "ir_version": limits.IR_VERSION,
        "tensors": [{"name": "w", "role": "param", "shape": [2], "data": [1.0, 2.0]}],
        "body": [{"index": 0, "line": 1, "op": "powi", "args": ["w"], "out": "y", "attrs": {"exponent": 65}}],
    }
    with pytest.raises(ValueError, match=r"attrs\.exponent: must be >= -64 and <= 64, got 65"):
        _probe.run_program(json.dumps(ir))
    ir["body"][0]["attrs"] = {"exponent": 2, "exponant": 3}
    with pytest.raises(ValueError, match=r"attrs\.exponant: unknown attribute for \"powi\" \(it takes: exponent\)"):
        _probe.run_program(json.dumps(ir))


def test_an_integer_lists_entries_are_range_checked_on_both_sides():
    """`sequential_lr`'s milestones: each entry within the table's bounds, in the IR's validation
    and in the probe (generated from the same table)."""
    milestones = OPS["sequential_lr"].attr("milestones")
    assert milestones is not None and milestones.check([0, 5]) == [0, 5]
    with pytest.raises(ValueError, match=r"`milestones`: entries must be >= 0 and <= 10000000, not -1"):
        milestones.check([3, -1])
    ir = {
        "ir_version": limits.IR_VERSION,
        "tensors": [{"name": "w", "role": "param", "shape": [1], "data": [0.0]}],
        "body": [
            {"index": 0, "line": 1, "op": "sgd", "args": [], "out": "opt", "attrs": {"lr": 0.1}},
            {"index": 1, "line": 2, "op": "step_lr", "args": ["opt"], "out": "a", "attrs": {"step_size": 2}},
            {"index": 2, "line": 3, "op": "step_lr", "args": ["opt"], "out": "b", "attrs": {"step_size": 2}},
            {"index": 3, "line": 4, "op": "sequential_lr", "args": ["opt", "a", "b"], "out": "s", "attrs": {}},
        ],
    }
    ir["body"][3]["attrs"] = {"milestones": [-1]}
    with pytest.raises(ValueError, match=r"attrs\.milestones: must be a list of entries >= 0 and <= 10000000, got -1"):
        _probe.run_program(json.dumps(ir))
    ir["body"][3]["args"] = ["opt", "a", "w"]
    ir["body"][3]["attrs"] = {"milestones": [1]}
    with pytest.raises(ValueError, match=r"args\[2\]: no scheduler named \"w\" is bound before this statement"):
        _probe.run_program(json.dumps(ir))


def test_the_p10_defaults_are_the_contracts_on_both_sides():
    params = P10Params().model_dump()
    assert params["checkpoints"] == p10.default_checkpoints(p10.DEFAULTS["steps"])  # type: ignore[arg-type]
    for key, value in p10.DEFAULTS.items():
        assert params[key] == value, key
    result = _probe.run_p10("detach", steps=3, d_in=4, d_out=4, batch=2)
    assert [c["step"] for c in result["checkpoints"]] == [1, 3]  # the seed's checkpoints below 3, and 3


# ---- what the probe returns fits the models that read it ----------------------------------------


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = {**root["$defs"][name], **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _alternatives(schema: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    schema = _resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return [alt for option in schema[key] for alt in _alternatives(option, root)]
    if isinstance(schema.get("type"), list):
        rest = {k: v for k, v in schema.items() if k != "type"}
        return [{**rest, "type": t} for t in schema["type"]]
    if "const" in schema:
        return [{**schema, "enum": [schema["const"]]}]
    if "enum" in schema and "type" not in schema:
        return [{**schema, "type": "string"}]
    return [schema]


def _accepts(py: dict[str, Any], py_root: dict[str, Any], value: dict[str, Any], rs_root: dict[str, Any], at: str):
    """Every value the Rust alternative `value` allows is one the Python schema `py` accepts."""
    kind = value.get("type")
    candidates = [
        alt
        for alt in _alternatives(py, py_root)
        if alt.get("type") is None or alt.get("type") == kind or (kind == "integer" and alt.get("type") == "number")
    ]
    assert candidates, (
        f"{at}: Rust writes {kind}, the model accepts {[a.get('type') for a in _alternatives(py, py_root)]}"
    )
    if kind == "string" and "enum" in value:
        allowed = {v for alt in candidates if "enum" in alt for v in alt["enum"]}
        if all("enum" in alt for alt in candidates):
            missing = set(value["enum"]) - allowed
            assert not missing, f"{at}: Rust writes {sorted(missing)}, the model accepts {sorted(allowed)}"
    if kind == "object":
        _object_fits(candidates[0], py_root, value, rs_root, at)
    if kind == "array":
        target = candidates[0]
        if "prefixItems" in value:
            assert "prefixItems" in target, f"{at}: Rust writes a tuple, the model reads a list"
            assert len(value["prefixItems"]) == len(target["prefixItems"]), at
            for i, (r, p) in enumerate(zip(value["prefixItems"], target["prefixItems"])):
                _fits(p, py_root, r, rs_root, f"{at}[{i}]")
        elif "items" in value and "items" in target:
            _fits(target["items"], py_root, value["items"], rs_root, f"{at}[]")


def _fits(py: dict[str, Any], py_root: dict[str, Any], rs: dict[str, Any], rs_root: dict[str, Any], at: str) -> None:
    for value in _alternatives(rs, rs_root):
        _accepts(py, py_root, value, rs_root, at)


def _object_fits(
    py: dict[str, Any],
    py_root: dict[str, Any],
    rs: dict[str, Any],
    rs_root: dict[str, Any],
    at: str,
    envelope: frozenset[str] = frozenset(),
) -> None:
    py, rs = _resolve(py, py_root), _resolve(rs, rs_root)
    py_props = py.get("properties")
    for name, schema in rs.get("properties", {}).items():
        if py_props is None:
            extra = py.get("additionalProperties")
            assert isinstance(extra, dict), f"{at}.{name}: the model reads no such key"
            _fits(extra, py_root, schema, rs_root, f"{at}.{name}")
            continue
        assert name in py_props, f"{at}.{name}: Rust writes it, the model has no such field"
        _fits(py_props[name], py_root, schema, rs_root, f"{at}.{name}")
    if py_props is not None:
        written = set(rs.get("properties", {}))
        for name in py.get("required", []):
            assert name in written or name in envelope, f"{at}.{name}: the model requires it, Rust never writes it"


def _without_stopped(schema: dict[str, Any]) -> dict[str, Any]:
    """`stopped` is never returned: the probe re-raises the progress callback's exception instead."""
    text = json.dumps(schema).replace('"enum": ["stopped"]', '"enum": []').replace('"const": "stopped"', '"enum": []')
    data: dict[str, Any] = json.loads(text)
    return data


@pytest.mark.parametrize(
    ("record", "model", "envelope"),
    [
        ("ProgramResult", InterpreterResult, frozenset()),
        ("ProgramResult", RawRun, frozenset({"case", "framework", "mode"})),
        ("P10Result", RawRun, frozenset({"case", "framework", "mode"})),
    ],
)
def test_what_the_probe_returns_is_what_the_model_reads(record, model, envelope):
    rs = _without_stopped(json.loads(_probe.record_schemas()[record]))
    py = model.model_json_schema(mode="validation")
    _object_fits(py, py, rs, rs, record, envelope)


def test_the_comparison_catches_a_field_the_model_lacks():
    rs = {"type": "object", "properties": {"outcome": {"type": "string"}, "novel": {"type": "integer"}}}
    py = InterpreterResult.model_json_schema(mode="validation")
    with pytest.raises(AssertionError, match="novel: Rust writes it"):
        _object_fits(py, py, rs, rs, "Fake")
    rs = {"type": "object", "properties": {"outcome": {"enum": ["ok", "melted"], "type": "string"}}}
    with pytest.raises(AssertionError, match="melted"):
        _object_fits(py, py, rs, rs, "Fake")
