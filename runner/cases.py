"""Case files: find, read and validate them (`runner.model.case`), and apply
command-line overrides and filters.

A case file is data (TOML): parameters, windows, runs with their expected
semantics, and the torch-vs-burn pairs that state the differential claim.
`cases/README.md` documents every key. Every problem is `BadInput` naming the
file, the key and what would be valid.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import ValidationError

from .errors import BadInput
from .frameworks import ADAPTERS
from .inputs import MAX_CASE_BYTES, check_path_argument, read_text
from .model.base import describe_errors, quote
from .model.case import Case, P10Case
from .paths import CASES_DIR


def parse_case(text: str, path: Path) -> Case:
    """Validate one case file's text; `path` names it in messages and gives its expected name."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise BadInput(f"{path}: not valid TOML: {err}") from None
    except RecursionError:
        raise BadInput(f"{path}: not valid TOML: nested too deeply") from None
    name = data.get("name", path.stem)
    if name != path.stem:
        raise BadInput(f"{path}: name: must match the file name {path.stem!r}, got {quote(name)}")
    data.setdefault("name", path.stem)
    kind = data.get("kind")
    kinds = sorted({k for k, _ in ADAPTERS})
    if kind not in kinds:
        problem = "missing" if kind is None else f"unknown kind {quote(kind)}"
        raise BadInput(f"{path}: kind: {problem}; valid: {', '.join(kinds)}")
    try:
        case = P10Case.model_validate(data)
    except ValidationError as err:
        lines = describe_errors(err, P10Case)
        raise BadInput(f"{path}: " + f"\n{path}: ".join(lines)) from None
    except RecursionError:
        raise BadInput(f"{path}: nested too deeply") from None
    return case.located(path)


def load_case(path: Path) -> Case:
    """Read and validate one case file."""
    return parse_case(read_text(path, "case file", MAX_CASE_BYTES), path)


def resolve(ref: str) -> Path:
    """A case given on the command line: a path, or a name in `cases/`."""
    check_path_argument(ref, "CASE")
    path = Path(ref)
    if path.suffix == ".toml" or path.exists():
        return path
    candidate = CASES_DIR / f"{ref}.toml"
    if candidate.exists():
        return candidate
    known = ", ".join(sorted(p.stem for p in CASES_DIR.glob("*.toml"))) or "none"
    raise BadInput(
        f"case {quote(ref)}: no file {quote(str(path))} and no such name in {CASES_DIR}; known cases: {known}"
    )


def all_cases() -> list[Path]:
    return sorted(CASES_DIR.glob("*.toml"))


def with_steps(case: Case, steps: int) -> Case:
    """The case with its step count overridden (checkpoints past it dropped, `steps` added)."""
    if steps < 1:
        raise BadInput(f"--steps: must be a positive integer, got {steps}")
    try:
        case.windows.check_fits(steps)
    except ValueError as err:
        raise BadInput(f"--steps {steps} with {case.path} [windows]: {err}") from None
    return case.replace(params=case.params.with_steps(steps))


def with_timeout(case: Case, timeout: float) -> Case:
    return case.replace(execution=case.execution.model_copy(update={"timeout_s": timeout}))


def load_selected(
    refs: list[str],
    steps: int | None = None,
    timeout: float | None = None,
    frameworks: list[str] | None = None,
    modes: list[str] | None = None,
) -> list[Case]:
    """The cases named on a command line (default: every case), with the
    overrides and filters applied; cases left without runs are dropped."""
    refs = refs or [str(p) for p in all_cases()]
    if not refs:
        raise BadInput(f"no case files in {CASES_DIR}")
    selected: list[Case] = []
    seen: dict[str, Path] = {}
    for ref in refs:
        case = load_case(resolve(ref))
        if case.name in seen:
            raise BadInput(
                f"{case.path}: name {case.name!r} is also the name of {seen[case.name]}; a check takes each case once"
            )
        seen[case.name] = case.path
        if steps:
            case = with_steps(case, steps)
        if timeout:
            case = with_timeout(case, timeout)
        case = select(case, frameworks, modes)
        if case.runs:
            selected.append(case)
    if not selected:
        raise BadInput("no run matches the given --framework/--mode filters")
    return selected


def select(case: Case, frameworks: list[str] | None, modes: list[str] | None) -> Case:
    """Only the runs of the given frameworks and modes; pairs whose ends both remain."""
    if modes:
        known = {m for (kind, _fw), a in ADAPTERS.items() if kind == case.kind for m in a.modes}
        for mode in modes:
            if mode not in known:
                raise BadInput(f"--mode: unknown mode {quote(mode)} for {case.name}; valid: {', '.join(sorted(known))}")
    runs = [r for r in case.runs if (not frameworks or r.framework in frameworks) and (not modes or r.mode in modes)]
    keys = {r.key for r in runs}
    pairs = [p for p in case.pairs if str(p.a) in keys and str(p.b) in keys]
    # Not validated again: a selection of a valid case is valid, and may have no runs at all.
    selected = case.model_copy(update={"runs": runs, "pairs": pairs})
    return selected.located(case.path)
