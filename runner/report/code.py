"""A program case's code as the report shows it: each variant's source, and
the PyTorch and burn code it stands for.

The results carry the source and the program's settings; the code is rendered
here, when the report is made, by the program package's own renderers (a
results file does not depend on them, and an older file shows today's
rendering). A source that no longer parses, or an operation a framework lacks,
shows the source alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ValidationError

from ..errors import BadInput
from ..model.results import ProgramInfo
from ..program import data, render_torch, syntax
from ..program.ir import Program, Settings
from ..program.rust.source import sketch as rust_sketch


@dataclass(frozen=True)
class ProgramCode:
    source: str
    torch: str | None  # None: not rendered (the source is shown in its place)
    burn: str | None


def program_code(info: ProgramInfo) -> ProgramCode:
    """The variant's PyTorch and burn code, rendered from its source and settings."""
    return _code(info.source, tuple(info.checkpoints), info.rss_every, info.track)


@functools.lru_cache(maxsize=256)
def _code(source: str, checkpoints: tuple[int, ...], rss_every: int, track: str | None) -> ProgramCode:
    try:
        settings = Settings(checkpoints=list(checkpoints), rss_every=rss_every, track=track)
        # No data is shown: any seed makes the same code.
        program = data.materialize(syntax.parse(source, where="results: program source"), seed=0, settings=settings)
    except (BadInput, ValidationError, ValueError, RecursionError):
        return ProgramCode(source, None, None)
    return ProgramCode(source, _rendered(render_torch.sketch, program), _rendered(rust_sketch, program))


def _rendered(sketch: Callable[[Program], str | None], program: Program) -> str | None:
    try:
        return sketch(program)
    except (ValueError, KeyError, RecursionError):
        return None
