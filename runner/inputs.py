"""Reading the files a user hands the runner (case files, results files,
history entries): regular files only, with a size cap, as text.

A FIFO, a device or `/dev/zero` would block or never end; a folder is not a
file. Each is refused with `BadInput` naming the path and what was expected.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from .errors import BadInput
from .escape import quote

# Case files are a few KiB; a results document of the whole catalogue a few MiB.
MAX_CASE_BYTES = 1 << 20
MAX_RESULTS_BYTES = 256 << 20
# Longer than any path the runner writes; the kernel's own limit is 4096.
MAX_PATH_CHARS = 1024
# The longest name one folder entry may have on Linux file systems (bytes).
NAME_MAX = 255


def path_problem(text: str) -> str | None:
    """Why the file system cannot take this path (too long as a whole or in a part, a NUL), or None."""
    if len(text) > MAX_PATH_CHARS:
        return f"a path of {len(text)} characters; at most {MAX_PATH_CHARS} are accepted: {quote(text)}"
    if "\0" in text:
        return "a path with a NUL character"
    for part in text.split(os.sep):
        size = len(os.fsencode(part))
        if size > NAME_MAX:
            return f"a name of {size} bytes in the path ({quote(part)}); the file system takes at most {NAME_MAX}"
    return None


def check_path_argument(text: str, what: str) -> None:
    problem = path_problem(text)
    if problem is not None:
        raise BadInput(f"{what}: {problem}")


def read_text(path: Path, what: str, limit: int) -> str:
    """The file's text (UTF-8), or BadInput: missing, not a regular file, too large, not text."""
    check_path_argument(str(path), what)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such {what}") from None
    except OSError as err:
        raise BadInput(f"{path}: cannot read {what}: {err.strerror or err}") from None
    if stat.S_ISDIR(info.st_mode):
        raise BadInput(f"{path}: is a folder, expected a {what}")
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(f"{path}: is not a regular file (a FIFO, socket or device), expected a {what}")
    if info.st_size > limit:
        raise BadInput(f"{path}: {info.st_size} bytes, more than the {limit} a {what} may have")
    try:
        # O_NONBLOCK: a file swapped for a FIFO after the stat still cannot block the read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as err:
        raise BadInput(f"{path}: cannot read {what}: {err.strerror or err}") from None
    if len(data) > limit:
        raise BadInput(f"{path}: more than the {limit} bytes a {what} may have")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadInput(f"{path}: not UTF-8 text ({err.reason} at byte {err.start}), expected a {what}") from None


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(text: str, source: str, what: str) -> Any:
    """Parse JSON text; every failure is BadInput naming the source."""
    if not text.strip():
        raise BadInput(f"{source}: empty file, expected a {what} (JSON)")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        truncated = err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string")
        hint = " (truncated?)" if truncated else ""
        raise BadInput(f"{source}: not valid JSON{hint}: {err.msg} at line {err.lineno} column {err.colno}") from None
    except RecursionError:
        raise BadInput(f"{source}: nested too deeply to be a {what}") from None
    except ValueError as err:  # NaN/Infinity constants, huge integers
        raise BadInput(f"{source}: not valid JSON: {err}") from None


def read_json(path: Path, what: str, limit: int = MAX_RESULTS_BYTES) -> Any:
    return parse_json(read_text(path, what, limit), str(path), what)
