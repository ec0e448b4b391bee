"""The known differences: each documented difference between torch and burn
0.22.1 as a predicate over a divergence (and the program it came from), with
the catalogue case that documents it. A divergence one of them matches is
counted as known, not reported again.

Add one when a found divergence has been judged (a documented semantic
difference, a burn bug already reported, a torch quirk) and has a catalogue
case or an issue that explains it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import cast

from ..contract.limits import FLOAT32_MAX
from ..contract.ops import MODULES, OMITTED, OPS, AttrSpec, AttrValue
from ..program.ir import ParsedProgram, Stmt, walk
from .judge import Divergence

OMITTED_DEFAULTS = "omitted-default-differs"
CLIP_NORM = "clip-grad-norm-per-param"

Program = ParsedProgram


@dataclass(frozen=True)
class Known:
    id: str
    title: str
    case: str  # the catalogue case (cases/NAME.toml) or issue that documents it
    matches: Callable[[Divergence, Program], bool]
    # Judged from step times (a growth): the same program can show it or not as the machine's
    # load changes, so two campaigns of the same seed may count it differently.
    timed: bool = False


def _stmts(program: Program) -> list[Stmt]:
    return list(walk(program.body))


def _params(program: Program) -> set[str]:
    return {t.name for t in program.tensors if t.role == "param"}


def _descendants(program: Program, roots: set[str]) -> set[str]:
    """The names computed from `roots`, to a fixpoint (a loop carries names into its next iteration)."""
    found = set(roots)
    stmts = _stmts(program)
    while True:
        grown = found | {s.out for s in stmts if s.out and any(a in found for a in s.args)}
        if grown == found:
            return found
        found = grown


def _param_aliases(program: Program) -> set[str]:
    """Params, and what burn treats as the same node: their clones (and clones of those)."""
    aliases = set(_params(program))
    for s in _stmts(program):
        if s.op == "clone" and s.args and s.args[0] in aliases and s.out:
            aliases.add(s.out)
    return aliases


def _label_tensor(program: Program, label: str | None) -> str | None:
    for s in _stmts(program):
        if s.op == "observe" and s.attrs.get("label") == label:
            return s.args[0]
    return None


def _detached_params(program: Program) -> set[str]:
    params = _param_aliases(program)
    return {s.out for s in _stmts(program) if s.op == "detach" and s.args[0] in params and s.out}


def _detach_param(d: Divergence, program: Program) -> bool:
    if d.cls not in ("flags", "grads"):
        return False
    tensor = _label_tensor(program, d.label)
    return tensor is not None and tensor in _descendants(program, _detached_params(program))


def _message(d: Divergence, side: str, text: str) -> bool:
    return d.cls == "status" and text in str(d.detail.get(f"{side}_message") or "")


def _after_step(program: Program, label: str | None) -> bool:
    """The label's observation comes after an optimizer step (in program order)."""
    stepped = False
    for s in _stmts(program):
        if s.op == "step":
            stepped = True
        if s.op == "observe" and s.attrs.get("label") == label:
            return stepped
    return False


def _backward_again_without_zero_grad(program: Program) -> bool:
    """A backward runs after an earlier one with no zero_grad between them (a loop without
    zero_grad runs its backward again next iteration)."""

    def ops(body: list[Stmt]) -> list[str]:
        out: list[str] = []
        for s in body:
            if s.body is not None:
                inner = ops(s.body)
                out += inner + inner  # two iterations show what a loop carries over
            else:
                out.append(s.op)
        return out

    pending = False
    for op in ops(program.body):
        if op == "zero_grad":
            pending = False
        elif op == "backward":
            if pending:
                return True
            pending = True
    return False


def _gradients_accumulate(d: Divergence, program: Program) -> bool:
    """A param's gradient after a second backward with no zero_grad between: torch's .grad is the
    sum of both, burn's backward returns new gradients (and a step consumed the old ones). The
    catalogue's grad_accumulation shows both and the GradientsAccumulator that sums them."""
    if d.cls != "grads" or d.detail.get("a") == "none" or d.detail.get("b") == "none":
        return False
    tensor = _label_tensor(program, d.label)
    return tensor in _params(program) and _backward_again_without_zero_grad(program)


