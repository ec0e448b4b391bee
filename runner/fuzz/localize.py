"""Where a divergence starts, and what causes it: one judgement per generated program, and a
root cause (`Cause`) per origin.

For each program the rewritten one (`instrument`) runs under torch and burn in float32 and
torch in float64 (the reference of the filters). Label by label the two float32 runs are
compared (`compare`: the case tolerance, with the false-positive filters of `judge`); then
statement by statement (`Site`):

- its inputs agree and its result agrees: judged, nothing to say;
- its inputs agree and its result differs: the origin of a divergence;
- an input differs (a divergence upstream, often a known difference) or one side never got
  there (it stopped earlier): it is judged on its own by a replay.

A replay (`replay`) runs the statement alone on the inputs torch recorded, on both sides (and
torch in float64): the operation with a vector–Jacobian product for its gradient, an optimizer
step with the recorded gradients, a graph operation on an argument of the recorded kind. Every
differentiable operation is replayed for its gradient when any gradient of the program differs.
A replay that differs is a root cause: the operation, the attributes that matter (each
attribute reset to its default in turn: the class keeps the ones whose reset makes the
divergence go away), where in the input space it shows (`REGIONS`: the replay on fixed inputs,
moderate, far out, zero, tiny), the oracle (values, grads, flags, status) and the side whose
float32 result is farther from float64. That is the signature; the case written for it is the
replay itself (the operation alone), the generated program kept beside it as context.

What no replay can judge (a status difference, a divergence that appears only in a later
observation, growth, a gradient no single operation explains) is a root cause at its
statement, and its program is shrunk: statements are removed one at a time while the same
signature still shows.

A program is *fully judged* when every statement that ran on either side was compared with
agreeing inputs or replayed: a known difference no longer hides the rest of the program.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..contract.limits import IR_VERSION
from ..contract.ops import OMITTED, OPS, REQUIRED, AttrValue
from ..program import data as program_data
from ..program.ir import ParsedProgram, timed_loop, walk
from . import known
from .instrument import FLAG_OPS, OPTIMIZER_STEP, Site, instrument, original_index, pure, renumber
from .judge import CONDITIONING, OVERFLOW, Divergence, step_growth
from .pool import WorkerPool
from .replay import Arg, arg_of, flag_replay, kind_of, op_replay, optimizer_of, step_replay

Result = dict[str, Any]
Obs = dict[str, Any]
Judging = Generator[list[ParsedProgram], list[tuple[Result, Result, Result]], "Judged"]
"""A program's judgement: it asks for its replays (one batch), then gives its `Judged`."""
RUNS = (("torch", "float32"), ("burn", "float32"), ("torch", "float64"))
TOL_ABS, TOL_REL = 1e-5, 1e-4
ACCUMULATION_REL = 1e-4
# Fixed inputs of the region check, each a cycle of values (the first is the most telling).
REGIONS: dict[str, tuple[float, ...]] = {
    "|x|<=1": (0.7, -0.3, 0.45, -0.85, 0.15, -0.6, 0.95, -0.05),
    "|x|>=3": (8.0, -4.5, 6.0, -9.0, 3.5, -5.5, 7.0, -3.2),
    "x=0": (0.0,),
    "|x|<=1e-3": (1e-4, -5e-4, 2e-5, -1e-3),
}
SHRINK_EVALUATIONS = 40
NUDGES = (1e-6, -1e-6, 1e-5, -1e-5)  # relative nudges of the params for the chaos check


def _close(x: float, y: float) -> bool:
    return abs(x - y) <= TOL_ABS + TOL_REL * max(abs(x), abs(y))


def compare(a: Sequence[float] | None, b: Sequence[float] | None, ref: Sequence[float] | None) -> str:
    """`same`, `differ`, or `filtered:REASON` (the filters of `judge`)."""
    if a is None or b is None:
        return "same" if a is None and b is None else "differ"
    if len(a) != len(b):
        return "differ"
    if not all(math.isfinite(v) for v in a) or not all(math.isfinite(v) for v in b):
        return "filtered:nonfinite"
    if all(_close(x, y) for x, y in zip(a, b)):
        return "same"
    if ref is not None and len(ref) == len(a):
        if any(abs(v) > OVERFLOW for v in ref if math.isfinite(v)):
            return "filtered:overflow"
        scale = max((abs(v) for v in ref if math.isfinite(v)), default=0.0) or 1.0
        if all(abs(x - r) <= ACCUMULATION_REL * scale for x, r in zip(a, ref)) and all(
            abs(y - r) <= ACCUMULATION_REL * scale for y, r in zip(b, ref)
        ):
            return "filtered:accumulation"
        err_a = max((abs(x - r) for x, r in zip(a, ref)), default=0.0)
        err_b = max((abs(y - r) for y, r in zip(b, ref)), default=0.0)
        if err_a > 0 and err_b <= CONDITIONING * err_a:
            return "filtered:conditioning"
    return "differ"


def observations(result: Result) -> dict[str, Obs]:
    return {o["label"]: o for o in result.get("observations") or []}


@dataclass
class Label:
    """How one label compares: the classes that differ, the filters met, missing on a side."""

    differ: set[str] = field(default_factory=set)
    filtered: list[str] = field(default_factory=list)
    missing: bool = False


def compare_runs(t: Result, b: Result, r: Result | None) -> dict[str, Label]:
    to, bo = observations(t), observations(b)
    ro = observations(r) if r is not None and r.get("outcome") == "ok" else {}
    return {label: _compare_label(to.get(label), bo.get(label), ro.get(label)) for label in to.keys() | bo.keys()}


