"""The burn program interpreter through Python: result shape, batches, bad IR,
and the constants the Python side holds its tables against."""

import json
import math

import pytest

from runner import _probe


def stmt(index, op, args, out=None, **attrs):
    return {"index": index, "line": index + 1, "op": op, "args": args, "out": out, "attrs": attrs}


def program(tensors, body, settings=None):
    return json.dumps(
        {
            "ir_version": _probe.PROGRAM_IR_VERSION,
            "tensors": tensors,
            "modules": [],
            "body": body,
            "settings": settings or {"checkpoints": [], "rss_every": 0},
        }
    )


def tensor(name, role, shape, data):
    return {"name": name, "role": role, "shape": shape, "data": data}


LOSS = program(
    [tensor("w", "param", [2], [1.0, -2.0]), tensor("x", "input", [2], [0.0, -1.0])],
    [
        stmt(0, "mul", ["w", "w"], "ww"),
        stmt(1, "sum", ["ww"], "loss"),
        stmt(2, "backward", ["loss"]),
        stmt(3, "log", ["x"], "lx"),
        stmt(4, "observe", ["w"]),
        stmt(5, "observe", ["lx"], label="log"),
        stmt(6, "observe", ["loss"], values=False),
    ],
)

PANICS = program(
    [tensor("a", "input", [2, 3], [1.0] * 6), tensor("b", "input", [2, 3], [1.0] * 6)],
    [stmt(0, "matmul", ["a", "b"], "c")],
)


def test_result_has_the_contract_shape_and_keeps_non_finite_values():
    result = _probe.run_program(LOSS)
    assert result["outcome"] == "ok" and result["failure"] is None
    assert set(result) == {
        "outcome",
        "failure",
        "observations",
        "step_ms",
        "checkpoints",
        "rss_samples",
        "setup_ms",
    }
    w, log, loss = result["observations"]
    assert (w["label"], w["tensor"], w["op_index"], w["iteration"]) == ("w", "w", 4, None)
    assert w["values"] == [1.0, -2.0] and w["grad"] == [2.0, -4.0]
    assert w["flags"] == {
        "tracked": True,
        "requires_grad": True,
        "raw": {"is_tracked": True, "is_require_grad": True, "is_autodiff": True},
    }
    assert log["values"][0] == -math.inf and math.isnan(log["values"][1])
    assert loss["shape"] == [1] and loss["values"] is None and loss["grad"] is None


def test_a_panic_in_a_batch_does_not_affect_the_others():
    results = _probe.run_programs([LOSS, PANICS, LOSS])
    assert [r["outcome"] for r in results] == ["ok", "panic", "ok"]
    failure = results[1]["failure"]
    assert failure["op"] == "matmul" and failure["op_index"] == 0
    assert failure["location"]
    assert results[0]["observations"][0]["grad"] == results[2]["observations"][0]["grad"]


def test_bad_ir_raises_value_error_naming_the_program_and_field():
    with pytest.raises(ValueError, match=r"^ir_json: tensors\[0\]\.data: 1 values"):
        _probe.run_program(program([tensor("x", "input", [2], [1.0])], []))
    bad = program([], [stmt(0, "frobnicate", [])])
    with pytest.raises(ValueError, match=r"^ir_jsons\[1\]: body\[0\] \(index 0, line 1"):
        _probe.run_programs([LOSS, bad])
    with pytest.raises(ValueError, match="ir_json: must be a str"):
        _probe.run_program(b"{}")


def test_timed_loop_progress_and_stop():
    body = [
        stmt(0, "repeat", [], count=6),
    ]
    body[0]["body"] = [stmt(1, "neg", ["x"], "x"), stmt(2, "observe", ["x"])]
    text = program([tensor("x", "input", [1], [1.0])], body, {"checkpoints": [2, 6], "rss_every": 3, "track": "x"})
    seen = []
    result = _probe.run_program(text, progress=seen.append)
    assert [c["step"] for c in seen] == [2, 6] == [c["step"] for c in result["checkpoints"]]
    assert seen[0]["tracked"] is False and seen[0]["flags"]["is_autodiff"] is True
    assert len(result["step_ms"]) == 6
    assert [s[0] for s in result["rss_samples"]] in ([3, 6], [])
    assert [o["iteration"] for o in result["observations"]] == [2, 6]
    assert result["observations"][-1]["values"] == [1.0]

    def stop(checkpoint):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _probe.run_program(text, progress=stop)


def test_unsupported_ops_are_marked():
    assert _probe.PROGRAM_OPS["no_grad"] == "unsupported"
    assert _probe.PROGRAM_OPS["retain_grad"] == "unsupported"
    assert _probe.PROGRAM_OPS["without_autodiff"] == "supported"
    assert set(_probe.PROGRAM_OPS.values()) == {"supported", "unsupported"}
    result = _probe.run_program(program([tensor("x", "input", [1], [1.0])], [stmt(0, "retain_grad", ["x"])]))
    assert result["outcome"] == "unsupported"
    assert result["failure"]["op"] == "retain_grad"