def _step_consumes(d: Divergence, program: Program) -> bool:
    return (
        d.cls == "grads"
        and d.detail.get("b") == "none"
        and d.detail.get("a") != "none"
        and (str(d.label or "").endswith(" after step") or _after_step(program, d.label))
    )


def differing_defaults(specs: tuple[AttrSpec, ...], given: Mapping[str, object]) -> dict[str, AttrValue]:
    """The attributes a statement (or module declaration) omits whose documented defaults differ
    between the frameworks, with torch's: the documented fix is to give them."""
    out: dict[str, AttrValue] = {}
    for a in specs:
        if a.default is OMITTED and a.name not in given and a.torch_default is not None:
            if a.burn_default is not None and a.torch_default != a.burn_default:
                out[a.name] = a.torch_default
    return out


def _omitted_default_differs(d: Divergence, program: Program) -> bool:
    """Values or gradients where the program omits an attribute whose defaults differ (SGD's
    dampening, Adam's eps, AdamW's weight decay, RMSprop's momentum, MultiheadAttention's dropout):
    each framework applies its own, as a port that omits it gets."""
    if d.cls not in ("values", "grads"):
        return False
    if any(differing_defaults(OPS[s.op].attrs, s.attrs) for s in _stmts(program)):
        return True
    return any(differing_defaults(MODULES[m.kind].attrs, m.attrs) for m in program.modules)


def _burn_unsupported(d: Divergence, program: Program) -> bool:
    """burn's outcome is `unsupported`: a construct the operation table says burn 0.22.1 has no
    equivalent for (an operation, an attribute value, operands of unequal rank)."""
    return d.cls == "status" and d.detail.get("burn_outcome") == "unsupported"


def _clone_of_param(d: Divergence, program: Program) -> bool:
    """The label's tensor is a param through clones only (and in-place require_grad)."""
    tensor = _label_tensor(program, d.label)
    return d.cls == "grads" and tensor in _param_aliases(program) - _params(program)


def _graph_kept_grows(d: Divergence, program: Program) -> bool:
    """burn's step time grows in a loop while torch's stays flat: graph nodes recorded every
    iteration stay alive (a tensor carried across iterations, p10; or tracked results the
    backward never consumes, tracel-ai/burn#4970) and burn's backward scans them all."""
    return d.cls == "growth" and d.detail.get("burn_ratio", 0) > d.detail.get("torch_ratio", 0)


VIEWS = ("detach", "reshape", "transpose", "unsqueeze", "squeeze", "flatten", "expand", "narrow")


def _view_of_param_after_step(d: Divergence, program: Program) -> bool:
    """torch's detach() (and reshape, transpose, unsqueeze, squeeze, flatten, expand, narrow) of a
    parameter is a view of its storage: the optimizer's in-place update changes it. burn's tensors
    are values: the snapshot keeps the values it had. The catalogue's detach_alias_inplace shows
    both (found again by `fuzz --seed 9001` with unsqueeze: a view taken in the loop and observed
    after it is the param after the last step in torch, before it in burn)."""
    if d.cls != "values":
        return False
    stmts = _stmts(program)
    if not any(s.op == "step" for s in stmts):
        return False
    params = _params(program)
    views = set(params)
    for s in stmts:
        if s.op in VIEWS and s.args and s.args[0] in views and s.out:
            views.add(s.out)
    tensor = _label_tensor(program, d.label)
    return tensor is not None and tensor in views and tensor not in params


