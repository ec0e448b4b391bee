"""The check: every selected run of every case in its own worker, then metrics
and verdicts. Framework-agnostic: adapters are looked up by name."""

from __future__ import annotations

import importlib.util
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


def preflight(cases: list[Case]) -> None:
    """Every framework the selected runs need must be importable (exit 3 if not)."""
    needed = {(c.kind, r.framework) for c in cases for r in c.runs}
    for kind, framework in sorted(needed):
        adapter = adapter_for(kind, framework)
        try:
            found = importlib.util.find_spec(adapter.requirement) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise Infrastructure(
                f"{framework} is not available here ({adapter.requirement} cannot be imported): "
                f"{adapter.install_hint}"
            )


def check(cases: list[Case], reporter: Reporter | None = None,
          execute_run: Callable[..., dict] = execute) -> dict:
    """Run every case and return the results document."""
    reporter = reporter or Silent()
    preflight(cases)
    started = results.now()
    total = sum(len(c.runs) for c in cases)
    runs: list[dict] = []
    expectations: list[dict] = []
    index = 0
    for case in cases:
        by_key: dict[str, dict] = {}
        for spec in case.runs:
            index += 1
            reporter.run_started(index, total, case, spec.framework, spec.mode)
            request = RunRequest(case.name, case.kind, spec.framework, spec.mode,
                                 case.params, case.timeout_s)
            record = execute_run(
                request,
                lambda cp, fw=spec.framework, mode=spec.mode: reporter.checkpoint(case, fw, mode, cp),
            )
            for key, empty in (("panic", None), ("step_ms", []), ("checkpoints", [])):
                record.setdefault(key, empty)
            record["params"] = case.params
            record["metrics"] = compute(record, case)
            reporter.run_finished(case, record)
            by_key[spec.key] = record
            runs.append(record)
            expectations.extend(run_checks(case, spec, record))
        expectations.extend(pair_checks(case, by_key))
    return results.document(runs, expectations, started, results.now())
