"""Program cases in burn 0.22.1 (Flex + Autodiff): the probe's interpreter
(`_probe.run_program`, in Rust). A panic inside burn comes back as data."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .burn_p10 import _probe, versions

__all__ = ["run", "versions"]


def run(mode: str, params: dict[str, Any], progress: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    result: dict[str, Any] = _probe.run_program(json.dumps(params["program"]), progress=progress)
    return result
