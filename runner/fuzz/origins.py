"""Where two training curves start to part: the first step and the first statement whose inputs
agree on both sides and whose result differs (values, gradients or flags).

For a pair whose two runs are the same program (the same variant) and whose losses part beyond
the case's tolerance (`curves`), the program is cut to its first n steps (n = 1, 2, ... up to
the step where the curves part, at most `MAX_STEPS`) and rewritten to observe every statement's
arguments and result (`runner.fuzz.instrument`); each cut runs under torch and burn in float32
and torch in float64 in isolated workers (`runner.fuzz.pool`), and its observations are compared
label by label as the fuzzer's localizer does (`runner.fuzz.localize`: its tolerance, and float64
telling rounding from a difference). The origin is the first statement, in program order at the
smallest such n, that is an origin there: a difference that every later one inherits.

A timed loop whose body holds a loop (blocks of K steps) is cut inside its first block: the
outer loop runs once and the inner one n times.

`report` asks for it (`localize`, handed to it by the command line: the report does not import
the fuzzer) for the pairs of the cases it ran itself whose curves part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..model.case import ProgramCase
from ..program.data import materialize
from ..program.ir import ParsedProgram, Settings, timed_loop, walk
from .instrument import Site, instrument
from .localize import RUNS, Label, _first_difference, _site_state, compare_runs
from .pool import WorkerPool

MAX_STEPS = 8


@dataclass(frozen=True)
class Origin:
    step: int
    index: int  # the statement's pre-order index in the program
    line: int  # its line in the variant's source (prelude included)
    op: str
    label: str  # what differs first: its result or a param after it (`@K`, `@K>fc1.weight`)
    what: str  # values, grads or flags

    def text(self) -> str:
        target = self.label.split(">", 1)[1] if ">" in self.label else "its result"
        return f"step {self.step}, line {self.line}: `{self.op}` ({self.what} of {target} differ)"


def cut(program: ParsedProgram, steps: int) -> ParsedProgram | None:
    """The program with its timed loop cut to `steps` training steps (None: it has no loop)."""
    out = program.model_copy(deep=True)
    loop = timed_loop(out.body)
    if loop is None or loop.body is None:
        return None
    inner = next((st for st in loop.body if st.op == "repeat"), None)
    if inner is not None:
        loop.attrs["count"] = 1
        inner.attrs["count"] = steps
    else:
        loop.attrs["count"] = steps
    return out


def first_origin(sites: Sequence[Site], labels: dict[str, Label]) -> tuple[Site, str, str] | None:
    for site in sites:
        if _site_state(site, labels) == "origin":
            label, what = _first_difference(site, labels)
            return site, label or f"@{site.index}", what
    return None


def _cuts(program: ParsedProgram, seed: int, steps: Sequence[int]) -> list[tuple[int, dict[str, Any], list[Site]]]:
    out = []
    for n in steps:
        shortened = cut(program, n)
        if shortened is None:
            return []
        rewritten, sites = instrument(shortened)
        loop = timed_loop(rewritten.body)
        count = loop.attrs.get("count") if loop is not None else None
        settings = Settings(checkpoints=[count] if isinstance(count, int) else [])
        out.append((n, materialize(rewritten, seed, settings).model_dump(mode="json"), sites))
    return out


def find(program: ParsedProgram, seed: int, up_to: int, pool: WorkerPool) -> Origin | None:
    """The origin within the first `up_to` steps (at most `MAX_STEPS`), None if none shows. The
    first step is tried alone (most origins are there), then the others in one batch."""
    lines = {st.index: st.line for st in walk(program.body)}
    last = min(up_to, MAX_STEPS)
    for steps in ([1], list(range(2, last + 1))):
        cuts = _cuts(program, seed, steps)
        if not cuts:
            continue
        ran = pool.run_many([ir for _, ir, _ in cuts], RUNS)
        for i, (n, _, sites) in enumerate(cuts):
            t32, b32, t64 = (ran[run][i] for run in RUNS)
            if t32.get("outcome") != "ok" or b32.get("outcome") != "ok":
                continue
            found = first_origin(sites, compare_runs(t32, b32, t64))
            if found is not None:
                site, label, what = found
                return Origin(n, site.index, lines.get(site.index, site.stmt.line), site.op, label, what)
    return None


def localize(requests: Sequence[tuple[ProgramCase, str, int]]) -> list[str | None]:
    """For each (case, variant, step where its curves part): where they start to part, as the
    report says it (None: no statement in the first steps tried). One pool of workers for all."""
    out: list[str | None] = []
    if not requests:
        return out
    with WorkerPool() as pool:
        for case, variant, up_to in requests:
            recipe = case.programs[variant]
            found = find(recipe.parsed, recipe.seed, up_to, pool)
            out.append(None if found is None else found.text())
    return out
