"""Atomic file writes: a temporary file in the same folder, fsync, then rename.

A reader sees the old file or the new one, never half of either, whatever
happens to the writer in between. Only a regular file (or nothing) is ever
replaced: a folder, FIFO, socket or device at the target is refused with
`BadInput` (as root, a rename onto `/dev/null` would replace the device). A
symbolic link is written through: its target is replaced, the link stays.

`write_together` publishes several files as one: every file is written to its
temporary name first, and only when all of them are complete are they renamed,
one after the other, with SIGINT, SIGTERM and SIGHUP held back meanwhile. A
failure or a signal before that point leaves every target as it was.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from .errors import BadInput
from .signals import deferred

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def not_regular(path: Path) -> str | None:
    """What stands at `path` if it is something other than a regular file
    (following symbolic links); None if it is a regular file or nothing."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _target(path: Path) -> Path:
    """Where a write to `path` lands: through a symbolic link, its target."""
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    kind = not_regular(path)
    if kind is not None:
        raise BadInput(f"{path}: is {kind}, not a regular file; refusing to replace it")
    return path


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _stage(path: Path, text: str) -> Path:
    """Write `text` to a temporary file beside `path` (complete and on disk); return its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:200]}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file owner-only; give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        _remove(Path(tmp))
        raise
    return Path(tmp)


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write_text(path: Path, text: str) -> None:
    write_together([(path, text)])


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=1, allow_nan=False) + "\n")


def write_together(files: list[tuple[Path, str]]) -> None:
    """Replace every file, or (on an error or a signal while writing) none of them.

    Each file replaced keeps a hard link to its old content until all are
    renamed, so that a rename failing halfway puts the earlier ones back."""
    targets = [(_target(path), text) for path, text in files]
    staged: list[tuple[Path, Path]] = []
    try:
        for path, text in targets:
            staged.append((_stage(path, text), path))
    except BaseException:
        for tmp, _path in staged:
            _remove(tmp)
        raise
    replaced: list[tuple[Path, Path | None]] = []  # (target, its old content) in rename order
    backups: list[Path] = []
    with deferred():
        try:
            for tmp, path in staged:
                backup = _keep_old(path, tmp)
                if backup is not None:
                    backups.append(backup)
                os.replace(tmp, path)
                replaced.append((path, backup))
        except BaseException:
            for path, backup in reversed(replaced):
                try:
                    if backup is not None:
                        os.replace(backup, path)
                    else:
                        os.unlink(path)
                except OSError:
                    pass  # best effort: the error that stopped the renames is the one to report
            raise
        finally:
            for tmp, _path in staged:
                _remove(tmp)
            for backup in backups:
                _remove(backup)
    for folder in {path.parent for _tmp, path in staged}:
        _fsync_folder(folder)


def _keep_old(path: Path, tmp: Path) -> Path | None:
    """A hard link to the file about to be replaced (None if there is none, or no link can be made)."""
    backup = tmp.with_name(tmp.name + ".old")
    try:
        os.link(path, backup)
    except OSError:  # no file to keep, or no link can be made here
        return None
    return backup
