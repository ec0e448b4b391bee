"""The Rust identifiers of a reproducer: every identifier the generated code gives a program name
comes from `RustNames`, one `Namespace` (`..identifiers`) per Rust namespace it is used in:

- `local`: the variables of `fn main` (tensors, temporaries, optimizers). Reserved: Rust's
  keywords, the generated code's own names (its helper functions, statics and locals: `PENDING`,
  `print_pending`, `model`, `device`, `grads`, ...) and the names its imports and Rust's prelude
  bring into scope (`Tensor`, `Some`, `drop`, ...): a `let` of one of those would shadow it, or
  be read by Rust as a pattern (`let PENDING = ..` matches the static). An unread variable is
  written `_x`, so `x` and `_x` are taken together;
- `field`: the fields of `struct Model` (params and modules). `#[derive(Module)]` writes
  `let FIELD = ..` for each field in the code it generates, beside its own `device`, `mapper`,
  ...: reserved are the keywords, those names, and the values in scope that a `let` would read as
  a pattern (`PENDING`, `None`, ...);
- `static`: the arrays of `src/data.rs` (`LIN_WEIGHT`), upper-case.

A name that is taken gets `_` appended until it is free, so distinct names always get distinct
identifiers (`fn` -> `fn_`, and then `fn_` -> `fn__`).
"""

from __future__ import annotations

from collections.abc import Iterable

from ...contract.ops import OPS
from ..identifiers import Namespace
from ..ir import Program
from .families import IMPORTED_NAMES

RUST_KEYWORDS = frozenset(
    # strict and reserved keywords of every edition, and the weak ones
    "as async await break const continue crate do dyn else enum extern false final fn for gen if impl in let "
    "loop macro match mod move mut override priv pub ref return self Self static struct super trait true try "
    "type typeof union unsafe unsized use virtual where while yield abstract become box macro_rules raw safe".split()
)
OWN_NAMES = frozenset(
    # the generated code's functions, statics, consts, types and modules
    "main observe observe_transposed record checkpoint print_pending flags_json torch_values floats_json "
    "number_json string_json PENDING CHECKPOINTS LAST EVERY_CHECKPOINT Model data "
    # its locals in `fn main`
    "device model grads grads_sum newest_grads grad_tmp fresh acc it report_panic info eval_model".split()
    # its helper functions for int and bool tensors
    + "observe_int observe_bool record_exact untracked_json checkpoint_exact".split()
    # its helper for `soft_update` (a function and the two types it uses)
    + "soft_update CollectParams SoftUpdater".split()
)
IN_SCOPE = frozenset(
    # what its imports and Rust's prelude bring into scope (the sketch's too), and the families'
    # imports (`Conv2d`, `CrossEntropyLossConfig`, ...)
    "burn std core alloc Tensor TensorData Device Distribution Param Module Linear LinearConfig activation "
    "SgdConfig AdamConfig MomentumConfig WeightDecayConfig GradientsParams GradientsAccumulator RefCell "
    "drop Some None Ok Err Box Vec String Option Result Default Int Bool".split()
).union(IMPORTED_NAMES)
DERIVE_LOCALS = frozenset(
    # `#[derive(Module)]` writes `let FIELD = ..` beside these (burn-derive 0.22.1, codegen_struct.rs)
    "device devices mapper visitor content num_params".split()
)
PATTERNS = frozenset(
    # values in scope at the top of main.rs that `let NAME = ..` would match as a pattern
    # (`Int` and `Bool` are unit structs)
    "PENDING CHECKPOINTS LAST EVERY_CHECKPOINT Some None Ok Err Int Bool".split()
)
LOCAL_RESERVED = RUST_KEYWORDS | OWN_NAMES | IN_SCOPE
FIELD_RESERVED = RUST_KEYWORDS | DERIVE_LOCALS | PATTERNS


def unread(ident: str) -> str:
    """How a variable nothing reads is written (Rust warns about it otherwise)."""
    return ident if ident.startswith("_") else "_" + ident


def _local_forms(ident: str) -> tuple[str, ...]:
    return (ident,) if ident.startswith("_") else (ident, unread(ident))


def _static_spelling(name: str) -> str:
    """`lin.weight` -> `LIN_WEIGHT`: runs of other characters become one `_`, letters upper-case."""
    out: list[str] = []
    for ch in name:
        if ch.isascii() and ch.isalnum():
            out.append(ch.upper())
        elif not out or out[-1] != "_":
            out.append("_")
    const = "".join(out)
    return const if const[:1].isalpha() else "T" + const


class RustNames:
    """The identifiers of one program's reproducer (see the module docstring)."""

    def __init__(self, program: Program) -> None:
        self.local = Namespace(LOCAL_RESERVED, forms=_local_forms)
        self.field = Namespace(FIELD_RESERVED)
        self.static = Namespace(RUST_KEYWORDS, spell=_static_spelling)
        for name in [t.name for t in program.tensors if t.module is None] + [m.name for m in program.modules]:
            self.local(name)
        for st in program.statements():
            if st.out is not None:
                self.local(st.out)
        for t in program.tensors:
            if t.role in ("param", "buffer"):
                self.field(t.module if t.module is not None else t.name)
        for m in program.modules:  # a module without tensors
            self.field(m.name)
        self._learning_rates: dict[str, str] = {}
        for st in program.statements():
            if OPS[st.op].result == "scheduler" and st.args[0] not in self._learning_rates:
                # after every program name: `opt_lr`, or `opt_lr_` when a program name has it
                ident = f"{self.local(st.args[0])}_lr"
                while not self.local.free(ident):
                    ident += "_"
                self._learning_rates[st.args[0]] = self.local(ident)

    def learning_rate(self, opt: str) -> str:
        """The variable of the learning rate an optimizer with a schedule steps with (`opt_lr`)."""
        return self._learning_rates[opt]

    def fresh(self, base: str, protected: Iterable[str]) -> str:
        """A variable of the generated code's own (`base` is one of `OWN_NAMES`, or a name's
        identifier): `base`, or `base_2`, `base_3`... when an enclosing loop carries a variable
        written `base`."""
        avoid = set(protected)
        if base not in avoid:
            return base
        k = 2
        while f"{base}_{k}" in avoid or not self.local.free(f"{base}_{k}"):
            k += 1
        return f"{base}_{k}"
