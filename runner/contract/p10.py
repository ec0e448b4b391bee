"""The p10 loop's modes and parameters (`docs/p10-experiment.md`), written once.

The probe's `Mode` enum, its parameter defaults and ranges are generated from
this module (`rust_probe/src/contract.rs`); the case model
(`runner.model.case.P10Params`) and the framework table
(`runner.frameworks`) read it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from . import limits
from .ops import FRAMEWORKS, Framework


@dataclass(frozen=True)
class P10Mode:
    name: str
    frameworks: tuple[Framework, ...]
    snapshot: Literal["detach", "without_autodiff"]
    """How the snapshot of the weight is taken each step."""
    ema_in_loss: bool
    """The EMA enters the loss as a target network."""
    doc: str


MODES: Final[tuple[P10Mode, ...]] = (
    P10Mode("detach", FRAMEWORKS, "detach", False, "`weight.detach()` snapshot, EMA only stored."),
    P10Mode(
        "target", FRAMEWORKS, "detach", True, "`weight.detach()` snapshot, EMA used as a target network in the loss."
    ),
    P10Mode("without", ("burn",), "without_autodiff", False, "`weight.without_autodiff()` snapshot, EMA only stored."),
    P10Mode(
        "target-without",
        ("burn",),
        "without_autodiff",
        True,
        "`weight.without_autodiff()` snapshot, EMA used in the loss.",
    ),
    P10Mode(
        "log", FRAMEWORKS, "detach", False, "`weight.detach()` snapshot whose norm is read each step; nothing kept."
    ),
    P10Mode(
        "ema-only", FRAMEWORKS, "detach", False, "The `detach` EMA chain alone: no forward, backward or optimizer step."
    ),
)
"""PyTorch has `detach()` only, which already gives a constant: `without` and
`target-without` are burn's fix."""

SEED_CHECKPOINTS: Final[tuple[int, ...]] = (1, 50, 100, 200, 500, 1000, 2000)
"""The seed's checkpoints; a run of fewer steps keeps those below its last step, plus that step."""


@dataclass(frozen=True)
class P10Param:
    name: str
    type: Literal["int", "float"]
    default: int | float
    minimum: int | float
    maximum: int | float | None
    minimum_exclusive: bool = False
    doc: str = ""


PARAMS: Final[tuple[P10Param, ...]] = (
    P10Param("d_in", "int", 512, 1, limits.MAX_DIM, doc="input width of the Linear"),
    P10Param("d_out", "int", 512, 1, limits.MAX_DIM, doc="output width of the Linear"),
    P10Param("batch", "int", 64, 1, limits.MAX_DIM, doc="rows of the input"),
    P10Param("lr", "float", 1e-3, 0.0, None, minimum_exclusive=True, doc="SGD learning rate"),
    P10Param("steps", "int", 2000, 1, limits.MAX_STEPS, doc="steps of the loop"),
    P10Param("ema_decay", "float", 0.99, 0.0, 1.0, doc="ema = ema * decay + snapshot * (1 - decay)"),
    P10Param("seed", "int", 0, 0, None, doc="seed of the initial weights and input"),
    P10Param(
        "rss_every", "int", limits.DEFAULT_RSS_EVERY, 0, limits.MAX_STEPS, doc="RSS sampling period (0: at checkpoints)"
    ),
    P10Param(
        "busy_wait_us",
        "int",
        0,
        0,
        limits.MAX_BUSY_WAIT_US,
        doc="calibration only: a busy wait added to every step (0: off)",
    ),
)
"""The loop's parameters besides `checkpoints` (default: `SEED_CHECKPOINTS` below `steps`, and `steps`)."""

DEFAULTS: Final[dict[str, int | float]] = {p.name: p.default for p in PARAMS}


def default_checkpoints(steps: int, points: tuple[int, ...] | list[int] = SEED_CHECKPOINTS) -> list[int]:
    """The checkpoints of a run of `steps` steps: the given ones below it, and the last step."""
    return [p for p in points if p < steps] + [steps]


def modes_of(framework: str) -> tuple[str, ...]:
    return tuple(m.name for m in MODES if framework in m.frameworks)