def _compare_label(ot: Obs | None, ob: Obs | None, ref: Obs | None) -> Label:
    verdict = Label()
    if ot is None or ob is None:
        verdict.missing = True
        return verdict
    if bool(ot["flags"]["tracked"]) != bool(ob["flags"]["tracked"]):
        verdict.differ.add("flags")
    for cls, key in (("values", "values"), ("grads", "grad")):
        found = compare(ot.get(key), ob.get(key), ref.get(key) if ref else None)
        if found == "differ":
            verdict.differ.add(cls)
        elif found.startswith("filtered:"):
            verdict.filtered.append(found.removeprefix("filtered:"))
    return verdict


NO_REFERENCE: Result = {"outcome": "not run", "failure": None, "observations": []}
"""The float64 run of a program whose float32 runs agree everywhere: nothing reads it."""


def needs_reference(t: Result, b: Result) -> bool:
    """Whether the float64 reference can change how `t` and `b` compare: only a label whose
    values or gradients are not close consults it (`compare`), so where every label agrees
    without it, it is not run (about four runs in five of a campaign)."""
    to, bo = observations(t), observations(b)
    return any(_compare_label(to.get(label), bo.get(label), None).differ - {"flags"} for label in to.keys() | bo.keys())


@dataclass
class Cause:
    """A root cause: what differs (`oracle`), at which operation with which attributes that
    matter, where, on which side; the smallest program that shows it and what it showed."""

    signature: str
    oracle: str
    op: str
    attrs: str
    region: str
    side: str
    program: ParsedProgram
    original: ParsedProgram
    program_index: int
    statement: int | None
    words: str
    detail: dict[str, Any] = field(default_factory=dict)
    evaluations: int = 0

    @property
    def statements(self) -> int:
        return sum(1 for s in walk(self.program.body) if s.op != "observe")


@dataclass
class Candidate:
    oracle: str
    site: Site | None
    divergence: Divergence
    context: ParsedProgram  # the program the known differences are matched against
    replay: ParsedProgram | None = None
    runs: tuple[Result, Result, Result] | None = None
    label: str | None = None
    args: list[Arg] = field(default_factory=list)
    kind: str = "op"  # op, step, flag, status, program


@dataclass
class Judged:
    """What judging one program found."""

    index: int
    program: ParsedProgram
    outcomes: str
    fully_judged: bool
    sites: int
    unjudged: int
    divergences: Counter[str] = field(default_factory=Counter)  # "new:values", "known:ID"
    filtered: Counter[str] = field(default_factory=Counter)
    causes: list[Cause] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # every new cause's signature it showed
    replays: int = 0
    kinked: bool = False  # a replay's gradients differed at its kink (filtered)


def dtypes(program: ParsedProgram) -> dict[str, str]:
    """Every name's element type (declarations, then each statement's result)."""
    out: dict[str, str] = {t.name: t.dtype for t in program.tensors}
    for st in walk(program.body):
        spec = OPS[st.op]
        if st.out is not None and spec.result == "tensor":
            if spec.result_dtype == "arg0":
                out[st.out] = out.get(st.args[-1] if spec.module else st.args[0], "float")
            else:
                out[st.out] = spec.result_dtype
    return out


