"""Where the commands write, checked before the first run, and where results
go when a write fails all the same.

`check_file` and `check_folder` refuse, with `BadInput` naming the option, an
output that could not be written: a target that is a folder, FIFO, socket or
device; a path under a regular file; a name longer than the file system takes;
a folder that does not take new files (read-only, no permission). They write
nothing but a probe file they remove at once.

A write can still fail after the runs (a full disk, a folder removed
meanwhile). Then `write_or_keep` keeps the text in a fallback file
(`kept_path`: `RUNNER_CACHE/kept/`, else the temporary folder) and ends with
`Infrastructure` (exit 3) saying where it is, so that no finished run is lost.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import tempfile
from pathlib import Path

from .atomic import not_regular, write_text, write_together
from .errors import BadInput, Infrastructure
from .escape import quote
from .inputs import check_path_argument
from .paths import cache_dir


def _nearest_existing(path: Path) -> Path:
    """`path` or its closest ancestor that exists (as something)."""
    current = path
    while not os.path.lexists(current) and current != current.parent:
        current = current.parent
    return current


def _writable_folder(folder: Path, what: str) -> None:
    """`folder` exists as a folder that takes new files, or can be created under one that does."""
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        raise BadInput(f"{what}: {quote(str(existing))} is {not_regular(existing) or 'a file'}, not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=existing)
    except OSError as err:
        reason = "a read-only file system" if err.errno == errno.EROFS else (err.strerror or str(err))
        raise BadInput(f"{what}: cannot create files in {quote(str(existing))}: {reason}") from None
    os.close(fd)
    os.unlink(probe)


def check_file(path: Path, what: str) -> None:
    """An output file: absent or a regular file, in a folder that takes new files."""
    path = Path(path)
    check_path_argument(str(path), what)
    kind = not_regular(path)
    if kind is not None:
        raise BadInput(f"{what} {quote(str(path))}: is {kind}; give the path of a (new or regular) file")
    _writable_folder(path.parent, what)


def check_folder(folder: Path, what: str, files: tuple[str, ...] = ()) -> None:
    """An output folder: absent or a folder that takes new files, where each of
    `files` is absent or a regular file."""
    folder = Path(folder)
    check_path_argument(str(folder), what)
    if os.path.lexists(folder) and not folder.is_dir():
        raise BadInput(f"{what} {quote(str(folder))}: is {not_regular(folder) or 'a file'}, expected a folder")
    for name in files:
        kind = not_regular(folder / name)
        if kind is not None:
            raise BadInput(f"{what} {quote(str(folder))}: {name} in it is {kind}, not a regular file")
    _writable_folder(folder, what)


def kept_path(name: str) -> Path:
    """A new file for results that could not go where they were meant to."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    filename = f"{name}-{stamp}-{os.getpid()}.json"
    for folder in (cache_dir() / "kept", Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _writable_folder(folder, "kept results")
        except (OSError, BadInput):
            continue
        return folder / filename
    raise Infrastructure(f"no folder to keep results in ({cache_dir() / 'kept'}, {tempfile.gettempdir()})")


def keep(name: str, text: str) -> Path:
    """Write `text` to a new kept file; return its path."""
    path = kept_path(name)
    try:
        write_text(path, text)
    except OSError as err:
        raise Infrastructure(f"could not keep the results in {path} either: {err.strerror or err}") from None
    return path


def write_or_keep(files: list[tuple[Path, str]], what: str, keep_as: list[tuple[str, str]] | None = None) -> None:
    """Write the files together (`atomic.write_together`); if that fails, keep
    each of `keep_as` (a name and the results text) and raise `Infrastructure`
    saying where."""
    try:
        write_together(files)
    except OSError as err:
        reason = err.strerror or str(err)
        where = f" {err.filename}" if err.filename else ""
        message = f"{what}: cannot write{where}: {reason}"
        if keep_as:
            kept = [str(keep(name, text)) for name, text in keep_as]
            message += f"; the results are kept in {', '.join(kept)}"
        raise Infrastructure(message) from None
