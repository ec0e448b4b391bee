"""What the statement generator knows at one point of the code: each value's static type, the
Rust variable that holds it, the optimizers and the gradients held, and where a block is written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .liveness import HELD


@dataclass(frozen=True)
class Ty:
    """A tensor's static type: its rank, and whether it holds burn's layout of a Linear weight."""

    rank: int
    transposed: bool = False


@dataclass(eq=False)
class Decl:
    """One Rust variable (a `let` and the assignments to it). `id` numbers the variables in the
    order the generator makes them (the same in both of its passes)."""

    id: int
    base: str
    """Its identifier (`names.unread(base)` if nothing reads it)."""
    reads: int = 0
    mut: bool = False
    reads_since_write: int = 0
    written_at: int = -1
    """`Generator.loops` when it was last written: a later write with no loop boundary and no read in
    between overwrites a value Rust can see is never read."""


@dataclass
class Binding:
    decl: Decl
    ty: Ty | None = None
    value: bool = True
    """The variable holds the value now (it was not moved out)."""


@dataclass(frozen=True)
class OptConfig:
    kind: str
    lr: float
    builder: str
    """The Rust expression that makes it."""


@dataclass
class OptBinding:
    decl: Decl
    config: OptConfig


@dataclass
class State:
    vars: dict[str, Binding] = field(default_factory=dict)
    opts: dict[str, OptBinding] = field(default_factory=dict)
    held: str = "none"
    """The gradients held: "none", "raw" (`grads`) or "acc" (`grads_sum` and the newest `grads`)."""
    grads: Binding | None = None
    grads_sum: Binding | None = None

    def copy(self) -> State:
        def dup(b: Binding | None) -> Binding | None:
            return None if b is None else Binding(b.decl, b.ty, b.value)

        return State(
            vars={k: Binding(b.decl, b.ty, b.value) for k, b in self.vars.items()},
            opts={k: OptBinding(o.decl, o.config) for k, o in self.opts.items()},
            held=self.held,
            grads=dup(self.grads),
            grads_sum=dup(self.grads_sum),
        )

    def signature(self, name: str) -> Any:
        """What the code after a loop's head assumes about `name` (compared between iterations)."""
        if name == HELD:
            return self.held
        if name in self.opts:
            return ("opt", self.opts[name].config)
        b = self.vars.get(name)
        if b is None or not b.value:
            return None
        return b.ty


@dataclass
class Ctx:
    """Where a statement is rendered."""

    iteration: str | Decl | None = None
    """Inside the timed loop: its iteration, the `for`'s variable or a written-out number."""
    tail_backward: bool = False
    """A backward runs later in the Rust scope this block is rendered into (after the block)."""
    carried: tuple[dict[str, Binding], ...] = ()
    """The enclosing loops' carried variables (innermost last): a write assigns them."""
