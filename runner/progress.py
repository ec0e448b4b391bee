"""Progress while runs execute, on stderr: one line when a run starts, one
seed-style line per checkpoint, one when it ends."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from .fmt import flag, fmt, outcome_text
from .model.case import Case
from .model.results import RunRecord


def checkpoint_line(framework: str, mode: str, c: dict[str, Any]) -> str:
    """`burn detach step 50: 1.03 ms/step rss + 7.9 MiB tracked=true (is_require_grad=false)`"""
    delta = c.get("rss_delta_mib")
    rss = "rss n/a" if delta is None else f"rss {'-' if delta < 0 else '+'} {abs(delta):.1f} MiB"
    flags = " ".join(f"{k}={flag(v)}" for k, v in (c.get("flags") or {}).items())
    return (
        f"{framework} {mode} step {c.get('step')}: {c.get('ms_per_step', 0.0):.2f} ms/step {rss} "
        f"tracked={flag(c.get('tracked'))} ({flags})"
    )


class ConsoleReporter:
    def __init__(self, stream: TextIO = sys.stderr, verbose: bool = True):
        self.stream, self.verbose = stream, verbose

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def run_started(self, index: int, total: int, case: Case, framework: str, mode: str) -> None:
        self._print(f"[{index}/{total}] {case.name}: {framework} {mode} ({case.steps} steps)")

    def checkpoint(self, case: Case, framework: str, mode: str, checkpoint: dict[str, Any]) -> None:
        if self.verbose:
            self._print("  " + checkpoint_line(framework, mode, checkpoint))

    def run_finished(self, case: Case, record: RunRecord) -> None:
        # Named: semantic runs finish side by side, not in the order they started.
        repeats = f" (median of {record.metrics.repeats} repeats)" if record.metrics.repeats > 1 else ""
        self._print(
            f"  -> {case.name} {record.framework} {record.mode}: {outcome_text(record)}, {record.wall_s:.1f} s wall, "
            f"slowdown ratio {fmt(record.metrics.slowdown_ratio, '.2f')}{repeats}"
        )
        if record.panic is not None:
            self._print(f"     {record.panic.location}: {record.panic.message}")
        if record.crash is not None and record.crash.stderr_tail:
            tail = record.crash.stderr_tail.strip().splitlines()[-5:]
            self._print("     " + "\n     ".join(tail))