def _refusal_is_a_panic(d: Divergence, program: Program) -> bool:
    """Both refuse the same statement in the same iteration: torch raises (a catchable
    RuntimeError), burn panics (burn reports misuse by panicking). The catalogue's
    backward_twice and require_grad_nonleaf show the two ways side by side."""
    return (
        d.cls == "status"
        and d.detail.get("torch_outcome") == "error"
        and d.detail.get("burn_outcome") == "panic"
        and d.detail.get("torch_at") is not None
        and d.detail.get("torch_at") == d.detail.get("burn_at")
    )


def _self_division_under_adam(d: Divergence, program: Program) -> bool:
    """A tensor divided by itself: torch's gradient is exactly 0, burn's one rounding error, and
    Adam (scale-invariant) turns that into a step of about lr every iteration."""
    stmts = _stmts(program)
    if d.cls != "values" or not any(s.op == "adam" for s in stmts):
        return False
    return any(s.op == "div" and len(s.args) == 2 and s.args[0] == s.args[1] for s in stmts)


def _torch_refuses(d: Divergence, program: Program) -> bool:
    """torch raises where burn's port goes on: an in-place change of a leaf that requires grad
    (burn's `param.map` makes it a non-leaf that no longer requires grad), or SGD's Nesterov
    without momentum (the port builds no momentum at momentum 0, so nesterov has nothing to
    change). The operation table's burn column says both."""
    message = str(d.detail.get("torch_message") or "")
    return (
        d.cls == "status"
        and d.detail.get("torch_outcome") == "error"
        and (d.detail.get("burn_outcome") == "ok" or _torch_stops_first(d))
        and any(text in message for text in TORCH_REFUSALS)
    )


def _torch_stops_first(d: Divergence) -> bool:
    """torch stopped at an earlier statement than burn did (burn's failure is somewhere torch never
    reached: its refusal is the first difference)."""
    return _stops_first(d, "torch")


def _stops_first(d: Divergence, side: str) -> bool:
    """`side` stopped at an earlier statement (or iteration) than the other side did."""
    t, b = d.detail.get("torch_at"), d.detail.get("burn_at")
    if side == "burn":
        t, b = b, t
    if not (isinstance(t, list) and isinstance(b, list) and len(t) == len(b) == 2):
        return False
    (ti, tk), (bi, bk) = t, b
    if not isinstance(ti, int) or not isinstance(bi, int):
        return False
    if tk is not None and bk is not None and tk != bk:
        return bool(tk < bk)
    return ti < bi


def _burn_panics_at(op: str) -> Callable[[Divergence, Program], bool]:
    def matches(d: Divergence, program: Program) -> bool:
        return d.cls == "status" and d.detail.get("burn_outcome") == "panic" and d.detail.get("op") == op

    return matches


def _bce_soft_targets(d: Divergence, program: Program) -> bool:
    """BCE with logits against targets that are not 0 or 1: burn's loss takes integer targets."""
    return d.cls in ("values", "grads") and any(s.op == "binary_cross_entropy_with_logits" for s in _stmts(program))


def _clamp_min_above_max(d: Divergence, program: Program) -> bool:
    def inverted(s: Stmt) -> bool:
        low, high = s.attrs.get("min"), s.attrs.get("max")
        return isinstance(low, (int, float)) and isinstance(high, (int, float)) and low > high

    return d.cls in ("values", "grads") and any(s.op == "clamp" and inverted(s) for s in _stmts(program))


def _produced_by(program: Program, tensor: str | None) -> Stmt | None:
    """The last statement whose result is `tensor`."""
    found = None
    for s in _stmts(program):
        if s.out is not None and s.out == tensor:
            found = s
    return found


def _declared_shape(program: Program, name: str) -> tuple[int, ...] | None:
    spec = next((t for t in program.tensors if t.name == name), None)
    return tuple(spec.shape) if spec is not None else None


def _flattens_nothing(program: Program, s: Stmt, param: str) -> bool:
    shape = _declared_shape(program, param)
    if shape is None:
        return False
    rank = len(shape)
    start, end = s.attrs.get("start_dim", 0), s.attrs.get("end_dim", -1)
    if not isinstance(start, int) or not isinstance(end, int):
        return False
    return rank == 1 or start % rank == end % rank


