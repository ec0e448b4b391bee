"""The runner's own errors: one root class, each with the exit code it ends with.

A user's mistake (a bad case file, a bad argument) is `BadInput` (exit 2);
something missing or broken around the runs (probe not built, framework not
installed) is `Infrastructure` (exit 3). A probe run that panics, crashes or
hangs is none of these: it is a recorded outcome.
"""


class RunnerError(Exception):
    exit_code = 1


class BadInput(RunnerError):
    exit_code = 2


class Infrastructure(RunnerError):
    exit_code = 3
