"""Which framework implements which case kind and modes, without importing either.

The orchestrator validates case files against this table; a worker imports the
adapter module named here and nothing else, so the torch adapter never loads
the probe and the burn adapter never loads torch.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Adapter:
    framework: str
    kind: str
    module: str
    modes: tuple[str, ...]
    # Distribution to look for before running, and how to get it.
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
        # PyTorch has detach() only; it already yields a constant.
        modes=("detach", "target", "log", "ema-only"),
        requirement="torch",
        install_hint="pip install torch==2.15.0 (or run scripts/bootstrap)",
    ),
    ("p10", "burn"): Adapter(
        framework="burn",
        kind="p10",
        module="runner.adapters.burn_p10",
        modes=("detach", "target", "without", "target-without", "log", "ema-only"),
        requirement="runner._probe",
        install_hint="build the probe with scripts/bootstrap",
        override_env="RUNNER_PROBE_PATH",
    ),
}

FRAMEWORKS: tuple[str, ...] = ("torch", "burn")
KINDS: tuple[str, ...] = tuple(sorted({kind for kind, _ in ADAPTERS}))


def adapter_for(kind: str, framework: str) -> Adapter:
    return ADAPTERS[(kind, framework)]


def modes_of(kind: str, framework: str) -> tuple[str, ...]:
    adapter = ADAPTERS.get((kind, framework))
    return adapter.modes if adapter else ()
