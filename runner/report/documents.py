"""Reading results files: the document `check --json` writes (schema_version 1)
or the bundle `report` writes when it merged several machines.

Everything the report uses is validated before anything is written, so a
truncated file, a foreign JSON file or an unknown schema version ends the
command with `BadInput` (exit 2) naming the file and the key, and changes
nothing on disk.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from ..cases import OUTCOMES
from ..errors import BadInput
from ..results import SCHEMA_VERSION

SUPPORTED_VERSIONS = (SCHEMA_VERSION,)
# A file of several results documents (one per machine), as `report` writes it.
BUNDLE_KEY = "merged_results_schema_version"
BUNDLE_VERSION = 1

_NUMBER = (int, float)
_TYPE_NAMES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
               int: "an integer", float: "a number", type(None): "null"}


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def read_json(path: Path, what: str) -> Any:
    """Parse a JSON file; every failure is BadInput naming the file."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a folder, expected a {what} (JSON)") from None
    except (OSError, UnicodeDecodeError) as err:
        raise BadInput(f"{path}: cannot read {what}: {err}") from None
    if not text.strip():
        raise BadInput(f"{path}: empty file, expected a {what} (JSON)")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        hint = " (truncated?)" if err.pos >= len(text.rstrip()) else ""
        raise BadInput(f"{path}: not valid JSON{hint}: {err.msg} at line {err.lineno} "
                       f"column {err.colno}") from None
    except ValueError as err:
        raise BadInput(f"{path}: not valid JSON: {err}") from None


def _type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


