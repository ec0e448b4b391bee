"""Put every burn run seen on two sides (before/after an upgrade) in one class.

Crater-style: each run gets exactly one class, the first that applies in this
order, and keeps every finding that led there:

- ``build-break``: the probe did not compile against one side;
- ``fixed``: a torch-vs-burn difference disappeared (a property that differed
  from torch on the old side is the same on the new one: the workaround may go);
- ``new difference``: a property that matched torch now differs;
- ``outcome changed``: outcome, panic step or panic text changed;
- ``performance changed``: by the rule of ``runner.compare``;
- ``same``.

A run is compared with torch through every pair of its case that names it
(on the properties that pair claims) and through the torch run of the same
mode (on the properties the case's torch-vs-burn pairs claim).
"""

from __future__ import annotations

import dataclasses

from ..compare import performance_change
from ..engine import SpecKey
from ..metrics import properties
from ..model.case import PAIR_PROPERTIES, Case
from ..model.results import RunRecord
from ..model.upgrade import Classified, Side, UpgradeClass
from ..oracles import agreement


def _comparisons(case: Case, key: str) -> dict[str, tuple[str, ...]]:
    """The torch runs this burn run is compared with, and on which properties.

    A declared pair compares the properties it makes a claim about. The torch
    run of the same mode, when no pair names it, is compared on every property
    some torch-vs-burn pair of the case claims: properties no pair claims (RSS
    growth in p10, where torch's slope is noise) would only add noise."""
    claimed: set[str] = {
        prop for p in case.pairs if "torch" in (p.a.framework, p.b.framework) for prop in [*p.same, *p.differ]
    }
    out: dict[str, set[str]] = {}
    for pair in case.pairs:
        if key in (str(pair.a), str(pair.b)):
            other = pair.a if str(pair.b) == key else pair.b
            if other.framework == "torch":
                out.setdefault(str(other), set()).update([*pair.same, *pair.differ])
    same_mode = "torch/" + key.split("/", 1)[1]
    if case.run(same_mode) is not None and same_mode not in out:
        out[same_mode] = claimed
    return {other: _ordered(props) for other, props in sorted(out.items())}


def _ordered(props: set[str]) -> tuple[str, ...]:
    """p10's categorical properties in their order, then observation properties by name."""
    return tuple(p for p in PAIR_PROPERTIES if p in props) + tuple(sorted(props - set(PAIR_PROPERTIES)))


def torch_value(run: RunRecord, prop: str, case: Case) -> object:
    return properties(run, case).get(prop)


def _panic_view(record: RunRecord) -> tuple[str, int | None, str | None]:
    panic = record.panic
    return record.outcome, panic.step if panic else None, panic.message if panic else None


def _side(record: RunRecord, case: Case) -> Side:
    return Side(outcome=record.outcome, panic=record.panic, metrics=record.metrics, properties=properties(record, case))


def classify_run(case: Case, key: str, before: RunRecord, after: RunRecord, torch: dict[str, RunRecord]) -> Classified:
    findings: dict[UpgradeClass, list[str]] = {c: [] for c in UpgradeClass}
    props_before, props_after = properties(before, case), properties(after, case)
    for other, props in _comparisons(case, key).items():
        if other not in torch:
            continue
        for prop in props:
            was_found, now_found = (
                agreement(prop, torch[other], before, case),
                agreement(prop, torch[other], after, case),
            )
            was, now = was_found.same, now_found.same
            if was is None or now is None:
                continue
            if prop in props_before:
                shown = f"{props_before[prop]} -> {props_after[prop]} (torch {other.split('/')[1]}: {torch_value(torch[other], prop, case)})"
            else:
                shown = f"{'same' if was else 'differ'} -> {'same' if now else 'differ'} as torch {other.split('/')[1]}"
            change = f"{prop}: {shown}"
            if not was and now:
                findings[UpgradeClass.FIXED].append(f"vs {other}: no longer differs in {change}")
            elif was and not now:
                findings[UpgradeClass.NEW_DIFFERENCE].append(f"vs {other}: now differs in {change}")
    if _panic_view(before) != _panic_view(after):
        (o1, s1, m1), (o2, s2, m2) = _panic_view(before), _panic_view(after)
        parts = []
        if o1 != o2:
            parts.append(f"outcome {o1} -> {o2}")
        if s1 != s2:
            parts.append(f"panic step {s1} -> {s2}")
        if m1 != m2:
            parts.append(f"panic text {m1!r} -> {m2!r}")
        findings[UpgradeClass.OUTCOME_CHANGED].append("; ".join(parts))
    perf = performance_change(before, after)
    if perf.changed:
        moved = [f"{name} window median {w.detail}" for name, w in perf.windows.items() if w.changed]
        findings[UpgradeClass.PERFORMANCE_CHANGED].append(", ".join(moved))
    klass = next((c for c in UpgradeClass.by_findings() if findings[c]), UpgradeClass.SAME)
    return Classified.model_validate(
        {
            "case": case.name,
            "run": key,
            "klass": klass,
            "findings": [f"{c}: {text}" for c in UpgradeClass for text in findings[c]],
            "performance": dataclasses.asdict(perf),
            "before": _side(before, case),
            "after": _side(after, case),
        },
        strict=False,
    )


def classify(
    cases: list[Case],
    before: dict[SpecKey, RunRecord] | None,
    after: dict[SpecKey, RunRecord] | None,
    torch: dict[SpecKey, RunRecord],
    build_errors: dict[str, list[str]],
) -> list[Classified]:
    """`before`/`after`: burn records keyed by (case, run key), or None for a side
    whose probe did not build; `torch`: torch records keyed the same way."""
    out = []
    for case in cases:
        torch_runs = {k: r for (c, k), r in torch.items() if c == case.name}
        for spec in case.runs:
            if spec.framework != "burn":
                continue
            if before is None or after is None:
                out.append(
                    Classified(
                        case=case.name,
                        run=spec.key,
                        klass=UpgradeClass.BUILD_BREAK,
                        findings=[
                            f"build-break: burn {side}: {errors[0] if errors else 'failed'}"
                            for side, errors in build_errors.items()
                        ],
                    )
                )
                continue
            out.append(
                classify_run(case, spec.key, before[(case.name, spec.key)], after[(case.name, spec.key)], torch_runs)
            )
    return out
