"""How values read in the terminal, the report and the upgrade check: one
place for flags, numbers, outcomes and shortened text."""

from __future__ import annotations

import datetime as dt
from typing import Any

from .model.results import Metrics, Provenance, RunRecord, Verdict


def flag(value: Any) -> str:
    """`true` / `false` as Rust prints them; `None` for a missing value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "None" if value is None else str(value)


def value_text(value: Any, spec: str = ".3g") -> str:
    """A value for a table cell: `-` for none, numbers by `spec`."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format(value, spec)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {value_text(v, spec)}" for k, v in value.items()) + "}"
    return str(value)


def short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def outcome_text(run: RunRecord) -> str:
    """`ok`, `panic at step 3 (backward)`, `crash SIGSEGV`, `timeout after 600 s`; for a program,
    the operation it stopped at: `panic at backward (op 4, line 7)`, `unsupported no_grad (op 1)`;
    `out of memory (limit 8192 MiB)`."""
    failure = run.failure
    if failure is not None and run.outcome in ("panic", "error", "unsupported"):
        where = [f"op {failure.op_index}"] if failure.op_index is not None else []
        where += [f"line {failure.line}"] if failure.line is not None else []
        where += [f"iteration {failure.iteration}"] if failure.iteration is not None else []
        kind = run.outcome if run.outcome != "error" else f"error {failure.type or ''}".strip()
        at = " at" if run.outcome != "unsupported" else ""
        return f"{kind}{at} {failure.op or '?'}" + (f" ({', '.join(where)})" if where else "")
    if run.outcome == "panic" and run.panic is not None:
        return f"panic at step {run.panic.step} ({run.panic.phase or '?'})"
    if run.outcome == "error" and run.error is not None:
        return f"error {run.error.type}"
    if run.outcome == "crash" and run.crash is not None:
        c = run.crash
        return "crash " + (c.signal or (f"exit {c.exit_code}" if c.exit_code is not None else "(no status)"))
    if run.outcome == "timeout":
        return f"timeout after {run.timeout_s or 0:g} s"
    if run.outcome == "oom" and run.oom is not None:
        limit = run.oom.limit_mib
        return "out of memory" + (f" (limit {limit} MiB)" if limit is not None else "")
    return run.outcome


def panic_text(run: RunRecord) -> str | None:
    """`step 3: Cannot run backward: ...`, or None if the run did not panic."""
    if run.panic is None:
        return None
    return f"step {run.panic.step}: {run.panic.message}"


def observed_text(verdict: Verdict, spec: str = ".3g") -> str:
    """What a verdict observed; for a pair, each run's value by its name."""
    observed = verdict.observed
    if verdict.b is not None and isinstance(observed, dict):
        return f"{verdict.a} {value_text(observed.get('a'), spec)}, {verdict.b} {value_text(observed.get('b'), spec)}"
    return value_text(observed, spec)


def repeated(metrics: Metrics, name: str, spec: str = ".3g") -> str:
    """A timing metric, with its range over the repeats when there were several:
    `1.02 (0.99-1.05)`."""
    value = getattr(metrics, name)
    spread = metrics.spread.get(name)
    if value is None or spread is None or metrics.repeats < 2:
        return value_text(value, spec)
    return f"{format(value, spec)} ({format(spread.min, spec)}-{format(spread.max, spec)})"


def slope_text(metrics: Metrics) -> str:
    """The Theil-Sen slope of step time with its 95% interval: `0.004 (0.003..0.005)`."""
    slope = metrics.slope_ms_per_1000
    return "-" if slope is None else f"{slope.value:.3f} ({slope.ci95[0]:.3f}..{slope.ci95[1]:.3f})"


def gflops_text(metrics: Metrics, peak: float | None = None) -> str:
    """Achieved GFLOP/s of one step, and its share of the core's peak: `89.3 (54%)`."""
    return rate_text(metrics.gflops, peak)


def rate_text(gflops: float | None, peak: float | None = None) -> str:
    """A rate in GFLOP/s, and its share of the core's peak: `89.3 (54%)`; `-` without one."""
    if gflops is None:
        return "-"
    share = f" ({gflops / peak:.0%})" if peak else ""
    return f"{gflops:.3g}{share}"


def measurement_text(p: Provenance) -> str:
    """How the runs were measured and how loaded the machine was, in one line
    (empty for results from before these were recorded)."""
    if p.load_start is None and p.load_end is None and p.noise_controls is None and p.peak_gflops is None:
        return ""
    parts = []
    if p.load_start is not None or p.load_end is not None:
        parts.append(
            f"1-minute load average {value_text(p.load_start, '.2f')} at the start, {value_text(p.load_end, '.2f')} at the end"
        )
    if p.cores is not None:
        parts.append(f"{p.cores} cores")
    if p.cpu_mhz is not None:
        parts.append(f"CPU {p.cpu_mhz:.0f} MHz")
    if p.noise_controls is not None:
        repeats = f", {p.repeat} repeats each (medians, with their range)" if p.repeat and p.repeat > 1 else ""
        parts.append(f"timed runs alone with noise controls {p.noise_controls}{repeats}")
    if p.peak_gflops is not None:
        parts.append(f"float32 peak of one core {p.peak_gflops:.0f} GFLOP/s ({p.peak_basis})")
    return "; ".join(parts)
