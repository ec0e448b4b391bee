"""Values as the report shows them."""

from __future__ import annotations

from typing import Any


def fmt(value: Any, spec: str = ".3g") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format(value, spec)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {fmt(v, spec)}" for k, v in value.items()) + "}"
    return str(value)
