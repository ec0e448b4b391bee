"""One line at the bottom of a terminal, rewritten in place (the runs' progress).

Only on a terminal: the line is drawn with a carriage return and an erase to
the end of the line (`\\r\\x1b[K`), cut to the terminal's width (a line that
wraps cannot be rewritten), redrawn every second while it is up (its clock
moves during a long run), and whatever else is written to the terminal goes
above it (`above`). `say` (runner.signals) erases it before it writes, so a
message never lands at the end of a half-drawn status.

Every write holds `LOCK` (the ticker is a thread of its own); a caller that
keeps the state the line is drawn from takes it too.
"""

from __future__ import annotations

import os
import shutil
import threading
import unicodedata
from collections.abc import Callable
from typing import TextIO

ERASE = "\r\x1b[K"
LOCK = threading.RLock()


def is_terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal that can rewrite a line (not TERM=dumb)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError, OSError):  # closed or not a real file
        return False
    return tty and os.environ.get("TERM", "") != "dumb"


def fit(text: str, columns: int) -> str:
    """`text` cut to `columns` terminal columns (wide characters take two), `…` where it was cut."""
    widths = [2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text]
    if sum(widths) <= columns:
        return text
    used, kept = 0, 0
    while kept < len(text) and used + widths[kept] <= columns - 1:
        used += widths[kept]
        kept += 1
    return text[:kept] + "…"


class StatusLine:
    """The line `render()` says (one line, already escaped for the terminal)."""

    current: StatusLine | None = None  # the line on screen now, for `erase_current`

    def __init__(self, stream: TextIO, render: Callable[[], str], every_s: float = 1.0):
        self.stream, self.render, self.every_s = stream, render, every_s
        self.text = ""
        self._stop: threading.Event | None = None

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a terminal that hung up, a closed stream
            pass

    def _draw(self) -> None:
        self.text = fit(self.render(), shutil.get_terminal_size((80, 24)).columns - 1)
        self._write(ERASE + self.text)

    def show(self) -> None:
        """Draw the status (again), and keep redrawing it every `every_s` seconds until `erase`."""
        with LOCK:
            StatusLine.current = self
            self._draw()
            if self._stop is None:
                self._stop = threading.Event()
                threading.Thread(target=self._tick, args=(self._stop,), name="status-line", daemon=True).start()

    def _tick(self, stop: threading.Event) -> None:
        while not stop.wait(self.every_s):
            with LOCK:
                if stop.is_set():
                    return
                self._draw()

    def above(self, text: str) -> None:
        """Write `text` (lines, already escaped) above the status line, then draw the status again."""
        with LOCK:
            if StatusLine.current is self:
                self._write(ERASE + text + "\n")
                self._draw()
            else:
                self._write(text + "\n")

    def erase(self) -> None:
        """Take the status line off the screen (the cursor at the start of the empty line); stop redrawing."""
        with LOCK:
            if self._stop is not None:
                self._stop.set()
                self._stop = None
            if StatusLine.current is self:
                self._write(ERASE)
                StatusLine.current = None
            self.text = ""


def erase_current() -> None:
    """Take whatever status line is on screen off it (before another message is written)."""
    with LOCK:
        if StatusLine.current is not None:
            StatusLine.current.erase()
