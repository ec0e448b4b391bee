"""The search: hypothesis generates programs (`generate.programs`), each runs
under both frameworks (and torch in float64 for the reference and the
gradient check), and the first divergence that is neither filtered nor known
makes the test fail; hypothesis then shrinks the program while the same kind
of divergence persists. The shrunk program is recorded (`record`) and its
signature (class and operation sequence) excluded, and the search goes on in
rounds, each with its own seed, until the time budget is spent.

Deterministic for a seed: the rounds' seeds derive from it, and so do the
programs' data (`materialize(seed=0)`).
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky

from ..model.fuzz import Coverage
from ..program import data as program_data
from ..program.ir import ParsedProgram, walk
from . import known
from .generate import GENERATED, ops_of, programs
from .judge import Divergence, compare, gradcheck, growth, record_of
from .pool import WorkerPool

ROUND_EXAMPLES = 400
# Relative nudges of the initial parameters for the chaos check (a few: chaos is a matter of luck).
NUDGES = (1e-6, -1e-6, 1e-5, -1e-5)


def nudge(program: dict[str, Any], factor: float) -> dict[str, Any]:
    """The program with every param's initial values scaled by 1 + factor."""
    tensors = [
        {**t, "data": [x * (1 + factor) for x in t["data"]]} if t["role"] == "param" else t for t in program["tensors"]
    ]
    return {**program, "tensors": tensors}


@dataclass
class Found:
    divergence: Divergence
    program: ParsedProgram
    signature: str
    evaluations: int  # programs run while shrinking it
    # The smallest failing program did not fail again when replayed: the divergence comes and goes
    # (a nondeterministic framework, a worker that changes state). Kept: that is an observation too.
    flaky: bool = False


@dataclass
class _Hunt:
    """One round's state while hypothesis shrinks: the class being shrunk, the programs run for
    it, and the last failure seen (kept if the replay of the smallest one passes)."""

    cls: str | None = None
    evaluations: int = 0
    last: _NewDivergence | None = None


class _NewDivergence(Exception):
    def __init__(self, divergence: Divergence, program: ParsedProgram, signature: str) -> None:
        super().__init__(signature)
        self.divergence, self.program, self.signature = divergence, program, signature


@dataclass
class Stats:
    programs: int = 0
    shrink_evaluations: int = 0
    seconds: float = 0.0
    ops: Counter[str] = field(default_factory=Counter)
    pairs: Counter[tuple[str, str]] = field(default_factory=Counter)
    divergences: Counter[str] = field(default_factory=Counter)  # "new:values", "known:consumed-tape-panic", ...
    filtered: Counter[str] = field(default_factory=Counter)
    gradcheck: Counter[str] = field(default_factory=Counter)  # checked, or why skipped
    outcomes: Counter[str] = field(default_factory=Counter)
    crashes: int = 0
    timeouts: int = 0

    def rate(self) -> float:
        return self.programs / self.seconds if self.seconds else 0.0


def program_ir(parsed: ParsedProgram) -> dict[str, Any]:
    """The IR a generated program runs as: its data made from seed 0 (deterministic for a program)."""
    return program_data.materialize(parsed, seed=0).model_dump(mode="json")


def signature(d: Divergence, program: ParsedProgram) -> str:
    """Class and operation sequence (observations and optimizer set-up left out)."""
    ops = [op for op in ops_of(program) if op not in ("observe", "sgd", "adam")]
    return f"{d.cls}:{'-'.join(ops)}"


