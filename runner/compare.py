"""Did a run's performance move between two result sets? One stated rule,
shared by the nightly report and the upgrade check, calibrated from data.

Each of a run's two windows (reference and last, as declared by its case) is
compared between the two result sets. A run measured K times (`--repeat K`)
has K window medians, one per repeat (fresh process); a run measured once has
one, and its per-step samples. With k = the smaller K of the two sides:

    k >= 2:  changed  <=>  the two sides' repeat medians do not overlap
                           (every one of one side above every one of the other)
                           and their medians differ by more than a factor FLOOR[k]
    k = 1:   changed  <=>  Mann-Whitney U two-sided p < ALPHA on the per-step times
                           and the medians differ by more than a factor FLOOR[1]

Only runs timed on both sides are compared (a run that ran side by side with
others, `conditions.timed` false, is not: its clock shared the CPU). The
floors hold for runs measured with the fixed malloc settings
(`runner.noise`); a side measured without them (`conditions.controls`
without `malloc`, or a results file from before they were recorded) keeps
the old 2x floor: its runs drift up to 2x between processes by themselves.

Why repeats: the per-step samples of one run are not independent of the
process they ran in. Whole runs of the same binary move together (malloc
regime, placement, the host's load), so a Mann-Whitney test on a few hundred
per-step samples calls a 2 % shift "significant" while separate runs of one
build differ by 10-40 %. The unit of noise is the run; K runs give K
independent medians, and the floor FLOOR[k] keeps what A/A comparisons of one
build against itself showed out.

Calibration (`python3 -m runner.calibrate rule`: p10_ema's burn/without,
torch/detach and torch/ema-only at 2000 steps; 11 sessions, each with K = 5
interleaved repeats (fresh processes) of every run as it is and with a busy
wait of (factor - 1) x its step time added to every step, and one run of each
without the noise controls; 1008 runs over two hours on the shared 2-core VM,
1-minute load 0.9-6.4). A/A: session i against session i + 1, the same build
(30 run comparisons: 10 session pairs x 3 runs; an alarm is either window
called changed); caught: session i against session i + 1 with the slowdown
(30 per factor):

    rule                        controls  K  floor  A/A alarms  x1.1   x1.25  x1.5   x2
    before: Mann-Whitney + 2x   none      1  2      0/30        0/30   1/30   3/30   29/30
    before: Mann-Whitney + 2x   malloc    1  2      0/30        0/30   0/30   0/30   27/30
    now: Mann-Whitney + floor   malloc    1  1.6    0/30        0/30   1/30   7/30   30/30
    now: repeats apart + floor  malloc    2  1.4    0/30        0/30   2/30   30/30  30/30
    now: repeats apart + floor  malloc    3  1.25   0/30        0/30   26/30  30/30  30/30
    now: repeats apart + floor  malloc    4  1.25   0/30        0/30   23/30  30/30  30/30
    now: repeats apart + floor  malloc    5  1.2    0/30        0/30   30/30  30/30  30/30

(K < 5 uses the first K repeats of each session.) The floor for each K is the
largest factor between the repeat medians of two sessions of the same build
that the non-overlap (or, K = 1, Mann-Whitney) test let through, over all 55
pairs of sessions, 3 runs and 2 windows, times 1.03, rounded up to 0.05:
x1.545 (K = 1), x1.342 (2), x1.189 (3), x1.180 (4), x1.163 (5). Those factors
come from the machine's load: a session at load 4 ran torch's steps up to 16 %
slower than one at load 1, all 5 repeats alike; a change's detail names both
sides' load for that reason.

Results files without repeats (older ones included) compare by the k = 1 rule.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass

from . import metrics
from .model.results import RunRecord

ALPHA = 1e-3
# k (the smaller number of repeats of the two sides) -> factor floor; for a k
# not listed, the floor of the largest listed k below it.
FLOOR: dict[int, float] = {1: 1.6, 2: 1.4, 3: 1.25, 5: 1.2}
# The rule before calibration: one run per side, a 2x floor. It still holds
# for runs measured without the malloc settings (their own drift reaches 2x).
OLD_FLOOR = 2.0
RULE = (
    "per window (reference, last): with K repeats per side (K >= 2), the repeats' medians do not "
    "overlap and their medians differ by more than a factor "
    + ", ".join(f"{f:g} (K >= {k})" for k, f in sorted(FLOOR.items()) if k > 1)
    + f"; a single run per side: Mann-Whitney U two-sided p < {ALPHA:g} on the per-step times and "
    f"medians differing by more than a factor {FLOOR[1]:g}; a factor {OLD_FLOOR:g} for runs measured "
    "without the fixed malloc settings"
)


def floor_for(k: int) -> float:
    """The factor floor for k repeats per side (FLOOR)."""
    return FLOOR[max(key for key in FLOOR if key <= max(k, 1))]


@dataclass(frozen=True)
class WindowChange:
    changed: bool | None
    n: tuple[int, int]  # per-step samples (single runs) or repeats (repeated runs) per side
    p_value: float = math.nan
    factor: float = math.nan
    median_before: float = math.nan
    median_after: float = math.nan
    repeats: tuple[int, int] = (1, 1)
    floor: float = math.nan
    # The mean 1-minute load average the runs started under, per side (None: not recorded).
    load: tuple[float | None, float | None] = (None, None)

    @property
    def detail(self) -> str:
        """How the rule saw it, for the report and the upgrade table; the loads
        too, since a machine busier on one side than the other moves step times."""
        if min(self.repeats) >= 2:
            text = f"x{self.factor:.2f}, medians of {self.repeats[0]}/{self.repeats[1]} repeats (floor x{self.floor:g})"
        else:
            text = f"x{self.factor:.2f}, Mann-Whitney p = {self.p_value:.2g}, n = {self.n[0]}/{self.n[1]} steps"
        if self.load[0] is not None and self.load[1] is not None:
            text += f", load {self.load[0]:.1f} -> {self.load[1]:.1f}"
        return text


@dataclass(frozen=True)
class PerformanceChange:
    changed: bool | None
    windows: dict[str, WindowChange]
    rule: str = RULE


def _beyond(factor: float, floor: float) -> bool:
    return factor > floor or factor < 1 / floor


def samples_changed(
    before: list[float], after: list[float], alpha: float = ALPHA, min_factor: float | None = None
) -> WindowChange:
    """One run per side: compare two samples of per-step times (the k = 1 rule)."""
    floor = FLOOR[1] if min_factor is None else min_factor
    n = (len(before), len(after))
    if len(before) < 2 or len(after) < 2:
        return WindowChange(None, n, floor=floor)
    mb, ma = statistics.median(before), statistics.median(after)
    factor = ma / mb if mb > 0 else math.inf
    p_value = float(metrics.scipy_stats().mannwhitneyu(before, after, alternative="two-sided").pvalue)
    changed = p_value < alpha and _beyond(factor, floor)
    return WindowChange(bool(changed), n, p_value, factor, mb, ma, floor=floor)


def medians_changed(before: list[float], after: list[float], min_factor: float | None = None) -> WindowChange:
    """K >= 2 repeats per side: compare the repeats' window medians (the k >= 2 rule)."""
    k = min(len(before), len(after))
    floor = floor_for(k) if min_factor is None else min_factor
    n = (len(before), len(after))
    if k < 2:
        return WindowChange(None, n, repeats=n, floor=floor)
    mb, ma = statistics.median(before), statistics.median(after)
    factor = ma / mb if mb > 0 else math.inf
    apart = min(after) > max(before) or max(after) < min(before)
    return WindowChange(apart and _beyond(factor, floor), n, math.nan, factor, mb, ma, repeats=n, floor=floor)


