"""Property tests (hypothesis) of the readers of user files: the case loader,
the results reader and the history reader take any input (bytes, nested
structures, huge numbers, NaN, deep nesting, markup) and either load it or
raise the runner's own `BadInput`, never another exception. Every message
names its file and quotes no more than a short piece of the bad value."""

from __future__ import annotations

import copy
import json
import math
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from report_fixtures import SAMPLE_2

from runner import cases
from runner.errors import BadInput
from runner.paths import CASES_DIR
from runner.report.history import MARKER, Entry, History
from runner.results import load_results, parse_results

REAL_CASE = (CASES_DIR / "p10_ema.toml").read_text()
# A message quotes at most ~80 characters of a value: with the path and the key, a line stays short.
MAX_LINE = 600

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**53, 2**64, 10**30, -(10**30), 10**400]),
    st.floats(),  # NaN and infinities included
    st.text(max_size=30),
    st.sampled_from(["<script>", "x" * 5000, "burn/detach", "torch/detach", "detach", "p10", "ok", "panic"]),
)
NESTED = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=12,
)


def deep(kind: str, depth: int) -> str:
    return {"[": "[" * depth + "]" * depth, "{": '{"a":' * depth + "1" + "}" * depth}[kind]


def assert_short(err: BadInput, where: str) -> None:
    text = str(err)
    assert text.startswith(where), text[:200]
    assert all(len(line) <= MAX_LINE + len(where) for line in text.splitlines()), text[:300]


# ---------------------------------------------------------------- case files


