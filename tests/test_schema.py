"""One schema from producer to reader: the committed JSON Schema is the one the
model generates, a fresh results file validates against it, and documents of
the previous schema version (results files, a history entry) still load and
compare."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from report_fixtures import DATA, SAMPLE_1, SAMPLE_2, report, shifted

from runner import cli
from runner.model.results import SCHEMA_VERSION, json_schema
from runner.paths import SCHEMAS_DIR
from runner.results import dump, load_results

SCHEMA = SCHEMAS_DIR / "results.schema.json"
HISTORY_V1 = DATA / "history-v1"


def test_the_committed_schema_is_the_generated_one():
    committed = json.loads(SCHEMA.read_text())
    assert committed == json.loads(json.dumps(json_schema())), (
        "schemas/results.schema.json is stale: run `python3 -m runner.model` and commit it"
    )
    jsonschema.Draft202012Validator.check_schema(committed)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real results file: `check` on a small slice of p10 (real torch, real probe). The
    command runs in this process (`cli.main`, as `python3 -m runner` does; its runs are worker
    processes all the same): a second process would import the runner again for nothing."""
    out = tmp_path_factory.mktemp("fresh") / "results.json"
    argv = ["check", "p10_ema", "--steps", "400", "-q", "--mode", "detach", "--mode", "target", "--json", str(out)]
    code = cli.main(argv)
    assert out.exists(), f"check exited {code} without writing {out} (its output is above)"
    return out


def test_a_fresh_results_file_validates_against_the_committed_schema(fresh: Path):
    doc = json.loads(fresh.read_text())
    assert doc["schema_version"] == SCHEMA_VERSION
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    assert {(r["framework"], r["mode"], r["outcome"]) for r in doc["runs"]} == {
        ("torch", "detach", "ok"),
        ("torch", "target", "ok"),
        ("burn", "detach", "ok"),
        ("burn", "target", "panic"),
    }
    pair = next(e for e in doc["expectations"] if e["b"] is not None)
    assert set(pair) >= {"case", "a", "b", "relation", "property", "expected", "observed", "passed"}
    assert pair["a"] == {"framework": "torch", "mode": "detach"} and set(pair["observed"]) == {"a", "b"}


def test_the_schema_rejects_what_the_model_rejects(fresh: Path):
    doc = json.loads(fresh.read_text())
    doc["runs"][0]["outcome"] = "exploded"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, json.loads(SCHEMA.read_text()))


@pytest.mark.parametrize("path", [SAMPLE_1, SAMPLE_2, *sorted(HISTORY_V1.glob("2*.json"))], ids=lambda p: p.name)
def test_schema_version_1_documents_load_as_the_current_model(path: Path):
    assert json.loads(path.read_text())["schema_version"] == 1
    (doc,) = load_results(path)
    assert doc.schema_version == SCHEMA_VERSION
    pairs = [e for e in doc.expectations if e.b is not None]
    assert pairs and all(e.relation in ("same", "differ") and isinstance(e.observed, dict) for e in pairs)
    # and what the model wrote validates against the schema
    jsonschema.validate(json.loads(dump(doc)), json.loads(SCHEMA.read_text()))


def test_a_report_against_history_of_the_previous_version_compares_cleanly(tmp_path: Path):
    """The history entry was written by the schema-1 runner (commit 320c076); the same
    results, written again by this version a day later, show no change at all."""
    history = tmp_path / "history"
    shutil.copytree(HISTORY_V1, history)
    (entry,) = sorted(history.glob("2*.json"))
    (doc,) = load_results(entry)
    later = json.loads(dump(doc))
    later = shifted(later, days=1)
    current = tmp_path / "tonight.json"
    current.write_text(json.dumps(later))
    code = report("--from-results", current, "--history", history, "--out", tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert f"compared with `{entry.name}`" in md and ": nothing changed" in md, md
    assert code == 0
