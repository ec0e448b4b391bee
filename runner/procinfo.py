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


def read(path: Path) -> str | None:
    """A small system file's text, or None where it cannot be read."""
    try:
        return path.read_text()
    except OSError:
        return None


def cpuinfo(key: str, root: Path = Path("/")) -> list[str]:
    """The values of /proc/cpuinfo's `key` lines (compared without case), one per CPU that has one."""
    values = []
    for line in (read(root / "proc/cpuinfo") or "").splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == key:
            values.append(value.strip())
    return values


def cpufreq_mhz(name: str, root: Path = Path("/"), cpus: str = "cpu[0-9]*") -> list[float]:
    """cpufreq's `name` (`scaling_cur_freq`, `cpuinfo_max_freq`) in MHz, for each CPU that has it."""
    out = []
    for path in sorted((root / "sys/devices/system/cpu").glob(f"{cpus}/cpufreq/{name}")):
        text = (read(path) or "").strip()
        if text.isdigit():
            out.append(int(text) / 1000)
    return out


def cpu_model() -> str:
    for key in ("model name", "hardware", "cpu model"):
        values = cpuinfo(key)
        if values:
            return values[0]
    return platform.processor() or platform.machine() or "unknown"