def _flatten_alias(program: Program, name: str) -> str | None:
    """The param that the flatten result `name` is in torch: `flatten` that flattens nothing
    returns its input itself, so a chain of them (`flatten(flatten(p, -1))` of a rank-1 `p`, seed
    20261211) is the param; None if `name` is not a flatten or a link of its chain flattens
    something."""
    params = _params(program)
    chain: list[Stmt] = []
    while name not in params:
        s = _produced_by(program, name)
        if s is None or s.op != "flatten" or not s.args or s in chain:
            return None
        chain.append(s)
        name = s.args[0]
    if not chain or not all(_flattens_nothing(program, link, name) for link in chain):
        return None
    return name


def _flatten_of_1d_param(d: Divergence, program: Program) -> bool:
    """The label's tensor is `flatten` of a param that flattens nothing (a rank-1 param, or
    start_dim == end_dim): torch.flatten then returns its input itself (documented), so it is the
    param (its gradient, its flags after a freeze); burn's flatten is a new graph node, a non-leaf
    without a gradient of its own."""
    if d.cls == "status":
        return _frozen_flatten_refused(d, program)
    tensor = _label_tensor(program, d.label)
    return d.cls in ("grads", "flags") and tensor is not None and _flatten_alias(program, tensor) is not None


def _frozen_flatten_refused(d: Divergence, program: Program) -> bool:
    """The same, seen in the outcome: a flatten of nothing of a param that is then frozen is the
    frozen param in torch, so a loss of it requires no grad and torch's backward raises; burn's
    flatten was recorded before the freeze and its backward goes on (seed 20261211)."""
    if not (
        d.detail.get("burn_outcome") == "ok"
        and d.detail.get("op") == "backward"
        and _message(d, "torch", "does not require grad")
    ):
        return False
    stmts = _stmts(program)
    for i, s in enumerate(stmts):
        source = _flatten_alias(program, s.out) if s.op == "flatten" and s.out else None
        if source is not None and any(t.op == "freeze" and t.args[:1] == [source] for t in stmts[i + 1 :]):
            return True
    return False


def _burn_same_node(program: Program) -> set[str]:
    """Params, and what burn's port makes the very same graph node: their clones, and their
    squeezes to a scalar (a [1] tensor stays itself: burn has no rank 0), to any depth."""
    root = {name: name for name in _params(program)}
    for s in _stmts(program):
        if not s.args or s.out is None or s.args[0] not in root:
            continue
        base = root[s.args[0]]
        if s.op == "clone" or (s.op == "squeeze" and _declared_shape(program, base) == (1,)):
            root[s.out] = base
    return set(root)


def _squeeze_to_scalar_is_the_param(d: Divergence, program: Program) -> bool:
    """The label's tensor is a squeeze of a param of shape [1] (or a clone of one): burn has no
    rank-0 tensors, so the port keeps the [1] tensor itself, the param, which holds its gradient;
    torch's squeeze gives a 0-d view, a non-leaf without .grad."""
    tensor = _label_tensor(program, d.label)
    return d.cls == "grads" and tensor in _burn_same_node(program) - _param_aliases(program)


def _clip_grad_norm(d: Divergence, program: Program) -> bool:
    """An optimizer clips by norm: torch's clip_grad_norm_ takes one norm over every gradient and
    scales by max_norm / (norm + 1e-6); burn's GradientClippingConfig::Norm clips each param's
    gradient by its own norm, with float32's smallest positive number for 1e-6 (the catalogue's
    clip_grad_norm). With several params the steps differ outright; with one they differ by about
    1e-6 relative, which an ill-conditioned optimizer (centered RMSprop on a nearly constant
    gradient) amplifies. The localizer also tries the step without clipping: it must agree."""
    if d.cls not in ("values", "grads"):
        return False
    return any(OPS[s.op].result == "optimizer" and "clip_grad_norm" in s.attrs for s in _stmts(program))


