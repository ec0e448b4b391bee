"""The program generator (`generate.build`) as a hypothesis strategy, for the property tests:
hypothesis draws every choice, so a failing program shrinks the way hypothesis shrinks. Kept
apart from `generate`, so that `fuzz` (and every command) starts without importing hypothesis."""

from __future__ import annotations

from hypothesis import strategies as st

from ..program.ir import ParsedProgram
from .generate import build


class HypothesisChooser:
    _cache: dict[tuple[int, int], st.SearchStrategy[int]] = {}

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def integer(self, low: int, high: int) -> int:
        strategy = self._cache.get((low, high))
        if strategy is None:
            strategy = self._cache[(low, high)] = st.integers(low, high)
        return self.draw(strategy)


@st.composite
def programs(draw: st.DrawFn, max_ops: int = 8) -> ParsedProgram:
    """The generator as a hypothesis strategy."""
    return build(HypothesisChooser(draw), max_ops)