class Localizer:
    """Judges programs with one pool; remembers what it classified (per operation, attributes
    and shapes) so that a cause met again costs no more replays."""

    def __init__(self, pool: WorkerPool, *, shrink: bool = True) -> None:
        self.pool = pool
        self.shrink = shrink
        self.signatures: dict[tuple[Any, ...], tuple[str, str, str, str]] = {}
        self.replays = 0
        self.runs = 0  # programs run (generated, rewritten or replayed), each in float32 on both sides
        self.references = 0  # of them, how many also ran in float64 (`needs_reference`)

    # ---- running ------------------------------------------------------------------------------

    def run(self, programs: list[ParsedProgram]) -> list[tuple[Result, Result, Result]]:
        """Each program under torch and burn in float32, and torch in float64 for the programs
        whose float32 runs differ somewhere (`needs_reference`): elsewhere the reference is
        never read, and it stands as `NO_REFERENCE`. A program whose data cannot be made is the
        same error on every side (nothing to compare)."""
        if not programs:
            return []
        irs: list[dict[str, Any]] = []
        refused: dict[int, Result] = {}
        for i, p in enumerate(programs):
            try:
                irs.append(ir_of(p))
            except Exception as err:
                refused[i] = {"outcome": "error", "failure": {"message": f"data: {err}"[:300]}, "observations": []}
        out = self.pool.run_many(irs, RUNS[:2])
        pairs = list(zip(out[RUNS[0]], out[RUNS[1]]))
        wanted = [j for j, (t, b) in enumerate(pairs) if needs_reference(t, b)]
        references = dict(zip(wanted, self.pool.run_many([irs[j] for j in wanted], RUNS[2:])[RUNS[2]]))
        self.references += len(wanted)
        self.runs += len(irs)
        results: list[tuple[Result, Result, Result]] = []
        ran = iter(range(len(irs)))
        for i in range(len(programs)):
            if i in refused:
                results.append((refused[i], refused[i], refused[i]))
                continue
            j = next(ran)
            results.append((*pairs[j], references.get(j, NO_REFERENCE)))
        return results

    # ---- one program ----------------------------------------------------------------------------

    def judge(self, items: list[tuple[int, ParsedProgram]], known_signatures: set[str] | None = None) -> list[Judged]:
        """The programs judged: their rewritten forms in one batch, then every program's
        replays in a second batch."""
        rewritten = [instrument(p) for _, p in items]
        runs = self.run([r[0] for r in rewritten])
        results: list[Judged | None] = [None] * len(items)
        waiting: list[tuple[int, Judging, list[ParsedProgram]]] = []
        for i, ((index, parsed), (inst, sites), run) in enumerate(zip(items, rewritten, runs)):
            judging = self._judge_one(index, parsed, inst, sites, run, known_signatures or set())
            try:
                waiting.append((i, judging, next(judging)))
            except StopIteration as done:
                results[i] = done.value
        replays = self.run([p for _, _, wanted in waiting for p in wanted])
        at = 0
        for i, judging, wanted in waiting:
            part, at = replays[at : at + len(wanted)], at + len(wanted)
            try:
                judging.send(part)
                raise RuntimeError("a judgement asked for replays twice")
            except StopIteration as done:
                results[i] = done.value
        return [r for r in results if r is not None]

    def _judge_one(
        self,
        index: int,
        parsed: ParsedProgram,
        inst: ParsedProgram,
        sites: list[Site],
        runs: tuple[Result, Result, Result],
        found: set[str],
    ) -> Judging:
        t, b, r = runs
        labels = compare_runs(t, b, r)
        judged = Judged(index, parsed, f"{t['outcome']}/{b['outcome']}", True, len(sites), 0)
        for verdict in labels.values():
            judged.filtered.update(verdict.filtered)
        candidates: list[Candidate] = []
        status = _status(t, b)
        if status is not None:
            candidates.append(Candidate("status", self._site_at(inst, sites, t, b), status, inst, kind="status"))
        grew = _growth(t, b)
        if grew is not None:
            candidates.append(Candidate("growth", None, grew, inst, kind="program"))
        if status is None and grew is None and not any(v.differ or v.missing for v in labels.values()):
            return judged  # the fast path: everything agrees
        param_labels = {x for s in sites if s.op == "backward" for x in s.params_after.values()}
        param_labels |= {x for s in sites if s.op == OPTIMIZER_STEP for x in s.params_before.values()}
        any_grads = any("grads" in labels[x].differ for x in param_labels if x in labels)
        to, bo = observations(t), observations(b)
        types = dtypes(parsed)
        to_replay: list[tuple[Site, str]] = []
        unjudged: list[Site] = []
        for site in sites:
            state = _site_state(site, labels)
            if state == "agree":
                continue
            if state == "unreached":
                continue
            replayable = pure(site.op) or site.op in FLAG_OPS or site.op == OPTIMIZER_STEP
            if replayable:
                to_replay.append((site, state))
            elif state == "origin":
                out = labels[site.output] if site.output else None
                classes = sorted(out.differ) if out else []
                for p_label in site.params_after.values():
                    classes += sorted(labels[p_label].differ) if p_label in labels else []
                cls = classes[0] if classes else "values"
                # the label that shows the class (a backward's params: the one whose gradient differs)
                shown = [
                    x for x in (site.output, *site.params_after.values()) if x in labels and cls in labels[x].differ
                ]
                label = next(iter(shown), None) or site.output or next(iter(site.params_after.values()), None)
                a, bv = _sides(to, bo, label, cls)
                candidates.append(
                    Candidate(
                        cls,
                        site,
                        Divergence(cls, label, {"a": a, "b": bv}),
                        inst,
                        runs=runs,
                        label=label,
                        kind="program",
                    )
                )
            else:
                unjudged.append(site)
        gradients = any_grads or status is not None or any(state != "origin" for _, state in to_replay)
        # A backward is judged by the vector–Jacobian products of the statements it goes through.
        judged.unjudged += sum(1 for site in unjudged if not (gradients and site.op == "backward"))
        if gradients:
            chosen = {s.index for s, _ in to_replay}
            for site in sites:
                if site.index not in chosen and pure(site.op) and OPS[site.op].differentiable:
                    if _site_state(site, labels) != "unreached":
                        to_replay.append((site, "gradient"))
        # Replays, one batch for the program.
        built: list[tuple[Site, ParsedProgram, list[Arg], str]] = []
        for site, _ in to_replay:
            made = self._build_replay(parsed, site, to, bo, types)
            if made is None:
                if site.op != OPTIMIZER_STEP:
                    judged.unjudged += 1
                continue
            built.append((site, made[0], made[1], made[2]))
        if built:
            replay_runs = yield [p for _, p, _, _ in built]
            judged.replays += len(built)
            self.replays += len(built)
            origins = {s.index for s, state in to_replay if state in ("origin", "tainted")}
            for (site, program, args, kind), rr in zip(built, replay_runs):
                found_here = self._replay_candidates(site, program, args, kind, rr, judged)
                candidates += found_here
                if not found_here and site.index in origins and _first_difference(site, labels)[0] is not None:
                    # The statement alone agrees on identical inputs: what differed in the program
                    # is float32 noise it amplified, or a documented difference of the context.
                    label, cls = _first_difference(site, labels)
                    a, bv = _sides(to, bo, label, cls)
                    known_id = known.match(Divergence(cls, label, {"a": a, "b": bv}), inst)
                    if known_id is not None:
                        judged.divergences[f"known:{known_id}"] += 1
                    else:
                        judged.filtered["replay agrees"] += 1
        # Late observations: a generated observe that differs although its statement's result did not.
        producers = _producers(parsed)
        for label, verdict in labels.items():
            if label.startswith("@") or not verdict.differ:
                continue
            producer = next((s for s in sites if s.index == producers.get(label)), None)
            for cls in sorted(verdict.differ):
                a, bv = _sides(to, bo, label, cls)
                d = Divergence(cls, label, {"a": a, "b": bv})
                known_id = known.match(d, inst)
                if known_id is not None:
                    judged.divergences[f"known:{known_id}"] += 1
                    continue
                own = labels.get(producer.output) if producer is not None and producer.output else None
                if own is not None and (own.differ or own.missing):
                    continue
                if producer is not None and producer.params_after:
                    continue  # after a step: the step's own labels say it
                candidates.append(Candidate(cls, producer, d, inst, runs=runs, label=label, kind="program"))
                break
        # A divergence a replay localized explains what follows from it: a backward's gradients,
        # a later observation (they are not causes of their own).
        # A statement whose gradient differs only at its kink (each framework's convention there)
        # explains the program's gradients too, and the values a step computes from them.
        localized = any(c.replay is not None and c.oracle in ("values", "grads", "flags") for c in candidates)
        for cand in candidates:
            if localized and cand.kind == "program" and cand.oracle in ("values", "grads", "flags"):
                judged.filtered["explained"] += 1
                continue
            if judged.kinked and cand.kind == "program" and cand.oracle in ("values", "grads"):
                judged.filtered["kink"] += 1
                continue
            self._settle(cand, judged, found)
        judged.fully_judged = judged.unjudged == 0
        return judged

    def _site_at(self, inst: ParsedProgram, sites: list[Site], t: Result, b: Result) -> Site | None:
        failure = (b.get("failure") if b["outcome"] != "ok" else None) or t.get("failure")
        where = failure.get("op_index") if isinstance(failure, dict) else None
        if where is None:
            return None
        original = original_index(inst, sites).get(where)
        return next((s for s in sites if s.index == original), None)

    # ---- replays --------------------------------------------------------------------------------

    def _build_replay(
        self, parsed: ParsedProgram, site: Site, to: dict[str, Obs], bo: dict[str, Obs], types: dict[str, str]
    ) -> tuple[ParsedProgram, list[Arg], str] | None:
        def recorded(label: str | None) -> Obs | None:
            if label is None:
                return None
            return to.get(label) or bo.get(label)

        try:
            if site.op == OPTIMIZER_STEP:
                optimizer = optimizer_of(parsed, site)
                if optimizer is None:
                    return None
                params: dict[str, tuple[Arg, list[float] | None]] = {}
                for p, label in site.params_before.items():
                    obs = recorded(label)
                    arg = arg_of(obs) if obs else None
                    if arg is None:
                        return None
                    grad = obs.get("grad") if obs else None
                    params[p] = (arg, grad if grad and all(math.isfinite(g) for g in grad) else None)
                if not any(g is not None for _, g in params.values()):
                    return None
                return step_replay(optimizer, params), [a for a, _ in params.values()], "step"
            args: list[Arg] = []
            names = [a for a, label in zip(site.stmt.args, site.inputs) if label is not None]
            for name, label in zip(names, [x for x in site.inputs if x is not None]):
                obs = recorded(label)
                arg = arg_of(obs, types.get(name, "float")) if obs else None
                if arg is None:
                    return None
                args.append(arg)
            if site.op in FLAG_OPS:
                return flag_replay(site, args[0]), args, "flag"
            module, values = self._module(parsed, site, recorded)
            out_obs = recorded(site.output)
            out_shape = tuple(out_obs["shape"]) if out_obs else None
            differentiable = OPS[site.op].differentiable and types.get(site.stmt.out or "", "float") == "float"
            program = op_replay(
                site, args, module, values, gradient=differentiable, out_shape=out_shape if differentiable else None
            )
            return program, args, "op"
        except ValueError:
            return None

    def _module(
        self, parsed: ParsedProgram, site: Site, recorded: Callable[[str | None], Obs | None]
    ) -> tuple[dict[str, Any] | None, dict[str, list[float]]]:
        if None not in site.inputs:
            return None, {}
        name = site.stmt.args[site.inputs.index(None)]
        decl = next(m for m in parsed.modules if m.name == name)
        values: dict[str, list[float]] = {}
        for p, label in site.params_before.items():
            obs = recorded(label)
            if obs is None or obs.get("values") is None:
                raise ValueError("a module param was not recorded")
            values[p.split(".", 1)[1]] = list(obs["values"])
        return {"name": "m", "kind": decl.kind, "attrs": dict(decl.attrs)}, values

    def _replay_candidates(
        self,
        site: Site,
        program: ParsedProgram,
        args: list[Arg],
        kind: str,
        rr: tuple[Result, Result, Result],
        judged: Judged,
    ) -> list[Candidate]:
        t, b, r = rr
        out: list[Candidate] = []
        status = _status(t, b)
        if status is not None:
            return [Candidate("status", site, status, program, program, rr, None, args, "status")]
        labels = compare_runs(t, b, r)
        for verdict in labels.values():
            judged.filtered.update(verdict.filtered)
        to, bo = observations(t), observations(b)
        # One candidate per replay: a wrong value explains a wrong gradient of it (so the value
        # is the cause), a gradient that differs while the values agree is a cause of its own.
        # A step replay judges the values it leaves (what it leaves of the gradients is known).
        # the table's kinks, and a clamp's bounds (not differentiable on them either)
        bounds = [v for k, v in site.stmt.attrs.items() if k in ("min", "max") and isinstance(v, (int, float))]
        kinks = (*OPS[site.op].kinks, *(float(v) for v in bounds))
        at_kink = any(abs(v - k) <= 1e-6 for a in args if a.dtype == "float" for v in a.values for k in kinks)
        for cls in ("values",) if kind == "step" else ("values", "flags", "grads"):
            for label in sorted(labels, key=lambda x: (x != "out", x)):
                if cls in labels[label].differ:
                    if cls == "grads" and at_kink:
                        # not differentiable there (relu, abs at 0): each framework's convention
                        judged.filtered["kink"] += 1
                        judged.kinked = True
                        return []
                    a, bv = _sides(to, bo, label, cls)
                    d = Divergence(cls, label, {"a": a, "b": bv})
                    return [Candidate(cls, site, d, program, program, rr, label, args, kind)]
        return out

    # ---- a candidate: known, or a cause ----------------------------------------------------------

    def _settle(self, cand: Candidate, judged: Judged, found: set[str]) -> None:
        d = cand.divergence
        known_id = known.match(d, cand.context)
        if known_id == known.OMITTED_DEFAULTS and cand.replay is not None and cand.site is not None:
            # The documented fix, tried: the omitted attributes given torch's defaults. A divergence
            # that stays is not that difference (and the replay with them given is the case).
            fixed = self._with_torch_defaults(cand)
            if fixed is not None and self._still(cand, fixed) is True:
                cand.replay = cand.context = fixed
                known_id = known.match(d, fixed)  # another documented difference may still explain it
                known_id = None if known_id == known.OMITTED_DEFAULTS else known_id
        if known_id == known.CLIP_NORM and cand.kind == "step" and cand.replay is not None:
            # The documented cause, tried: without clipping the step must agree, or it is not that.
            unclipped = self._without_clipping(cand)
            if unclipped is not None and self._still(cand, unclipped) is True:
                # what stays is judged (and attributed) on the step without the documented cause
                cand.replay = cand.context = unclipped
                known_id = known.match(d, unclipped)
                known_id = None if known_id == known.CLIP_NORM else known_id
        if known_id is not None:
            judged.divergences[f"known:{known_id}"] += 1
            return
        if cand.kind == "program" and cand.oracle in ("values", "grads") and self._chaotic(cand):
            judged.filtered["chaotic"] += 1
            return
        judged.divergences[f"new:{cand.oracle}"] += 1
        oracle, op, attrs, region, side = self._classify(cand)
        signature = f"{oracle}:{op}{'.' + attrs if attrs else ''}:{region}:{side}"
        judged.seen.add(signature)
        if signature in found or any(c.signature == signature for c in judged.causes):
            return
        program, evaluations, label = self._smallest(cand, signature, judged)
        judged.causes.append(
            Cause(
                signature,
                oracle,
                op,
                attrs,
                region,
                side,
                program,
                judged.program,
                judged.index,
                cand.site.index if cand.site is not None else None,
                _words(cand, op, attrs, region),
                detail={**d.detail, "label": label},
                evaluations=evaluations,
            )
        )

    def _classify(self, cand: Candidate) -> tuple[str, str, str, str, str]:
        site = cand.site
        side = self._side(cand)
        if cand.kind == "status":
            d = cand.divergence.detail
            op = site.op if site is not None else str(d.get("op") or "program")
            if op == OPTIMIZER_STEP and cand.replay is not None:
                op = _optimizer_name(cand)
            elif cand.replay is not None and d.get("op"):
                op = str(d["op"])
            return "status", op, f"{d.get('torch_outcome')}-{d.get('burn_outcome')}", "-", side
        if cand.kind == "program" or site is None:
            op = site.op if site is not None else ("repeat" if cand.oracle == "growth" else "program")
            return cand.oracle, op, "in-program", "-", side
        if cand.kind == "flag":
            return cand.oracle, site.op, kind_of(cand.args[0]), "-", side
        if cand.kind == "step":
            return cand.oracle, _optimizer_name(cand), ",".join(self._attrs_that_matter(cand)), "-", side
        key = (cand.oracle, site.op, _attr_key(site.stmt.attrs), tuple(a.shape for a in cand.args), cand.label)
        hit = self.signatures.get(key)
        if hit is None:
            attrs = ",".join(self._attrs_that_matter(cand))
            region = self._region(cand)
            hit = self.signatures[key] = (site.op, attrs, region, side)
        op, attrs, region, side = hit
        return cand.oracle, op, attrs, region, side

    def _side(self, cand: Candidate) -> str:
        if cand.kind == "status":
            d = cand.divergence.detail
            failed = [fw for fw in ("torch", "burn") if d.get(f"{fw}_outcome") != "ok"]
            return failed[0] if len(failed) == 1 else "both"
        if cand.runs is None or cand.label is None or cand.oracle == "flags":
            return "burn" if cand.oracle in ("flags", "growth") else "both"
        t, b, r = (observations(x).get(cand.label) for x in cand.runs)
        key = "grad" if cand.oracle == "grads" else "values"
        xs = [o.get(key) if o else None for o in (t, b, r)]
        if any(x is None for x in xs) or cand.runs[2].get("outcome") != "ok":
            return "burn"
        tv, bv, rv = xs
        assert tv is not None and bv is not None and rv is not None
        err_t = max((abs(x - y) for x, y in zip(tv, rv)), default=0.0)
        err_b = max((abs(x - y) for x, y in zip(bv, rv)), default=0.0)
        if err_b > CONDITIONING * err_t:
            return "burn"
        if err_t > CONDITIONING * err_b:
            return "torch"
        return "both"

    def _still(self, cand: Candidate, program: ParsedProgram) -> bool | None:
        """Does `program` (a variant of the candidate's replay) show the same divergence? None:
        it cannot say (a side refuses the variant: an attribute reset into an invalid combination)."""
        t, b, r = self.run([program])[0]
        self.replays += 1
        if cand.oracle == "status":
            return _status(t, b) is not None
        if t["outcome"] != "ok" or b["outcome"] != "ok":
            return None
        verdict = compare_runs(t, b, r).get(cand.label or "out")
        return verdict is not None and cand.oracle in verdict.differ

    def _attrs_that_matter(self, cand: Candidate) -> list[str]:
        """The statement's attributes (not the required ones) whose reset to the language's
        default (an omitted one: torch's documented default) makes the divergence go away."""
        site = cand.site
        assert site is not None and cand.replay is not None
        if cand.kind == "step":
            base = next(s for s in walk(cand.replay.body) if OPS[s.op].result == "optimizer")
            spec = OPS[base.op]
            current = dict(base.attrs)
        else:
            spec = OPS[site.op]
            current = dict(site.stmt.attrs)
        matter = []
        for a in spec.attrs:
            if a.name not in current or a.default is REQUIRED:
                continue
            if a.default is OMITTED:
                if a.torch_default is None or current[a.name] == a.torch_default:
                    continue
                reset: AttrValue = a.torch_default
            else:
                assert not isinstance(a.default, type(REQUIRED))
                reset = a.default  # type: ignore[assignment]
                if current[a.name] == reset:
                    continue
            attrs = {**current, a.name: reset}
            variant = self._variant(cand, attrs)
            if variant is not None and self._still(cand, variant) is False:
                matter.append(a.name if a.type not in ("bool", "str") else f"{a.name}={current[a.name]}")
        return matter

    def _variant(self, cand: Candidate, attrs: dict[str, AttrValue]) -> ParsedProgram | None:
        assert cand.replay is not None
        body = []
        for st in cand.replay.body:
            data = st.model_dump()
            if st.op == (cand.site.op if cand.kind == "op" and cand.site else None) or (
                cand.kind == "step" and OPS[st.op].result == "optimizer"
            ):
                data["attrs"] = attrs
            body.append(_strip(data))
        try:
            return renumber(cand.replay, body)
        except ValueError:
            return None

    def _chaotic(self, cand: Candidate) -> bool:
        """A divergence no statement explains, in a program that trains: does torch differ from
        itself when the params start nudged by one part in 1e6? Then the dynamics amplify
        float32 noise (a parameter oscillating at the kink of abs, say) and it says nothing about
        burn."""
        if cand.runs is None or cand.label is None:
            return False
        if not any(s.op in ("repeat", OPTIMIZER_STEP) for s in walk(cand.context.body)):
            return False
        base = observations(cand.runs[0]).get(cand.label)
        if base is None:
            return False
        ir = ir_of(cand.context)
        nudged = []
        for factor in NUDGES:
            tensors = [
                {**t, "data": [x * (1 + factor) for x in t["data"]]} if t["role"] == "param" else t
                for t in ir["tensors"]
            ]
            nudged.append({**ir, "tensors": tensors})
        key = "grad" if cand.oracle == "grads" else "values"
        for result in self.pool.run_many(nudged, (("torch", "float32"),))[("torch", "float32")]:
            again = observations(result).get(cand.label)
            if again is None or compare(base.get(key), again.get(key), None) == "differ":
                return True
        return False

    def _without_clipping(self, cand: Candidate) -> ParsedProgram | None:
        assert cand.replay is not None
        stmt = next((s for s in walk(cand.replay.body) if OPS[s.op].result == "optimizer"), None)
        if stmt is None:
            return None
        return self._variant(cand, {k: v for k, v in stmt.attrs.items() if k != "clip_grad_norm"})

    def _with_torch_defaults(self, cand: Candidate) -> ParsedProgram | None:
        assert cand.replay is not None and cand.site is not None
        if cand.kind == "step":
            stmt = next((s for s in walk(cand.replay.body) if OPS[s.op].result == "optimizer"), None)
        else:
            stmt = next((s for s in walk(cand.replay.body) if s.op == cand.site.op), None)
        if stmt is None:
            return None
        given = known.differing_defaults(OPS[stmt.op].attrs, stmt.attrs)
        return self._variant(cand, {**stmt.attrs, **given}) if given else None

    def _region(self, cand: Candidate) -> str:
        """Where in the input space the divergence shows: the replay on fixed inputs."""
        assert cand.replay is not None and cand.site is not None
        spec = OPS[cand.site.op]
        kinks = set(spec.kinks)
        domains = spec.domain or ("any",)
        variants: list[tuple[str, ParsedProgram]] = []
        for region, cycle in REGIONS.items():
            if region == "x=0" and (cand.oracle == "grads" and 0.0 in kinks):
                continue
            tensors = []
            float_index = 0
            for t in cand.replay.tensors:
                data = t.model_dump()
                if t.name.startswith("a") and t.dtype == "float" and t.module is None:
                    domain = domains[min(float_index, len(domains) - 1)]
                    n = len(t.values or [])
                    values = [cycle[(i + float_index) % len(cycle)] for i in range(n)]
                    if domain != "any":
                        values = [abs(v) or 1e-3 for v in values]
                    data["values"] = values
                    float_index += 1
                tensors.append(data)
            if float_index == 0:
                return "recorded"
            try:
                program = ParsedProgram.model_validate(
                    {
                        "tensors": tensors,
                        "modules": [m.model_dump() for m in cand.replay.modules],
                        "body": cand.replay.model_dump()["body"],
                    }
                )
            except ValueError:
                continue
            variants.append((region, program))
        if not variants:
            return "recorded"
        runs = self.run([p for _, p in variants])
        self.replays += len(variants)
        showing = []
        for (region, _), (rt, rb, rr) in zip(variants, runs):
            verdict = compare_runs(rt, rb, rr).get(cand.label or "out")
            if verdict is not None and cand.oracle in verdict.differ:
                showing.append(region)
        if "|x|<=1" in showing:
            return "all"
        return "+".join(showing) if showing else "recorded"

    def _smallest(self, cand: Candidate, signature: str, judged: Judged) -> tuple[ParsedProgram, int, str | None]:
        """The case's program: the replay without what the oracle does not need, or the
        generated program shrunk; and the label that shows the cause in it."""
        if cand.replay is not None:
            program = cand.replay
            if cand.kind == "op" and cand.oracle == "values" and cand.site is not None:
                trimmed = _without_gradient(program)
                if trimmed is not None:
                    program = trimmed
            label = cand.label
            if cand.kind == "step" and cand.label is not None:
                alone = _one_param(program, cand.label)  # its param is p0
                if alone is not None and self._still(replace(cand, label="p0"), alone) is True:
                    program, label = alone, "p0"
            return program, 0, label
        if not self.shrink:
            return judged.program, 0, cand.label
        return self._shrink(judged.program, judged.index, signature, cand.label)

    def _shrink(
        self, program: ParsedProgram, index: int, signature: str, label: str | None
    ) -> tuple[ParsedProgram, int, str | None]:
        """Statements removed one at a time (their observations with them) while the program
        still shows the same signature."""
        evaluations = 0
        current = program
        progress = True
        self.shrink = False  # the programs judged while shrinking are not shrunk themselves
        while progress and evaluations < SHRINK_EVALUATIONS:
            progress = False
            body = current.model_dump()["body"]
            for path in reversed(list(_paths(body))):
                if evaluations >= SHRINK_EVALUATIONS:
                    break
                candidate_body = _remove(body, path)
                if candidate_body is None:
                    continue
                try:
                    smaller = renumber(current, [_strip(s) for s in candidate_body])
                except ValueError:
                    continue
                evaluations += 1
                try:
                    result = self.judge([(index, smaller)])[0]
                finally:
                    self.shrink = True
                self.shrink = False
                match = next((c for c in result.causes if c.signature == signature), None)
                if match is not None:
                    current, progress = smaller, True
                    label = match.detail.get("label")
                    break
        self.shrink = True
        return _unused_declarations_dropped(current), evaluations, label


