"""Verdicts: each expectation of a case checked against what the runs showed."""

from __future__ import annotations

from typing import Any

from .cases import Case, RunSpec
from .metrics import properties
from .semver import is_version, matches


def burn_version_of(*records: dict) -> str | None:
    """The burn version a set of records ran against (None if no burn record says)."""
    for record in records:
        if record.get("framework") == "burn":
            version = (record.get("versions") or {}).get("burn")
            if version and is_version(version):
                return version
    return None


def _applies(requirement: str | None, version: str | None) -> bool:
    return requirement is None or version is None or matches(version, requirement)


def _skipped(case: Case, subject: str, requirement: str, version: str) -> dict:
    return {"case": case.name, "subject": subject, "burn_versions": requirement, "burn": version}


def _verdict(case: Case, framework: str, mode: str, check: str, expected: Any, observed: Any,
             passed: bool, **extra: Any) -> dict:
    return {"case": case.name, "framework": framework, "mode": mode, "check": check,
            "expected": expected, "observed": observed, "passed": bool(passed), **extra}


def run_checks(case: Case, spec: RunSpec, record: dict) -> tuple[list[dict], list[dict]]:
    """Verdicts for one run, and (instead) a skip if its expectations are limited
    to burn versions other than the one that ran."""
    expect, metrics = spec.expect, record["metrics"]
    version = burn_version_of(record)
    if not _applies(expect.burn_versions, version):
        return [], [_skipped(case, spec.key, expect.burn_versions, version)]
    panic = record.get("panic") or {}
    out: list[dict] = []

    def add(check: str, expected: Any, observed: Any, passed: bool) -> None:
        out.append(_verdict(case, spec.framework, spec.mode, check, expected, observed, passed))

    if expect.outcome is not None:
        add("outcome", expect.outcome, record["outcome"], record["outcome"] == expect.outcome)
    if expect.tracked is not None:
        observed = metrics["tracked"]
        add("tracked", expect.tracked, observed,
            observed is expect.tracked and metrics["tracked_consistent"])
    if expect.panic_step is not None:
        observed = panic.get("step")
        add("panic_step", expect.panic_step, observed, observed == expect.panic_step)
    if expect.panic_message is not None:
        observed = panic.get("message")
        add("panic_message", f"contains {expect.panic_message!r}", observed,
            observed is not None and expect.panic_message in observed)
    for check, bounds in (("slowdown_ratio", expect.slowdown_ratio),
                          ("rss_growth_mib_per_1000", expect.rss_growth_mib_per_1000)):
        if bounds is not None:
            observed = metrics[check]
            add(check, bounds.describe(), observed, bounds.holds(observed))
    return out, []


def pair_checks(case: Case, records: dict[str, dict]) -> tuple[list[dict], list[dict]]:
    out: list[dict] = []
    skipped: list[dict] = []
    for pair in case.pairs:
        a, b = records.get(pair.a), records.get(pair.b)
        if a is None or b is None:
            continue
        version = burn_version_of(a, b)
        if not _applies(pair.burn_versions, version):
            skipped.append(_skipped(case, f"{pair.a} ~ {pair.b}", pair.burn_versions, version))
            continue
        pa = properties(a, a["metrics"], case)
        pb = properties(b, b["metrics"], case)
        fa, ma = pair.a.split("/")
        fb, mb = pair.b.split("/")
        for relation, props in (("same", pair.same), ("differ", pair.differ)):
            for prop in props:
                va, vb = pa[prop], pb[prop]
                known = va is not None and vb is not None
                passed = known and ((va == vb) if relation == "same" else (va != vb))
                out.append(_verdict(
                    case, f"{fa} vs {fb}", f"{ma} vs {mb}", f"pair {relation}: {prop}",
                    relation, {pair.a: va, pair.b: vb}, passed,
                    pair=f"{pair.a} ~ {pair.b}", reason=pair.reason,
                ))
    return out, skipped
