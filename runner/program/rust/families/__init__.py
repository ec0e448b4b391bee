"""The Rust reproducer's renderings of the table's operations by family: one small function per
operation, in the family's module (`layers.py`, `tensors.py`, `losses.py`, `training.py`), doing
as code what the burn interpreter's `rust_probe/src/program/families/FAMILY.rs` (or, for a
machine-level statement, `rust_probe/src/program/mod.rs`) does at run time.

How to add an operation's rendering
-----------------------------------
1. **A plain function of its arguments** (the table's `family`): in the family's module, write

       def my_op(c: Call) -> Expr:
           (x,) = c.args                       # the tensor operands: Arg(expr, ty)
           d = c.dim(c.integer("dim"), x.ty.rank)
           text = f"{x.expr}.my_op({d})"
           if c.has("eps"):                    # OMITTED attribute given: write its with_* /
               ...                             # argument; omitted: omit it (burn's own default)
           return Expr(text, Ty(x.ty.rank))    # the result's static type

   and add it to the module's `OPS` dict. What the function receives (`base.Call`):
   - `c.args`: the tensor operands in order, each `Arg(expr, ty)`. `expr` is already moved or
     cloned as the interpreter's liveness says, and in torch's layout (a value held in burn's
     Linear-weight layout is already `.transpose()`d, as `float_arg` materializes it), so use
     each `expr` exactly once. `ty` is its static type `Ty(rank, dtype=...)` ("float", "int",
     "bool": `Tensor<D>`, `Tensor<D, Int>`, `Tensor<D, Bool>`).
   - `c.attrs` and `c.has` / `c.num` / `c.integer` / `c.flag` / `c.text`: the statement's
     attributes. An `OMITTED` attribute the program omits is absent: spell the burn call without
     it exactly where `FAMILY.rs` does (`if let Some(x) = a.x { config = config.with_x(..) }`).
   - `c.use(path)`: each `use` the expression needs (`burn::nn::loss::CrossEntropyLossConfig`);
     list every such path in the module's `IMPORTS` too (the identifiers they bring into scope
     are kept from the program's names).
   - `c.device`: `&device` (for a config's `.init(c.device)`).
   - `c.module` / `c.module_attrs`: for a module call, the module's Rust expression
     (`model.conv`, or `eval_model.conv` in eval mode, as the interpreter's `Ctx::model`).
   - `c.refuse(why)` / `c.wrong_rank(what, rank)` / `c.dim(...)`: where the interpreter stops
     with an error or `unsupported` (a rank it does not take, a dim out of range, an element type
     it refuses), `render` raises `ValueError` saying so instead of writing code that differs.
   Return `Expr(text, ty)` with the result's static type (`argmax`: `Ty(r - 1, dtype="int")`).
   Literals: `literals.f32(x)` for a value the interpreter casts `as f32`, `literals.f64` for
   an f64 argument, `literals.string` for a string. Where the interpreter reads a size at run
   time (`dims()`), or an operand other than the first is the receiver (`b.mask_where(mask,
   a)`: Rust evaluates the receiver first, and `Arg.name` says when two operands are one
   value), return a block expression, `base.block([statements], value)`: bind every operand
   in its first statement, in the interpreter's order, before a local of the block could
   shadow a name an operand's expression reads. The interpreter's run-time error is a panic
   with its message there (`unwrap_or_else(|| panic!(...))`).
2. **A module kind** (`Conv2d`): in `layers.py` `MODULES`, a `ModuleRendering`: the field's
   type, its config as `layers::build` writes it (a `with_*` for each attribute given, in the
   same order; `init_takes_device=False` for a config whose `init()` takes none, `Dropout`),
   and a `ModuleTensor` per tensor of the table's `ParamSpec`s (its burn field, and whether it
   is a `Param`, an `Option<Param>` or a `RunningState` buffer; `transposed` for a tensor burn
   keeps as a Linear weight, `[d_in, d_out]`; `parts` for a tensor torch fuses and burn splits,
   MultiheadAttention's `in_proj_weight`: each part an equal share of torch's rows, joined
   along `join_dim` when read). The generator puts a field in `struct Model` (named as the
   program names the module), builds it with `config.init(&device)` and loads the program's
   data (torch's layout) into each tensor (a module with nothing to load is its config's
   `init` itself); reads (`conv.weight`), gradients, `freeze`, `add_scalar_` and the
   optimizers then work on it. Its call is an operation of step 1 using `c.module`
   (`c.module_attrs` for what the call needs of the declaration: MultiheadAttention's
   `batch_first`).
3. **A machine-level statement** (`training.py`): an optimizer (an op whose `result` is
   "optimizer") is one function from its attributes to the config chain a port writes, without
   `.init()` (`OPTIMIZERS`, as `sgd` and `adam`); the generator binds it, `step(opt)` writes
   `model = opt.step(lr, model, grads)` and the liveness already treats it as an optimizer.
   A scheduler (an op whose `result` is "scheduler") is likewise its config chain from its
   attributes and the optimizer's `lr` (`SCHEDULERS`; `sequential_lr`'s from the configs of the
   schedules it composes, which the generator keeps per scheduler name as `LrSchedulerConfig`
   variants, `SCHEDULE_VARIANTS`); the generator binds its `init()`, and keeps the optimizer's
   learning rate in a variable `sched_step` sets and `step` passes.
   Anything else (`train` / `eval`; a scheduler, clipping, a target network copy) is a function
   `(g, st, state, depth, ctx)` in `STATEMENTS` that writes its lines with what `base.Writer`
   offers of the generator and updates the `State` it changes (`train` / `eval`: the
   `eval_model` snapshot). One that reads or binds program names needs them in the liveness
   (`../liveness.py` `operands`); one that changes what `step` does (as a schedule's learning
   rate does: `Generator.scheduler`, `sched_step`, `learning_rate`) needs `Generator.step` to
   learn it: extend `Writer` and the generator there.
4. Test it: a program in `tests/test_program_render_rust.py` `FAMILY_SAMPLE` (built with cargo
   and held to the interpreter's observations; the family's agreement programs are taken by
   index in `_AGREED`; a reproducer whose values are random is listed in `RANDOM` and compared
   without them); `test_every_operation_renders_or_is_refused` fails for an operation of the
   table without a rendering (its `render` raises `ValueError` naming it, never a KeyError or
   broken Rust): every operation has one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from ....contract.ops import MODULES as MODULE_SPECS
from . import layers, losses, tensors, training
from .base import Call, Ctx, Expr, ModuleRendering, State, Stmt, Writer, spec_family

Rendering = Callable[[Call], Expr]
"""A family operation's rendering: the statement -> its burn expression and static type."""
Statement = Callable[[Writer, Stmt, State, int, Ctx], None]
"""A machine-level statement's rendering: writes its own lines."""
Optimizer = Callable[[Call], str]
"""An optimizer's config chain from its attributes (without `.init()`)."""
Scheduler = Callable[[Call, float, Sequence[str]], tuple[str, str]]
"""A schedule's config type and chain from its attributes, the optimizer's `lr` and the configs of
the schedules among its arguments (`sequential_lr`'s, as `LrSchedulerConfig` variants; without
`.init()`)."""

