"""Run a ported program under both frameworks from the same weights and data, and say whether
they agree: the forward pass and the gradients at the first step (the program cut to one step
and rewritten to observe every statement: `runner.fuzz.instrument`), the training curve over
every step; where they part, the first statement whose inputs agree and whose result differs
(`runner.fuzz.origins`), named by the user's module or operation, and the catalogue case that
explains it (`explain`).

Values compare as the fuzzer's localizer compares them (`runner.fuzz.localize.compare`: the
tolerance |a - b| <= 1e-5 + 1e-4 max(|a|, |b|), and torch in float64 telling float32 rounding
from a difference: burn no farther from float64 than ten times torch's own float32 error counts
as agreeing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..fuzz import origins
from ..fuzz.instrument import OPTIMIZER_STEP, Site, instrument
from ..fuzz.localize import RUNS, Label, _close, compare, compare_runs, observations
from ..fuzz.pool import WorkerPool
from ..program.data import materialize
from ..program.ir import ParsedProgram, Settings, timed_loop
from .convert import Conversion
from .explain import Explanation, explain

RUN_TIMEOUT_S = 600.0


@dataclass
class Parting:
    """Where the two runs start to part."""

    step: int
    line: int  # in the program
    op: str
    what: str  # values, grads or flags
    user: str  # the user's module or operation
    where: str | None  # the user's file:line
    detail: str = ""

    def text(self) -> str:
        place = f" ({self.where})" if self.where else ""
        extra = f"; {self.detail}" if self.detail else ""
        if self.detail.endswith("differ after it"):
            return f"step {self.step}: `{self.user}`{place}: the {self.what} of {self.detail}"
        return f"step {self.step}: `{self.user}`{place}, the {self.what} of its result differ{extra}"


@dataclass
class Verdicts:
    forward: str  # agree | differ | not compared (why)
    gradients: str
    update: str  # the params after the first optimizer step
    curve: str
    outcomes: dict[str, str]
    losses: dict[str, list[float] | None]
    parting: Parting | None = None
    explanations: list[Explanation] = field(default_factory=list)
    failure: str | None = None  # a run that did not finish (panic, error, unsupported)
    first_parting_step: int | None = None

    @property
    def agree(self) -> bool:
        return all(v == "agree" for v in (self.forward, self.gradients, self.update, self.curve))


def _losses(result: dict[str, Any]) -> list[float] | None:
    obs = observations(result).get("losses")
    values = obs.get("values") if obs else None
    return list(values) if values is not None else None


def _failure(result: dict[str, Any]) -> str | None:
    if result.get("outcome") == "ok":
        return None
    failure = result.get("failure") or {}
    msg = str(failure.get("message") or "")[:300]
    return f"{result.get('outcome')} at `{failure.get('op')}` (line {failure.get('line')}): {msg}"


def _first_part(t: list[float], b: list[float]) -> int | None:
    for i, (x, y) in enumerate(zip(t, b)):
        if i and not _close(x, y):
            return i
    return None


def _user(conv: Conversion, line: int, op: str, optimizer: str, loss: str) -> tuple[str, str | None]:
    info = conv.lines.get(line)
    if info is not None:
        return info.user, info.where.text() if info.where else None
    if op == OPTIMIZER_STEP:
        return f"the optimizer step ({optimizer})", None
    if op == "backward":
        return "the backward pass", None
    if op in ("cross_entropy", "nll_loss", "mse_loss", "huber_loss", "smooth_l1_loss", "mean"):
        return f"the loss (--loss {loss})", None
    return f"the training loop's `{op}`", None


def _update(labels: dict[str, Label], sites: list[Site]) -> str:
    """The params after the first optimizer step: agree, differ or not compared."""
    step = next((s for s in sites if s.op == OPTIMIZER_STEP), None)
    if step is None or any(labels.get(x) is None or labels[x].missing for x in step.params_after.values()):
        return "not compared (a run stopped before the optimizer step)"
    return "differ" if any("values" in labels[x].differ for x in step.params_after.values()) else "agree"


def _step_one(labels: dict[str, Label], sites: list[Site], conv: Conversion) -> tuple[str, str, list[str]]:
    """The forward and gradient verdicts at step 1, and the params whose gradients differ."""
    forward_sites = [s for s in sites if s.stmt.line in conv.lines]
    out_labels = [s.output for s in forward_sites if s.output]
    if any(labels.get(x) is None or labels[x].missing for x in out_labels):
        forward = "not compared (a run stopped before the forward ended)"
    else:
        forward = "differ" if any(labels[x].differ for x in out_labels) else "agree"
    backward = next((s for s in sites if s.op == "backward"), None)
    grads: list[str] = []
    if backward is None or any(labels.get(x) is None or labels[x].missing for x in backward.params_after.values()):
        return forward, "not compared (a run stopped before the backward pass)", grads
    for param, label in backward.params_after.items():
        if "grads" in labels[label].differ:
            grads.append(param)
    return forward, ("differ" if grads else "agree"), grads


def random_modules(parsed: ParsedProgram) -> list[str]:
    """Modules that draw random numbers in training (a Dropout with p > 0, a MultiheadAttention whose
    dropout is given above 0 or omitted: burn's default is 0.1). Each framework draws from its own
    generator (torch float64 too), so float64 cannot tell rounding from a difference there."""
    out = []
    for m in parsed.modules:
        if m.kind == "dropout" and float(m.attrs.get("p", 0.5)) > 0:  # type: ignore[arg-type]
            out.append(m.name)
        if m.kind == "multihead_attention" and float(m.attrs.get("dropout", 0.1)) > 0:  # type: ignore[arg-type]
            out.append(m.name)
    return out


def run(conv: Conversion, parsed: ParsedProgram, seed: int, *, optimizer: str, loss: str) -> Verdicts:
    """Both frameworks (and torch in float64) on the whole run and on its first step, observed."""
    loop = timed_loop(parsed.body)
    assert loop is not None
    steps = int(loop.attrs["count"])  # type: ignore[arg-type]
    full = materialize(parsed, seed, Settings(checkpoints=[steps])).model_dump(mode="json")
    one = origins.cut(parsed, 1)
    assert one is not None
    rewritten, sites = instrument(one)
    first = materialize(rewritten, seed, Settings(checkpoints=[1])).model_dump(mode="json")
    with WorkerPool(timeout_s=RUN_TIMEOUT_S) as pool:
        ran = pool.run_many([full, first], RUNS)
        t32, b32, t64 = (ran[r][0] for r in RUNS)
        s_t32, s_b32, s_t64 = (ran[r][1] for r in RUNS)
        verdicts = Verdicts(
            forward="",
            gradients="",
            update="",
            curve="",
            outcomes={"torch": str(t32.get("outcome")), "burn": str(b32.get("outcome"))},
            losses={"torch": _losses(t32), "burn": _losses(b32), "torch float64": _losses(t64)},
        )
        verdicts.failure = _failure(b32) or _failure(t32)
        random = bool(random_modules(parsed))
        labels = compare_runs(s_t32, s_b32, None if random else s_t64)
        verdicts.forward, verdicts.gradients, differing_grads = _step_one(labels, sites, conv)
        verdicts.update = _update(labels, sites)
        lt, lb = verdicts.losses["torch"], verdicts.losses["burn"]
        if lt is None or lb is None:
            verdicts.curve = "differ" if t32.get("outcome") != b32.get("outcome") else "not compared"
        else:
            found = compare(lt, lb, None if random else verdicts.losses["torch float64"])
            verdicts.curve = "differ" if found == "differ" else "agree"
            verdicts.first_parting_step = _first_part(lt, lb) if verdicts.curve == "differ" else None
        origin = origins.first_origin(sites, labels)
        step = 1
        if origin is None and verdicts.first_parting_step is not None:
            later = origins.find(parsed, seed, verdicts.first_parting_step, pool)
            if later is not None:
                step = later.step
                site = next((s for s in sites if s.index == later.index), None)
                origin = (site, later.label, later.what) if site is not None else None
    if origin is not None:
        site, label, what = origin
        if site.op == OPTIMIZER_STEP:
            # what makes a step an origin is a param's values (burn's step consumes the gradients,
            # a known difference of its own)
            moved = [x for x in site.params_after.values() if x in labels and "values" in labels[x].differ]
            label, what = (moved[0], "values") if moved else (label, what)
        user, where = _user(conv, site.stmt.line, site.op, optimizer, loss)
        detail = ""
        if site.op == "backward" and differing_grads:
            names = [conv.params.get(p, p) for p in differing_grads]
            detail = (
                f"the gradients of {', '.join(names[:6])}{' ...' if len(names) > 6 else ''} differ; the forward "
                f"agrees, so the difference is in a backward pass, nearest the loss at {names[-1]}"
            )
        elif ">" in label:
            tensor = label.split(">", 1)[1]
            theirs = conv.params.get(tensor, tensor)
            detail = f"{tensor}{'' if theirs == tensor else f' (your {theirs})'} differ after it"
        verdicts.parting = Parting(step, site.stmt.line, site.op, what, user, where, detail)
    if not verdicts.agree or verdicts.failure:
        part = verdicts.parting
        verdicts.explanations = explain(
            parsed, part.line if part else None, part.what if part else None, conv, b32, t32
        )
    return verdicts
