"""What a reproducer printed, parsed: its observations, its checkpoint lines and the panic Rust
printed, if any."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_PANIC = re.compile(
    r"thread '[^']*'(?: \(\d+\))? panicked at (?P<location>[^\n]+?):\n(?P<message>.*?)"
    r"(?:\nnote: |\nstack backtrace:|\n\s*\d+: |\Z)",
    re.DOTALL,
)


@dataclass
class ReproducerRun:
    """What a reproducer printed: its observations, checkpoint lines and the panic, if any."""

    returncode: int
    observations: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    panic: dict[str, str] | None = None
    """`message` and `location` (`file:line:column`) of the first panic Rust printed."""


def read_run(stdout: str, stderr: str, returncode: int) -> ReproducerRun:
    """Parses a reproducer's output (`ValueError` for a line that is not one it prints)."""
    run = ReproducerRun(returncode)
    for line in stdout.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if not isinstance(record, dict):
            raise ValueError(f"not a reproducer's line: {line[:200]!r}")
        if "checkpoint" in record:
            run.checkpoints.append(record)
        else:
            run.observations.append(record)
    m = _PANIC.search(stderr)
    if m is not None:
        run.panic = {"message": m.group("message").rstrip("\n"), "location": m.group("location")}
    return run
