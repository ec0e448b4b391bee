"""The base of every typed model: strict, frozen, no unknown keys, finite numbers.

Numbers are bounded as well as finite: counts and steps stay exact in a double
(`MAX_COUNT`), measured quantities (milliseconds, MiB, ratios) stay far from
overflow (`MAX_MEASURE`), and free-form JSON values stay shallow
(`MAX_JSON_DEPTH`), so that whatever validates can be formatted, plotted and
compared without an OverflowError or a RecursionError.

A model validates what it is given or raises pydantic's `ValidationError`;
`describe_errors` turns that into one line per problem that names the key path
(`runs[4].expect.slowdown_ratio.min`) and what would be valid, for `BadInput`.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Annotated, Any, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, ValidationError

# Re-exported: every message quotes a bad value with it.
from ..escape import QUOTE_LIMIT as QUOTE_LIMIT
from ..escape import quote as quote

# Integers a double holds exactly; far above any step, byte or core count.
MAX_COUNT = 2**53
# A measured quantity beyond this (1e15 ms is 30,000 years) is not a measurement.
MAX_MEASURE = 1e15
# Free-form values (a verdict's `observed`, a run's `params`) nest at most this deep.
MAX_JSON_DEPTH = 32
_INNER_KEY = re.compile(r"^([A-Za-z_]\w*(?:\[\d+\])?(?:\.[A-Za-z_]\w*(?:\[\d+\])?)*): ")


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False, validate_default=False)


FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
PositiveInt = Annotated[int, Field(ge=1, le=MAX_COUNT)]
NonNegativeInt = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Measure = Annotated[float, Field(ge=-MAX_MEASURE, le=MAX_MEASURE, allow_inf_nan=False)]
NonNegativeMeasure = Annotated[float, Field(ge=0, le=MAX_MEASURE, allow_inf_nan=False)]


def depth(value: Any) -> int:
    """How deep lists and objects nest in a JSON value (a scalar is 0); without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            deepest = max(deepest, level)
            continue
        deepest = max(deepest, level + 1)
        if level + 1 <= MAX_JSON_DEPTH:
            stack.extend((child, level + 1) for child in children)
    return deepest


def _shallow(value: Any) -> Any:
    if depth(value) > MAX_JSON_DEPTH:
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep")
    return value


ShallowJson = Annotated[JsonValue, AfterValidator(_shallow)]


def key_path(loc: tuple[int | str, ...]) -> str:
    """`("runs", 4, "expect", "outcome")` -> `runs[4].expect.outcome` (a key of
    more than 60 characters shortened, with its length said)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part and not part.startswith(("function-", "tagged-union")):
            if len(part) > 60:
                part = f"{part[:40]}...({len(part)} characters)"
            # A key from the file may hold what no terminal or page should get raw (a lone surrogate).
            part = part.encode("utf-8", "backslashreplace").decode("utf-8")
            out += f".{part}" if out else part
    return out or "top level"


def _shortened(line: str, limit: int = 4 * QUOTE_LIMIT) -> str:
    """A message line of at most `limit` characters: the middle of a longer one cut out."""
    if len(line) <= limit:
        return line
    return f"{line[: limit - 60]} [...{len(line) - limit + 20} characters...] {line[-40:]}"


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation can hold (through Optional, lists, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType, list, tuple, dict, Annotated):
        args = typing.get_args(annotation)
        if origin is Annotated:
            args = args[:1]
        return [m for arg in args for m in _models_in(arg)]
    return []


def valid_keys(root: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The keys a model nested at `loc` (the parent of an unknown key) accepts."""
    models = [root]
    for part in loc:
        if isinstance(part, int):
            continue
        found = [
            m for model in models if part in model.model_fields for m in _models_in(model.model_fields[part].annotation)
        ]
        if not found:
            break
        models = found
    return sorted(
        {
            field.alias or name
            for model in models
            for name, field in model.model_fields.items()
            if not name.startswith("_")
        }
    )


def describe_errors(err: ValidationError, root: type[BaseModel] | None = None, limit: int = 5) -> list[str]:
    """One line per problem: `key.path: message, got VALUE`."""
    lines = []
    for item in err.errors(include_url=False)[:limit]:
        message = item["msg"].removeprefix("Value error, ")
        path = key_path(item["loc"])
        # A model's own check names the key it is about ("checkpoints: ..."): join the paths.
        inner = _INNER_KEY.match(message) if item["type"] == "value_error" else None
        if inner:
            path = inner.group(1) if path == "top level" else f"{path}.{inner.group(1)}"
            message = message[inner.end() :]
        line = f"{path}: {message}"
        if item["type"] == "missing":
            line = f"{path}: missing (required)"
        elif item["type"] == "extra_forbidden":
            line = f"{key_path(item['loc'])}: unknown key"
            if root is not None:
                line += f"; valid keys here: {', '.join(valid_keys(root, item['loc'][:-1]))}"
        elif item["type"] not in ("missing", "value_error", "assertion_error") and "input" in item:
            line += f", got {quote(item['input'])}"
        lines.append(_shortened(line))
    if err.error_count() > limit:
        lines.append(f"... and {err.error_count() - limit} more")
    return lines
