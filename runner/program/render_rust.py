"""Programs as Rust code against burn 0.22.1: `sketch` (the code a card shows).

A placeholder until the full renderer lands: `sketch` returns None."""

from __future__ import annotations

from typing import Any

from .ir import Program


def sketch(program: Program | dict[str, Any]) -> str | None:
    return None
