"""Rust literals: numbers with exactly the value the interpreter uses, strings, nested arrays."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def num(attrs: Mapping[str, Any], key: str, default: float | None = None) -> float:
    """A number attribute (validated IR: an int or a float)."""
    value = attrs.get(key, default)
    assert isinstance(value, (int, float)) and not isinstance(value, bool), (key, value)
    return float(value)


def _float_text(text: str) -> str:
    return text if any(c in text for c in ".eE") else text + ".0"


def f64(value: float) -> str:
    """A Rust f64 literal with exactly this value."""
    return _float_text(repr(float(value)))


def f32(value: float) -> str:
    """A Rust float literal read as f32 to the value `value as f32` has (Rust's rounding)."""
    return _float_text(str(np.float32(value)))


def string(text: str) -> str:
    """A Rust string literal of `text`: quotes, backslashes and control characters escaped."""
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def nested(data: Sequence[float], shape: Sequence[int]) -> str:
    """`[[a, b], [c, d]]`: row-major data as nested array literals, f32 (the first one suffixed)."""
    values = [f32(v) for v in data]
    if values:
        values[0] += "f32"
    return _nested(values, shape)


def element(value: float, dtype: str) -> str:
    """One element of an int tensor (`3`) or a bool tensor (`true`), from the IR's number."""
    if dtype == "bool":
        return "true" if value else "false"
    return str(int(value))


def nested_elements(data: Sequence[float], shape: Sequence[int], dtype: str) -> str:
    """Row-major int (`[[1, 0], [2, 3]]`, Rust's default i32) or bool data as nested array literals."""
    return _nested([element(v, dtype) for v in data], shape)


def _nested(values: Sequence[str], shape: Sequence[int]) -> str:
    def build(offset: int, dims: Sequence[int]) -> str:
        if len(dims) == 1:
            return "[" + ", ".join(values[offset : offset + dims[0]]) + "]"
        step = math.prod(dims[1:])
        return "[" + ", ".join(build(offset + i * step, dims[1:]) for i in range(dims[0])) + "]"

    return build(0, list(shape))


def transpose_host(data: Sequence[float], rows: int, cols: int) -> list[float]:
    """Row-major `[rows, cols]` data transposed (torch's Linear weight into burn's layout)."""
    return [data[r * cols + c] for c in range(cols) for r in range(rows)]
