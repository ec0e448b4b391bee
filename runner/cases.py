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
from typing import Any

from pydantic import ValidationError

from .errors import BadInput
from .escape import quote
from .frameworks import ADAPTERS
from .inputs import MAX_CASE_BYTES, check_path_argument, read_text
from .model.base import describe_errors
from .model.case import Case, P10Case, ProgramCase, default_checkpoints
from .paths import CASES_DIR
from .program import data as program_data
from .program import syntax
from .program.ir import Settings, check_settings, timed_loop

MODELS: dict[str, type[P10Case] | type[ProgramCase]] = {"p10": P10Case, "program": ProgramCase}
# Expectations and claims that need the timed loop's windows.
_TIMING = ("slowdown_ratio", "grows")


def parse_case(text: str, path: Path, steps: int | None = None) -> Case:
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
    model = MODELS[kind]
    try:
        case = model.model_validate(data)
    except ValidationError as err:
        lines = describe_errors(err, model)
        raise BadInput(f"{path}: " + f"\n{path}: ".join(lines)) from None
    except RecursionError:
        raise BadInput(f"{path}: nested too deeply") from None
    case = case.located(path)
    if isinstance(case, ProgramCase):
        return _with_programs(case, path, steps)
    return case


def _loop_count(parsed_body: list[Any]) -> int:
    loop = timed_loop(parsed_body)
    count = loop.attrs.get("count") if loop is not None else None
    return count if isinstance(count, int) else 0


def _with_programs(case: ProgramCase, path: Path, steps: int | None = None) -> ProgramCase:
    """Parse every variant, make its initial tensors (seeded) and settle the timed loop."""
    spec = case.program
    programs: dict[str, program_data.Recipe] = {}
    counts = {}
    arrays = program_data.read_values(path.parent / spec.data, f"{path} [program.data]") if spec.data else None
    for variant, source in spec.sources().items():
        where = f"{path} [program.{'source' if spec.source is not None else 'variants.' + variant}]"
        parsed = syntax.parse(source, where=where)
        if arrays is not None:
            parsed = program_data.with_values(parsed, arrays, f"{path} [program.data] {spec.data}")
        if steps is not None:
            loop = timed_loop(parsed.body)
            if loop is None:
                raise BadInput(f"--steps {steps}: {where} has no timed loop (`for ... in range(N):`) to shorten")
            loop.attrs["count"] = steps
        counts[variant] = _loop_count(parsed.body)
        count = counts[variant]
        if not spec.checkpoints:
            points = default_checkpoints(count)
        elif steps is not None:  # as p10's `--steps`: the checkpoints past it dropped, its last iteration added
            points = default_checkpoints(count, spec.checkpoints)
        else:
            points = [p for p in spec.checkpoints if p <= count]
        settings = Settings(
            checkpoints=points if count else [], rss_every=spec.rss_every if count else 0, track=spec.track
        )
        try:
            check_settings(settings, parsed.body, {t.name for t in parsed.tensors})
        except ValueError as err:
            raise BadInput(f"{where}: {err}") from None
        # The data is made when a run needs it (`Recipe.make`): nothing is allocated at load.
        programs[variant] = program_data.Recipe(parsed, spec.seed, settings)
    if len(set(counts.values())) > 1:
        shown = ", ".join(f"{v}: {n}" for v, n in counts.items())
        raise BadInput(
            f"{path}: program: every variant's timed loop must run the same number of "
            f"iterations (the windows are the case's), got {shown}"
        )
    loop_steps = next(iter(counts.values()))
    windows = case.windows
    needed = windows.warmup + windows.reference + windows.last
    timing = [r.key for r in case.runs if r.expect.slowdown_ratio is not None]
    timing += [f"{p.a} ~ {p.b}" for p in case.pairs if "grows" in [*p.same, *p.differ]]
    if timing and loop_steps < needed:
        raise BadInput(
            f"{path}: [windows]: {', '.join(timing)} need the timed loop's windows, but warmup + "
            f"reference + last = {needed} iterations is more than the {loop_steps} the loop runs; "
            "use a longer loop or smaller windows"
        )
    return case.with_programs(programs, loop_steps)


def load_case(path: Path, steps: int | None = None) -> Case:
    """Read and validate one case file (a program case's timed loop set to `steps` if given)."""
    return parse_case(read_text(path, "case file", MAX_CASE_BYTES), path, steps)


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
    """Every case file: `cases/*.toml` and the ones the fuzzer found (`cases/found/*.toml`)."""
    return sorted(CASES_DIR.glob("*.toml")) + sorted(CASES_DIR.glob("found/*.toml"))


def with_steps(case: Case, steps: int) -> Case:
    """The case with its step count overridden (checkpoints past it dropped, `steps` added);
    for a program case, its timed loop's iteration count."""
    if steps < 1:
        raise BadInput(f"--steps: must be a positive integer, got {steps}")
    try:
        case.windows.check_fits(steps)
    except ValueError as err:
        raise BadInput(f"--steps {steps} with {case.path} [windows]: {err}") from None
    if isinstance(case, ProgramCase):
        if case.steps == 0:
            return case  # nothing to shorten: a program without a timed loop
        reloaded = load_case(case.path, steps)
        assert isinstance(reloaded, ProgramCase)
        return reloaded.copy_with(execution=case.execution)
    return case.replace(params=case.params.with_steps(steps))


def with_timeout(case: Case, timeout: float) -> Case:
    execution = case.execution.model_copy(update={"timeout_s": timeout})
    if isinstance(case, ProgramCase):
        return case.copy_with(execution=execution)
    return case.replace(execution=execution)


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
        known = (
            set(case.program.sources())
            if isinstance(case, ProgramCase)
            else {m for (kind, _fw), a in ADAPTERS.items() if kind == case.kind for m in a.modes}
        )
        for mode in modes:
            if mode not in known:
                raise BadInput(f"--mode: unknown mode {quote(mode)} for {case.name}; valid: {', '.join(sorted(known))}")
    runs = [r for r in case.runs if (not frameworks or r.framework in frameworks) and (not modes or r.mode in modes)]
    keys = {r.key for r in runs}
    pairs = [p for p in case.pairs if str(p.a) in keys and str(p.b) in keys]
    # Not validated again: a selection of a valid case is valid, and may have no runs at all.
    if isinstance(case, ProgramCase):
        return case.copy_with(runs=runs, pairs=pairs)
    selected = case.model_copy(update={"runs": runs, "pairs": pairs})
    return selected.located(case.path)
