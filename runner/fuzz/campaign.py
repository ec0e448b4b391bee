"""The search of one shard: its programs (`generate.program_at(seed, i)` for every `i` that is
`shard` modulo `shards`), generated and judged in batches (`localize`) until its budget or
its share of `max_programs` is spent. Each root cause is reported once per shard (`Cause`),
with how many of its programs showed it; the coordinator (`jobs`, `cluster`) merges the
shards and keeps one cause per signature.

Deterministic for a seed: which programs a shard runs depends on the seed, the shard and the
shard count only, so the union over shards with `max_programs` is the same programs whatever
the number of shards; and each program is judged on its own.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..program import syntax
from .generate import GENERATED, ops_of, program_at
from .localize import Cause, Judged, Localizer
from .pool import WorkerPool

BATCH = 16


@dataclass
class ShardSpec:
    seed: int = 0
    shard: int = 0
    shards: int = 1
    max_ops: int = 8
    budget_s: float = 60.0
    max_programs: int | None = None  # the campaign's, over all shards
    timeout_s: float = 30.0
    env: dict[str, str] = field(default_factory=dict)
    shrink: bool = True
    batch: int = BATCH

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ShardSpec:
        return cls(**json.loads(text))


@dataclass
class Stats:
    programs: int = 0
    fully_judged: int = 0
    replays: int = 0
    shrink_evaluations: int = 0
    seconds: float = 0.0
    ops: Counter[str] = field(default_factory=Counter)
    pairs: Counter[str] = field(default_factory=Counter)  # "a>b"
    divergences: Counter[str] = field(default_factory=Counter)  # "new:values", "known:ID"
    filtered: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    causes: Counter[str] = field(default_factory=Counter)  # signature -> programs that showed it
    first_seen: dict[str, int] = field(default_factory=dict)  # signature -> the first program index
    crashes: int = 0
    timeouts: int = 0

    def rate(self) -> float:
        return self.programs / self.seconds if self.seconds else 0.0

    def add(self, j: Judged) -> None:
        self.programs += 1
        self.fully_judged += j.fully_judged
        self.replays += j.replays
        ops = [op for op in ops_of(j.program) if op != "observe"]
        self.ops.update(ops)
        self.pairs.update(f"{a}>{b}" for a, b in itertools.pairwise(ops))
        self.divergences.update(j.divergences)
        self.filtered.update(j.filtered)
        self.outcomes[j.outcomes] += 1

    def merge(self, other: Stats) -> None:
        for name in ("programs", "fully_judged", "replays", "shrink_evaluations", "crashes", "timeouts"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.seconds = max(self.seconds, other.seconds)
        for name in ("ops", "pairs", "divergences", "filtered", "outcomes", "causes"):
            getattr(self, name).update(getattr(other, name))
        for sig, index in other.first_seen.items():
            self.first_seen[sig] = min(index, self.first_seen.get(sig, index))

    def to_dict(self) -> dict[str, Any]:
        # not `asdict`: it rebuilds a Counter from its items, counting the pairs
        return {k: dict(v) if isinstance(v, dict) else v for k, v in self.__dict__.items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stats:
        stats = cls(**{k: v for k, v in data.items() if not isinstance(v, dict)})
        for name in ("ops", "pairs", "divergences", "filtered", "outcomes", "causes"):
            setattr(stats, name, Counter(data.get(name) or {}))
        stats.first_seen = dict(data.get("first_seen") or {})
        return stats


def coverage_ops(stats: Stats) -> dict[str, int]:
    return {op: stats.ops.get(op, 0) for op in GENERATED if op != "observe"}


# ---- causes across processes ---------------------------------------------------------------------


def cause_to_dict(cause: Cause) -> dict[str, Any]:
    data = {k: v for k, v in cause.__dict__.items() if k not in ("program", "original")}
    data["program"] = syntax.unparse(cause.program)
    data["original"] = syntax.unparse(cause.original)
    plain: dict[str, Any] = json.loads(json.dumps(data, default=str))
    return plain


def cause_from_dict(data: dict[str, Any]) -> Cause:
    fields = dict(data)
    program = syntax.parse(fields.pop("program"), where="a shard's cause")
    original = syntax.parse(fields.pop("original"), where="a shard's cause")
    return Cause(program=program, original=original, **fields)


# ---- the shard's loop ----------------------------------------------------------------------------


def _judged(localizer: Localizer, batch: list[tuple[int, Any]], found: set[str], stats: Stats) -> list[Judged]:
    """The batch judged; if judging fails (a fuzzer bug), each program on its own, and one that
    still fails is counted (`fuzzer error`) and its traceback written to stderr, the search goes on."""
    try:
        return localizer.judge(batch, found)
    except Exception:
        out = []
        for item in batch:
            try:
                out += localizer.judge([item], found)
            except Exception:
                stats.filtered["fuzzer error"] += 1
                print(f"fuzz: judging program {item[0]} failed:\n{traceback.format_exc()}", file=sys.stderr)
        return out


def run_shard(
    spec: ShardSpec,
    *,
    pool: WorkerPool | None = None,
    on_cause: Callable[[Cause], None] | None = None,
    on_progress: Callable[[Stats], None] | None = None,
    progress_every_s: float = 5.0,
) -> tuple[Stats, list[Cause]]:
    """Search `spec`'s share of the campaign; the counts and the causes (one per signature)."""
    own = pool is None
    pool = pool or WorkerPool(timeout_s=spec.timeout_s, env=spec.env)
    localizer = Localizer(pool, shrink=spec.shrink)
    stats = Stats()
    causes: dict[str, Cause] = {}
    started = time.monotonic()
    deadline = started + spec.budget_s
    last_progress = started
    indices = itertools.count(spec.shard, spec.shards)
    try:
        while time.monotonic() < deadline:
            batch = []
            for _ in range(spec.batch):
                index = next(indices)
                if spec.max_programs is not None and index >= spec.max_programs:
                    break
                batch.append((index, program_at(spec.seed, index, spec.max_ops)))
            if not batch:
                break
            for judged in _judged(localizer, batch, set(causes), stats):
                stats.add(judged)
                for cause in judged.causes:
                    stats.shrink_evaluations += cause.evaluations
                    if cause.signature not in causes:
                        causes[cause.signature] = cause
                        stats.first_seen[cause.signature] = judged.index
                        if on_cause is not None:
                            on_cause(cause)
                for sig in judged.seen:
                    stats.causes[sig] += 1
                    stats.first_seen.setdefault(sig, judged.index)
            stats.seconds = time.monotonic() - started
            stats.crashes, stats.timeouts = pool.crashes, pool.timeouts
            if on_progress is not None and time.monotonic() - last_progress >= progress_every_s:
                last_progress = time.monotonic()
                on_progress(stats)
            if spec.max_programs is not None and len(batch) < spec.batch:
                break
    finally:
        if own:
            pool.close()
    stats.seconds = time.monotonic() - started
    return stats, list(causes.values())
