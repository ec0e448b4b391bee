"""The burn side: the p10 loop and the program interpreter of ``rust_probe`` (burn 0.22.1, Flex + Autodiff), built by maturin."""

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
    busy_wait_us: int = 0,
    progress: Callable[[Checkpoint], object] | None = None,
) -> P10Result:
    """Run the p10 loop once. Bad arguments raise ``ValueError`` naming the parameter.

    A panic inside burn does not raise: it comes back as ``outcome == "panic"``
    with ``panic`` filled in. ``checkpoints`` defaults to the seed's
    (1, 50, 100, 200, 500, 1000, 2000) up to ``steps``, plus ``steps``.
    ``rss_every``: sample the process RSS every this many steps (0: only at checkpoints).
    ``busy_wait_us``: calibration only (0, off, by default): spin this long at the end of
    every step, inside its timed region, to inject a known slowdown.
    """

def build_info() -> BuildInfo:
    """What went into this build: burn version, rustc, cargo profile."""

class P10Defaults(TypedDict):
    d_in: int
    d_out: int
    batch: int
    lr: float
    steps: int
    checkpoints: list[int]
    ema_decay: float
    seed: int
    rss_every: int
    busy_wait_us: int

P10_DEFAULTS: P10Defaults
"""``run_p10``'s defaults (``rust_probe/src/config.rs``)."""

# The program interpreter (docs/program-ir.md).

PROGRAM_IR_VERSION: int
"""The ``ir_version`` ``run_program`` reads."""

PROGRAM_OPS: dict[str, Literal["supported", "unsupported"]]
"""Every operation name of the IR the interpreter knows, with burn 0.22.1's support."""

class RawFlags(TypedDict):
    is_tracked: bool
    is_require_grad: bool
    is_autodiff: bool

class Flags(TypedDict):
    tracked: bool
    """burn ``is_tracked()``."""
    requires_grad: bool
    """burn ``is_require_grad()``."""
    raw: RawFlags

class Observation(TypedDict):
    label: str
    tensor: str
    op_index: int
    iteration: int | None
    """The timed loop's iteration (1-based), ``None`` outside it."""
    shape: list[int]
    """Torch layout; burn's full reductions are ``[1]``; ``item``'s number is ``[]``."""
    values: list[float] | None
    """Flat, row-major, torch layout; NaN and infinities kept. Inside the timed loop only at its last iteration."""
    grad: list[float] | None
    """The gradient burn holds for the tensor now (newest or accumulated), ``None`` if none."""
    flags: Flags

class ProgramCheckpoint(TypedDict):
    step: int
    ms_per_step: float
    """Mean wall time per iteration since the previous checkpoint."""
    rss_bytes: int | None
    rss_delta_mib: float | None
    tracked: bool | None
    """``is_tracked()`` of ``settings.track``; ``None`` without one."""
    flags: Flags | None

class Failure(TypedDict):
    op_index: int | None
    """The statement's ``index``; ``None`` while the initial tensors were made."""
    op: str | None
    line: int | None
    iteration: int | None
    message: str
    location: str | None
    """A burn panic's ``file:line:column``."""

class ProgramResult(TypedDict):
    outcome: Literal["ok", "panic", "error", "unsupported"]
    failure: Failure | None
    observations: list[Observation]
    step_ms: list[float]
    """Wall time of each completed iteration of the timed loop (the first top-level ``repeat``)."""
    checkpoints: list[ProgramCheckpoint]
    rss_samples: list[list[float]]
    """``[iteration, rss_delta_mib]`` every ``rss_every`` iterations, read outside the timed region."""
    setup_ms: float

def run_program(
    ir_json: str,
    *,
    progress: Callable[[ProgramCheckpoint], object] | None = None,
) -> ProgramResult:
    """Run one program IR (JSON text) on burn. Bad IR raises ``ValueError`` naming the field.

    A burn panic does not raise: it is ``outcome == "panic"`` with ``failure``.
    ``progress`` is called with each checkpoint of the timed loop; an exception
    it raises stops the run and is re-raised.
    """

def run_programs(ir_jsons: Sequence[str]) -> list[ProgramResult]:
    """Run a batch of program IRs, each isolated (a panic in one does not affect the next).

    Every IR is checked before any runs; bad IR raises ``ValueError`` naming ``ir_jsons[i]`` and the field.
    """