# ---- helpers -------------------------------------------------------------------------------------


def ir_of(program: ParsedProgram) -> dict[str, Any]:
    """The IR `data.materialize(program, seed=0)` gives, without validating the whole program
    again (it was validated when made; the interpreters validate what they run)."""
    tensors = []
    for index, spec in enumerate(program.tensors):
        decl: dict[str, Any] = {
            "name": spec.name,
            "role": spec.role,
            "shape": list(spec.shape),
            "data": program_data.make_data(spec, 0, index).tolist(),
        }
        if spec.module is not None:
            decl["module"] = spec.module
        if spec.dtype != "float":
            decl["dtype"] = spec.dtype
        tensors.append(decl)
    loop = timed_loop(program.body)
    count = loop.attrs.get("count") if loop is not None else None
    dumped = program.model_dump(mode="json")
    return {
        "ir_version": IR_VERSION,
        "tensors": tensors,
        "modules": dumped["modules"],
        "body": dumped["body"],
        "settings": {"checkpoints": [count] if isinstance(count, int) else [], "rss_every": 0, "track": None},
    }


def _attr_key(attrs: dict[str, AttrValue]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in attrs.items()))


def _optimizer_name(cand: Candidate) -> str:
    assert cand.replay is not None
    return next(s.op for s in walk(cand.replay.body) if OPS[s.op].result == "optimizer")


