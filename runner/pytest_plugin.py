"""pytest collects the case files: `python3 -m pytest cases/` runs every run
and pair of every case under real torch and the real probe.

Each `cases/**/*.toml` becomes a collector whose items are its runs and pairs,
with readable ids (`p10_ema[burn-detach]`, `p10_ema[torch-detach~burn-without]`).
The case's runs execute once, when its first item runs; each item then checks
its own verdicts. A case file that does not load is one failed item
(`NAME[load]`) naming the file and the key; the other cases still run.
Every item is marked `slow`. A program case with `[program] test_steps` (a reference model)
runs its timed loop for that many iterations here, so that the default test suite trains it
for a few steps; `check` and `report` run it in full.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .cases import load_case
from .engine import check
from .errors import RunnerError
from .model.case import Case, ProgramCase
from .model.results import ResultsDocument
from .paths import CASES_DIR


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "case_paths", "folders whose *.toml files are case files (relative to the rootdir)", type="linelist", default=[]
    )


def _case_folders(config: pytest.Config) -> list[Path]:
    configured = config.getini("case_paths")
    return [config.rootpath / p for p in configured] if configured else [CASES_DIR]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    # A case folder's own *.toml files and its found/ ones; deeper files (a reproducer's Cargo.toml) are not cases.
    folders = _case_folders(parent.config)
    if file_path.suffix == ".toml" and any(file_path.parent in (f, f / "found") for f in folders):
        collector: CaseFile = CaseFile.from_parent(parent, path=file_path)
        return collector
    return None


class CaseFailure(Exception):
    """An expectation that does not hold, or a case that could not run."""


class CaseFile(pytest.File):
    case: Case | None = None
    _results: ResultsDocument | None = None
    _error: str | None = None

    def collect(self) -> Iterator[pytest.Item]:
        try:
            case = load_case(self.path)
            if isinstance(case, ProgramCase) and case.program.test_steps is not None:
                case = load_case(self.path, steps=case.program.test_steps)
        except RunnerError as err:
            yield BrokenCase.from_parent(self, name=f"{self.path.stem}[load]", message=str(err))
            return
        self.case = case
        for spec in case.runs:
            yield CaseItem.from_parent(self, name=f"{case.name}[{spec.framework}-{spec.mode}]", subject=spec.key)
        for pair in case.pairs:
            subject = f"{pair.a} ~ {pair.b}"
            name = f"{case.name}[{pair.a.framework}-{pair.a.mode}~{pair.b.framework}-{pair.b.mode}]"
            yield CaseItem.from_parent(self, name=name, subject=subject)

    def results(self) -> ResultsDocument:
        """The case's runs, executed once for all its items."""
        if self._error is not None:
            raise CaseFailure(self._error)
        if self._results is None:
            assert self.case is not None
            try:
                self._results = check([self.case], count=None)  # verdicts only: no FLOP count
            except RunnerError as err:
                self._error = f"{self.path}: the case could not run: {err}"
                raise CaseFailure(self._error) from None
        return self._results


class BrokenCase(pytest.Item):
    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise CaseFailure(self.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return str(excinfo.value) if isinstance(excinfo.value, CaseFailure) else str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"case file {self.path.name}"


class CaseItem(pytest.Item):
    def __init__(self, *, subject: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.subject = subject
        self.add_marker(pytest.mark.slow)

    @property
    def case_file(self) -> CaseFile:
        assert isinstance(self.parent, CaseFile)
        return self.parent

    def runtest(self) -> None:
        results = self.case_file.results()
        verdicts = [verdict for verdict in results.expectations if verdict.subject == self.subject]
        if not verdicts:
            skipped = [s for s in results.not_applicable if s.subject == self.subject]
            if skipped:
                pytest.skip(f"limited to burn {skipped[0].burn_versions}, ran burn {skipped[0].burn}")
            raise CaseFailure(f"no expectation was evaluated for {self.subject}")
        failed = [verdict for verdict in verdicts if not verdict.passed]
        if failed:
            lines = [
                f"{verdict.check}: expected {verdict.expected!r}, observed {verdict.observed!r}" for verdict in failed
            ]
            run = next((r for r in results.runs if str(r.ref) == self.subject), None)
            if run is not None:
                lines.append(f"outcome {run.outcome}; panic {run.panic}; error {run.error}; crash {run.crash}")
            raise CaseFailure("\n".join(lines))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailure):
            return f"{self.case_file.path.name} {self.subject}:\n{excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.case_file.path.stem} {self.subject}"
