"""What the statement generator knows at one point of the code: each value's static type, the
Rust variable that holds it, the optimizers and the gradients held, and where a block is written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .liveness import HELD

Dtype = Literal["float", "int", "bool"]
"""A tensor's element type: burn's `Tensor<D>`, `Tensor<D, Int>`, `Tensor<D, Bool>`."""
ValueKind = Literal["tensor", "lr", "scheduler"]
"""What a variable holds: a tensor, an optimizer's learning rate (`ModuleLearningRate`) or a
schedule (`ModuleLrScheduler`)."""


@dataclass(frozen=True)
class Ty:
    """A tensor's static type: its rank, whether it holds burn's layout of a Linear weight, and
    its element type."""

    rank: int
    transposed: bool = False
    dtype: Dtype = "float"
    kind: ValueKind = "tensor"
    """Not a tensor: a learning rate or a schedule (`LEARNING_RATE_TYPE`, `SCHEDULE_TYPE`; rank 0)."""

    @property
    def rust(self) -> str:
        """The Rust type: `Tensor<2>`, `Tensor<1, Int>`, `Tensor<4, Bool>` (or `ModuleLearningRate`,
        `ModuleLrScheduler`)."""
        if self.kind != "tensor":
            return "ModuleLearningRate" if self.kind == "lr" else "ModuleLrScheduler"
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


LEARNING_RATE_TYPE = Ty(0, kind="lr")
"""The type of an optimizer's learning rate variable (`liveness.learning_rate`)."""
SCHEDULE_TYPE = Ty(0, kind="scheduler")
"""The type of a scheduler variable."""


@dataclass(frozen=True)
class Made:
    """An optimizer statement as it ran last for its name: its `lr` and which one it was (the
    burn interpreter's `Optim::initial_lr` and `generation`)."""

    lr: float
    generation: int


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
    made: dict[str, Made] = field(default_factory=dict)
    """Optimizer name -> its newest optimizer statement (bound or dropped at once)."""
    schedules: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Scheduler name -> (the optimizer name, the `Made.generation`) its schedule was made from."""
    configs: dict[str, str] = field(default_factory=dict)
    """Scheduler name -> the config its schedule was built from, as an `LrSchedulerConfig` variant
    (what a `sequential_lr` of it composes: the interpreter's `Sched::config`)."""

    def linked(self, sched: str) -> bool:
        """The schedule's `sched_step` sets its optimizer's learning rate: the optimizer it was made
        from is still the one bound to that name (the interpreter's generation check)."""
        opt, generation = self.schedules[sched]
        made = self.made.get(opt)
        return made is not None and made.generation == generation

    def links(self) -> dict[str, bool]:
        """Every schedule made so far -> `linked` (compared between a loop's iterations)."""
        return {name: self.linked(name) for name in self.schedules}

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
            made=dict(self.made),
            schedules=dict(self.schedules),
            configs=dict(self.configs),
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
