"""The history folder: one results document per run and machine.

File names sort by time and carry the burn version and the machine
fingerprint: `20261129T070238Z__burn-0.22.1__3f2a9c0d1e.json` (UTC start of
the run; `~2`, `~3` after it for another run of the same machine and second).
A marker file, `HISTORY.json`, says the folder is one; the command refuses a
folder that has other files but no marker, so a wrong `--history` never
scatters files into an unrelated folder. Entries are written atomically, with
the report they belong to (`runner.atomic.write_together`), and never
rewritten. Reports that write to one history folder at once take turns
(`locked`: an exclusive `flock` on the folder itself), so each picks a name
no other has taken.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..atomic import write_together
from ..errors import BadInput, Infrastructure
from ..escape import quote
from ..inputs import read_json
from ..model.results import Provenance, ResultsDocument
from ..results import dump, load_results
from .machines import MachineResults, utc

MARKER = "HISTORY.json"
LOCK_TIMEOUT_S = 600.0
MARKER_VERSION = 1
MARKER_DOC = {
    "history_schema_version": MARKER_VERSION,
    "what": "burn-torch-diff report history: one results document per run and machine, "
    "named <UTC start>__burn-<version>__<machine fingerprint>.json",
}
NAME = re.compile(
    r"^(?P<stamp>\d{8}T\d{6}Z)__burn-(?P<burn>[A-Za-z0-9.+-]+)"
    r"__(?P<fingerprint>[0-9a-f]{10})(?:~(?P<n>\d+))?\.json$"
)


@dataclass(frozen=True)
class Entry:
    path: Path
    stamp: str
    burn: str
    fingerprint: str

    @property
    def name(self) -> str:
        return self.path.name

    def load(self) -> ResultsDocument:
        docs = load_results(self.path)
        if len(docs) != 1:
            raise BadInput(f"{self.path}: a history entry holds one results document, found {len(docs)}")
        return docs[0]


def stamp_of(provenance: Provenance) -> str:
    return utc(provenance.started).strftime("%Y%m%dT%H%M%SZ")


def entry_name(machine: MachineResults, n: int = 1) -> str:
    burn = re.sub(r"[^A-Za-z0-9.+]", "-", machine.provenance.burn or "unknown")[:60]
    suffix = f"~{n}" if n > 1 else ""
    return f"{stamp_of(machine.provenance)}__burn-{burn}__{machine.fingerprint}{suffix}.json"


class History:
    def __init__(self, folder: Path):
        """Check that `folder` is a history folder (or can become one); writes nothing."""
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise BadInput(f"--history {self.folder}: is a file, not a history folder")
        marker = self.folder / MARKER
        if marker.exists():
            data = read_json(marker, "history marker", limit=1 << 16)
            version = data.get("history_schema_version") if isinstance(data, dict) else None
            if version != MARKER_VERSION:
                raise BadInput(
                    f"{marker}: history_schema_version: {quote(version, 40)} is not supported; "
                    f"this runner reads {MARKER_VERSION}"
                )
        elif self.folder.is_dir():
            others = sorted(p.name for p in self.folder.iterdir() if not p.name.startswith("."))
            if others:
                shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
                raise BadInput(
                    f"--history {self.folder}: not a history folder (no {MARKER}; it "
                    f"holds {len(others)} other entries: {shown}); give an empty or new "
                    "folder, or one this command wrote"
                )

    def entries(self) -> list[Entry]:
        if not self.folder.is_dir():
            return []
        found = []
        for path in sorted(self.folder.iterdir()):
            match = NAME.match(path.name)
            if match and path.is_file():
                found.append(Entry(path, match["stamp"], match["burn"], match["fingerprint"]))
        return found

    def latest(self, fingerprint: str) -> Entry | None:
        """The latest entry of the machine with this fingerprint."""
        mine = [entry for entry in self.entries() if entry.fingerprint == fingerprint]
        return mine[-1] if mine else None

    def previous(self, machine: MachineResults) -> Entry | None:
        """The latest entry of the same machine that started before this run."""
        stamp = stamp_of(machine.provenance)
        earlier = [
            entry for entry in self.entries() if entry.fingerprint == machine.fingerprint and entry.stamp < stamp
        ]
        return earlier[-1] if earlier else None

    @contextmanager
    def locked(self, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
        """Hold the folder's lock (creating the folder): one report at a time picks names and writes."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise Infrastructure(
                            f"--history {self.folder}: another report has held its lock for {timeout_s:g} s"
                        ) from None
                    time.sleep(0.05)
            yield
        finally:
            os.close(fd)  # releases the lock

    def planned(self, machine: MachineResults) -> tuple[Path, str | None]:
        """Where this run's entry goes and what it holds (None: it is already
        recorded there). Call it holding the lock, and write before letting go."""
        text = dump(machine.doc)
        n = 1
        while True:
            path = self.folder / entry_name(machine, n)
            if not os.path.lexists(path):
                return path, text
            try:
                same = load_results(path) == [machine.doc]
            except BadInput:
                same = False
            if same:
                return path, None
            n += 1

    def marker(self) -> list[tuple[Path, str]]:
        """The marker file to write with the first entry (nothing if it exists)."""
        path = self.folder / MARKER
        return [] if os.path.lexists(path) else [(path, json.dumps(MARKER_DOC, indent=1) + "\n")]

    def add(self, machine: MachineResults) -> Path:
        """Record a run on its own (atomically); a run already recorded is not written twice."""
        with self.locked():
            path, text = self.planned(machine)
            if text is not None:
                write_together([*self.marker(), (path, text)])
            return path
