"""Metrics computed from a run's per-step times and checkpoints, the same way
for both frameworks: Rust and torch measure, this module judges.

- ``slowdown_ratio``: median step time of the last window over the median of
  the reference window (after warm-up); windows come from the case.
- ``slope_ms_per_1000``: Theil-Sen slope of step time over step (after
  warm-up), in ms per 1000 steps, with its 95% confidence interval.
- ``rss_growth_mib_per_1000``: Theil-Sen slope of the RSS delta over the
  RSS samples (every ``rss_every`` steps; the checkpoints if there are none)
  after warm-up, in MiB per 1000 steps.
- ``gflops``: the operations of one step (``step_mflop``) over the reference
  window's median step time: the achieved rate of the early, steady steps. A
  program whose timed loop is too short for the case's windows (the reference
  models: 200 steps, or 20 blocks, against windows of 50 + 150 + 200) has no
  reference window: its rate is over the median of every iteration, the basis
  of the report's ms/step for the models. ``step_mflop``: a p10 step's hand
  count (``runner.cost``); a program's, torch's count of one iteration of its
  timed loop (``runner.program.flops``), which the engine makes once per
  variant and gives to the torch and the burn run alike (``measured``'s
  ``step_mflop``).

A run repeated K times (``--repeat K``, each repeat a fresh process) is
recorded as its first repeat, with each repeat's own metrics; its timing
metrics are the medians over the repeats, with their range in ``spread``.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from .cost import step_mflop
from .model.case import Case, P10Case, ProgramCase
from .model.results import Metrics, PropertyValue, RawRun, Repeat, RunRecord, Slope, Spread

# Theil-Sen is quadratic in the points; beyond this many, an even subsample.
MAX_SLOPE_POINTS = 2000


def window(step_ms: list[float], first: int, last: int) -> list[float] | None:
    """Steps first..last (1-based, inclusive), or None if the run did not reach them."""
    if first < 1 or last > len(step_ms) or first > last:
        return None
    return step_ms[first - 1 : last]


def scipy_stats() -> Any:
    """scipy.stats, imported on first use rather than with this module: a second of the start of
    every command, where only `check` (and what runs it) fits slopes. `check` asks for it before
    its first run (`engine.check`), so that the first completed run is judged at once."""
    from scipy import stats

    return stats


def relative_spread(values: list[float]) -> float:
    """(max - min) / median: how far apart measurements of one thing are, as a fraction."""
    return (max(values) - min(values)) / statistics.median(values)


def _theil_sen(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> tuple[float, float, float] | None:
    if len(x) < 3 or np.ptp(x) == 0:
        return None
    if len(x) > MAX_SLOPE_POINTS:
        keep = np.linspace(0, len(x) - 1, MAX_SLOPE_POINTS).astype(int)
        x, y = x[keep], y[keep]
    slope, _intercept, low, high = scipy_stats().theilslopes(y, x, alpha=0.95)
    return float(slope), float(low), float(high)


def compute(record: RawRun, case: Case, program_mflop: float | None = None) -> Metrics:
    """The metrics of one run; `program_mflop`: a program case's count of one iteration of its
    timed loop (p10 counts its own, `runner.cost`)."""
    step_ms, checkpoints = record.step_ms, record.checkpoints
    windows, steps = case.windows, case.steps
    # A program without a timed loop (or a short one) has no windows: no ratio, no slope.
    fits = steps >= windows.warmup + windows.reference + windows.last
    reference = window(step_ms, *windows.reference_range()) if fits else None
    last = window(step_ms, *windows.last_range(steps)) if fits else None
    reference_median = statistics.median(reference) if reference else None
    last_median = statistics.median(last) if last else None
    ratio = (
        last_median / reference_median
        if reference_median and last_median is not None and record.outcome == "ok"
        else None
    )

    slope: Slope | None = None
    if len(step_ms) > windows.warmup + 2:
        x = np.arange(windows.warmup + 1, len(step_ms) + 1, dtype=float)
        fit = _theil_sen(x, np.asarray(step_ms[windows.warmup :], dtype=float))
        if fit:
            slope = Slope(value=fit[0] * 1000, ci95=(fit[1] * 1000, fit[2] * 1000))

    # Dense RSS samples (every `rss_every` steps) where the run has them, else the checkpoints.
    samples = [(s, d) for s, d in record.rss_samples if s > windows.warmup]
    rss_points = (
        samples
        if len(samples) >= 3
        else [(c.step, c.rss_delta_mib) for c in checkpoints if c.step > windows.warmup and c.rss_delta_mib is not None]
    )
    rss_growth: float | None = None
    if len(rss_points) >= 2:
        xs = np.asarray([p[0] for p in rss_points], dtype=float)
        ys = np.asarray([p[1] for p in rss_points], dtype=float)
        if len(xs) == 2:
            rss_growth = float((ys[1] - ys[0]) / (xs[1] - xs[0]) * 1000)
        else:
            fit = _theil_sen(xs, ys)
            rss_growth = fit[0] * 1000 if fit else None

    # The record's own parameters (what ran), the case's where it has none.
    if isinstance(case, P10Case):
        params = {**case.request_params(record.mode), **record.params}
        mflop = step_mflop(case.kind, params, record.mode)
    else:
        mflop = program_mflop
    # The reference window's median; a timed loop too short for the windows: every iteration's.
    basis = reference_median if fits else statistics.median(step_ms) if step_ms else None
    gflops = mflop / basis if mflop is not None and basis else None

    tracked_values = [c.tracked for c in checkpoints]
    track = case.program.track if isinstance(case, ProgramCase) else None
    if track is not None and not any(v is not None for v in tracked_values):
        # No timed loop recorded the tracked tensor: its observations say.
        tracked_values = [o.flags.tracked for o in record.observations if track in (o.tensor, o.label)]
    return Metrics(
        steps_completed=len(step_ms),
        reference_window=windows.reference_range() if fits else None,
        last_window=windows.last_range(steps) if fits else None,
        reference_median_ms=reference_median,
        last_median_ms=last_median,
        slowdown_ratio=ratio,
        slope_ms_per_1000=slope,
        rss_growth_mib_per_1000=rss_growth if rss_growth is None or np.isfinite(rss_growth) else None,
        tracked=tracked_values[-1] if tracked_values else None,
        tracked_consistent=len(set(tracked_values)) <= 1,
        step_mflop=mflop,
        gflops=gflops,
    )


# What a repeat records of the run itself rather than of its metrics.
_OF_THE_RUN = ("outcome", "wall_s", "conditions")
# The timing metrics a repeated run reports as the median over its repeats: every metric a
# `Repeat` keeps (one list, the model's).
REPEATED = tuple(name for name in Repeat.model_fields if name not in (*_OF_THE_RUN, "steps_completed"))


def _repeat(record: RawRun, metrics: Metrics) -> Repeat:
    of_metrics = metrics.model_dump(include={*REPEATED, "steps_completed"})
    return Repeat(**of_metrics, **{name: getattr(record, name) for name in _OF_THE_RUN})


def measured(
    record: RawRun, case: Case, repeats: list[RawRun] | None = None, step_mflop: float | None = None
) -> RunRecord:
    """The run with its metrics. `repeats`: every repeat of the run, `record`
    (the one recorded) first; the timing metrics are their medians. `step_mflop`:
    a program case's count of its variant (`compute`'s `program_mflop`)."""
    metrics = compute(record, case, step_mflop)
    if not repeats or len(repeats) < 2:
        return RunRecord(**dict(record), metrics=metrics)
    each = [_repeat(r, compute(r, case, step_mflop)) for r in repeats]
    medians: dict[str, float | None] = {}
    spread: dict[str, Spread] = {}
    for name in REPEATED:
        values = [v for v in (getattr(r, name) for r in each) if v is not None]
        medians[name] = statistics.median(values) if values else None
        if values:
            spread[name] = Spread(min=min(values), max=max(values), n=len(values))
    metrics = metrics.model_copy(update={**medians, "repeats": len(each), "spread": spread})
    return RunRecord(**dict(record), metrics=metrics, repeats=each)


def properties(run: RunRecord, case: Case) -> dict[str, PropertyValue]:
    """The categorical properties pairs compare; None where not observable."""
    ratio, growth = run.metrics.slowdown_ratio, run.metrics.rss_growth_mib_per_1000
    return {
        "outcome": run.outcome,
        "tracked": run.metrics.tracked,
        "grows": None if ratio is None else ratio > case.thresholds.grows_ratio,
        "rss_grows": None if growth is None else growth > case.thresholds.rss_grows_mib_per_1000,
    }
