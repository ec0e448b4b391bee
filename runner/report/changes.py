"""What changed between two runs of the same machine.

Listed, run by run: runs that appeared or vanished; an outcome that changed; a
panic whose message or step changed; a tracked flag that changed; step times
that moved beyond noise by the rule in `runner.compare` (applied to the
per-step samples of the reference and last windows); and every expectation
that flipped between holding and not holding, whose expected value changed
(the case file was edited), that appeared or vanished.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import compare
from ..model.results import ResultsDocument, RunKey, RunRecord, Verdict
from ..wording import observed_text, panic_text, value_text


@dataclass(frozen=True)
class Change:
    kind: str  # see KINDS
    subject: str  # "p10_ema burn/detach", or the expectation
    before: str
    after: str
    detail: str = ""


KINDS = (
    "expectation flipped",
    "expectation changed",
    "expectation appeared",
    "expectation vanished",
    "run appeared",
    "run vanished",
    "outcome changed",
    "panic changed",
    "tracked changed",
    "step time changed",
)


def _run_name(key: RunKey) -> str:
    return f"{key[0]} {key[1]}/{key[2]}"


def expectation_name(item: Verdict) -> str:
    return f"{item.case} {item.subject} {item.check}"


def _verdict(item: Verdict) -> str:
    return "holds" if item.passed else "does not hold"


def run_changes(key: RunKey, before: RunRecord, after: RunRecord) -> list[Change]:
    name = _run_name(key)
    out = []
    if before.outcome != after.outcome:
        out.append(Change("outcome changed", name, before.outcome, after.outcome))
    elif panic_text(before) != panic_text(after):
        out.append(Change("panic changed", name, panic_text(before) or "-", panic_text(after) or "-"))
    tb, ta = before.metrics.tracked, after.metrics.tracked
    if tb != ta:
        out.append(Change("tracked changed", name, value_text(tb), value_text(ta)))
    perf = compare.performance_change(before, after)
    for window, w in perf.windows.items():
        if w.changed:
            out.append(
                Change(
                    "step time changed",
                    f"{name} ({window} window median)",
                    f"{w.median_before:.3g} ms",
                    f"{w.median_after:.3g} ms",
                    w.detail,
                )
            )
    return out


def changes(before: ResultsDocument, after: ResultsDocument) -> list[Change]:
    """Every change from the document `before` to `after` (same machine)."""
    out: list[Change] = []
    runs_before = {r.key: r for r in before.runs}
    runs_after = {r.key: r for r in after.runs}
    for key, run in runs_after.items():
        if key not in runs_before:
            out.append(Change("run appeared", _run_name(key), "-", run.outcome))
        else:
            out.extend(run_changes(key, runs_before[key], run))
    for key, run in runs_before.items():
        if key not in runs_after:
            out.append(Change("run vanished", _run_name(key), run.outcome, "-"))

    exp_before = {verdict.key: verdict for verdict in before.expectations}
    exp_after = {verdict.key: verdict for verdict in after.expectations}
    for key, item in exp_after.items():
        old = exp_before.get(key)
        if old is None:
            out.append(Change("expectation appeared", expectation_name(item), "-", _verdict(item)))
        elif old.passed != item.passed:
            expected = value_text(item.expected)
            if old.expected != item.expected:
                expected = f"{value_text(old.expected)} -> {expected}"
            out.append(
                Change(
                    "expectation flipped",
                    expectation_name(item),
                    _verdict(old),
                    _verdict(item),
                    f"expected {expected}; observed {observed_text(old)} -> {observed_text(item)}",
                )
            )
        elif old.expected != item.expected:
            out.append(
                Change(
                    "expectation changed",
                    expectation_name(item),
                    f"expected {value_text(old.expected)}",
                    f"expected {value_text(item.expected)}",
                    f"{_verdict(item)} both times; observed {observed_text(old)} -> {observed_text(item)}",
                )
            )
    for key, item in exp_before.items():
        if key not in exp_after:
            out.append(Change("expectation vanished", expectation_name(item), _verdict(item), "-"))
    order = {kind: i for i, kind in enumerate(KINDS)}
    return sorted(out, key=lambda c: order[c.kind])
