"""The p10 loop in burn 0.22.1 (Flex + Autodiff), through the `runner._probe` extension.

The probe runs and times the whole loop in Rust; this module only renames its
fields into the framework-neutral record. A panic inside burn arrives as data.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..frameworks import adapter_for

PROBE_PATH_ENV = adapter_for("p10", "burn").override_env or "RUNNER_PROBE_PATH"


def _load_probe() -> ModuleType:
    """`runner._probe`, or the build named by RUNNER_PROBE_PATH (another burn release)."""
    path = os.environ.get(PROBE_PATH_ENV)
    if not path:
        from .. import _probe

        return _probe
    spec = importlib.util.spec_from_file_location("runner._probe", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{PROBE_PATH_ENV}={path} is not a loadable extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_probe = _load_probe()
MODES = tuple(_probe.MODES)


def versions() -> dict[str, str]:
    info = _probe.build_info()
    return {"burn": info["burn"], "rustc": info["rustc"], "probe_profile": info["profile"]}


def _checkpoint(raw: dict[str, Any]) -> dict[str, Any]:
    return {
        "step": raw["step"],
        "ms_per_step": raw["ms_per_step"],
        "rss_bytes": raw["rss_bytes"],
        "rss_delta_mib": raw["rss_delta_mib"],
        "tracked": raw["is_tracked"],
        "flags": {
            "is_tracked": raw["is_tracked"],
            "is_require_grad": raw["is_require_grad"],
            "is_autodiff": raw["is_autodiff"],
        },
    }


def run(mode: str, params: dict[str, Any], progress: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    raw = _probe.run_p10(mode, **params, progress=lambda c: progress(_checkpoint(c)))
    # "stopped" (the progress callback asked to stop) cannot reach here: the
    # callback's exception is re-raised by run_p10 and becomes outcome "error".
    return {
        "outcome": "ok" if raw["outcome"] == "completed" else "panic",
        "panic": raw["panic"],
        "step_ms": raw["step_ms"],
        "checkpoints": [_checkpoint(c) for c in raw["checkpoints"]],
        "rss_samples": [[step, delta] for step, _bytes, delta in raw.get("rss_samples", [])],
    }
