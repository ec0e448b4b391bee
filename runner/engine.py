"""The check: every selected run of every case in its own worker, then metrics
and verdicts. Framework-agnostic: adapters are looked up by name.

Two halves, usable apart (the upgrade check runs torch once and burn once per
release, then judges each side): `run_all` executes and measures, `judge`
computes verdicts from records.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Callable, Protocol

from .cases import Case
from .checks import pair_checks, run_checks
from .errors import Infrastructure
from .execute import RunRequest, execute
from .frameworks import adapter_for
from .metrics import compute
from . import results

class Reporter(Protocol):
    def run_started(self, index: int, total: int, case: Case, framework: str, mode: str) -> None: ...
    def checkpoint(self, case: Case, framework: str, mode: str, checkpoint: dict) -> None: ...
    def run_finished(self, case: Case, record: dict) -> None: ...


class Silent:
    def run_started(self, *args) -> None: ...
    def checkpoint(self, *args) -> None: ...
    def run_finished(self, *args) -> None: ...


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
                f"{framework} is not available here ({adapter.requirement} cannot be imported): "
                f"{adapter.install_hint}"
            )


def run_all(cases: list[Case], reporter: Reporter | None = None,
            execute_run: Callable[..., dict] = execute,
            env: dict[str, str] | None = None) -> dict[tuple[str, str], dict]:
    """Execute every run of every case; records keyed by (case name, "framework/mode")."""
    reporter = reporter or Silent()
    preflight(cases, env)
    total = sum(len(c.runs) for c in cases)
    records: dict[tuple[str, str], dict] = {}
    index = 0
    for case in cases:
        for spec in case.runs:
            index += 1
            reporter.run_started(index, total, case, spec.framework, spec.mode)
            request = RunRequest(case.name, case.kind, spec.framework, spec.mode,
                                 case.params, case.timeout_s, env or {})
            record = execute_run(
                request,
                lambda cp, fw=spec.framework, mode=spec.mode: reporter.checkpoint(case, fw, mode, cp),
            )
            for key, empty in (("panic", None), ("step_ms", []), ("checkpoints", [])):
                record.setdefault(key, empty)
            record["params"] = case.params
            record["metrics"] = compute(record, case)
            reporter.run_finished(case, record)
            records[(case.name, spec.key)] = record
    return records


def judge(cases: list[Case], records: dict[tuple[str, str], dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """Runs (in case order), expectation verdicts, and expectations not applicable
    to the burn version that ran (`burn_versions` in the case file)."""
    runs: list[dict] = []
    expectations: list[dict] = []
    not_applicable: list[dict] = []
    for case in cases:
        by_key = {spec.key: records[(case.name, spec.key)]
                  for spec in case.runs if (case.name, spec.key) in records}
        for spec in case.runs:
            if spec.key not in by_key:
                continue
            runs.append(by_key[spec.key])
            verdicts, skipped = run_checks(case, spec, by_key[spec.key])
            expectations.extend(verdicts)
            not_applicable.extend(skipped)
        verdicts, skipped = pair_checks(case, by_key)
        expectations.extend(verdicts)
        not_applicable.extend(skipped)
    return runs, expectations, not_applicable


def check(cases: list[Case], reporter: Reporter | None = None,
          execute_run: Callable[..., dict] = execute,
          env: dict[str, str] | None = None) -> dict:
    """Run every case and return the results document."""
    started = results.now()
    records = run_all(cases, reporter, execute_run, env)
    runs, expectations, not_applicable = judge(cases, records)
    return results.document(runs, expectations, started, results.now(), not_applicable)