BCE = "binary_cross_entropy_with_logits"
BCE_TARGET_STATUS = (
    ("burn", "no gradient held for"),  # grad() of the target: torch has one, burn none
    ("burn", "Tensor::backward requires a tracked autodiff tensor"),  # a loss tracked through its target only
    ("torch", "Trying to backward through the graph a second time"),  # a target that carries an old graph
)


def _bce_target_not_differentiated(d: Divergence, program: Program) -> bool:
    """BCE with logits whose target is computed from a param: torch differentiates the loss with
    respect to the target too (its gradient is -logits / n), burn's target is an integer tensor
    (the port converts it) that carries no graph. What follows: grad() of the target errors in
    burn only, a loss tracked through its target only cannot backward in burn, a target that
    carries a consumed graph makes torch's second backward fail and not burn's. The other side
    may fail too, later (seed 20261213: a loss tracked through its target only, in a loop that
    feeds the target back; burn cannot backward at the first iteration, torch at the second,
    through the first iteration's freed graph): the side that stops first names the cause."""
    if d.cls != "status":
        return False
    tracked = _descendants(program, _params(program))
    if not any(s.op == BCE and len(s.args) > 1 and s.args[1] in tracked for s in _stmts(program)):
        return False
    other = {"burn": "torch", "torch": "burn"}
    return any(
        _message(d, side, text) and (d.detail.get(f"{other[side]}_outcome") == "ok" or _stops_first(d, side))
        for side, text in BCE_TARGET_STATUS
    )


def _clip_grad_value_without_gradients(d: Divergence, program: Program) -> bool:
    """`clip_grad_value_` over params none of which holds a gradient raises in torch 2.15 (its
    foreach kernel refuses an empty list); burn's clipping has nothing to clip and the step goes on.
    burn may fail later, where torch never got (e.g. the backward of a loss whose only param was
    frozen after the first step, seed 20261211): torch's refusal is the first difference."""
    return (
        d.cls == "status"
        and (d.detail.get("burn_outcome") == "ok" or _torch_stops_first(d))
        and _message(d, "torch", "nested_tensorlist[0].empty()")
        and any("clip_grad_value" in s.attrs for s in _stmts(program) if OPS[s.op].result == "optimizer")
    )


CANCELLED = 1e-6  # |g + wd * p| at most this much of |g|: the decay cancels the gradient
L2_DECAY = ("adam", "rmsprop")  # adaptive optimizers whose weight_decay is added to the gradient


def _decay_cancels_the_gradient(d: Divergence, program: Program) -> bool:
    """An adaptive optimizer with L2 weight decay, replayed on a param where the decay cancels
    the (clipped) gradient to one part in 1e6 (`CANCELLED`, float64). There torch's decay is one
    fused add (`grad.add(p, alpha=wd)`) and burn's a rounded product, then a sum, and the two
    part by one float32 ulp or by all of the remainder; Adam and RMSprop divide by the magnitude
    of that remainder and turn it into steps of lr. Found twice: centered RMSprop with value
    clipping (seed 20261212 against 0.23.0-pre.1: the gradient 2 clipped to 1, the decay 0.01 x
    -100.0000076; torch -5.39e-8, burn 0.0, float64 -7.63e-8; 0.22.1 does the same) and Adam
    (seed 20261213 against 0.22.1: the gradient 2^-8, the decay 0.01 x -0.3906250298, one ulp
    from the point where they cancel: burn's decayed gradient is exactly 0 and its param never
    moves, torch's is -2e-10 and Adam walks away, as the float64 run does: after 10 steps torch
    -0.394555, float64 -0.394456, burn -0.390625). Rounding made large by the optimizer, on
    values of measure zero: a rule that differs shows on params where nothing cancels."""
    if d.cls != "values":
        return False
    stmts = _stmts(program)
    optimizer = next((s for s in stmts if s.op in L2_DECAY), None)
    if optimizer is None or optimizer.attrs.get("weight_decay") in (None, 0, 0.0):
        return False
    wd = cast(float, optimizer.attrs["weight_decay"])
    return any(
        g != 0 and abs(g + wd * p) <= CANCELLED * abs(g) for p, g in _recorded_steps(program, optimizer, d.label)
    )


