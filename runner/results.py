"""The results document: schema version, provenance, runs, expectations."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import importlib.util
import os
import platform
import subprocess

from .execute import PROJECT_ROOT
from .procinfo import cpu_model

SCHEMA_VERSION = 1


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def _probe_info() -> dict:
    if importlib.util.find_spec("runner._probe") is None:
        return {}
    from . import _probe

    return _probe.build_info()


def _distribution_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def provenance(started: dt.datetime, finished: dt.datetime, runs: list[dict] | None = None) -> dict:
    probe = _probe_info()
    ran = sorted({(r.get("versions") or {}).get("burn") for r in runs or []} - {None})
    return {
        # The burn version the runs report; the installed probe's when none ran.
        "burn": ", ".join(ran) if ran else probe.get("burn"),
        "probe_profile": probe.get("profile"),
        "torch": _distribution_version("torch"),
        "rustc": probe.get("rustc"),
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "machine": platform.machine(),
        "system": f"{platform.system()} {platform.release()}",
        "cores": os.cpu_count(),
        "git_commit": _git_commit(),
        "started": started.isoformat(timespec="seconds"),
        "finished": finished.isoformat(timespec="seconds"),
    }


def summary(runs: list[dict], expectations: list[dict]) -> dict:
    failed = sum(not e["passed"] for e in expectations)
    return {"runs": len(runs), "expectations": len(expectations),
            "passed": len(expectations) - failed, "failed": failed}


def document(runs: list[dict], expectations: list[dict], started: dt.datetime,
             finished: dt.datetime, not_applicable: list[dict] | None = None) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "provenance": provenance(started, finished, runs),
        "summary": summary(runs, expectations),
        "runs": runs,
        "expectations": expectations,
        # Expectations limited to other burn versions (`burn_versions`), not checked.
        "not_applicable": not_applicable or [],
    }


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)
