"""An interpreter's result (`docs/program-ir.md` section 4) as the worker's run
record: shared by the torch and the burn program adapters, importing neither."""

from __future__ import annotations

from typing import Any


def checkpoint(raw: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint as p10's: the tracked tensor's flags flat, as the framework names them."""
    out = dict(raw)
    flags = out.get("flags") or {}
    out["flags"] = dict(flags.get("raw") or {}) if "raw" in flags else flags
    return out


def to_record(result: dict[str, Any]) -> dict[str, Any]:
    """The run record: outcome, where it stopped, what it observed, how long each iteration took."""
    failure = result.get("failure")
    record: dict[str, Any] = {
        "outcome": result["outcome"],
        "failure": failure,
        "observations": result.get("observations") or [],
        "step_ms": result.get("step_ms") or [],
        "checkpoints": [checkpoint(c) for c in result.get("checkpoints") or []],
        "rss_samples": [[int(s), float(d)] for s, d in result.get("rss_samples") or []],
    }
    if failure is not None and result["outcome"] == "panic":
        record["panic"] = {
            "message": failure.get("message", ""),
            "location": failure.get("location"),
            "step": failure.get("iteration"),
            "phase": failure.get("op"),
        }
    if failure is not None and result["outcome"] == "error":
        record["error"] = {"type": failure.get("type") or "Error", "message": failure.get("message", "")}
    return record
