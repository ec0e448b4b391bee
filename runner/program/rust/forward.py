"""A forward region: statements of a program that the reproducer writes as a method
`impl Model { pub fn forward(&self, ..) -> Tensor<D> }`, called from `fn main` where they stood
(`burn-torch-diff port` passes the statements it converted from the user's `forward`).

The region is an optional input of the generator, not a construct of the language: a program
without one renders as before. A region the method cannot hold (`ForwardUnfit`: its statements
are not one run of siblings, one of them steps, observes or changes the model, a value it makes
other than its output is read elsewhere, ...) leaves the statements inline, and the reason is
said in a comment of `main.rs` (`Generator.forward_note`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...contract.ops import OPS
from ..ir import Program, Stmt
from . import families
from .liveness import INPLACE, operands, tensor_names

PLAIN_EXCLUDED = frozenset({"step", "zero_grad", "backward", "observe", "grad", "item", "sched_step"})
"""Statements that are no plain function of their operands (besides the optimizers', schedulers'
and the machine-level `families.STATEMENTS`)."""


@dataclass(frozen=True)
class ForwardRegion:
    """`statements`: the IR indices of the forward's statements (one run of siblings: a `range`);
    `inputs`: the program names of the forward's inputs, in the order of its parameters;
    `output`: the program name of what it returns; `about`: one line for the method's doc comment."""

    statements: Sequence[int]
    inputs: tuple[str, ...]
    output: str
    about: str = "The forward pass."


class ForwardUnfit(Exception):
    """The region cannot be a method (the message says why): its statements stay inline."""


@dataclass(frozen=True)
class Plan:
    """A region checked against its program."""

    region: ForwardRegion
    stmts: tuple[Stmt, ...]
    args: tuple[str, ...]
    """The method's parameters: the inputs, then the other values it reads that `fn main` makes
    (not the model's params), in the order first read."""
    last_read: dict[str, tuple[int, int]]
    """Each argument the region reads -> (statement index, position) of its last read there."""
    defines_output: Stmt


def _siblings(body: list[Stmt], want: range) -> list[Stmt] | None:
    """The statements of `want` if they are consecutive in one block."""
    for i, st in enumerate(body):
        if st.index == want.start:
            run = body[i : i + len(want)]
            if [s.index for s in run] == list(want):
                return run
            return None
        if st.body:
            found = _siblings(st.body, want)
            if found is not None:
                return found
    return None


def plan(program: Program, region: ForwardRegion) -> Plan:
    """The region's statements and arguments (`ForwardUnfit` says why it cannot be a method)."""
    want = list(region.statements)
    if not want:
        raise ForwardUnfit("the forward region holds no statements")
    run = range(want[0], want[0] + len(want))
    found = _siblings(list(program.body), run) if want == list(run) else None
    if found is None:
        raise ForwardUnfit(
            "the forward's statements interleave with other statements (not one run of statements in one block)"
        )
    params = tensor_names(program)
    defined: list[str] = []
    args: list[str] = list(region.inputs)
    last_read: dict[str, tuple[int, int]] = {}
    for st in found:
        op = st.op
        spec = OPS[op]
        if (
            st.body is not None
            or op in PLAIN_EXCLUDED
            or op in INPLACE
            or op in families.STATEMENTS
            or op in families.OPTIMIZERS
            or op in families.SCHEDULERS
            or spec.result in ("optimizer", "scheduler")
            or st.out is None
        ):
            raise ForwardUnfit(f"statement [{st.index}] (line {st.line}, `{op}`) is no plain computation of values")
        for name, pos in operands(st, params).reads:
            if name not in defined:
                if name not in args:
                    args.append(name)
                last_read[name] = (st.index, pos)
        if st.out in defined or st.out in args:
            raise ForwardUnfit(f"statement [{st.index}] (line {st.line}) binds `{st.out}` again")
        defined.append(st.out)
    if region.output not in defined:
        raise ForwardUnfit(f"`{region.output}` is not made by the forward's statements")
    for name in region.inputs:
        if name in params:
            raise ForwardUnfit(f"the input `{name}` is a param of the model")
    inside = set(run)
    local = set(defined) - {region.output}
    if program.settings.track in set(defined):
        raise ForwardUnfit(f"the timed loop tracks `{program.settings.track}`, a value of the forward")
    for st in program.statements():
        if st.index in inside:
            continue
        ops = operands(st, params)
        read = {n for n, _ in ops.reads} & local
        if read:
            raise ForwardUnfit(
                f"statement [{st.index}] (line {st.line}) reads `{sorted(read)[0]}`, made in the forward"
            )
        bound = {n for n, _ in ops.defs} & set(defined)
        if bound:
            raise ForwardUnfit(f"statement [{st.index}] (line {st.line}) binds `{sorted(bound)[0]}` too")
    defines_output = next(st for st in found if st.out == region.output)
    return Plan(region, tuple(found), tuple(args), last_read, defines_output)