def _literal_values(program: Program) -> dict[str, list[float]]:
    """The declared tensors that hold their values (a replay's recorded inputs), by name."""
    return {t.name: t.values for t in program.tensors if t.values is not None}


def _recorded_steps(program: Program, optimizer: Stmt, label: str | None) -> Iterator[tuple[float, float]]:
    """Each (param value, gradient) of a step replay (`sum(p * g)`: g is the param's recorded
    gradient), the gradient clipped by value as the optimizer clips it."""
    clip = optimizer.attrs.get("clip_grad_value")
    values = _literal_values(program)
    for s in _stmts(program):
        if s.op != "mul" or len(s.args) != 2 or label not in (s.args[0], None):
            continue
        param, grad = values.get(s.args[0]), values.get(s.args[1])
        if param is None or grad is None or len(param) != len(grad):
            continue
        for p, g in zip(param, grad):
            yield p, g if clip is None else max(-cast(float, clip), min(cast(float, clip), g))


SQUARE_OVERFLOWS = math.sqrt(FLOAT32_MAX)  # above it a float32's square is infinite


def _adam_second_moment_overflows(d: Divergence, program: Program) -> bool:
    """burn's Adam and AdamW square the gradient, then scale it by 1 - beta2
    (`grad.square().mul_scalar(factor)`, burn-optim 0.22.1 adam.rs and adamw.rs): above |g| =
    1.84e19 the second moment is infinite and the step is 0; torch's `addcmul_(grad, grad,
    value=1 - beta2)` stays finite (found by the campaign of seed 20261213 against 0.22.1:
    p0 = -6, g = -2.27e19, ten steps of lr 0.1: torch -5.000001, float64 -5.0, burn -6.0;
    `cases/found/adam-second-moment-overflows-in-burn.toml`)."""
    if d.cls != "values":
        return False
    optimizer = next((s for s in _stmts(program) if s.op in ("adam", "adamw")), None)
    if optimizer is None or "clip_grad_norm" in optimizer.attrs:
        return False
    return any(abs(g) > SQUARE_OVERFLOWS for _, g in _recorded_steps(program, optimizer, d.label))


FLOAT32_EPS = 2.0**-24  # float32's unit roundoff
CANCELS = 1e-3  # |sum| at most this much of the sum of magnitudes: the terms cancel


def _sum_order_where_terms_cancel(d: Divergence, program: Program) -> bool:
    """A `sum` (or `mean`) replayed on terms that cancel (|sum| <= 1e-3 of the sum of their
    magnitudes, float64), both float32 results within the textbook bound of summation in any
    order (n x 2^-24 x the sum of magnitudes) of the float64 sum: the order differs, not the
    rule. burn's sum (the Flex backend, 0.22.1 and 0.23.0-pre.1) adds in order, torch's in
    vectorized lanes; where the terms cancel, the rounding of the terms is all that is left (seed
    20261214 against 0.23.0-pre.1: `sum(stack(p, -p))` of 512 terms of magnitude 0.5-2, exactly
    0: torch -5.5e-6, burn -1.36e-4, the in-order float32 sum to the bit)."""
    if d.cls != "values":
        return False
    stmts = _stmts(program)
    values = _literal_values(program)
    a, b = d.detail.get("a"), d.detail.get("b")
    if not (isinstance(a, list) and isinstance(b, list) and len(a) == len(b) == 1):
        return False
    for s in stmts:
        terms = values.get(s.args[0]) if s.op in ("sum", "mean") and len(s.args) == 1 else None
        if not terms or d.label not in (s.out, None):
            continue
        n = len(terms)
        scale = 1.0 / n if s.op == "mean" else 1.0
        exact = math.fsum(terms) * scale
        magnitude = math.fsum(abs(x) for x in terms) * scale
        bound = n * FLOAT32_EPS * magnitude
        if abs(exact) <= CANCELS * magnitude and all(abs(float(v[0]) - exact) <= bound for v in (a, b)):
            return True
    return False


