"""The check: every selected run of every case in its own worker, then metrics
and verdicts. Framework-agnostic: adapters are looked up by name.

Two halves, usable apart (the upgrade check runs torch once and burn once per
release, then judges each side): `run_all` executes and measures, `judge`
computes verdicts from records.

The cost of a program's step: every variant that a selected run of a program
case runs is counted once (`count_flop`: one torch worker for all of them,
beside the semantic runs, never beside a timed one), and that count is each of
its runs' `step_mflop`, torch's and burn's alike (`runner.program.flops`).
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Protocol

from . import execute as execution
from . import noise, results
from .errors import Infrastructure, Interrupted
from .execute import CountRequest, RunRequest, execute
from .frameworks import adapter_for
from .metrics import measured, scipy_stats
from .model.case import Case, ProgramCase, RunSpec, claims_timing
from .model.results import Conditions, RawRun, ResultsDocument, RunRecord, Skipped, Verdict
from .verdicts import pair_verdicts, run_verdicts

SpecKey = tuple[str, str]  # (case name, "framework/mode"): a run spec of a case (`RunSpec.key`)
Executor = Callable[[RunRequest, Callable[[dict[str, Any]], None]], RawRun]
# (case name, variant) -> MFLOP of one iteration of the variant's timed loop.
Counts = dict[tuple[str, str], float]
FlopCounter = Callable[[list[Case], dict[str, str], noise.Controls], Counts]


class Reporter(Protocol):
    def run_started(self, index: int, total: int, case: Case, framework: str, mode: str) -> None: ...
    def checkpoint(self, case: Case, framework: str, mode: str, checkpoint: dict[str, Any]) -> None: ...
    def run_finished(self, case: Case, record: RunRecord) -> None: ...


class Silent:
    def run_started(self, index: int, total: int, case: Case, framework: str, mode: str) -> None: ...
    def checkpoint(self, case: Case, framework: str, mode: str, checkpoint: dict[str, Any]) -> None: ...
    def run_finished(self, case: Case, record: RunRecord) -> None: ...


def preflight(cases: list[Case], env: dict[str, str] | None = None) -> None:
    """Every framework the selected runs need must be importable (exit 3 if not)."""
    available({(c.kind, r.framework) for c in cases for r in c.runs}, env)


def available(needed: set[tuple[str, str]], env: dict[str, str] | None = None) -> None:
    """Each (kind, framework) adapter's requirement can be imported, or its override file exists
    (exit 3 if not)."""
    env = env or {}
    for kind, framework in sorted(needed):
        adapter = adapter_for(kind, framework)
        override = env.get(adapter.override_env) if adapter.override_env else None
        if override:
            if not os.path.isfile(override):
                raise Infrastructure(f"{framework}: {adapter.override_env}={override} does not exist")
            continue
        try:
            found = importlib.util.find_spec(adapter.requirement) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise Infrastructure(
                f"{framework} is not available here ({adapter.requirement} cannot be imported): {adapter.install_hint}"
            )


@dataclass(frozen=True)
class Planned:
    case: Case
    spec: RunSpec
    timed: bool

    @property
    def key(self) -> SpecKey:
        return (self.case.name, self.spec.key)


def plan(cases: list[Case]) -> list[Planned]:
    """Every run, marked timed or not (`claims_timing`)."""
    return [Planned(case, spec, claims_timing(case, spec)) for case in cases for spec in case.runs]


def default_jobs() -> int:
    """How many semantic runs go side by side: the CPUs this process may use."""
    return max(1, len(noise.allowed_cpus()) or os.cpu_count() or 1)


def request_for(
    case: Case,
    framework: str,
    mode: str,
    env: dict[str, str],
    controls: noise.Controls,
    extra_params: dict[str, Any] | None = None,
    timed: bool = True,
) -> RunRequest:
    """The worker request of one run, as `check` makes it (`extra_params`: the calibration's busy
    wait; `timed` False: a run that only shows semantics, which torch forks from its zygote)."""
    params = case.request_params(mode)
    return RunRequest(
        case.name,
        case.kind,
        framework,
        mode,
        {**params, **(extra_params or {})},
        case.timeout_s,
        env,
        recorded_params=case.recorded_params(mode, params),
        memory_mib=case.memory_mib,
        controls=controls,
        timed=timed,
    )


def count_flop(cases: list[Case], env: dict[str, str], controls: noise.Controls) -> Counts:
    """MFLOP of one iteration of the timed loop of every program variant the cases' runs run,
    counted once each by torch in one worker (`execute.count_flop`); a variant without a count
    (no timed loop, torch fails in its first iteration, the worker failed) is left out."""
    keys: list[tuple[str, str]] = []
    recipes: dict[str, dict[str, Any]] = {}
    counted: list[Case] = []
    for case in cases:
        if not isinstance(case, ProgramCase) or not case.steps:
            continue
        counted.append(case)
        for mode in sorted({spec.mode for spec in case.runs}):
            recipes[str(len(keys))] = case.programs[mode].dump()
            keys.append((case.name, mode))
    if not recipes:
        return {}
    memory = [c.memory_mib for c in counted]
    request = CountRequest(
        recipes,
        timeout_s=max(c.timeout_s for c in counted),
        memory_mib=max(memory),
        env=env,
        controls=controls,
    )
    return {keys[int(key)]: flop / 1e6 for key, flop in execution.count_flop(request).items()}


def run_all(
    cases: list[Case],
    reporter: Reporter | None = None,
    execute_run: Executor = execute,
    env: dict[str, str] | None = None,
    repeat: int = 1,
    jobs: int | None = None,
    controls: noise.Controls = noise.Controls(),
    into: dict[SpecKey, RunRecord] | None = None,
    count: FlopCounter | None = count_flop,
) -> dict[SpecKey, RunRecord]:
    """Execute every run of every case; records keyed by (case name, "framework/mode").

    Runs that only show semantics go first, `jobs` at a time (default: one per
    CPU). Timed runs (`claims_timing`) go after, one at a time with nothing
    else of ours running, with the noise `controls`; each `repeat` times, in
    fresh processes, interleaved (every timed run once, then every one again),
    so that a slow spell of the machine touches every run a little rather than
    one run's every repeat.

    Each record goes into `into` (when given) as its run completes, so that a
    caller keeps the completed runs when a signal stops the rest; the signal
    kills the workers of the runs under way (none is recorded).

    `count` counts the program variants' FLOPs (`count_flop`; None: no count, no program
    run has a `step_mflop`): first among the semantic runs (one of the `jobs`), before any
    timed run."""
    reporter = reporter or Silent()
    preflight(cases, env)
    planned = plan(cases)
    semantic = [p for p in planned if not p.timed]
    timed = [p for p in planned if p.timed]
    total = len(semantic) + len(timed) * repeat
    lock = threading.Lock()
    counter = iter(range(1, total + 1))
    outputs: dict[SpecKey, list[RawRun]] = {}

    def one(p: Planned, run_controls: noise.Controls, round_: int) -> RawRun:
        case, spec = p.case, p.spec
        with lock:
            label = spec.mode if repeat == 1 or not p.timed else f"{spec.mode} (repeat {round_}/{repeat})"
            reporter.run_started(next(counter), total, case, spec.framework, label)
        request = request_for(case, spec.framework, spec.mode, env or {}, run_controls, timed=p.timed)

        def progress(checkpoint: dict[str, Any]) -> None:
            with lock:
                reporter.checkpoint(case, spec.framework, spec.mode, checkpoint)

        load_before = noise.load_average()
        raw = execute_run(request, progress)
        worker_conditions = raw.conditions or Conditions()
        conditions = worker_conditions.model_copy(
            update={
                "timed": p.timed,
                "controls": str(run_controls),
                "load_before": load_before,
                "load_after": noise.load_average(),
            }
        )
        return raw.model_copy(update={"conditions": conditions})

    counted: Future[Counts] = Future()
    if count is None or not any(isinstance(c, ProgramCase) and c.steps for c in cases):
        counted.set_result({})

    def finish(p: Planned, raws: list[RawRun]) -> RunRecord:
        mflop = counted.result().get((p.case.name, p.spec.mode)) if isinstance(p.case, ProgramCase) else None
        record = measured(raws[0], p.case, raws, step_mflop=mflop)
        with lock:
            reporter.run_finished(p.case, record)
        return record

    records: dict[SpecKey, RunRecord] = into if into is not None else {}
    side_by_side = noise.Controls(malloc=controls.malloc, pin=False)
    workers = max(1, jobs or default_jobs())

    def count_now() -> None:
        assert count is not None
        try:
            counted.set_result(count(cases, env or {}, side_by_side))
        except BaseException as err:
            counted.set_exception(err)
            raise

    if workers == 1 or len(semantic) < 2:
        if not counted.done():
            count_now()
        for p in semantic:
            records[p.key] = finish(p, [one(p, side_by_side, 1)])
    else:
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            if not counted.done():
                pool.submit(count_now)  # first: it takes one of the `jobs` while the runs start
            futures = {pool.submit(one, p, side_by_side, 1): p for p in semantic}
            for future in as_completed(futures):
                p = futures[future]
                records[p.key] = finish(p, [future.result()])
        except BaseException:
            # Ctrl-C, a signal or an error: nothing new starts, the runs under way are killed
            # (their threads then end at once) and none of them is recorded.
            pool.shutdown(wait=False, cancel_futures=True)
            execution.kill_running()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    if not counted.done():  # never beside a timed run
        count_now()
    for round_ in range(1, repeat + 1):
        for p in timed:
            outputs.setdefault(p.key, []).append(one(p, controls, round_))
            if round_ == repeat:
                records[p.key] = finish(p, outputs[p.key])
    return records


def judge(cases: list[Case], records: dict[SpecKey, RunRecord]) -> tuple[list[RunRecord], list[Verdict], list[Skipped]]:
    """Runs (in case order), expectation verdicts, and expectations not applicable
    to the burn version that ran (`burn_versions` in the case file)."""
    runs: list[RunRecord] = []
    expectations: list[Verdict] = []
    not_applicable: list[Skipped] = []
    for case in cases:
        by_key = {spec.key: records[(case.name, spec.key)] for spec in case.runs if (case.name, spec.key) in records}
        for spec in case.runs:
            if spec.key not in by_key:
                continue
            runs.append(by_key[spec.key])
            verdicts, skipped = run_verdicts(case, spec, by_key[spec.key])
            expectations.extend(verdicts)
            not_applicable.extend(skipped)
        verdicts, skipped = pair_verdicts(case, by_key)
        expectations.extend(verdicts)
        not_applicable.extend(skipped)
    return runs, expectations, not_applicable


def check(
    cases: list[Case],
    reporter: Reporter | None = None,
    execute_run: Executor = execute,
    env: dict[str, str] | None = None,
    repeat: int = 1,
    jobs: int | None = None,
    controls: noise.Controls = noise.Controls(),
    count: FlopCounter | None = count_flop,
) -> ResultsDocument:
    """Run every case and return the results document (`count`: as `run_all`'s).

    Interrupted (a signal), it raises `Interrupted` carrying the document of
    the runs completed so far, marked partial."""
    scipy_stats()  # imported now, not when the first run completes (a signal may follow it)
    started = results.now()
    machine = results.machine_state()
    measurement = results.Measurement(start=machine, controls=str(controls), repeat=repeat)
    records: dict[SpecKey, RunRecord] = {}
    try:
        run_all(cases, reporter, execute_run, env, repeat, jobs, controls, into=records, count=count)
    except KeyboardInterrupt as err:
        stop = Interrupted.of(err)
        stop.partial.append(partial_document(cases, records, started, stop, measurement))
        if stop is err:
            raise
        raise stop from None
    return judged_document(cases, records, started, measurement)


def judged_document(
    cases: list[Case],
    records: dict[SpecKey, RunRecord],
    started: dt.datetime,
    measurement: results.Measurement | None = None,
    partial_reason: str | None = None,
) -> ResultsDocument:
    """The results document of `records` (with `partial_reason`: marked partial)."""
    runs, expectations, not_applicable = judge(cases, records)
    return results.document(
        runs, expectations, started, results.now(), not_applicable, cases, partial_reason, measurement=measurement
    )


def partial_document(
    cases: list[Case],
    records: dict[SpecKey, RunRecord],
    started: dt.datetime,
    stop: Interrupted,
    measurement: results.Measurement | None = None,
) -> ResultsDocument:
    """The runs completed before `stop`, judged (pairs only where both ran), marked partial."""
    total = sum(len(c.runs) for c in cases)
    reason = f"interrupted by {stop.name} after {len(records)} of {total} runs"
    return judged_document(cases, records, started, measurement, reason)
