"""Which catalogue case explains where a port parts from PyTorch.

At the parting statement: a Dropout (or attention dropout) in training mode draws from each
framework's own generator; an attribute the port omits whose defaults differ (the optimizer's
`eps`, SGD's dampening, MultiheadAttention's dropout, ...; `runner.fuzz.known.differing_defaults`);
a batch norm in training (its running variance). Anywhere in the program: an omitted default that
differs, a detach of a param, and the fuzzer's registry of known differences
(`runner.fuzz.known.match`) for a run that stopped. Each explanation names its catalogue case
(`cases/NAME.toml`) or the test that documents it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..contract.ops import MODULES, OPS
from ..fuzz import known
from ..fuzz.judge import Divergence
from ..program.ir import ParsedProgram, Stmt, walk

if TYPE_CHECKING:
    from .convert import Conversion

# The catalogue case of an omitted default, by the operation or module kind that omits it.
DEFAULT_CASES = {
    "sgd": "optimizers_100_steps",
    "adam": "optimizers_100_steps",
    "adamw": "adamw_defaults",
    "rmsprop": "rmsprop_defaults",
    "multihead_attention": "mha_dropout_default",
    "gelu": "gelu_exact_vs_tanh",
}
KIND_CASES = {
    "batch_norm1d": (
        "batch_norm_running_var",
        "BatchNorm updates its running variance with the biased batch "
        "variance in burn, the unbiased one in torch (visible after eval())",
    ),
    "batch_norm2d": (
        "batch_norm_running_var",
        "BatchNorm updates its running variance with the biased batch "
        "variance in burn, the unbiased one in torch (visible after eval())",
    ),
    "embedding": ("embedding_padding_idx", "burn's Embedding has no padding_idx: the padding row is trained"),
}


@dataclass(frozen=True)
class Explanation:
    case: str  # cases/NAME.toml, or a test / registry id that documents it
    text: str
    at_parting: bool  # about the parting statement itself (else: something in the program)

    def line(self) -> str:
        where = "" if self.at_parting else " (elsewhere in the program)"
        return f"{self.text} -- {self.case}{where}"


def _module_of(parsed: ParsedProgram, stmt: Stmt) -> Any:
    spec = OPS[stmt.op]
    if spec.module is None or not stmt.args:
        return None
    return next((m for m in parsed.modules if m.name == stmt.args[0]), None)


def _dropout_p(module: Any) -> float:
    if module is None:
        return 0.0
    if module.kind == "dropout":
        return float(module.attrs.get("p", 0.5))
    if module.kind == "multihead_attention":
        return float(module.attrs.get("dropout", 0.1))  # omitted: burn's 0.1 (torch's 0.0)
    return 0.0


def _defaults(spec_attrs: Any, attrs: Any) -> str:
    diff = known.differing_defaults(spec_attrs, attrs)
    return ", ".join(f"{k} (torch {v!r})" for k, v in diff.items())


def explain(
    parsed: ParsedProgram,
    line: int | None,
    what: str | None,
    conv: Conversion,
    burn: dict[str, Any],
    torch: dict[str, Any],
) -> list[Explanation]:
    """What explains a parting at program line `line` (None: no statement found) in `what`
    (values, grads, flags)."""
    out: list[Explanation] = []
    stmts = {s.line: s for s in walk(parsed.body)}
    stmt = stmts.get(line) if line is not None else None
    if stmt is not None:
        module = _module_of(parsed, stmt)
        p = _dropout_p(module)
        if p > 0:
            out.append(
                Explanation(
                    "model_transformer_lm" if module.kind == "dropout" else "mha_dropout_default",
                    f"a train/eval behaviour: dropout (p = {p}) in training mode draws its mask from each framework's "
                    "own generator, so no two runs share it; compare in eval() or with p = 0 to see the rest",
                    True,
                )
            )
        if module is not None:
            diff = _defaults(MODULES[module.kind].attrs, module.attrs)
            if diff:
                out.append(
                    Explanation(
                        DEFAULT_CASES.get(module.kind, "known: " + known.OMITTED_DEFAULTS),
                        f"a default: the module omits {diff}, and burn's default differs; give torch's value in burn's config",
                        True,
                    )
                )
            if module.kind in KIND_CASES:
                case, text = KIND_CASES[module.kind]
                out.append(Explanation(case, text, True))
        diff = _defaults(OPS[stmt.op].attrs, stmt.attrs)
        if diff:
            out.append(
                Explanation(
                    DEFAULT_CASES.get(stmt.op, "known: " + known.OMITTED_DEFAULTS),
                    f"a default: `{stmt.op}` omits {diff}, and burn's default differs",
                    True,
                )
            )
        if stmt.op == "step":
            for opt in walk(parsed.body):
                if OPS[opt.op].result == "optimizer":
                    diff = _defaults(OPS[opt.op].attrs, opt.attrs)
                    if diff:
                        out.append(
                            Explanation(
                                DEFAULT_CASES.get(opt.op, "known: " + known.OMITTED_DEFAULTS),
                                f"a default: the optimizer `{opt.op}` omits {diff}, and burn's "
                                f"{opt.op} config has its own; give torch's value (`.with_epsilon(1e-8)`, ...)",
                                True,
                            )
                        )
        if (
            stmt.op == "detach"
            and stmt.args
            and any(t.name == stmt.args[0] and t.role == "param" for t in parsed.tensors)
        ):
            out.append(
                Explanation("no_grad_vs_detach", "a detach: burn's detach() of a param still requires grad", True)
            )
    if not out:
        # Not at the parting statement: what in the program the registry knows.
        outcome_t, outcome_b = torch.get("outcome"), burn.get("outcome")
        if outcome_t != outcome_b or outcome_b != "ok":
            d = Divergence(
                "status",
                None,
                {
                    "torch_outcome": outcome_t,
                    "burn_outcome": outcome_b,
                    "torch_message": (torch.get("failure") or {}).get("message"),
                    "burn_message": (burn.get("failure") or {}).get("message"),
                },
            )
        else:
            d = Divergence(what or "values", None, {})
        found = known.match(d, parsed)
        if found is not None:
            entry = next(k for k in known.REGISTRY if k.id == found)
            out.append(Explanation(entry.case, entry.title, False))
    return out