TORCH_REFUSALS = (
    "a leaf Variable that requires grad is being used in an in-place operation",
    "Nesterov momentum requires a momentum and zero dampening",
)


REGISTRY: tuple[Known, ...] = (
    Known(
        "detach-param-keeps-tracking",
        "burn's detach() of a parameter gives a new leaf that still requires grad (tracked, with a gradient of its own)",
        "no_grad_vs_detach",
        _detach_param,
    ),
    Known(
        "consumed-tape-panic",
        "a second backward over a consumed graph panics in burn (torch raises, or allows it when nothing was saved)",
        "backward_twice",
        lambda d, p: _message(d, "burn", "graph tape has already been consumed"),
    ),
    Known(
        "non-leaf-require-grad-panic",
        "require_grad() of a tracked non-leaf panics in burn; torch accepts requires_grad_() there",
        "require_grad_nonleaf",
        lambda d, p: _message(d, "burn", "Can't convert a non leaf tensor"),
    ),
    Known(
        "refusal-is-a-panic",
        "both refuse the same statement in the same iteration (a backward with nothing to "
        "differentiate, say): torch raises an exception, burn panics",
        "backward_twice",
        _refusal_is_a_panic,
    ),
    Known(
        "step-consumes-gradients",
        "burn's optimizer step consumes the gradients; torch keeps .grad until zero_grad()",
        "grad_accumulation",
        _step_consumes,
    ),
    Known(
        "gradients-accumulate-in-torch",
        "a second backward without zero_grad: torch's .grad sums both, burn's backward returns new gradients",
        "grad_accumulation",
        _gradients_accumulate,
    ),
    Known(
        "kept-graph-grows",
        "graph nodes recorded every iteration stay alive (a carried tensor, or results no backward consumes): "
        "burn's step time grows, torch's does not",
        "p10_program, total_loss_graph, forward_only_loop (tracel-ai/burn#4970)",
        _graph_kept_grows,
        timed=True,
    ),
    Known(
        "view-of-param-follows-the-step",
        "torch's detach()/reshape/transpose of a parameter is a view: the optimizer's in-place step changes it; "
        "burn's is a value that keeps its numbers",
        "detach_alias_inplace",
        _view_of_param_after_step,
    ),
    Known(
        "self-division-gradient-under-adam",
        "the gradient of p / p is exactly 0 in torch and one rounding error in burn; Adam makes that a full step",
        "div-self-gradient-not-zero-under-adam",
        _self_division_under_adam,
    ),
    Known(
        OMITTED_DEFAULTS,
        "an omitted attribute whose defaults differ (SGD's dampening 0 vs 0.1, Adam's eps 1e-8 vs 1e-5, "
        "AdamW's weight decay, RMSprop's momentum, MultiheadAttention's dropout): each framework uses its own",
        "optimizers_100_steps, adamw_defaults, rmsprop_defaults, mha_dropout_default",
        _omitted_default_differs,
    ),
    Known(
        "torch-refuses-what-the-port-accepts",
        "torch raises where burn's port goes on: add_scalar_ of a param (a leaf that requires grad), "
        "SGD's nesterov without momentum (burn may fail later, where torch never got)",
        "tests/test_fuzz.py::test_what_torch_refuses_and_burn_accepts_is_a_known_difference",
        _torch_refuses,
    ),
    Known(
        "squeeze-non-singleton-panics",
        "squeeze of a dim whose size is not 1: a no-op in torch, a panic in burn",
        "squeeze_non_singleton",
        _burn_panics_at("squeeze"),
    ),
    Known(
        "smooth-l1-panics",
        "smooth L1 with beta = 0: the L1 loss in torch, a panic in burn",
        "smooth_l1_beta_zero",
        _burn_panics_at("smooth_l1_loss"),
    ),
    Known(
        "bce-soft-targets",
        "BCE with logits and soft targets: burn's loss takes integer targets",
        "bce_soft_targets",
        _bce_soft_targets,
    ),
    Known(
        "clamp-min-above-max",
        "clamp with min > max: every element becomes max in torch, min in burn",
        "clamp_edges",
        _clamp_min_above_max,
    ),
    Known(
        CLIP_NORM,
        "clipping by norm: one norm over every param in torch (clip_grad_norm_), one per param in burn "
        "(GradientClippingConfig::Norm), whose coefficient adds float32's smallest positive number, not 1e-6",
        "clip_grad_norm, clip-grad-norm-epsilon-differs",
        _clip_grad_norm,
    ),
    Known(
        "flatten-of-nothing-is-the-input",
        "torch.flatten that flattens nothing (a rank-1 tensor, start_dim == end_dim) returns the tensor itself "
        "(a param keeps its .grad and follows its freeze); burn's flatten is a new node",
        "flatten-of-1d-param-is-the-param-in-torch",
        _flatten_of_1d_param,
    ),
    Known(
        "squeeze-to-scalar-keeps-the-param",
        "squeeze of a [1] param: burn has no rank-0 tensor, the port keeps the param itself (with its "
        "gradient); torch's 0-d view has no .grad",
        "squeeze-to-scalar-keeps-the-param-in-burn",
        _squeeze_to_scalar_is_the_param,
    ),
    Known(
        "bce-target-not-differentiated",
        "BCE with logits differentiates its target in torch; burn's target is an integer tensor without a graph",
        "bce-target-gets-no-gradient-in-burn",
        _bce_target_not_differentiated,
    ),
    Known(
        "clip-grad-value-without-gradients",
        "clip_grad_value_ raises in torch when no param holds a gradient; burn's step goes on",
        "clip-grad-value-without-gradients-raises-in-torch",
        _clip_grad_value_without_gradients,
    ),
    Known(
        "decay-cancels-the-gradient",
        "Adam or RMSprop amplifies the last bits of an L2 weight decay that cancels the gradient (torch's "
        "fused add, burn's rounded product then sum)",
        "tests/test_fuzz.py::test_each_documented_difference_is_recognised_as_known",
        _decay_cancels_the_gradient,
    ),
    Known(
        "adam-second-moment-overflows",
        "burn's Adam squares the gradient before scaling it by 1 - beta2: above |g| = 1.84e19 its second moment "
        "is infinite and the param stops; torch's stays finite",
        "adam-second-moment-overflows-in-burn",
        _adam_second_moment_overflows,
    ),
    Known(
        "sum-order-where-terms-cancel",
        "a sum whose terms cancel is the rounding of its terms: burn adds in order, torch in vectorized lanes "
        "(both within float32's bound for any order)",
        "tests/test_fuzz.py::test_each_documented_difference_is_recognised_as_known",
        _sum_order_where_terms_cancel,
    ),
    Known(
        "burn-unsupported",
        "a construct burn 0.22.1 has no equivalent for (the operation table's burn column): outcome unsupported",
        "tests/test_fuzz.py::test_burn_unsupported_is_a_known_difference",
        _burn_unsupported,
    ),
    Known(
        "clone-of-param-is-the-param",
        "burn's clone() of a parameter is the same graph node and holds its gradient; "
        "torch's clone is a non-leaf without .grad",
        "tests/test_program_both.py::test_clone_of_a_param_holds_its_gradient_in_burn_only",
        _clone_of_param,
    ),
)


def match(d: Divergence, program: Program) -> str | None:
    """The id of the known difference `d` is, or None if it is new."""
    for known in REGISTRY:
        if known.matches(d, program):
            return known.id
    return None
