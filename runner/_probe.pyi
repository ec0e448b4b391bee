"""The burn side: the p10 loop of ``rust_probe`` (burn 0.22.1, Flex + Autodiff), built by maturin."""

from typing import Callable, Literal, Sequence, TypedDict

MODES: list[str]
"""``detach``, ``target``, ``without``, ``target-without``, ``log``, ``ema-only``."""

BURN_VERSION: str

class Checkpoint(TypedDict):
    step: int
    ms_per_step: float
    """Mean wall time per step since the previous checkpoint."""
    rss_bytes: int | None
    rss_delta_mib: float | None
    """RSS now minus RSS at the start of the run."""
    is_tracked: bool
    """Of the EMA; in ``log`` mode of a fresh ``detach()`` snapshot."""
    is_require_grad: bool
    is_autodiff: bool

class Panic(TypedDict):
    message: str
    file: str
    line: int
    column: int
    location: str
    """``file:line:column``."""
    step: int
    """The step that panicked; 0 during setup."""
    phase: Literal["setup", "forward", "backward", "optimizer", "snapshot", "ema", "checkpoint"]

class P10Result(TypedDict):
    mode: str
    steps: int
    outcome: Literal["completed", "panic", "stopped"]
    """``stopped``: the progress callback raised; the exception is re-raised instead of returning."""
    step_ms: list[float]
    """Wall time of every completed step in milliseconds, step 1 first."""
    checkpoints: list[Checkpoint]
    rss_samples: list[tuple[int, int, float]]
    """(step, rss_bytes, rss_delta_mib) every ``rss_every`` steps, read outside the timed region."""
    rss_start_bytes: int | None
    setup_ms: float
    panic: Panic | None

class BuildInfo(TypedDict):
    burn: str
    rustc: str
    profile: Literal["release", "debug"]
    probe: str
    backend: str

def run_p10(
    mode: str,
    *,
    d_in: int = 512,
    d_out: int = 512,
    batch: int = 64,
    lr: float = 1e-3,
    steps: int = 2000,
    checkpoints: Sequence[int] | None = None,
    ema_decay: float = 0.99,
    seed: int = 0,
    rss_every: int = 25,
    progress: Callable[[Checkpoint], object] | None = None,
) -> P10Result:
    """Run the p10 loop once. Bad arguments raise ``ValueError`` naming the parameter.

    A panic inside burn does not raise: it comes back as ``outcome == "panic"``
    with ``panic`` filled in. ``checkpoints`` defaults to the seed's
    (1, 50, 100, 200, 500, 1000, 2000) up to ``steps``, plus ``steps``.
    ``rss_every``: sample the process RSS every this many steps (0: only at checkpoints).
    """

def build_info() -> BuildInfo:
    """What went into this build: burn version, rustc, cargo profile."""