def _window_samples(run: RunRecord, name: str) -> list[float]:
    window = run.metrics.reference_window if name == "reference" else run.metrics.last_window
    return (metrics.window(run.step_ms, *window) if window is not None else None) or []


def _window_medians(run: RunRecord, name: str) -> list[float]:
    values = [r.reference_median_ms if name == "reference" else r.last_median_ms for r in run.repeats]
    return [v for v in values if v is not None]


def _controlled(run: RunRecord) -> bool:
    """Measured with the fixed malloc settings (the floors' calibration assumes them)."""
    controls = run.conditions.controls if run.conditions is not None else None
    return controls is not None and "malloc" in controls.split(",")


def _load(run: RunRecord) -> float | None:
    conditions = [r.conditions for r in run.repeats] if run.repeats else [run.conditions]
    loads = [c.load_before for c in conditions if c is not None and c.load_before is not None]
    return statistics.mean(loads) if loads else None


def rule_change(
    medians_before: list[float],
    medians_after: list[float],
    samples_before: list[float],
    samples_after: list[float],
    min_factor: float | None = None,
) -> WindowChange:
    """The rule's test for one window: the repeats' medians when both sides have two or more,
    else the per-step samples of one run per side (the calibration applies this same function)."""
    if len(medians_before) >= 2 and len(medians_after) >= 2:
        return medians_changed(medians_before, medians_after, min_factor=min_factor)
    return samples_changed(samples_before, samples_after, min_factor=min_factor)


def window_change(before: RunRecord, after: RunRecord, name: str) -> WindowChange:
    """The rule for one window of one run seen twice."""
    floor = None if _controlled(before) and _controlled(after) else OLD_FLOOR
    change = rule_change(
        _window_medians(before, name),
        _window_medians(after, name),
        _window_samples(before, name),
        _window_samples(after, name),
        min_factor=floor,
    )
    return dataclasses.replace(change, load=(_load(before), _load(after)))


def _timed(run: RunRecord) -> bool:
    return run.conditions is None or run.conditions.timed is not False


def performance_change(before: RunRecord, after: RunRecord) -> PerformanceChange:
    """Apply the rule to both windows of one run seen twice.

    `changed` is True if either window changed, False if both were compared and
    neither did, None if a window could not be compared (a run that did not
    reach it, e.g. one that panicked, or one not timed alone on both sides)."""
    if not (_timed(before) and _timed(after)):
        return PerformanceChange(None, {})
    windows = {name: window_change(before, after, name) for name in ("reference", "last")}
    verdicts = [w.changed for w in windows.values()]
    changed: bool | None
    if any(v is True for v in verdicts):
        changed = True
    elif all(v is False for v in verdicts):
        changed = False
    else:
        changed = None
    return PerformanceChange(changed, windows)
