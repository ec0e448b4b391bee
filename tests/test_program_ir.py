"""The IR models: strict validation, JSON round trips, and the result model."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from pydantic import ValidationError

from runner.model.results import InterpreterResult, from_data
from runner.program.data import materialize
from runner.program.ir import Program, Settings, Stmt, same_values
from runner.program.syntax import parse

SOURCE = """\
w = param(4, 3)
lin = Linear(4, 3)
x = input(2, 4)
opt = sgd(lr=0.01)
ema = detach(lin.weight)
for i in range(3):
    h = lin(x)
    loss = mean(h * h) + sum(w)
    zero_grad(opt)
    backward(loss)
    step(opt)
    ema = ema * 0.9 + detach(lin.weight) * 0.1
    observe(ema, values=False)
observe(lin.weight)
"""


@pytest.fixture(scope="module")
def ir() -> dict[str, Any]:
    program = materialize(parse(SOURCE, where="t"), 0, Settings(checkpoints=[1, 3], rss_every=1, track="ema"))
    return json.loads(program.to_json())


def invalid(data: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        Program.model_validate(data)
    assert fragment in str(info.value), str(info.value)


def test_json_round_trip(ir):
    program = Program.from_json(json.dumps(ir))
    assert json.loads(program.to_json()) == ir
    assert Program.from_json(program.to_json(indent=2)) == program


def test_json_shape_matches_the_contract(ir):
    assert list(ir) == ["ir_version", "tensors", "modules", "body", "settings"]
    assert ir["ir_version"] == 2
    assert [(t["name"], t["role"], t["shape"], t.get("module")) for t in ir["tensors"]] == [
        ("w", "param", [4, 3], None),
        ("lin.weight", "param", [3, 4], "lin"),
        ("lin.bias", "param", [3], "lin"),
        ("x", "input", [2, 4], None),
    ]
    assert "module" not in ir["tensors"][0]
    assert ir["modules"] == [
        {"name": "lin", "kind": "linear", "attrs": {"d_in": 4, "d_out": 3, "bias": True, "layout": "transposed"}}
    ]
    first = ir["body"][0]
    assert first == {
        "index": 0,
        "line": 4,
        "op": "sgd",
        "args": [],
        "out": "opt",
        "attrs": {"lr": 0.01},
    }
    loop = ir["body"][2]
    assert loop["op"] == "repeat" and loop["attrs"] == {"count": 3, "var": "i"} and loop["out"] is None
    assert "body" in loop and "body" not in first
    assert ir["settings"] == {"checkpoints": [1, 3], "rss_every": 1, "track": "ema"}


def test_defaults_are_filled_omitted_ones_left_out_and_ints_become_floats(ir):
    data = copy.deepcopy(ir)
    data["body"][0]["attrs"] = {"lr": 1}
    data["body"][2]["attrs"] = {"count": 3}
    program = Program.model_validate(data)
    # sgd's momentum, dampening, ... are each framework's own when omitted: absent from the IR.
    assert program.body[0].attrs == {"lr": 1.0}
    assert isinstance(program.body[0].attrs["lr"], float)
    assert program.body[2].attrs == {"count": 3, "var": "_"}


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda d: d.update(extra=1), "Extra inputs are not permitted"),
        (lambda d: d.update(ir_version=1), "ir_version"),
        (lambda d: d["tensors"][0].update(dtype="f32"), "'float', 'int' or 'bool'"),
        (lambda d: d["tensors"][0].update(dtype="int"), "a param is a float tensor"),
        (lambda d: d["tensors"][3].update(dtype="int"), "not an integer"),
        (lambda d: d["tensors"][3].update(dtype="bool"), "is not 0 or 1"),
        (lambda d: d["tensors"][0].update(data=[math.nan] * 12), "finite number"),
        (lambda d: d["tensors"][0].update(data=[1e39] * 12), "not a finite float32"),
        (lambda d: d["tensors"][0].update(data=[1.0]), "data has 1 values; shape [4, 3] needs 12"),
        (lambda d: d["tensors"][0].update(shape=[0, 3]), "greater than or equal to 1"),
        (lambda d: d["tensors"][0].update(shape=[1, 1, 1, 1, 12]), "at most 4 items"),
        (lambda d: d["tensors"][0].update(shape=[4.0, 3]), "valid integer"),
        (lambda d: d["tensors"][0].update(shape=[]), "at least 1 item"),
        (lambda d: d["tensors"][0].update(role="buffer"), "only a module's tensors are buffers"),
        (lambda d: d["tensors"][0].update(role="state"), "'param', 'input' or 'buffer'"),
        (lambda d: d["tensors"][0].update(name="lin.weight"), "names a module's tensor (set `module`)"),
        (lambda d: d["tensors"][0].update(module="lin"), "must be named `lin.NAME`"),
        (lambda d: d["tensors"][3].update(name="w"), "declared twice"),
        (lambda d: d["tensors"][1].update(shape=[4, 3], data=[0.0] * 12), "expected [3, 4]"),
        (lambda d: d["tensors"].pop(2), "lin.bias' is missing"),
        (lambda d: d["modules"][0]["attrs"].update(layout="other"), "one of 'transposed', 'copied'"),
        (lambda d: d["modules"][0].update(layout="copied"), "Extra inputs are not permitted"),
        (lambda d: d["modules"][0].update(kind="lstm"), "unknown kind 'lstm'"),
        (lambda d: d["modules"][0]["attrs"].update(d_in=70000), "`d_in` must be >= 1 and <= 65536"),
        (lambda d: d["body"][0].update(op="adagrad"), "unknown op 'adagrad'"),
        (lambda d: d["body"][0].update(extra=True), "Extra inputs are not permitted"),
        (lambda d: d["body"][0]["attrs"].update(lr=math.inf), "finite"),
        (lambda d: d["body"][0]["attrs"].update(rate=1.0), "unknown attribute 'rate'"),
        (lambda d: d["body"][0]["attrs"].pop("lr"), "attribute `lr` is required"),
        (lambda d: d["body"][0].update(index=5), "expected 0 (pre-order numbering)"),
        (lambda d: d["body"][1].update(args=["nothing"]), "`nothing` is not declared or assigned anywhere"),
        (lambda d: d["body"][1].update(args=["h"]), "`h` is used before it is assigned"),
        (lambda d: d["body"][1].update(out="w"), "`w` is a param; it cannot be reassigned"),
        (lambda d: d["body"][1].update(out="x y"), "not a valid name"),
        (lambda d: d["body"][1].update(body=[]), "only blocks (repeat, no_grad) have a body"),
        (lambda d: d["body"][2].pop("body"), "a block needs a non-empty body"),
        (lambda d: d["body"][2]["attrs"].update(count=0), "`count` must be >= 1"),
        (lambda d: d["settings"].update(checkpoints=[3, 1]), "strictly increasing"),
        (lambda d: d["settings"].update(checkpoints=[1, 4]), "past the timed loop's 3"),
        (lambda d: d["settings"].update(track="nothing"), "not a tensor of the program"),
        (lambda d: d["settings"].update(rss_every=-1), "greater than or equal to 0"),
    ],
)
def test_invalid_ir_is_rejected(ir, edit, fragment):
    data = copy.deepcopy(ir)
    edit(data)
    invalid(data, fragment)


def test_checkpoints_need_a_timed_loop():
    program = materialize(parse("x = input(2)\nobserve(x)\n", where="t"), 0)
    data = program.model_dump()
    data["settings"]["checkpoints"] = [1]
    invalid(data, "needs a timed loop")


def test_stmt_walk_is_pre_order(ir):
    program = Program.model_validate(ir)
    assert [s.index for s in program.statements()] == list(range(len(list(program.statements()))))
    assert isinstance(program.body[0], Stmt)


RESULT: dict[str, Any] = {
    "outcome": "error",
    "failure": {"op_index": 7, "op": "backward", "line": 9, "iteration": 3, "message": "boom", "type": "RuntimeError"},
    "observations": [
        {
            "label": "ema",
            "tensor": "ema",
            "op_index": 9,
            "iteration": 2,
            "shape": [2],
            "values": [math.nan, math.inf],
            "grad": None,
            "flags": {"tracked": True, "requires_grad": False, "raw": {"is_tracked": True}},
        },
    ],
    "step_ms": [1.2, 1.1],
    "checkpoints": [
        {"step": 1, "ms_per_step": 1.1, "rss_bytes": 123, "rss_delta_mib": 7.2, "tracked": True, "flags": {}}
    ],
    "rss_samples": [[1, 7.1], [2, 7.2]],
    "setup_ms": 3.1,
}


def test_run_outcome_model():
    result = from_data(InterpreterResult, RESULT)
    assert result.failure is not None and result.failure.location is None
    assert same_values(result.observations[0].values, [math.nan, math.inf])
    for edit, fragment in [
        (lambda d: d.update(outcome="ok"), "a failure goes with every outcome but 'ok'"),
        (lambda d: d.update(outcome="crash"), "'ok', 'panic', 'error' or 'unsupported'"),
        (lambda d: d["observations"][0].update(extra=1), "Extra inputs"),
    ]:
        data = copy.deepcopy(RESULT)
        edit(data)
        with pytest.raises(ValidationError, match=fragment):
            from_data(InterpreterResult, data)


def test_same_values():
    assert same_values([1.0, math.nan], [1.0, math.nan])
    assert not same_values([1.0], [1.0, 2.0])
    assert not same_values([1.0], None)
    assert same_values(None, None)