def _strip(data: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in data.items() if k in ("op", "args", "out", "attrs", "body")}
    if out.get("body") is None:
        out.pop("body", None)
    else:
        out["body"] = [_strip(s) for s in out["body"]]
    return out


def _without_gradient(program: ParsedProgram) -> ParsedProgram | None:
    """The operation and its observation only (the values and flags need no backward)."""
    keep = []
    for st in program.body:
        if st.op == "backward" or st.out in ("w", "loss"):
            continue
        if st.op == "observe" and st.attrs.get("label") != "out":
            continue
        keep.append(_strip(st.model_dump()))
    tensors = [t.model_dump() for t in program.tensors if t.name != "up"]
    for t in tensors:
        if t["role"] == "param" and t["module"] is None:
            t["role"] = "input" if t["dtype"] == "float" else t["role"]
    try:
        base = ParsedProgram.model_validate(
            {"tensors": tensors, "modules": [m.model_dump() for m in program.modules], "body": []}
        )
        return renumber(base, keep)
    except ValueError:
        return None


def _one_param(program: ParsedProgram, label: str) -> ParsedProgram | None:
    """A step replay with the one param whose values differ (and its gradient) only."""
    optimizer = next((s for s in program.body if OPS[s.op].result == "optimizer"), None)
    by_name = {t.name: t for t in program.tensors}
    param, grad = by_name.get(label), by_name.get("g" + label.removeprefix("p"))
    if optimizer is None or param is None or grad is None or param.values is None or grad.values is None:
        return None
    arg = Arg(tuple(param.shape), "float", list(param.values))
    try:
        return step_replay(optimizer, {label: (arg, list(grad.values))}).model_copy()
    except ValueError:
        return None


