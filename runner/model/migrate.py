"""Older results documents read as the current schema (asv keeps old results
readable the same way: each version's document is migrated on load).

- version 1 (before the typed schema): verdicts named a pair by a string
  (`"pair": "torch/detach ~ burn/detach"`, `"check": "pair same: tracked"`,
  `"observed": {"torch/detach": ..., "burn/detach": ...}`) and skipped
  expectations by a `subject` string. Version 2 names both runs (`a`, `b`),
  the `relation` and the `property` as fields.
"""

from __future__ import annotations

import re
from typing import Any

from ..escape import quote
from .case import RunRef

_PAIR_CHECK = re.compile(r"pair (same|differ): (\S+)")


class MigrationError(ValueError):
    """A document that claims an old version but does not have its shape."""


def _ref(text: Any, where: str) -> dict[str, str]:
    if not isinstance(text, str):
        raise MigrationError(f"{where}: expected 'framework/mode', got {type(text).__name__}")
    try:
        ref = RunRef.parse(text.strip())
    except ValueError as err:
        raise MigrationError(f"{where}: {err}") from None
    return {"framework": ref.framework, "mode": ref.mode}


def _sides(subject: Any, where: str) -> tuple[dict[str, str], dict[str, str] | None]:
    if not isinstance(subject, str):
        raise MigrationError(f"{where}: expected a string, got {type(subject).__name__}")
    parts = subject.split("~")
    if len(parts) > 2:
        raise MigrationError(f"{where}: expected 'framework/mode' or 'a ~ b', got {quote(subject)}")
    return _ref(parts[0], where), _ref(parts[1], where) if len(parts) == 2 else None


def _verdict_v1(item: Any, where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise MigrationError(f"{where}: expected an object")
    out = {k: item.get(k) for k in ("case", "expected", "observed", "passed")}
    check = item.get("check")
    if not isinstance(check, str):
        raise MigrationError(f"{where}.check: expected a string")
    if item.get("pair") is not None:
        a, b = _sides(item["pair"], f"{where}.pair")
        match = _PAIR_CHECK.fullmatch(check)
        if not match or b is None:
            raise MigrationError(
                f"{where}.check: expected 'pair same: PROPERTY' or 'pair differ: "
                f"PROPERTY' with a pair 'a ~ b', got {quote(check)}"
            )
        observed = item.get("observed")
        if isinstance(observed, dict):
            values = list(observed.values())
            observed = {"a": values[0] if values else None, "b": values[1] if len(values) > 1 else None}
        out.update(
            a=a, b=b, relation=match.group(1), property=match.group(2), observed=observed, reason=item.get("reason")
        )
    else:
        out.update(
            a=_ref(f"{item.get('framework')}/{item.get('mode')}", where), b=None, relation="expect", property=check
        )
    return out


def _skipped_v1(item: Any, where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise MigrationError(f"{where}: expected an object")
    a, b = _sides(item.get("subject"), f"{where}.subject")
    return {
        "case": item.get("case"),
        "a": a,
        "b": b,
        "burn_versions": item.get("burn_versions"),
        "burn": item.get("burn"),
    }


def _run_v1(run: Any) -> Any:
    if not isinstance(run, dict):
        return run
    run = dict(run)
    # Version 1 wrote empty details as null and never recorded setup-only fields.
    for key in ("panic", "error", "crash", "timeout_s", "stderr_tail"):
        if run.get(key) is None:
            run.pop(key, None)
    return run


def from_v1(doc: dict[str, Any]) -> dict[str, Any]:
    expectations = doc.get("expectations")
    skipped = doc.get("not_applicable") or []
    if not isinstance(expectations, list) or not isinstance(skipped, list):
        raise MigrationError("expectations / not_applicable: expected arrays")
    runs = doc.get("runs")
    return {
        **doc,
        "schema_version": 2,
        "runs": [_run_v1(r) for r in runs] if isinstance(runs, list) else runs,
        "expectations": [_verdict_v1(e, f"expectations[{i}]") for i, e in enumerate(expectations)],
        "not_applicable": [_skipped_v1(s, f"not_applicable[{i}]") for i, s in enumerate(skipped)],
    }


MIGRATIONS = {1: from_v1}


def to_current(doc: dict[str, Any]) -> dict[str, Any]:
    """The document in the current schema version (unchanged if it already is)."""
    version = doc.get("schema_version")
    while isinstance(version, int) and not isinstance(version, bool) and version in MIGRATIONS:
        doc = MIGRATIONS[version](doc)
        version = doc.get("schema_version")
    return doc
