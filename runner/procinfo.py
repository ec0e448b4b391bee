"""Facts about this process and machine read from /proc, with fallbacks elsewhere."""

from __future__ import annotations

import platform
from pathlib import Path


def status_bytes(key: str, pid: int | str = "self") -> int | None:
    """A size from /proc/PID/status (`VmRSS`, `VmPeak`, ...) in bytes, or None where the process
    or /proc is missing."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) * 1024
    return None


def rss_bytes() -> int | None:
    """Resident set size of this process (VmRSS), or None where /proc is missing."""
    return status_bytes("VmRSS")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"
