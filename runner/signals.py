"""Signals that stop a command: SIGINT, SIGTERM and SIGHUP all unwind it the
way Ctrl-C does.

Within `stop_on_signals()`, the first of them raises `Interrupted` in the main
thread, wherever it is: the `finally` blocks on the way kill the running
worker's process group and remove its temporary folder, and the command keeps
what completed. Later signals are ignored while that cleanup runs and until
the process ends, so a second Ctrl-C or a second `kill` cannot cut it short
(SIGKILL still can).

`deferred()` holds the stop signals back for a few instructions that must
happen together (the renames that publish a report and its history entry);
a signal that arrives meanwhile takes effect right after.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from .errors import Interrupted
from .escape import terminal
from .statusline import erase_current

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _State:
    deferring = 0  # depth of `deferred()` blocks
    pending: int | None = None  # a stop signal that came during one


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise `Interrupted` (once) until the block ends."""
    if not _in_main_thread():  # signal handlers belong to the main thread
        yield
        return
    stopping = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if stopping:
            return  # already unwinding: let the cleanup finish
        if _State.deferring:
            _State.pending = signum
            return
        stopping = True
        raise Interrupted(signum)

    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in STOP_SIGNALS:
        signal.signal(sig, handler)
    try:
        yield
    except Interrupted:
        stopping = True
        raise
    finally:
        # After a stop signal the process is on its way out: the next ones stay
        # blocked and the handler stays to ignore them (the default would kill it
        # before it says what it kept, or during the interpreter's shutdown, which
        # puts the default handlers back). Otherwise the previous handlers come back.
        if stopping:
            signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        else:
            for sig, old in previous.items():
                signal.signal(sig, old)


@contextmanager
def deferred() -> Iterator[None]:
    """The stop signals wait until the block is done (then act as usual).

    Held back twice: blocked for this thread (where no handler of ours is
    installed), and postponed by the handler of `stop_on_signals` (a signal
    that another thread received still runs its handler in the main thread)."""
    if not _in_main_thread():
        yield
        return
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    _State.deferring += 1
    try:
        yield
    finally:
        _State.deferring -= 1
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    if not _State.deferring and _State.pending is not None:
        signum, _State.pending = _State.pending, None
        raise Interrupted(signum)


def say(text: str) -> None:
    """A line on stderr; a terminal that hung up (SIGHUP) must not turn it into a traceback.

    Shown through `escape.terminal` (its line breaks kept): a message that
    quotes a file name or a case's text cannot drive the terminal. A status
    line on screen (the runs' progress) is taken off first."""
    erase_current()
    try:
        print(terminal(text, lines=True), file=sys.stderr, flush=True)
    except OSError:
        pass


def show(text: str) -> None:
    """What a command prints on stdout when it is done (a summary, the files it wrote), through
    `escape.terminal` with its line breaks kept."""
    erase_current()
    print(terminal(text, lines=True), flush=True)
