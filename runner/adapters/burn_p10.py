"""The p10 loop in burn 0.22.1 (Flex + Autodiff), through the `runner._probe` extension.

The probe runs and times the whole loop in Rust and returns the run record
itself (`rust_probe/src/record.rs`). A panic inside burn arrives as data.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..contract.rust import digest as contract_digest
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


def _checked(probe: ModuleType) -> ModuleType:
    """The probe, if it was built from this checkout's contract (`runner.contract`)."""
    built = getattr(probe, "CONTRACT_DIGEST", None)
    if built != contract_digest():
        where = os.environ.get(PROBE_PATH_ENV) or getattr(probe, "__file__", "runner._probe")
        raise ImportError(
            f"the probe {where} was built from another contract (its digest {built!r}, this checkout's "
            f"{contract_digest()!r}): rebuild it with scripts/bootstrap"
        )
    return probe


_probe = _checked(_load_probe())
MODES = tuple(_probe.MODES)


def versions() -> dict[str, str]:
    info = _probe.build_info()
    return {"burn": info["burn"], "rustc": info["rustc"], "probe_profile": info["profile"]}


def run(mode: str, params: dict[str, Any], progress: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The probe's `P10Result` is the run record as it is (`rust_probe/src/record.rs`). "stopped"
    (the progress callback asked to stop) cannot reach here: the callback's exception is
    re-raised by run_p10 and becomes outcome "error"."""
    result: dict[str, Any] = _probe.run_p10(mode, **params, progress=progress)
    return result