def _paths(body: list[dict[str, Any]], prefix: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    out = []
    for i, st in enumerate(body):
        out.append((*prefix, i))
        if st.get("body"):
            out += _paths(st["body"], (*prefix, i))
    return out


def _remove(body: list[dict[str, Any]], path: tuple[int, ...]) -> list[dict[str, Any]] | None:
    """The body without the statement at `path` (None: that would leave a block empty)."""
    import copy

    new = copy.deepcopy(body)
    container = new
    for i in path[:-1]:
        container = container[i]["body"]
    del container[path[-1]]
    if path[:-1] and not container:
        return None
    return new


def _unused_declarations_dropped(program: ParsedProgram) -> ParsedProgram:
    used = {a for st in walk(program.body) for a in st.args}
    used |= {st.out for st in walk(program.body) if st.out}
    modules = [m for m in program.modules if m.name in used]
    names = {m.name for m in modules}
    tensors = [
        t.model_dump()
        for t in program.tensors
        if (t.module is None and (t.name in used or t.role == "param")) or (t.module in names)
    ]
    try:
        return ParsedProgram.model_validate(
            {"tensors": tensors, "modules": [m.model_dump() for m in modules], "body": program.model_dump()["body"]}
        )
    except ValueError:
        return program


def _producers(program: ParsedProgram) -> dict[str, int]:
    """A generated observation's label -> the statement that last wrote its tensor before it."""
    last: dict[str, int] = {}
    out: dict[str, int] = {}
    for st in walk(program.body):
        if st.op == "observe":
            label = str(st.attrs.get("label"))
            if st.args[0] in last:
                out[label] = last[st.args[0]]
            continue
        if st.out is not None:
            last[st.out] = st.index
        if OPS[st.op].inplace and st.args:
            last[st.args[0]] = st.index
        if st.op == OPTIMIZER_STEP:
            for t in program.tensors:
                if t.role == "param":
                    last[t.name] = st.index
    return out


def _site_state(site: Site, labels: dict[str, Label]) -> str:
    """agree, origin (inputs agree, result differs), tainted (an input differs or is missing
    on a side), or unreached (neither side observed it)."""
    inputs = [x for x in site.inputs if x is not None] + list(site.params_before.values())
    outputs = ([site.output] if site.output else []) + list(site.params_after.values())
    seen = [labels.get(x) for x in inputs + outputs]
    if (inputs or outputs) and all(v is None for v in seen):
        return "unreached"
    if site.op == "backward":
        # A backward changes gradients only: the params' values it sees are its inputs.
        after = [labels[x] for x in outputs if x in labels]
        if any(v.missing or (v.differ - {"grads"}) for v in after):
            return "tainted"
        return "origin" if any("grads" in v.differ for v in after) else "agree"
    if site.op == OPTIMIZER_STEP:
        # A step changes values; what it leaves of the gradients is a known difference (burn's
        # step consumes them), judged on the generated program's own observations.
        if any(labels.get(x) is None or labels[x].missing or labels[x].differ for x in inputs):
            return "tainted"
        after = [labels[x] for x in outputs if x in labels]
        return "origin" if any("values" in v.differ for v in after) else "agree"
    if any((labels.get(x) is None or labels[x].missing or labels[x].differ) for x in inputs):
        return "tainted"
    if any(labels.get(x) is None or labels[x].missing for x in outputs):
        return "tainted"  # one side stopped before it: judged by a replay, not an origin
    if any(labels[x].differ for x in outputs):
        return "origin"
    return "agree"


def _first_difference(site: Site, labels: dict[str, Label]) -> tuple[str | None, str]:
    for label in ([site.output] if site.output else []) + list(site.params_after.values()):
        verdict = labels.get(label)
        if verdict is not None and verdict.differ:
            return label, sorted(verdict.differ)[-1]
    return None, "values"


def _sides(to: dict[str, Obs], bo: dict[str, Obs], label: str | None, cls: str) -> tuple[Any, Any]:
    if label is None:
        return None, None
    key = {"values": "values", "grads": "grad", "flags": "flags"}[cls]
    ot, ob = to.get(label), bo.get(label)

    def show(o: Obs | None) -> Any:
        if o is None:
            return "not observed"
        value = o.get(key)
        if cls == "flags":
            return {"tracked": value["tracked"]} if value else None
        return "none" if value is None else value

    return show(ot), show(ob)


def _status(t: Result, b: Result) -> Divergence | None:
    if t["outcome"] == b["outcome"]:
        return None

    def where(run: Result) -> list[Any] | None:
        f = run.get("failure")
        return None if not f else [f.get("op_index"), f.get("iteration")]

    def message(run: Result) -> str | None:
        f = run.get("failure")
        return str(f.get("message"))[:300] if f else None

    failed = b.get("failure") or t.get("failure") or {}
    return Divergence(
        "status",
        None,
        {
            "torch_outcome": t["outcome"],
            "burn_outcome": b["outcome"],
            "torch_message": message(t),
            "burn_message": message(b),
            "op": failed.get("op"),
            "torch_at": where(t),
            "burn_at": where(b),
            "torch": t["outcome"] + (f" at {failed.get('op')}: {message(t)}" if t.get("failure") else ""),
            "burn": b["outcome"] + (f" at {failed.get('op')}: {message(b)}" if b.get("failure") else ""),
        },
    )


def _growth(t: Result, b: Result) -> Divergence | None:
    return step_growth((t["outcome"], t.get("step_ms") or []), (b["outcome"], b.get("step_ms") or []))


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    if isinstance(x, list):
        shown = ", ".join(_fmt(v) for v in x[:6])
        return f"[{shown}{', ...' if len(x) > 6 else ''}]"
    return str(x)


def _words(cand: Candidate, op: str, attrs: str, region: str) -> str:
    """What was observed, in words and numbers."""
    d = cand.divergence.detail
    where = f" (statement {cand.site.index} of the generated program)" if cand.site is not None else ""
    if cand.oracle == "status":
        return f"`{op}`{where}: torch {d.get('torch')}; burn {d.get('burn')}"[:600]
    if cand.oracle == "growth":
        return f"the loop's step time grows: torch x{d.get('torch_ratio', 0):.2f}, burn x{d.get('burn_ratio', 0):.2f}"
    a, b = d.get("a"), d.get("b")
    what = {"values": "value", "grads": "gradient", "flags": "autodiff flags"}.get(cand.oracle, cand.oracle)
    call = f"`{op}`" + (f" with {attrs}" if attrs else "")
    if (
        cand.runs is not None
        and cand.kind == "op"
        and isinstance(a, list)
        and isinstance(b, list)
        and a
        and len(a) == len(b)
    ):
        i = max(range(len(a)), key=lambda j: abs(float(a[j]) - float(b[j])))
        xs = [arg.values[i] for arg in cand.args if arg.dtype == "float" and len(arg.values) == len(a)]
        at = f" at x = {_fmt(xs[0])}" if len(xs) == 1 else (f" at ({', '.join(_fmt(x) for x in xs)})" if xs else "")
        region_text = "" if region in ("all", "-", "recorded") else f"; it shows at {region.replace('+', ' and ')}"
        return (
            f"{call}{at}: {what} torch {_fmt(float(a[i]))}, burn {_fmt(float(b[i]))} "
            f"(element {i} of {len(a)}; the operation replayed alone on the recorded inputs{where}{region_text})"
        )
    return f"{call}{where}: {what} of {cand.label!r}: torch {_fmt(a)}, burn {_fmt(b)}"[:600]
