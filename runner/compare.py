"""Did a run's performance move between two result sets? One stated rule,
shared by the nightly report and the upgrade check.

The rule, for each of a run's two windows (reference and last, as declared by
its case), over the per-step samples of that window in the two runs:

    changed  <=>  Mann-Whitney U two-sided p < ALPHA
                  and the medians differ by more than a factor MIN_FACTOR

The test alone is not enough: a few hundred per-step samples make even a 2 %
shift "significant", and on the shared 2-core VM this was written on, whole
runs of the same binary drift with the host: per-run medians of one mode were
seen 1.3x apart minutes apart, and an upgrade check of 0.22.1 against itself
saw the log and target-without windows move 1.6-1.74x between two runs.
The factor floor (2x) keeps that machine noise out, well below p10's growth
(25-30x); the test keeps a large but erratic difference of a few samples out.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from scipy import stats

from .model.results import RunRecord

ALPHA = 1e-3
MIN_FACTOR = 2.0
RULE = (
    f"per window (reference, last): Mann-Whitney U two-sided p < {ALPHA:g} on the per-step "
    f"times and medians differing by more than a factor {MIN_FACTOR:g}"
)


@dataclass(frozen=True)
class WindowChange:
    changed: bool | None
    n: tuple[int, int]
    p_value: float = math.nan
    factor: float = math.nan
    median_before: float = math.nan
    median_after: float = math.nan


@dataclass(frozen=True)
class PerformanceChange:
    changed: bool | None
    windows: dict[str, WindowChange]
    rule: str = RULE


def samples_changed(
    before: list[float], after: list[float], alpha: float = ALPHA, min_factor: float = MIN_FACTOR
) -> WindowChange:
    """Compare two samples of step times by the rule above."""
    n = (len(before), len(after))
    if len(before) < 2 or len(after) < 2:
        return WindowChange(None, n)
    mb, ma = statistics.median(before), statistics.median(after)
    factor = ma / mb if mb > 0 else math.inf
    p_value = float(stats.mannwhitneyu(before, after, alternative="two-sided").pvalue)
    changed = p_value < alpha and (factor > min_factor or factor < 1 / min_factor)
    return WindowChange(bool(changed), n, p_value, factor, mb, ma)


def _window_samples(run: RunRecord, name: str) -> list[float]:
    window = run.metrics.reference_window if name == "reference" else run.metrics.last_window
    if window is None or len(run.step_ms) < window[1]:
        return []
    first, last = window
    return run.step_ms[first - 1 : last]


def performance_change(before: RunRecord, after: RunRecord) -> PerformanceChange:
    """Apply the rule to both windows of one run seen twice.

    `changed` is True if either window changed, False if both were compared and
    neither did, None if a window could not be compared (a run that did not
    reach it, e.g. one that panicked)."""
    windows = {
        name: samples_changed(_window_samples(before, name), _window_samples(after, name))
        for name in ("reference", "last")
    }
    verdicts = [w.changed for w in windows.values()]
    changed: bool | None
    if any(v is True for v in verdicts):
        changed = True
    elif all(v is False for v in verdicts):
        changed = False
    else:
        changed = None
    return PerformanceChange(changed, windows)
