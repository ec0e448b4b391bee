"""Progress while runs execute, on stderr.

Not a terminal (a pipe, a CI log): plain lines, one when a run starts
(`[2/5] p10_ema: burn detach (400 steps)`), one seed-style line per checkpoint
(unless quiet), one when it ends.

On a terminal: the line of each run that ends stays (with a panic's message or
a crash's last lines), and one status line at the bottom, rewritten in place,
says how many runs are done of how many, the time since the first one started,
and the runs in progress with the step of their last checkpoint:
`[3/12 done, 1 min 04 s] running: p10_ema burn detach (step 150)`. It goes
when no run is in progress (before the summary is printed).

Names, modes, labels and messages come from case files and runs: each is shown
through `escape.terminal`, so none can move the cursor, clear the screen or
start a line of its own.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from .escape import terminal
from .model.case import Case
from .model.results import RunRecord
from .statusline import LOCK, StatusLine, is_terminal
from .wording import flag, outcome_text, value_text


def checkpoint_line(framework: str, mode: str, c: dict[str, Any]) -> str:
    """`burn detach step 50: 1.03 ms/step rss + 7.9 MiB tracked=true (is_require_grad=false)`"""
    delta = c.get("rss_delta_mib")
    rss = "rss n/a" if delta is None else f"rss {'-' if delta < 0 else '+'} {abs(delta):.1f} MiB"
    flags = " ".join(f"{terminal(k)}={terminal(flag(v))}" for k, v in (c.get("flags") or {}).items())
    return (
        f"{terminal(framework)} {terminal(mode)} step {terminal(c.get('step'))}: {c.get('ms_per_step', 0.0):.2f} "
        f"ms/step {rss} tracked={terminal(flag(c.get('tracked')))} ({flags})"
    )


def elapsed_text(seconds: float) -> str:
    """`42 s`, `3 min 05 s`, `1 h 02 min`."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def _base_mode(label: str) -> str:
    """The mode of a run-start label: `detach (repeat 2/3)` -> `detach` (the engine's label for a repeat)."""
    return label.partition(" (repeat ")[0]


class ConsoleReporter:
    def __init__(self, stream: TextIO | None = None, verbose: bool = True, live: bool | None = None):
        """`live`: the terminal form (a status line); by default when `stream` is a terminal."""
        self.stream = stream if stream is not None else sys.stderr
        self.verbose = verbose
        self.live = is_terminal(self.stream) if live is None else live
        self.status = StatusLine(self.stream, self._status_text) if self.live else None
        self.started: float | None = None
        self.done = self.total = 0
        self.running: dict[tuple[str, str, str], str] = {}  # (case, framework, mode) -> shown in the status

    def _print(self, text: str) -> None:
        try:
            if self.status is not None:
                self.status.above(text)
            else:
                print(text, file=self.stream, flush=True)
        except OSError:  # a terminal that hung up (SIGHUP) must not turn progress into a traceback
            pass

    def _status_text(self) -> str:
        seconds = time.monotonic() - (self.started or time.monotonic())
        head = f"[{self.done}/{self.total} done, {elapsed_text(seconds)}]"
        return f"{head} running: {', '.join(self.running.values())}" if self.running else head

    def _redraw(self) -> None:
        if self.status is None:
            return
        if self.running:
            self.status.show()
        else:
            self.status.erase()

    def run_started(self, index: int, total: int, case: Case, framework: str, mode: str) -> None:
        with LOCK:
            if self.started is None:
                self.started = time.monotonic()
            if index == 1:  # a new set of runs (upgrade-check runs several)
                self.done = 0
            self.total = total
            key = (case.name, framework, _base_mode(mode))
            if key in self.running:  # the previous repeat of this timed run is over
                self.done += 1
            self.running[key] = f"{terminal(case.name)} {terminal(framework)} {terminal(mode)}"
            if self.status is None:
                self._print(
                    f"[{index}/{total}] {terminal(case.name)}: {terminal(framework)} {terminal(mode)} "
                    f"({case.steps} steps)"
                )
            self._redraw()

    def checkpoint(self, case: Case, framework: str, mode: str, checkpoint: dict[str, Any]) -> None:
        with LOCK:
            key = (case.name, framework, mode)
            if self.status is not None:
                if key in self.running:
                    shown = self.running[key].partition(" (step ")[0]
                    self.running[key] = f"{shown} (step {terminal(checkpoint.get('step'))})"
                self._redraw()
            elif self.verbose:
                self._print("  " + checkpoint_line(framework, mode, checkpoint))

    def run_finished(self, case: Case, record: RunRecord) -> None:
        with LOCK:
            self.running.pop((case.name, record.framework, record.mode), None)
            self.done += 1
            # Named: semantic runs finish side by side, not in the order they started.
            repeats = f" (median of {record.metrics.repeats} repeats)" if record.metrics.repeats > 1 else ""
            lines = [
                f"  -> {terminal(case.name)} {terminal(record.framework)} {terminal(record.mode)}: "
                f"{terminal(outcome_text(record))}, {record.wall_s:.1f} s wall, "
                f"slowdown ratio {value_text(record.metrics.slowdown_ratio, '.2f')}{repeats}"
            ]
            if record.panic is not None:
                lines.append(f"     {terminal(record.panic.location)}: {terminal(record.panic.message)}")
            if record.crash is not None and record.crash.stderr_tail:
                lines += [f"     {terminal(line)}" for line in record.crash.stderr_tail.strip().splitlines()[-5:]]
            self._print("\n".join(lines))
            self._redraw()