def toml_value(value: object) -> str:
    """A TOML rendering of a JSON-like value (inline tables and arrays); None has
    no TOML form and is written as a string."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"


def toml_document(data: dict) -> str:
    return "\n".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in data.items()) + "\n"


@st.composite
def mutated_cases(draw: st.DrawFn) -> str:
    """The real case file with 1 to 3 values replaced by anything (or removed), as TOML."""
    data = tomllib.loads(REAL_CASE)
    data["name"] = "c"
    for _ in range(draw(st.integers(1, 3))):
        parent, key, node = None, None, data
        while isinstance(node, (dict, list)) and node and (parent is None or draw(st.integers(0, 5)) > 0):
            parent, key = node, draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
            node = parent[key]
        if parent is None:
            continue
        if isinstance(parent, dict) and draw(st.integers(0, 4)) == 0:
            del parent[key]
        else:
            parent[key] = draw(NESTED)
    return toml_document(data)


def load_case_text(tmp_path: Path, text: str | bytes) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    try:
        case = cases.load_case(path)
    except BadInput as err:
        assert_short(err, str(path))
    else:
        assert case.name == "c" and case.runs


SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(mutated_cases())
def test_a_mutated_case_file_loads_or_is_bad_input(tmp_path, text):
    load_case_text(tmp_path, text)


@SETTINGS
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_any_bytes_as_a_case_file_load_or_are_bad_input(tmp_path, data):
    load_case_text(tmp_path, data)


@SETTINGS
@given(st.dictionaries(st.text(max_size=10), NESTED, max_size=6))
def test_any_toml_document_as_a_case_file_loads_or_is_bad_input(tmp_path, data):
    load_case_text(tmp_path, toml_document({"kind": "p10", **data}))


@pytest.mark.parametrize(
    "text",
    [
        'kind = "p10"\nx = ' + deep("[", 100_000),
        'kind = "p10"\nx = ' + "{a = " * 100_000 + "1" + "}" * 100_000,
        'kind = "p10"\n[params]\nlr = 1' + "0" * 400,
        'kind = "p10"\n[params]\nd_in = 1' + "0" * 400,
        'kind = "p10"\n[execution]\ntimeout_s = nan\n',
        'kind = "p10"\n[execution]\nmemory_mib = 1' + "0" * 30 + "\n",
        'kind = "p10"\n[thresholds]\ngrows_ratio = -inf\n',
        'kind = "' + "k" * 200_000 + '"\n',
        'kind = "p10"\n' + "x" * 200_000 + " = 1\n",
    ],
    ids=[
        "deep array",
        "deep table",
        "huge lr",
        "huge d_in",
        "nan timeout",
        "huge memory",
        "-inf ratio",
        "long kind",
        "long key",
    ],
)
def test_known_hostile_case_files_are_bad_input(tmp_path, text):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(BadInput) as info:
        cases.load_case(path)
    assert_short(info.value, str(path))


# ---------------------------------------------------------------- results files

SAMPLE = json.loads(SAMPLE_2.read_text())


@st.composite
def mutated_results(draw: st.DrawFn) -> str:
    doc = copy.deepcopy(SAMPLE)
    for _ in range(draw(st.integers(1, 3))):
        parent, key, node = None, None, doc
        while isinstance(node, (dict, list)) and node and (parent is None or draw(st.integers(0, 7)) > 0):
            parent, key = node, draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
            node = parent[key]
        if parent is not None:
            parent[key] = draw(NESTED)
    # NaN and infinities as JSON writers spell them (Python's json writes NaN, Infinity).
    return json.dumps(doc)


def read_results_text(tmp_path: Path, data: str | bytes) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    try:
        docs = load_results(path)
    except BadInput as err:
        assert_short(err, str(path))
    else:
        assert docs


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated_results())
def test_a_mutated_results_file_loads_or_is_bad_input(tmp_path, text):
    read_results_text(tmp_path, text)


@SETTINGS
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300), NESTED.map(json.dumps)))
def test_any_input_as_a_results_file_loads_or_is_bad_input(tmp_path, data):
    read_results_text(tmp_path, data)


@SETTINGS
@given(NESTED)
def test_any_value_as_a_bundle_or_a_document_part_is_bad_input_or_loads(tmp_path, value):
    read_results_text(tmp_path, json.dumps({"merged_results_schema_version": 2, "results": [value]}))
    read_results_text(tmp_path, json.dumps({**SAMPLE, "runs": value}))
    read_results_text(tmp_path, json.dumps({**SAMPLE, "schema_version": value}))


@pytest.mark.parametrize(
    "text",
    [deep("[", 100_000), deep("{", 100_000), "1" + "0" * 5000, '{"schema_version": 1e999}', "NaN", "\ufeff{}"],
    ids=["deep array", "deep object", "5000 digits", "1e999", "NaN", "BOM"],
)
def test_known_hostile_results_files_are_bad_input(text):
    with pytest.raises(BadInput):
        parse_results(text, "r.json")


# ---------------------------------------------------------------- history folders


@SETTINGS
@given(st.one_of(st.binary(max_size=200), NESTED.map(json.dumps)))
def test_any_history_marker_is_read_or_bad_input(tmp_path, data):
    folder = tmp_path / "history"
    folder.mkdir(exist_ok=True)
    (folder / MARKER).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    try:
        History(folder)
    except BadInput as err:
        assert_short(err, f"{folder / MARKER}")


@SETTINGS
@given(st.one_of(st.binary(max_size=200), NESTED.map(json.dumps), mutated_results()))
def test_any_history_entry_loads_or_is_bad_input(tmp_path, data):
    path = tmp_path / "20261129T070238Z__burn-0.22.1__fbf12e63ac.json"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    try:
        Entry(path, "20261129T070238Z", "0.22.1", "fbf12e63ac").load()
    except BadInput as err:
        assert_short(err, str(path))


@pytest.mark.parametrize("text", [deep("[", 100_000), deep("{", 100_000), '{"a": ' + "1" * 5000 + "}"])
def test_known_hostile_history_entries_are_bad_input(tmp_path, text):
    path = tmp_path / "20261129T070238Z__burn-0.22.1__fbf12e63ac.json"
    path.write_text(text)
    with pytest.raises(BadInput):
        Entry(path, "20261129T070238Z", "0.22.1", "fbf12e63ac").load()
