"""Which framework implements which case kind and modes, without importing either.

The orchestrator validates case files against this table; a worker imports the
adapter module named here and nothing else, so the torch adapter never loads
the probe and the burn adapter never loads torch.

The p10 modes and the frameworks are the contract's (`runner.contract`), which
the probe's `Mode` enum is generated from.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass

from .contract import ops as contract_ops
from .contract import p10 as contract_p10

FRAMEWORKS: tuple[str, ...] = contract_ops.FRAMEWORKS
# The framework whose workers are forked from a zygote that has imported it (`runner.zygote`):
# torch's import takes seconds, a burn worker starts in a fraction of one.
FORKED_FRAMEWORK = "torch"

# Mode -> the frameworks that have it. PyTorch has detach() only, which already
# gives a constant: `without` and `target-without` are burn's fix.
P10_MODES: dict[str, tuple[str, ...]] = {mode.name: mode.frameworks for mode in contract_p10.MODES}


def _requirement_of(distribution: str, default: str) -> str:
    """The requirement of `distribution` as this project's metadata pins it (pyproject.toml is the one source)."""
    try:
        for req in importlib.metadata.requires("burn-torch-diff") or []:
            if req.split(";")[0].strip().startswith(distribution):
                return req.split(";")[0].strip()
    except importlib.metadata.PackageNotFoundError:
        pass
    return default


@dataclass(frozen=True)
class Adapter:
    framework: str
    kind: str
    module: str
    modes: tuple[str, ...]
    # Module to look for before running, and how to get it.
    requirement: str
    install_hint: str
    # An environment variable that, when set, names a file the adapter loads
    # instead of `requirement` (a probe built against another burn release).
    override_env: str | None = None


ADAPTERS: dict[tuple[str, str], Adapter] = {
    ("p10", "torch"): Adapter(
        framework="torch",
        kind="p10",
        module="runner.adapters.torch_p10",
        modes=contract_p10.modes_of("torch"),
        requirement="torch",
        install_hint=f"pip install '{_requirement_of('torch', 'torch')}' (or run scripts/bootstrap)",
    ),
    ("p10", "burn"): Adapter(
        framework="burn",
        kind="p10",
        module="runner.adapters.burn_p10",
        modes=contract_p10.modes_of("burn"),
        requirement="runner._probe",
        install_hint="build the probe with scripts/bootstrap",
        override_env="RUNNER_PROBE_PATH",
    ),
}

# Program cases: the modes are each case's own variants (see `runner.model.case.ProgramCase`).
ADAPTERS[("program", "torch")] = Adapter(
    framework="torch",
    kind="program",
    module="runner.adapters.torch_program",
    modes=(),
    requirement="torch",
    install_hint=ADAPTERS[("p10", "torch")].install_hint,
)
ADAPTERS[("program", "burn")] = Adapter(
    framework="burn",
    kind="program",
    module="runner.adapters.burn_program",
    modes=(),
    requirement="runner._probe",
    install_hint="build the probe with scripts/bootstrap",
    override_env="RUNNER_PROBE_PATH",
)

KINDS: tuple[str, ...] = tuple(sorted({kind for kind, _ in ADAPTERS}))


def adapter_for(kind: str, framework: str) -> Adapter:
    return ADAPTERS[(kind, framework)]


def modes_of(kind: str, framework: str) -> tuple[str, ...]:
    adapter = ADAPTERS.get((kind, framework))
    return adapter.modes if adapter else ()
