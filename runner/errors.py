"""The runner's own errors: one root class, each with the exit code it ends with.

A user's mistake (a bad case file, a bad argument) is `BadInput` (exit 2);
something missing or broken around the runs (probe not built, framework not
installed, an output that cannot be written) is `Infrastructure` (exit 3). A
probe run that panics, crashes, hangs or runs out of memory is none of these:
it is a recorded outcome.

A signal that stops a command (SIGINT, SIGTERM, SIGHUP) is `Interrupted`, a
`KeyboardInterrupt`: it unwinds like Ctrl-C does, killing the running worker
and removing its temporary folder on the way, and ends with exit 128 + the
signal's number. What completed before it travels with it (`partial`).
"""

from __future__ import annotations

import signal
from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """What every command's exit status means (the README's table)."""

    OK = 0  # every expectation holds, nothing changed, no new divergence
    FAILED = 1  # an expectation does not hold, something changed, new divergences were found
    BAD_INPUT = 2  # a case file, a results file or an argument the runner refuses
    INFRASTRUCTURE = 3  # a framework or the probe missing, a build broken, a write that failed

    @staticmethod
    def of_signal(signum: int) -> int:
        """The status of a command that signal `signum` stopped: 128 + its number, as a shell says it."""
        return 128 + signum


class RunnerError(Exception):
    exit_code: int = ExitCode.FAILED


class BadInput(RunnerError):
    exit_code = ExitCode.BAD_INPUT


class Infrastructure(RunnerError):
    exit_code = ExitCode.INFRASTRUCTURE


class Interrupted(KeyboardInterrupt):
    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum
        # The results documents of the runs completed before the signal, for the command to keep.
        self.partial: list[Any] = []

    @classmethod
    def of(cls, err: KeyboardInterrupt) -> Interrupted:
        """`err` itself if a signal raised it, else a Ctrl-C (SIGINT) of its own."""
        return err if isinstance(err, Interrupted) else cls()

    @property
    def exit_code(self) -> int:
        return ExitCode.of_signal(self.signum)

    @property
    def name(self) -> str:
        return signal_name(self.signum)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