OPS: Final[dict[str, Rendering]] = {**layers.OPS, **tensors.OPS, **losses.OPS, **training.OPS}
STATEMENTS: Final[dict[str, Statement]] = {**training.STATEMENTS}
OPTIMIZERS: Final[dict[str, Optimizer]] = {**training.OPTIMIZERS}
SCHEDULERS: Final[dict[str, Scheduler]] = {**training.SCHEDULERS}
SCHEDULE_VARIANTS: Final[dict[str, str]] = {**training.VARIANTS}
"""A schedule's config type -> its `LrSchedulerConfig` variant (what `sequential_lr` composes)."""
MODULES: Final[dict[str, ModuleRendering]] = {**layers.MODULES}
IMPORTS: Final[frozenset[str]] = frozenset(
    ["burn::tensor::Int", "burn::tensor::Bool"]  # the element types of int and bool tensors
    + [*layers.IMPORTS, *tensors.IMPORTS, *losses.IMPORTS, *training.IMPORTS]
    + [p for m in MODULES.values() for p in m.imports]
    + [p for m in MODULES.values() for t in m.tensors for p in t.imports()]
)
"""Every `use` path a family's rendering may write."""
IMPORTED_NAMES: Final[frozenset[str]] = frozenset(path.rsplit("::", 1)[1] for path in IMPORTS)
"""The identifiers those imports bring into scope (kept from the program's names)."""


def renders(op: str) -> bool:
    """The reproducer has a rendering of this family or machine-level operation."""
    return op in OPS or op in STATEMENTS or op in OPTIMIZERS or op in SCHEDULERS


def missing_op(op: str, line: int) -> ValueError:
    """The clean refusal of an operation without a rendering yet."""
    return ValueError(
        f"render: line {line}: the Rust reproducer has no rendering of `{op}` yet "
        f"(runner/program/rust/families/{spec_family(op)}.py)"
    )


def missing_module(name: str, kind: str) -> ValueError:
    """The clean refusal of a module kind without a rendering yet."""
    source = MODULE_SPECS[kind].source
    return ValueError(
        f"render: module `{name}`: the Rust reproducer has no rendering of the module kind `{kind}` ({source}) "
        f"yet (runner/program/rust/families/{spec_family(MODULE_SPECS[kind].call)}.py MODULES)"
    )
