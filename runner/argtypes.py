"""Argument types shared by the commands: each refuses what it cannot take
with a message argparse prints beside the option's name (exit 2). The values
these messages quote are shortened (`escape.quote`), and every message argparse
prints (its own too: an invalid choice, unrecognized arguments) goes through
`Parser.error`, which bounds what it quotes and shows control characters."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import NoReturn

from .escape import bounded, quote, terminal
from .inputs import MAX_PATH_CHARS, path_problem
from .noise import Controls


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose error messages quote at most about 80 characters
    of a value and show control characters visibly (its subparsers too)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {terminal(bounded(message))}\n")


# A run longer than a day is a hang, not a measurement.
MAX_TIMEOUT_S = 86_400.0


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {quote(text)}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


# A fuzz campaign longer than a week is a mistake, not a plan.
MAX_BUDGET_S = 7 * 86_400.0


def _seconds(text: str, limit: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {quote(text)}") from None
    if not math.isfinite(value) or not 0 < value <= limit:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds above 0 and at most {limit:g}, got {quote(text)}"
        )
    return value


def timeout_seconds(text: str) -> float:
    return _seconds(text, MAX_TIMEOUT_S)


def budget_seconds(text: str) -> float:
    return _seconds(text, MAX_BUDGET_S)


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
            f"{len(text)} characters; at most {MAX_PATH_CHARS} are accepted: {quote(text)}"
        )
    return text


# A seed is a 64-bit integer at most (what seeds random generators everywhere).
MAX_SEED = 2**64 - 1


def seed(text: str) -> int:
    try:
        value = int(text) if len(text) <= 40 else None
    except ValueError:
        value = None
    if value is None or not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to 2**64 - 1, got {quote(text)}")
    return value


def noise_controls(text: str) -> Controls:
    try:
        return Controls.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_measurement_options(parser: argparse.ArgumentParser) -> None:
    """`--repeat`, `--jobs` and `--noise-controls`, as `check` and `report` take them."""
    parser.add_argument(
        "--repeat",
        type=positive_int,
        default=1,
        metavar="K",
        help="run each timed run K times, each in a fresh process, interleaved across runs; "
        "its timing metrics are the medians, with their spread (default 1)",
    )
    parser.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        help="semantic runs (no timing or memory claim) side by side, N at a time "
        "(default: one per CPU); timed runs always run alone",
    )
    parser.add_argument(
        "--noise-controls",
        type=noise_controls,
        default=Controls(),
        metavar="malloc|pin|all|none",
        help="noise controls of the timed runs: fixed glibc malloc settings (malloc, the default: "
        "it cuts the spread of step times 2-10x), one CPU (pin: measured no better here); a "
        "comma-separated list, all or none",
    )