class _Checker:
    """Walks one document; `fail` names the file and the key path."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, message: str) -> None:
        raise BadInput(f"{self.source}: {where}: {message}")

    def field(self, obj: dict, key: str, where: str, types: tuple, nullable: bool = False) -> Any:
        here = f"{where}.{key}" if where else key
        if key not in obj:
            self.fail(here, "missing")
        value = obj[key]
        if value is None and nullable:
            return None
        wrong = not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
        if wrong:
            expected = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)
            self.fail(here, f"expected {expected}{' or null' if nullable else ''}, "
                            f"got {_type_name(value)}")
        return value

    def numbers(self, values: list, where: str) -> None:
        for index, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, _NUMBER):
                self.fail(f"{where}[{index}]", f"expected a number, got {_type_name(value)}")


def _provenance(check: _Checker, doc: dict) -> None:
    prov = check.field(doc, "provenance", "", (dict,))
    for key in ("cpu", "machine", "system", "started"):
        check.field(prov, key, "provenance", (str,))
    for key in ("burn", "torch", "rustc", "python", "git_commit", "finished", "probe_profile"):
        if key in prov:
            check.field(prov, key, "provenance", (str,), nullable=True)
    check.field(prov, "cores", "provenance", (int,), nullable=True)
    for key in ("started", "finished"):
        if prov.get(key) is None:
            continue
        try:
            dt.datetime.fromisoformat(prov[key])
        except ValueError:
            check.fail(f"provenance.{key}", f"not an ISO 8601 time: {prov[key]!r}")


def _run(check: _Checker, run: Any, where: str) -> None:
    if not isinstance(run, dict):
        check.fail(where, f"expected an object, got {_type_name(run)}")
    for key in ("case", "framework", "mode"):
        check.field(run, key, where, (str,))
    outcome = check.field(run, "outcome", where, (str,))
    if outcome not in OUTCOMES:
        check.fail(f"{where}.outcome", f"unknown outcome {outcome!r}; valid: {', '.join(OUTCOMES)}")
    panic = check.field(run, "panic", where, (dict,), nullable=True)
    if panic is not None:
        check.field(panic, "message", f"{where}.panic", (str,))
        check.field(panic, "step", f"{where}.panic", (int,), nullable=True)
    check.numbers(check.field(run, "step_ms", where, (list,)), f"{where}.step_ms")
    for index, cp in enumerate(check.field(run, "checkpoints", where, (list,))):
        here = f"{where}.checkpoints[{index}]"
        if not isinstance(cp, dict):
            check.fail(here, f"expected an object, got {_type_name(cp)}")
        check.field(cp, "step", here, (int,))
        check.field(cp, "ms_per_step", here, _NUMBER)
        check.field(cp, "rss_delta_mib", here, _NUMBER, nullable=True)
        check.field(cp, "tracked", here, (bool,), nullable=True)
    for index, sample in enumerate(run.get("rss_samples") or []):  # optional: [step, MiB] pairs
        if not isinstance(sample, list) or len(sample) != 2:
            check.fail(f"{where}.rss_samples[{index}]", "expected [step, RSS delta MiB]")
        check.numbers(sample, f"{where}.rss_samples[{index}]")
    metrics = check.field(run, "metrics", where, (dict,))
    here = f"{where}.metrics"
    for key in ("reference_window", "last_window"):
        window = check.field(metrics, key, here, (list,))
        if len(window) != 2:
            check.fail(f"{here}.{key}", f"expected [first, last], got {len(window)} values")
        check.numbers(window, f"{here}.{key}")
    for key in ("reference_median_ms", "last_median_ms", "slowdown_ratio", "rss_growth_mib_per_1000"):
        check.field(metrics, key, here, _NUMBER, nullable=True)
    check.field(metrics, "slope_ms_per_1000", here, (dict,), nullable=True)
    check.field(metrics, "tracked", here, (bool,), nullable=True)


def _expectation(check: _Checker, item: Any, where: str) -> None:
    if not isinstance(item, dict):
        check.fail(where, f"expected an object, got {_type_name(item)}")
    for key in ("case", "framework", "mode", "check"):
        check.field(item, key, where, (str,))
    check.field(item, "passed", where, (bool,))
    for key in ("expected", "observed"):
        if key not in item:
            check.fail(f"{where}.{key}", "missing")
    if item.get("pair") is not None:  # "torch/detach ~ burn/detach", check "pair same: tracked"
        pair = check.field(item, "pair", where, (str,))
        sides = [side.strip() for side in pair.split("~")]
        if len(sides) != 2 or not all(side.count("/") == 1 for side in sides):
            check.fail(f"{where}.pair", f"expected 'framework/mode ~ framework/mode', got {pair!r}")
        if not re.fullmatch(r"pair (same|differ): \S+", item["check"]):
            check.fail(f"{where}.check", f"expected 'pair same: PROPERTY' or 'pair differ: PROPERTY', "
                                         f"got {item['check']!r}")


def validate(doc: Any, source: str) -> dict:
    """The document if it is a results document this runner can report on."""
    check = _Checker(source)
    if not isinstance(doc, dict):
        check.fail("top level", f"expected a results document (an object), got {_type_name(doc)}")
    if "schema_version" not in doc:
        keys = ", ".join(sorted(doc)[:8]) or "none"
        check.fail("schema_version", f"missing: not a results document of this runner "
                                     f"(top-level keys: {keys})")
    version = doc["schema_version"]
    if version not in SUPPORTED_VERSIONS or isinstance(version, bool):
        check.fail("schema_version", f"{version!r} is not supported; this runner reads "
                                     f"{', '.join(map(str, SUPPORTED_VERSIONS))}")
    _provenance(check, doc)
    seen: set[tuple] = set()
    for index, run in enumerate(check.field(doc, "runs", "", (list,))):
        _run(check, run, f"runs[{index}]")
        key = (run["case"], run["framework"], run["mode"])
        if key in seen:
            check.fail(f"runs[{index}]", f"a second run of {'/'.join(key)}")
        seen.add(key)
    for index, item in enumerate(check.field(doc, "expectations", "", (list,))):
        _expectation(check, item, f"expectations[{index}]")
    for index, item in enumerate(doc.get("not_applicable") or []):  # optional
        where = f"not_applicable[{index}]"
        if not isinstance(item, dict):
            check.fail(where, f"expected an object, got {_type_name(item)}")
        for key in ("case", "subject", "burn_versions"):
            check.field(item, key, where, (str,))
    return doc


def load_results(path: Path) -> list[dict]:
    """The results documents in one file (a bundle holds several)."""
    data = read_json(path, "results file")
    if isinstance(data, dict) and BUNDLE_KEY in data:
        if data[BUNDLE_KEY] != BUNDLE_VERSION:
            raise BadInput(f"{path}: {BUNDLE_KEY}: {data[BUNDLE_KEY]!r} is not supported; "
                           f"this runner reads {BUNDLE_VERSION}")
        docs = data.get("results")
        if not isinstance(docs, list) or not docs:
            raise BadInput(f"{path}: results: expected a non-empty array of results documents")
        return [validate(doc, f"{path}: results[{i}]") for i, doc in enumerate(docs)]
    return [validate(data, str(path))]


def bundle(docs: list[dict]) -> dict:
    """What `results.json` holds: the document itself, or a bundle of several."""
    if len(docs) == 1:
        return docs[0]
    return {BUNDLE_KEY: BUNDLE_VERSION, "results": docs}
