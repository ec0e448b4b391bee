"""Sample results for the report tests.

`data/p10_results_1.json` and `data/p10_results_2.json` are two real, unedited
results documents written by `python3 -m runner check --json` on the same
x86_64 machine (2 cores, shared), one after the other: in the first, torch's
RSS grew by 1.96 MiB per 1000 steps, so three expectations do not hold; in the
second all 45 hold.

`data/p10_results_v2_400steps.json` is a real schema-2 document (`check
p10_ema --steps 400 --json`, after the hardening of issue 11: memory limits,
`partial`), unedited but for one case source, which cited a file outside this
repository and now cites `docs/p10-experiment.md`; the base the renderers' property tests mutate besides
the two above.

The helpers below derive TEST fixtures from them (a second machine, a later
night, an edited outcome); each says what it changes.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path

from runner import cli

DATA = Path(__file__).resolve().parent / "data"
SAMPLE_1 = DATA / "p10_results_1.json"
SAMPLE_2 = DATA / "p10_results_2.json"
SAMPLE_V2 = DATA / "p10_results_v2_400steps.json"


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def save(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


def shifted(doc: dict, days: float) -> dict:
    """TEST fixture: the same results, as if the run had started `days` later."""
    out = copy.deepcopy(doc)
    for key in ("started", "finished"):
        when = dt.datetime.fromisoformat(out["provenance"][key]) + dt.timedelta(days=days)
        out["provenance"][key] = when.isoformat(timespec="seconds")
    return out


def on_aarch64(doc: dict) -> dict:
    """TEST fixture: the same results with only the provenance rewritten to
    another machine (an aarch64 host). Not a real aarch64 run."""
    out = copy.deepcopy(doc)
    out["provenance"].update(cpu="Neoverse-N1 (test fixture)", machine="aarch64", cores=4, system="Linux 6.1.0-test")
    return out


def only_passing(doc: dict) -> dict:
    """TEST fixture: the document without its failing expectations."""
    out = copy.deepcopy(doc)
    out["expectations"] = [e for e in out["expectations"] if e["passed"]]
    return out


def report(*args: str) -> int:
    return cli.main(["report", *map(str, args)])


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def with_case_info(doc: dict) -> dict:
    """TEST fixture: a schema-1 document migrated to schema 2, with the case info
    that `check` writes today (from `cases/p10_ema.toml`) added: what a results
    file written after the case files gained `[about]` carries."""
    from runner.cases import load_selected
    from runner.results import case_info, validate

    current = json.loads(validate(doc, "sample").model_dump_json())
    current["cases"] = [json.loads(case_info(c).model_dump_json()) for c in load_selected(["p10_ema"])]
    return current


def with_burn(doc: dict, version: str) -> dict:
    """TEST fixture: the same results, as if run against another burn version
    (provenance and every burn run's reported version rewritten). Not a real run."""
    out = copy.deepcopy(doc)
    out["provenance"]["burn"] = version
    for run in out["runs"]:
        if run["framework"] == "burn":
            run.setdefault("versions", {})["burn"] = version
    return out


def _ref(text: str) -> dict:
    framework, mode = text.split("/")
    return {"framework": framework, "mode": mode}


def _observation(label: str, values: list, grad: list | None, tracked: bool, requires_grad: bool) -> dict:
    return {
        "label": label,
        "tensor": label,
        "op_index": 3,
        "iteration": None,
        "shape": [2, 3],
        "values": values,
        "grad": grad,
        "flags": {"tracked": tracked, "requires_grad": requires_grad, "raw": {}},
    }


def _program_run(framework: str, mode: str, outcome: str = "ok", observations=(), failure=None) -> dict:
    return {
        "case": "prog_layout",
        "framework": framework,
        "mode": mode,
        "outcome": outcome,
        "versions": {"burn": "0.22.1"} if framework == "burn" else {"torch": "2.15.0"},
        "params": {},
        "step_ms": [],
        "checkpoints": [],
        "rss_samples": [],
        "wall_s": 0.2,
        "failure": failure,
        "observations": list(observations),
        "metrics": {"steps_completed": 0, "reference_window": [1, 1], "last_window": [1, 1], "tracked": None},
    }


def _value_verdict(relation: str, a: str, b: str, passed: bool, observed: dict) -> dict:
    return {
        "case": "prog_layout",
        "a": {"framework": "torch", "mode": a},
        "b": {"framework": "burn", "mode": b},
        "relation": relation,
        "property": "values",
        "expected": relation,
        "observed": observed,
        "passed": passed,
        "reason": "test fixture",
    }


def program_results() -> dict:
    """TEST fixture, written by hand: a schema-2 results document of a program
    case (kind `program`) as the program runner is specified to write it
    (docs/program-ir.md): per variant the source (the report renders its PyTorch
    and burn code; the `no_grad` variant's source does not parse, so it shows as is),
    runs with observations and a failure, value verdicts with errors. No real
    program run made these numbers."""
    torch_out = [0.5, -1.25, 2.0, 0.125, 1.5, -0.75]
    burn_copied = [0.25, -1.0, 1.75, 0.5, 1.25, -0.5]
    source = 'lin = Linear(4, 3, layout="copied")\nx = input(2, 4)\nout = lin(x)\nobserve(out)'
    return {
        "schema_version": 2,
        "provenance": {
            "burn": "0.22.1",
            "torch": "2.15.0",
            "python": "3.11.7",
            "cpu": "AMD EPYC",
            "machine": "x86_64",
            "system": "Linux 6.18.44-fc-v657",
            "cores": 2,
            "git_commit": "0000000000000000000000000000000000000000",
            "started": "2026-11-30T07:00:00+00:00",
            "finished": "2026-11-30T07:00:05+00:00",
        },
        "summary": {"runs": 5, "expectations": 3, "passed": 3, "failed": 0},
        "cases": [
            {
                "name": "prog_layout",
                "kind": "program",
                "description": "A Linear layer ported with its weight buffer copied, not transposed.",
                "about": {
                    "title": "A Linear weight copied as is lands transposed in burn",
                    "torch": "`nn.Linear` keeps its weight as `[out, in]`.",
                    "burn": "burn's `Linear` keeps `[in, out]`: a buffer copied as is gives other outputs.",
                    "fix": "Transpose the weight when loading it: `weight.transpose()`.",
                    "sources": ["docs/program-ir.md"],
                },
                "pairs": [
                    {"a": _ref("torch/copied"), "b": _ref("burn/copied"), "differ": ["values"], "reason": "layout"},
                    {"a": _ref("torch/copied"), "b": _ref("burn/transposed"), "same": ["values"], "reason": "fix"},
                ],
                "programs": {
                    "copied": {"source": source},
                    "no_grad": {"source": "with no_grad():\n    out = lin(x)"},
                },
            }
        ],
        "runs": [
            _program_run("torch", "copied", observations=[_observation("out", torch_out, None, True, False)]),
            _program_run("burn", "copied", observations=[_observation("out", burn_copied, None, False, False)]),
            _program_run("burn", "transposed", observations=[_observation("out", torch_out, None, True, False)]),
            _program_run("torch", "no_grad", observations=[_observation("out", torch_out, None, False, False)]),
            _program_run(
                "burn",
                "no_grad",
                outcome="unsupported",
                failure={
                    "op_index": 2,
                    "op": "no_grad",
                    "line": 1,
                    "message": "burn has no no_grad scope; use without_autodiff",
                    "type": "unsupported",
                },
            ),
        ],
        "expectations": [
            _value_verdict(
                "differ",
                "copied",
                "copied",
                True,
                {
                    "a": {"shape": [2, 3], "first": torch_out[:3]},
                    "b": {"shape": [2, 3], "first": burn_copied[:3]},
                    "max_abs_error": 0.375,
                    "max_rel_error": 3.0,
                    "first_index": [0, 0],
                    "label": "out",
                },
            ),
            _value_verdict(
                "same",
                "copied",
                "transposed",
                True,
                {
                    "a": {"shape": [2, 3], "first": torch_out[:3]},
                    "b": {"shape": [2, 3], "first": torch_out[:3]},
                    "max_abs_error": 0.0,
                    "max_rel_error": 0.0,
                    "first_index": None,
                    "label": "out",
                },
            ),
            {
                "case": "prog_layout",
                "a": {"framework": "torch", "mode": "no_grad"},
                "b": {"framework": "burn", "mode": "no_grad"},
                "relation": "differ",
                "property": "outcome",
                "expected": "differ",
                "observed": {"a": "ok", "b": "unsupported"},
                "passed": True,
                "reason": "burn has no no_grad scope",
            },
        ],
    }
