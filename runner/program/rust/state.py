"""What the statement generator knows at one point of the code: each value's static type, the
Rust variable that holds it, the optimizers and the gradients held, and where a block is written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .liveness import HELD

Dtype = Literal["float", "int", "bool"]
"""A tensor's element type: burn's `Tensor<D>`, `Tensor<D, Int>`, `Tensor<D, Bool>`."""


@dataclass(frozen=True)
class Ty:
    """A tensor's static type: its rank, whether it holds burn's layout of a Linear weight, and
    its element type."""

    rank: int
    transposed: bool = False
    dtype: Dtype = "float"

    @property
    def rust(self) -> str:
        """The Rust type: `Tensor<2>`, `Tensor<1, Int>`, `Tensor<4, Bool>`."""
        return f"Tensor<{self.rank}>" if self.dtype == "float" else f"Tensor<{self.rank}, {self.dtype.title()}>"

    @property
    def path(self) -> str:
        """The type in an expression: `Tensor::<2>`, `Tensor::<1, Int>`."""
        return "Tensor::" + self.rust.removeprefix("Tensor")


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
    scope: int = 0
    """The Rust block it is declared in (`Generator.scopes`): 0 is `fn main`'s, each `for` body
    opens one. A later statement may assign it only while that block is open."""


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
    eval_model: Binding | None = None
    """The `model.valid()` snapshot `eval()` took (the interpreter's `eval_model`): the module
    calls use it while it holds a value (eval mode); `train()` leaves the variable without one,
    for the next `eval()` to assign while its block is open."""

    @property
    def training(self) -> bool:
        return self.eval_model is None or not self.eval_model.value

    def mode(self) -> Any:
        """What the code after a loop's head assumes about the mode (compared between iterations):
        training, or evaluation with this snapshot variable."""
        return "train" if self.training or self.eval_model is None else ("eval", self.eval_model.decl.id)

    def copy(self) -> State:
        def dup(b: Binding | None) -> Binding | None:
            return None if b is None else Binding(b.decl, b.ty, b.value)

        return State(
            vars={k: Binding(b.decl, b.ty, b.value) for k, b in self.vars.items()},
            opts={k: OptBinding(o.decl, o.config) for k, o in self.opts.items()},
            held=self.held,
            grads=dup(self.grads),
            grads_sum=dup(self.grads_sum),
            eval_model=dup(self.eval_model),
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
