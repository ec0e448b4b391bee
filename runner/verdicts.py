"""Verdicts: each expectation of a case checked against what the runs showed,
as structured data (`Verdict`: case, run a, run b for a pair, relation,
property, expected, observed, passed)."""

from __future__ import annotations

from pydantic import JsonValue

from . import versions
from .model.case import Case, PairSpec, RunRef, RunSpec
from .model.results import RunRecord, Skipped, Verdict
from .oracles import agreement, observed_flags


def burn_version_of(*records: RunRecord) -> str | None:
    """The burn version a set of records ran against (None if no burn record says)."""
    for record in records:
        if record.framework == "burn":
            version = record.versions.get("burn")
            if version and versions.is_version(version):
                return version
    return None


def _applies(requirement: str | None, version: str | None) -> bool:
    return requirement is None or version is None or versions.matches(version, requirement)


def run_verdicts(case: Case, spec: RunSpec, record: RunRecord) -> tuple[list[Verdict], list[Skipped]]:
    """Verdicts for one run, and (instead) a skip if its expectations are limited
    to burn versions other than the one that ran."""
    expect, metrics = spec.expect, record.metrics
    version = burn_version_of(record)
    if expect.burn_versions is not None and not _applies(expect.burn_versions, version):
        return [], [Skipped(case=case.name, a=spec.ref, burn_versions=expect.burn_versions, burn=version)]
    out: list[Verdict] = []

    def add(prop: str, expected: JsonValue, observed: JsonValue, passed: bool) -> None:
        out.append(
            Verdict(
                case=case.name,
                a=spec.ref,
                relation="expect",
                property=prop,
                expected=expected,
                observed=observed,
                passed=passed,
            )
        )

    panic = record.panic
    if expect.outcome is not None:
        add("outcome", expect.outcome, record.outcome, record.outcome == expect.outcome)
    if expect.tracked is not None:
        add(
            "tracked", expect.tracked, metrics.tracked, metrics.tracked is expect.tracked and metrics.tracked_consistent
        )
    if expect.panic_step is not None:
        step = panic.step if panic else None
        add("panic_step", expect.panic_step, step, step == expect.panic_step)
    if expect.panic_message is not None:
        message = panic.message if panic else None
        add(
            "panic_message",
            f"contains {expect.panic_message!r}",
            message,
            message is not None and expect.panic_message in message,
        )
    failure = record.failure
    if expect.failure_op is not None:
        op = failure.op if failure else None
        add("failure_op", expect.failure_op, op, op == expect.failure_op)
    if expect.message is not None:
        messages = [
            text
            for text in (
                failure.message if failure else None,
                panic.message if panic else None,
                record.error.message if record.error else None,
            )
            if text
        ]
        add(
            "message",
            f"contains {expect.message!r}",
            messages[0] if messages else None,
            any(expect.message in text for text in messages),
        )
    if expect.flags:
        seen = observed_flags(record)
        for label, flags in expect.flags.items():
            for flag, wanted in flags.items():
                got = seen.get(label, {}).get(flag)
                add(f"flags:{label}.{flag}", wanted, got, got is wanted)
    for prop, bounds, value in (
        ("slowdown_ratio", expect.slowdown_ratio, metrics.slowdown_ratio),
        ("rss_growth_mib_per_1000", expect.rss_growth_mib_per_1000, metrics.rss_growth_mib_per_1000),
    ):
        if bounds is not None:
            add(prop, bounds.describe(), value, bounds.holds(value))
    return out, []


def _pair_verdicts(case: Case, pair: PairSpec, a: RunRecord, b: RunRecord) -> list[Verdict]:
    out = []
    for relation, prop in pair.claims:
        found = agreement(prop, a, b, case)
        passed = found.same is not None and (found.same if relation == "same" else not found.same)
        out.append(
            Verdict(
                case=case.name,
                a=pair.a,
                b=pair.b,
                relation=relation,
                property=prop,
                expected=relation,
                observed=found.observed,
                passed=passed,
                reason=pair.reason,
            )
        )
    return out


def pair_verdicts(case: Case, records: dict[str, RunRecord]) -> tuple[list[Verdict], list[Skipped]]:
    out: list[Verdict] = []
    skipped: list[Skipped] = []
    for pair in case.pairs:
        a, b = records.get(str(pair.a)), records.get(str(pair.b))
        if a is None or b is None:
            continue
        version = burn_version_of(a, b)
        if pair.burn_versions is not None and not _applies(pair.burn_versions, version):
            skipped.append(Skipped(case=case.name, a=pair.a, b=pair.b, burn_versions=pair.burn_versions, burn=version))
            continue
        out.extend(_pair_verdicts(case, pair, a, b))
    return out, skipped


def subject_of(a: RunRef, b: RunRef | None) -> str:
    return f"{a} ~ {b}" if b is not None else str(a)
