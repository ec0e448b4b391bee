"""NaN and infinities as the results file spells them: "NaN", "Infinity", "-Infinity" (JSON has
no words for them). Without pydantic, so that a worker can spell its observations without
importing the models (a tenth of a second of every run's start)."""

from __future__ import annotations

import math
from typing import Any

WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def read_word(value: Any) -> Any:
    """A value as read from a results file: a spelled non-finite number as the float."""
    return WORDS.get(value, value) if isinstance(value, str) else value


def spell(value: float) -> float | str:
    """A float as the results file writes it: a non-finite one as its word."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def spell_values(values: list[float] | None) -> list[float | str] | None:
    """Observed values as the results file spells them (NaN and infinities as words)."""
    return None if values is None else [spell(v) if isinstance(v, float) else v for v in values]
