"""The p10 loop in burn 0.22.1 (Flex + Autodiff), through the `runner._probe` extension.

The probe runs and times the whole loop in Rust; this module only renames its
fields into the framework-neutral record. A panic inside burn arrives as data.
"""

from __future__ import annotations

from typing import Callable

from .. import _probe

MODES = tuple(_probe.MODES)
_OUTCOMES = {"completed": "ok", "panic": "panic", "stopped": "stopped"}


def versions() -> dict:
    info = _probe.build_info()
    return {"burn": info["burn"], "rustc": info["rustc"], "probe_profile": info["profile"]}


def _checkpoint(raw: dict) -> dict:
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


def run(mode: str, params: dict, progress: Callable[[dict], None]) -> dict:
    raw = _probe.run_p10(mode, **params, progress=lambda c: progress(_checkpoint(c)))
    return {
        "outcome": _OUTCOMES[raw["outcome"]],
        "panic": raw["panic"],
        "step_ms": raw["step_ms"],
        "checkpoints": [_checkpoint(c) for c in raw["checkpoints"]],
    }
