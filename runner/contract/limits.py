"""Every limit the Python side and the probe share, written once.

The probe reads them from `rust_probe/src/contract.rs`, which `python3 -m
runner.contract` generates from this module (a test fails when it is stale).
A value is refused with the same limit on both sides, so what loads here runs
there: a case that passes validation cannot fail on a limit at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

RustType = Literal["u64", "usize", "f64"]


@dataclass(frozen=True)
class Limit:
    name: str
    value: int | float
    rust_type: RustType
    doc: str


IR_VERSION: Final = 2
"""The version of the program IR (`docs/program-ir.md` section 2) both interpreters read."""
MAX_RANK: Final = 4
"""Tensor ranks 1 to 4: burn's ranks are types, the interpreter has one per rank."""
MAX_ELEMENTS: Final = 1 << 22
"""Elements of one initial tensor of a program (4M: a 2048 x 2048 matrix)."""
MAX_TOTAL_ELEMENTS: Final = 1 << 24
"""Elements of all initial tensors of a program together (16M: 64 MiB of float32)."""
MAX_STATEMENTS: Final = 10_000
"""Statements of one program."""
MAX_DEPTH: Final = 8
"""Nesting of blocks (a `for` inside a `for` is depth 2)."""
MAX_CHECKPOINTS: Final = 10_000
"""Checkpoints of one run."""
MAX_STEPS: Final = 10_000_000
"""Steps of the p10 loop, and iterations of a program's loop."""
MAX_DIM: Final = 1 << 16
"""A layer's width: p10's `d_in`, `d_out` and `batch`, a Linear's `d_in` and `d_out`."""
P10_MAX_ELEMENTS: Final = 1 << 28
"""p10's `d_in x d_out` and `batch x d_in` (1 GiB of float32 each)."""
MAX_BUSY_WAIT_US: Final = 1_000_000
"""p10's calibration busy wait per step, in microseconds (1 s)."""
DEFAULT_RSS_EVERY: Final = 25
"""Sample the RSS every this many steps of a timed loop, unless a case says otherwise."""
FLOAT32_MAX: Final = 3.4028234663852886e38
"""The largest finite float32: initial values and number literals stay within it."""

LIMITS: Final[tuple[Limit, ...]] = (
    Limit("IR_VERSION", IR_VERSION, "u64", "The program IR version both interpreters read."),
    Limit("MAX_RANK", MAX_RANK, "usize", "Tensor ranks 1 to MAX_RANK."),
    Limit("MAX_ELEMENTS", MAX_ELEMENTS, "u64", "Elements of one initial tensor of a program."),
    Limit("MAX_TOTAL_ELEMENTS", MAX_TOTAL_ELEMENTS, "u64", "Elements of all initial tensors of a program."),
    Limit("MAX_STATEMENTS", MAX_STATEMENTS, "usize", "Statements of one program."),
    Limit("MAX_DEPTH", MAX_DEPTH, "usize", "Nesting of blocks."),
    Limit("MAX_CHECKPOINTS", MAX_CHECKPOINTS, "usize", "Checkpoints of one run."),
    Limit("MAX_STEPS", MAX_STEPS, "u64", "Steps of the p10 loop and iterations of a program loop."),
    Limit("MAX_DIM", MAX_DIM, "u64", "A layer's width (p10 d_in, d_out, batch; a Linear's d_in, d_out)."),
    Limit("P10_MAX_ELEMENTS", P10_MAX_ELEMENTS, "u64", "p10's d_in x d_out and batch x d_in."),
    Limit("MAX_BUSY_WAIT_US", MAX_BUSY_WAIT_US, "u64", "p10's calibration busy wait per step (microseconds)."),
    Limit("DEFAULT_RSS_EVERY", DEFAULT_RSS_EVERY, "u64", "RSS sampling period of a timed loop, in steps."),
    Limit("FLOAT32_MAX", FLOAT32_MAX, "f64", "The largest finite float32."),
)
"""The limits the probe needs, in the order the generated Rust lists them."""
