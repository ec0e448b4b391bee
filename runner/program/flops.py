"""The floating-point operations of one training step of a program, as torch counts them.

`step_flop(program)` runs the program in the torch interpreter up to its timed loop (the first
top-level `for`), then the loop's first iteration (forward, backward, optimizer step: what one
iteration does, a block of ten steps if the loop runs blocks) inside torch's own counter,
`torch.utils.flop_counter.FlopCounterMode`, and returns what that counter adds up. Nothing is
timed or observed; the interpreter's timed run is not touched (`torch_interp.first_iteration`).

What the counter counts: the operations that have a registered formula, each at its naive dense
cost with a multiply-add as two (a matrix product of m x k by k x n: 2·m·k·n), in the forward
pass and in the backward pass (which torch runs inside the counter too):

- matrix products: `mm`, `addmm`, `bmm`, `baddbmm` (a Linear, `@`, `matmul` and the attention's
  projections reach these), and their backward (for each operand that needs a gradient: a
  Linear on an input that does not need one has no dx);
- convolutions and `convolution_backward` (grad input and grad weight, as needed);
- scaled-dot-product attention and its backward.

What it leaves out (zero FLOPs): every elementwise operation (activations, adds, the loss's
arithmetic, dropout), reductions, softmax, the norms (batch, layer), embedding lookups, and the
optimizer's update (SGD, Adam, AdamW: a few to a dozen operations per parameter, about 1.3
MFLOP for the 101,770 parameters of the MLP under Adam, 5 % of its step). The count is
therefore the arithmetic the core's FMA units do, the "model FLOPs" of a step, a lower bound
of all its operations; it is what the core's float32 peak (`runner.cost.cpu_peak`) is a peak
of. The elementwise work is memory bound and left out rather than estimated.

The count depends on the program's shapes, not on its values or framework: burn's run of the
same program does the same products, so both sides of a variant get this one count (the
engine counts each variant once, `runner.engine`). `without_autodiff` (burn's constant, which
torch lacks) is counted as `detach`, torch's constant: the same maths.
"""

from __future__ import annotations

from typing import Any

from torch.utils.flop_counter import FlopCounterMode

from . import torch_interp
from .ir import Program, Stmt

# Operations torch lacks, counted as the torch operation with the same maths.
STAND_INS = {"without_autodiff": "detach"}


def _stand_in(stmt: Stmt) -> Stmt:
    body = [_stand_in(s) for s in stmt.body] if stmt.body is not None else None
    return stmt.model_copy(update={"op": STAND_INS.get(stmt.op, stmt.op), "body": body})


def with_stand_ins(program: Program) -> Program:
    """The program with every operation of `STAND_INS` replaced by its torch counterpart."""
    if not any(st.op in STAND_INS for st in program.statements()):
        return program
    return program.model_copy(update={"body": [_stand_in(st) for st in program.body]})


def step_flop_by_op(program: Program | dict[str, Any]) -> dict[str, int] | None:
    """FLOPs of one iteration of the timed loop by aten operation (`mm`, `addmm`,
    `convolution_backward`, ...); None if the program has no timed loop or does not get
    through its first iteration in torch."""
    p = program if isinstance(program, Program) else Program.model_validate(program)
    counter = FlopCounterMode(display=False)
    try:
        ran = torch_interp.first_iteration(with_stand_ins(p), counter)
    except Exception:  # a program torch cannot run this far (its own run says why): no count
        return None
    if not ran:
        return None
    return {str(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}


def step_flop(program: Program | dict[str, Any]) -> int | None:
    """FLOPs of one iteration of the timed loop (the module docstring says what counts)."""
    by_op = step_flop_by_op(program)
    return None if by_op is None else sum(by_op.values())
