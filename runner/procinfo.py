"""Facts about this process and machine read from /proc, with fallbacks elsewhere."""

from __future__ import annotations

import platform
from pathlib import Path


def rss_bytes() -> int | None:
    """Resident set size of this process (VmRSS), or None where /proc is missing."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"
