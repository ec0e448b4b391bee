"""The check: every selected run of every case in its own worker, then metrics
and verdicts. Framework-agnostic: adapters are looked up by name.

Two halves, usable apart (the upgrade check runs torch once and burn once per
release, then judges each side): `run_all` executes and measures, `judge`
computes verdicts from records.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
from collections.abc import Callable
from typing import Any, Protocol

from . import results
from .errors import Infrastructure, Interrupted
from .execute import RunRequest, execute
from .frameworks import adapter_for
from .metrics import measured
from .model.case import Case
from .model.results import RawRun, ResultsDocument, RunRecord, Skipped, Verdict
from .verdicts import pair_verdicts, run_verdicts

RunKey = tuple[str, str]  # (case name, "framework/mode")
Executor = Callable[[RunRequest, Callable[[dict[str, Any]], None]], RawRun]


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
    env = env or {}
    needed = {(c.kind, r.framework) for c in cases for r in c.runs}
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


def run_all(
    cases: list[Case],
    reporter: Reporter | None = None,
    execute_run: Executor = execute,
    env: dict[str, str] | None = None,
    into: dict[RunKey, RunRecord] | None = None,
) -> dict[RunKey, RunRecord]:
    """Execute every run of every case; records keyed by (case name, "framework/mode").

    Each record goes into `into` (when given) as its run completes, so that a
    caller keeps the completed runs when a signal stops the rest."""
    reporter = reporter or Silent()
    preflight(cases, env)
    total = sum(len(c.runs) for c in cases)
    records: dict[RunKey, RunRecord] = into if into is not None else {}
    index = 0
    for case in cases:
        for spec in case.runs:
            index += 1
            reporter.run_started(index, total, case, spec.framework, spec.mode)
            request = RunRequest(
                case.name,
                case.kind,
                spec.framework,
                spec.mode,
                case.request_params(spec.mode),
                case.timeout_s,
                env or {},
                case.recorded_params(spec.mode),
                memory_mib=case.memory_mib,
            )

            def progress(
                checkpoint: dict[str, Any], fw: str = spec.framework, mode: str = spec.mode, c: Case = case
            ) -> None:
                reporter.checkpoint(c, fw, mode, checkpoint)

            record = measured(execute_run(request, progress), case)
            reporter.run_finished(case, record)
            records[(case.name, spec.key)] = record
    return records


def judge(cases: list[Case], records: dict[RunKey, RunRecord]) -> tuple[list[RunRecord], list[Verdict], list[Skipped]]:
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
) -> ResultsDocument:
    """Run every case and return the results document.

    Interrupted (a signal), it raises `Interrupted` carrying the document of
    the runs completed so far, marked partial."""
    started = results.now()
    records: dict[RunKey, RunRecord] = {}
    try:
        run_all(cases, reporter, execute_run, env, into=records)
    except KeyboardInterrupt as err:
        stop = err if isinstance(err, Interrupted) else Interrupted()
        stop.partial.append(partial_document(cases, records, started, stop))
        if stop is err:
            raise
        raise stop from None
    runs, expectations, not_applicable = judge(cases, records)
    return results.document(runs, expectations, started, results.now(), not_applicable, cases)


def partial_document(
    cases: list[Case], records: dict[RunKey, RunRecord], started: dt.datetime, stop: Interrupted
) -> ResultsDocument:
    """The runs completed before `stop`, judged (pairs only where both ran), marked partial."""
    total = sum(len(c.runs) for c in cases)
    runs, expectations, not_applicable = judge(cases, records)
    reason = f"interrupted by {stop.name} after {len(records)} of {total} runs"
    return results.document(runs, expectations, started, results.now(), not_applicable, cases, reason)
