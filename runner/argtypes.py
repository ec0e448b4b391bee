"""Argument types shared by the commands: each refuses what it cannot take
with a message argparse prints beside the option's name (exit 2)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from .inputs import MAX_PATH_CHARS, path_problem

# A run longer than a day is a hang, not a measurement.
MAX_TIMEOUT_S = 86_400.0


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text[:40]!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def timeout_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text[:40]!r}") from None
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}, got {text[:40]}"
        )
    return value


def path(text: str) -> Path:
    if not text:
        raise argparse.ArgumentTypeError("must be a path (not empty, no NUL character)")
    problem = path_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return Path(text)


def nonempty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    if len(text) > MAX_PATH_CHARS:
        raise argparse.ArgumentTypeError(
            f"{len(text)} characters; at most {MAX_PATH_CHARS} are accepted (starts {text[:40]!r})"
        )
    return text