class Campaign:
    def __init__(
        self,
        pool: WorkerPool,
        *,
        seed: int = 0,
        max_ops: int = 8,
        on_found: Callable[[Found], None] | None = None,
        progress: Callable[[Stats], None] | None = None,
    ) -> None:
        self.pool, self.seed, self.max_ops = pool, seed, max_ops
        self.on_found = on_found or (lambda f: None)
        self.progress = progress or (lambda s: None)
        self.stats = Stats()
        self.found: list[Found] = []
        self.excluded: set[str] = set()
        self.max_programs = 10**12

    def evaluate(self, parsed: ParsedProgram, count: bool = True) -> list[Divergence]:
        """Run one program both ways; its divergences, each marked known or not."""
        program = program_ir(parsed)
        runs = self.pool.run_pair(program)
        reference_result = self.pool.run_pair(program, ("torch",), "float64")["torch"]
        reference = record_of(reference_result, "torch")
        torch_run, burn_run = record_of(runs["torch"], "torch"), record_of(runs["burn"], "burn")
        findings = compare(torch_run, burn_run, reference)
        divergences = findings.divergences
        grew = growth(torch_run, burn_run)
        if grew is not None:
            confirm = self.pool.run_pair(program)  # timing: a second run must show it too
            grew = growth(record_of(confirm["torch"], "torch"), record_of(confirm["burn"], "burn")) and grew
            if grew is not None:
                divergences = [*divergences, grew]
        checked = "skipped: failed"
        if torch_run.outcome == burn_run.outcome == reference.outcome == "ok":
            extra, skipped = gradcheck(
                program,
                reference,
                {"torch": torch_run, "burn": burn_run},
                lambda p: self.pool.run_pair(p, ("torch",), "float64")["torch"],
            )
            divergences = divergences + extra
            checked = "checked" if skipped is None else f"skipped: {skipped}"
        numeric = [d for d in divergences if d.cls in ("values", "grads")]
        if numeric and any(s.op in ("repeat", "step") for s in walk(parsed.body)):
            # Training dynamics can amplify float32 noise (a parameter oscillating at the kink of
            # abs, say): compare torch with itself from initial data nudged by one part in 1e6.
            # A label that differs there too says nothing about burn.
            noisy: set[str | None] = set()
            for factor in NUDGES:
                nudged = record_of(self.pool.run_pair(nudge(program, factor), ("torch",))["torch"], "torch")
                noisy |= {d.label for d in compare(torch_run, nudged, None).divergences if d.cls in ("values", "grads")}
            kept = [d for d in divergences if not (d.cls in ("values", "grads") and d.label in noisy)]
            if count:
                self.stats.filtered["chaotic"] += len(divergences) - len(kept)
            divergences = kept
        for d in divergences:
            d.known = known.match(d, parsed)
        if count:
            s = self.stats
            s.programs += 1
            ops = [op for op in ops_of(parsed) if op != "observe"]
            s.ops.update(ops)
            s.pairs.update(itertools.pairwise(ops))
            s.filtered.update(findings.filtered)
            s.gradcheck[checked] += 1
            s.outcomes[f"{torch_run.outcome}/{burn_run.outcome}"] += 1
            for d in divergences:
                s.divergences[f"{'known:' + d.known if d.known else 'new:' + d.cls}"] += 1
        else:
            self.stats.shrink_evaluations += 1
        return divergences

    def hunt(self, round_seed: int, deadline: float) -> Found | None:
        """One round: generate until a new divergence (then shrink it), the round's
        examples run out, or the deadline passes."""
        target = _Hunt()

        @hypothesis_seed(round_seed)
        @settings(
            max_examples=ROUND_EXAMPLES,
            deadline=None,
            database=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.generate, Phase.shrink],
            verbosity=Verbosity.quiet,
            report_multiple_bugs=False,
            print_blob=False,
        )
        @given(programs(self.max_ops))
        def probe(parsed: ParsedProgram) -> None:
            shrinking = target.cls is not None
            if not shrinking and (time.monotonic() > deadline or self.stats.programs >= self.max_programs):
                return
            if shrinking:
                target.evaluations += 1
            for d in self.evaluate(parsed, count=not shrinking):
                if d.known is not None:
                    continue
                sig = signature(d, parsed)
                if sig in self.excluded:
                    continue
                if target.cls in (None, d.cls):
                    target.cls = d.cls
                    target.last = _NewDivergence(d, parsed, sig)
                    raise target.last

        try:
            probe()
        except _NewDivergence as err:
            return Found(err.divergence, err.program, err.signature, target.evaluations)
        except Flaky:
            # hypothesis replays the smallest failing program and it passed this time: keep the
            # last failure seen rather than lose the round (or the campaign)
            last = target.last
            if last is None:
                raise
            return Found(last.divergence, last.program, last.signature, target.evaluations, flaky=True)
        return None

    def run(self, budget_s: float, max_programs: int | None = None) -> Stats:
        """Search for `budget_s` seconds, or until `max_programs` programs ran (deterministic for a seed)."""
        started = time.monotonic()
        deadline = started + budget_s
        self.max_programs = max_programs if max_programs is not None else 10**12
        last_progress = started
        for round_index in itertools.count():
            if time.monotonic() >= deadline or self.stats.programs >= self.max_programs:
                break
            found = self.hunt(self.seed * 1_000_003 + round_index, deadline)
            self.stats.seconds = time.monotonic() - started
            self.stats.crashes, self.stats.timeouts = self.pool.crashes, self.pool.timeouts
            if found is not None and found.signature not in self.excluded:
                self.excluded.add(found.signature)
                self.found.append(found)
                self.on_found(found)
            if time.monotonic() - last_progress > 10:
                last_progress = time.monotonic()
                self.progress(self.stats)
        self.stats.seconds = time.monotonic() - started
        return self.stats

    def coverage(self, at_least: int = 10) -> Coverage:
        """How often each generated operation ran, and which ran fewer than `at_least` times."""
        counts = {op: self.stats.ops.get(op, 0) for op in GENERATED if op not in ("observe",)}
        rare = sorted(op for op, n in counts.items() if n < at_least)
        return Coverage(
            ops=counts,
            below=rare,
            at_least=at_least,
            pairs_seen=len(self.stats.pairs),
            pairs_possible=len(counts) ** 2,
        )
