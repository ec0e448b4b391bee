"""A campaign on this machine: `--jobs N` shards, each a process of its own with its own
torch and burn workers (`shard`), or with one job the shard in this process. The
coordinator merges what they report: the counts add up, and the root causes are deduplicated
by signature, keeping for each the smallest program (fewest statements, then the earliest
program) whichever shard found it.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from .. import workers
from ..noise import Controls
from .campaign import ShardSpec, Stats, cause_from_dict, run_shard
from .localize import Cause


def default_jobs() -> int:
    """One job per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class Coordinator:
    """What the shards found, merged. `on_cause(cause, first)` is told of every cause kept
    (`first`: the first of its signature; else a smaller program for one already kept)."""

    def __init__(self, on_cause: Callable[[Cause, bool], None] | None = None) -> None:
        self.on_cause = on_cause or (lambda c, first: None)
        self.shards: dict[int, Stats] = {}
        self.causes: dict[str, Cause] = {}
        self.failures: list[str] = []

    def cause(self, cause: Cause) -> None:
        kept = self.causes.get(cause.signature)
        if kept is not None and (kept.statements, kept.program_index) <= (cause.statements, cause.program_index):
            return
        self.causes[cause.signature] = cause
        self.on_cause(cause, kept is None)

    def progress(self, shard: int, stats: Stats) -> None:
        self.shards[shard] = stats

    def stats(self) -> Stats:
        total = Stats()
        for stats in self.shards.values():
            total.merge(stats)
        return total


def run_local(spec: ShardSpec, jobs: int, coordinator: Coordinator, on_progress: Callable[[Stats], None]) -> None:
    """Run the campaign `spec` describes in `jobs` shards on this machine."""
    if jobs == 1:

        def progress(stats: Stats) -> None:
            coordinator.progress(0, stats)
            on_progress(coordinator.stats())

        stats, _ = run_shard(replace(spec, shard=0, shards=1), on_cause=coordinator.cause, on_progress=progress)
        coordinator.progress(0, stats)
        return
    events: queue.Queue[tuple[int, str | None]] = queue.Queue()
    procs: list[tuple[subprocess.Popen[str], tempfile._TemporaryFileWrapper[bytes]]] = []
    try:
        for shard in range(jobs):
            stderr = tempfile.NamedTemporaryFile(prefix="fuzz-shard-", suffix=".err")
            proc = workers.start(
                [sys.executable, "-m", "runner.fuzz.shard"],
                memory_mib=None,  # its own workers are capped
                env=workers.environment(Controls(), spec.env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
            procs.append((proc, stderr))
            assert proc.stdin is not None
            proc.stdin.write(replace(spec, shard=shard, shards=jobs).to_json() + "\n")
            proc.stdin.close()
            threading.Thread(target=_read, args=(shard, proc, events), daemon=True).start()
        running = set(range(jobs))
        # A shard stops itself at its budget; past it (and a generous grace), it is stopped.
        deadline = time.monotonic() + spec.budget_s + 4 * spec.timeout_s + 120
        while running:
            try:
                shard, line = events.get(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            except queue.Empty:
                if time.monotonic() > deadline:
                    coordinator.failures += [f"shard {s} did not finish in time" for s in sorted(running)]
                    break
                continue
            if line is None:
                if shard in running:
                    running.discard(shard)
                    proc, stderr = procs[shard]
                    proc.wait()
                    stderr.seek(0)
                    tail = stderr.read().decode("utf-8", "replace")[-500:]
                    coordinator.failures.append(f"shard {shard} ended early ({proc.returncode}): {tail.strip()}")
                continue
            event = json.loads(line)
            if event["event"] == "cause":
                coordinator.cause(cause_from_dict(event["cause"]))
            elif event["event"] in ("progress", "done"):
                coordinator.progress(shard, Stats.from_dict(event["stats"]))
                on_progress(coordinator.stats())
                if event["event"] == "done":
                    running.discard(shard)
    finally:
        for proc, stderr in procs:
            workers.stop(proc)
            stderr.close()


def _read(shard: int, proc: subprocess.Popen[str], events: queue.Queue[tuple[int, str | None]]) -> None:
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            events.put((shard, line))
    except (OSError, ValueError):
        pass
    events.put((shard, None))
