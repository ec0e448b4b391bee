"""Case files (`cases/*.toml`) as typed models.

A case names its parameters, the runs (framework x mode) with what each is
expected to show, and the pairs of runs that state the differential claim
(`same` or `differ` on a property). `runner.cases` reads files into these
models; every problem names the file and the key (`cases/README.md`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import BeforeValidator, Field, PrivateAttr, field_validator, model_validator

from .. import limits, versions
from ..contract import limits as contract_limits
from ..contract import p10
from ..frameworks import FRAMEWORKS, modes_of
from .base import MAX_COUNT, FiniteFloat, Model, NonNegativeInt, PositiveFloat, PositiveInt, quote

Framework = Literal["torch", "burn"]
# `unsupported`: a program used an operation the framework does not have (not an error of the runner).
# `oom`: the run reached its memory limit (`execution.memory_mib`).
Outcome = Literal["ok", "panic", "error", "unsupported", "crash", "timeout", "oom"]
OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]
# Categorical properties a pair compares (see `runner.metrics.properties`).
Property = Literal["outcome", "tracked", "grows", "rss_grows"]
PAIR_PROPERTIES: tuple[str, ...] = Property.__args__  # type: ignore[attr-defined]
# What program pairs compare besides: every observation's values, gradients or
# flags (`values`), or one label's (`values:ema`); see `runner.oracles`.
OBSERVATION_PROPERTIES = ("values", "grads", "flags")


def _pair_property(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    base, sep, label = value.partition(":")
    if value in PAIR_PROPERTIES or (base in OBSERVATION_PROPERTIES and (not sep or label)):
        return value
    valid = ", ".join([*PAIR_PROPERTIES, *OBSERVATION_PROPERTIES])
    raise ValueError(f"unknown property {value!r}; valid: {valid} (the last three also as values:LABEL)")


PairProperty = Annotated[str, BeforeValidator(_pair_property)]

SEED_CHECKPOINTS = p10.SEED_CHECKPOINTS
default_checkpoints = p10.default_checkpoints


class RunRef(Model):
    """One run of a case: `torch/detach`."""

    framework: Framework
    mode: Annotated[str, Field(min_length=1)]

    def __str__(self) -> str:
        return f"{self.framework}/{self.mode}"

    @classmethod
    def parse(cls, text: str) -> RunRef:
        framework, sep, mode = text.partition("/")
        if not sep or framework not in FRAMEWORKS or not mode:
            raise ValueError(
                f"expected FRAMEWORK/MODE with FRAMEWORK one of {', '.join(FRAMEWORKS)}, got {quote(text)}"
            )
        return cls(framework=framework, mode=mode)  # type: ignore[arg-type]


def _run_ref(value: Any) -> Any:
    return RunRef.parse(value) if isinstance(value, str) else value


RunRefText = Annotated[RunRef, BeforeValidator(_run_ref)]


def _requirement(value: str | None) -> str | None:
    if value is not None:
        versions.parse_requirement(value)
    return value


VersionRequirement = Annotated[str, BeforeValidator(lambda v: v if not isinstance(v, str) else _requirement(v))]


class Bounds(Model):
    min: FiniteFloat | None = None
    max: FiniteFloat | None = None

    @model_validator(mode="after")
    def _check(self) -> Bounds:
        if self.min is None and self.max is None:
            raise ValueError("needs min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min:g}) is greater than max ({self.max:g})")
        return self

    def holds(self, value: float | None) -> bool:
        if value is None or math.isnan(value):
            return False
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)

    def describe(self) -> str:
        if self.min is not None and self.max is not None:
            return f"{self.min:g}..{self.max:g}"
        if self.min is not None:
            return f">= {self.min:g}"
        return f"<= {self.max:g}"


class Expect(Model):
    outcome: Outcome | None = None
    tracked: bool | None = None
    panic_step: PositiveInt | None = None
    panic_message: str | None = None
    slowdown_ratio: Bounds | None = None
    rss_growth_mib_per_1000: Bounds | None = None
    # Programs: the operation a failed run stopped at, text its message contains,
    # and the flags of observed tensors (label -> flag -> value, at the last observation).
    failure_op: str | None = None
    message: str | None = None
    flags: dict[str, dict[Literal["tracked", "requires_grad"], bool]] = {}
    # The expectations hold for these burn versions only (a fixed difference is
    # recorded by narrowing this, not deleted).
    burn_versions: VersionRequirement | None = None

    @model_validator(mode="after")
    def _check(self) -> Expect:
        if (self.panic_step or self.panic_message) and self.outcome not in (None, "panic"):
            raise ValueError(f'panic_step/panic_message need outcome = "panic", got {self.outcome!r}')
        return self


class RunSpec(Model):
    framework: Framework
    mode: Annotated[str, Field(min_length=1)]
    expect: Expect = Expect()

    @property
    def ref(self) -> RunRef:
        return RunRef(framework=self.framework, mode=self.mode)

    @property
    def key(self) -> str:
        return str(self.ref)


class PairSpec(Model):
    a: RunRefText
    b: RunRefText
    same: list[PairProperty] = []
    differ: list[PairProperty] = []
    reason: Annotated[str, Field(min_length=1)]
    burn_versions: VersionRequirement | None = None

    @field_validator("reason")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @model_validator(mode="after")
    def _check(self) -> PairSpec:
        if not self.same and not self.differ:
            raise ValueError("needs same, differ or both")
        return self

    @property
    def claims(self) -> list[tuple[Literal["same", "differ"], str]]:
        same: list[tuple[Literal["same", "differ"], str]] = [("same", p) for p in self.same]
        return same + [("differ", p) for p in self.differ]


_P10 = {param.name: param for param in p10.PARAMS}


def _p10_field(name: str) -> Any:
    """A p10 parameter's default and range, from the contract (`runner.contract.p10`)."""
    spec = _P10[name]
    exclusive = spec.minimum_exclusive
    maximum = spec.maximum if spec.maximum is not None or spec.type == "float" else MAX_COUNT
    return Field(
        default=spec.default,
        gt=spec.minimum if exclusive else None,
        ge=None if exclusive else spec.minimum,
        le=maximum,
    )


class P10Params(Model):
    """The p10 loop's parameters (`docs/p10-experiment.md`): their ranges and defaults are
    the contract's (`runner.contract.p10`), which the probe's are generated from."""

    d_in: int = _p10_field("d_in")
    d_out: int = _p10_field("d_out")
    batch: int = _p10_field("batch")
    lr: FiniteFloat = _p10_field("lr")
    steps: int = _p10_field("steps")
    checkpoints: list[PositiveInt] = []  # empty: `default_checkpoints(steps)`
    ema_decay: FiniteFloat = _p10_field("ema_decay")
    seed: int = _p10_field("seed")
    rss_every: int = _p10_field("rss_every")
    # Calibration only (`python3 -m runner.calibrate`): a busy wait added to every
    # step, inside its timed region, to inject a known slowdown. 0: off.
    busy_wait_us: int = _p10_field("busy_wait_us")

    @model_validator(mode="after")
    def _sizes(self) -> P10Params:
        for key, elements, what in (
            ("d_out", self.d_in * self.d_out, "d_in x d_out"),
            ("batch", self.batch * self.d_in, "batch x d_in"),
        ):
            if elements > contract_limits.P10_MAX_ELEMENTS:
                raise ValueError(
                    f"{key}: {what} = {elements} elements; at most {contract_limits.P10_MAX_ELEMENTS} "
                    f"(the probe's limit, runner/contract/limits.py)"
                )
        return self

    @model_validator(mode="after")
    def _check(self) -> P10Params:
        if not self.checkpoints:
            object.__setattr__(self, "checkpoints", default_checkpoints(self.steps))
        previous = 0
        for point in self.checkpoints:
            if point > self.steps:
                raise ValueError(
                    f"checkpoints: every checkpoint must be a step from 1 to steps ({self.steps}), got {point}"
                )
            if point <= previous:
                raise ValueError(f"checkpoints: must be strictly increasing, got {point} after {previous}")
            previous = point
        return self

    def with_steps(self, steps: int) -> P10Params:
        points = default_checkpoints(steps, self.checkpoints)
        return P10Params.model_validate({**self.model_dump(), "steps": steps, "checkpoints": points})


class Windows(Model):
    """Steps `1..warmup` are ignored; the reference window is the `reference`
    steps after them; the last window is the final `last` steps."""

    warmup: NonNegativeInt = 50
    reference: PositiveInt = 150
    last: PositiveInt = 200

    def reference_range(self) -> tuple[int, int]:
        return self.warmup + 1, self.warmup + self.reference

    def last_range(self, steps: int) -> tuple[int, int]:
        return steps - self.last + 1, steps

    def check_fits(self, steps: int) -> None:
        """Reference and last windows must fit in the steps without overlapping."""
        needed = self.warmup + self.reference + self.last
        if needed > steps:
            raise ValueError(
                f"warmup + reference + last = {self.warmup} + {self.reference} + {self.last} = {needed} "
                f"steps, more than the {steps} steps run; use at least {needed} steps or smaller windows"
            )


class Thresholds(Model):
    grows_ratio: PositiveFloat = 2.0
    rss_grows_mib_per_1000: FiniteFloat = 8.0


class Execution(Model):
    timeout_s: Annotated[float, Field(gt=0, le=86_400, allow_inf_nan=False)] = 600.0
    # The worker's address space limit (RLIMIT_AS); a run that reaches it is outcome "oom".
    memory_mib: Annotated[int, Field(ge=limits.MIN_MEMORY_MIB, le=limits.MAX_MEMORY_MIB)] = limits.DEFAULT_MEMORY_MIB


# What a difference's kind may be declared as in `[about] difference` (`runner.harm`).
DeclaredHarm = Literal["crash", "values", "growth", "default"]
# The fix the fuzzer writes into a found case's [about] until a person judges it.
UNJUDGED_FIX = "Not judged yet."


class About(Model):
    """The difference a case documents, for a person porting code: what each
    framework does and the burn idiom that matches PyTorch. The report's
    difference cards are made of this."""

    title: Annotated[str, Field(min_length=1, max_length=200)]
    torch: Annotated[str, Field(min_length=1)]
    burn: Annotated[str, Field(min_length=1)]
    fix: Annotated[str, Field(min_length=1)]
    # Issues, docs or PRs that say the same (burn's tracker, the seed notes).
    sources: list[str] = []
    # The kind of difference, where the claims cannot tell it (`runner.harm`): a
    # default that differs reads as different values. Default: from the claims.
    difference: DeclaredHarm | None = None
    # False: written by the fuzzer and not yet judged by a person (a burn bug,
    # a torch quirk, a documented difference); the report says it awaits one.
    judged: bool = True

    @property
    def awaits_judgement(self) -> bool:
        """Not judged yet: `judged = false`, or a found case written before that key (its fix says so)."""
        return not self.judged or self.fix == UNJUDGED_FIX

    @field_validator("title", "torch", "burn", "fix")
    @classmethod
    def _strip(cls, value: str) -> str:
        return " ".join(value.split())


class Tolerance(Model):
    """When two float32 values count as the same: |a - b| <= abs + rel * max(|a|, |b|)
    (NaN equals NaN, an infinity equals the same infinity). With `abs_scale = "tensor"` the
    absolute term is `abs` times the largest finite magnitude of the two arrays compared (the
    observed tensor in either run), so that an element near zero (a gradient) is judged against
    its tensor's scale rather than its own. See `cases/README.md`."""

    abs: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 1e-5
    rel: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 1e-4
    abs_scale: Literal["absolute", "tensor"] = "absolute"

    def absolute(self, a: Sequence[float], b: Sequence[float]) -> float:
        """The absolute term when arrays `a` and `b` are compared element by element."""
        if self.abs_scale == "absolute":
            return self.abs
        largest = max((abs(v) for v in (*a, *b) if math.isfinite(v)), default=0.0)
        return self.abs * largest

    def close(self, x: float, y: float, absolute: float) -> bool:
        """One element: |x - y| <= absolute + rel * max(|x|, |y|) (`absolute` from `absolute()`);
        NaN equals NaN, an infinity the same infinity. The one rule the oracles and the report use."""
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        if math.isinf(x) or math.isinf(y):
            return x == y
        return abs(x - y) <= absolute + self.rel * max(abs(x), abs(y))

    def describe(self) -> str:
        """`abs 1e-07, rel 0.001`, or `abs 6e-05 x the tensor's max, rel 0` (its largest magnitude)."""
        scaled = " x the tensor's max" if self.abs_scale == "tensor" else ""
        return f"abs {self.abs:g}{scaled}, rel {self.rel:g}"


ObservedWhat = Literal["values", "grads"]


@dataclass(frozen=True)
class Tolerances:
    """Which tolerance an observation of a program case is compared with, in one place (the
    oracles' `values:`/`grads:` claims and the report's checkpoints): `[program] tolerance` for
    every observation made after the timed loop (the losses, the final weights), and for those
    made inside it (a weight and its gradient at the checkpoints) `weights_tolerance` for their
    values and `grads_tolerance` for their gradients, each falling back on the one before."""

    loss: Tolerance = field(default_factory=Tolerance)
    weights: Tolerance | None = None
    grads: Tolerance | None = None

    def of(self, what: ObservedWhat, iteration: int | None) -> Tolerance:
        """The tolerance of an observation's `values` or `grads` made at `iteration` of the timed
        loop (None: after it)."""
        return self.loss if iteration is None else self.inside(what)

    def inside(self, what: ObservedWhat) -> Tolerance:
        """The tolerance of the `values` or `grads` of an observation made inside the timed loop."""
        if what == "grads":
            return self.grads or self.weights or self.loss
        return self.weights or self.loss


class ProgramSpec(Model):
    """The program(s) of a case, in the source syntax (`docs/program-ir.md`).

    `source` is one program (its variant is named `main`); `variants` names
    several (e.g. `detach` and `without`), each appended to `prelude`."""

    source: str | None = None
    prelude: str = ""
    variants: dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,39}$")], str] = {}
    seed: NonNegativeInt = 0
    tolerance: Tolerance = Tolerance()
    # The values and the gradients of observations made inside the timed loop (a weight at the
    # checkpoints); None: the one before applies (grads: weights_tolerance, weights: tolerance).
    weights_tolerance: Tolerance | None = None
    grads_tolerance: Tolerance | None = None
    # The timed loop (the first top-level `for`): checkpoint iterations (default:
    # the seed's rule for its count), RSS every N iterations, the tensor whose
    # flags each checkpoint records.
    checkpoints: list[PositiveInt] = []
    rss_every: NonNegativeInt = 0
    track: str | None = None
    # The timed loop's iteration count when the pytest case collector runs the case (the default
    # test suite: a model trained for a few steps); `check` and `report` run it as written.
    test_steps: PositiveInt | None = None
    # Initial values from a numpy `.npz` archive next to the case file (a file name, no folder):
    # each key names a declared tensor (`fc1.weight`, `x`), which takes its values from the file.
    data: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}\.npz$")] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> ProgramSpec:
        if (self.source is None) == (not self.variants):
            raise ValueError("program: give `source` (one program) or `variants` (several), not both")
        if self.source is not None and self.prelude:
            raise ValueError("program: `prelude` goes with `variants`")
        return self

    @property
    def tolerances(self) -> Tolerances:
        return Tolerances(self.tolerance, self.weights_tolerance, self.grads_tolerance)

    def sources(self) -> dict[str, str]:
        """Variant name -> full source text."""
        if self.source is not None:
            return {"main": self.source}
        joined = self.prelude.rstrip("\n") + "\n" if self.prelude.strip() else ""
        return {name: joined + text for name, text in self.variants.items()}


class _CaseBase(Model):
    """What every kind of case has: its name and what it is about, the windows and
    thresholds its metrics use, how its runs execute, the runs and the pairs."""

    name: Annotated[str, Field(min_length=1, max_length=200)]
    description: str = ""
    about: About | None = None
    windows: Windows = Windows()
    thresholds: Thresholds = Thresholds()
    execution: Execution = Execution()
    runs: Annotated[list[RunSpec], Field(min_length=1)]
    pairs: list[PairSpec] = []

    _path: Path = PrivateAttr(default=Path("<memory>"))

    @field_validator("description")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    def _mode_problem(self, framework: str, mode: str) -> str | None:
        """Why `mode` is not a mode of this case for `framework` (None: it is)."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _check_runs_and_pairs(self) -> _CaseBase:
        seen: set[str] = set()
        for index, run in enumerate(self.runs):
            problem = self._mode_problem(run.framework, run.mode)
            if problem is not None:
                raise ValueError(f"runs[{index}].mode: {problem}")
            if run.expect.burn_versions and run.framework != "burn":
                raise ValueError(
                    f"runs[{index}].expect.burn_versions: only burn runs can be limited to "
                    f"burn versions; this is a {run.framework} run"
                )
            if run.key in seen:
                raise ValueError(f"runs[{index}]: {run.key} is listed twice")
            seen.add(run.key)
        for index, pair in enumerate(self.pairs):
            for end in ("a", "b"):
                ref = getattr(pair, end)
                if str(ref) not in seen:
                    raise ValueError(
                        f"pairs[{index}].{end}: {quote(str(ref))} is not a run of this case; "
                        f"runs: {', '.join(r.key for r in self.runs)}"
                    )
        return self

    @property
    def path(self) -> Path:
        return self._path

    def located(self, path: Path) -> Self:
        self._path = path
        return self

    @property
    def timeout_s(self) -> float:
        return self.execution.timeout_s

    @property
    def memory_mib(self) -> int:
        return self.execution.memory_mib

    def run(self, key: str) -> RunSpec | None:
        return next((r for r in self.runs if r.key == key), None)


class P10Case(_CaseBase):
    kind: Literal["p10"]
    params: P10Params = P10Params()

    def _mode_problem(self, framework: str, mode: str) -> str | None:
        valid = modes_of(self.kind, framework)
        return None if mode in valid else f"unknown mode {quote(mode)} for {framework}; valid: {', '.join(valid)}"

    @model_validator(mode="after")
    def _windows_fit(self) -> P10Case:
        self.windows.check_fits(self.params.steps)
        return self

    @property
    def steps(self) -> int:
        return self.params.steps

    def request_params(self, mode: str) -> dict[str, Any]:
        """What the worker's adapter gets for a run of `mode`."""
        return self.params.model_dump()

    def recorded_params(self, mode: str, params: dict[str, Any]) -> dict[str, Any] | None:
        return None

    def replace(self, **changes: Any) -> P10Case:
        """A copy with fields changed (validated again), keeping the file path."""
        data = {**self.model_dump(), **{k: v.model_dump() if isinstance(v, Model) else v for k, v in changes.items()}}
        return type(self).model_validate(data).located(self.path)


class ProgramCase(_CaseBase):
    """A case whose runs execute a program under each framework (`kind = "program"`)."""

    kind: Literal["program"]
    program: ProgramSpec

    # Set by the loader: variant -> how its program (the IR both interpreters run) is made, and
    # the timed loop's iteration count (0: no loop). A program is made when a run needs it.
    _programs: dict[str, Any] = PrivateAttr(default_factory=dict)
    _steps: int = PrivateAttr(default=0)

    def _mode_problem(self, framework: str, mode: str) -> str | None:
        variants = list(self.program.sources())
        if mode in variants:
            return None
        return f"{quote(mode)} is not a program variant of this case; variants: {', '.join(variants)}"

    def with_programs(self, programs: dict[str, Any], steps: int) -> ProgramCase:
        self._programs, self._steps = programs, steps
        return self

    @property
    def programs(self) -> dict[str, Any]:
        """Variant -> its `runner.program.data.Recipe` (`.make()` gives the program, `.settings` its settings)."""
        return self._programs

    @property
    def steps(self) -> int:
        """Iterations of the timed loop (0 if the programs have none)."""
        return self._steps

    @property
    def params(self) -> ProgramSpec:
        return self.program

    def request_params(self, mode: str) -> dict[str, Any]:
        """What the worker's adapter gets for a run of `mode`: the program (IR) itself, made now."""
        return {"program": self._programs[mode].make().model_dump(mode="json")}

    def recorded_params(self, mode: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """What a run record keeps of `params` (`request_params`'s): the program's identity, not its
        data (which can be megabytes)."""
        program = params["program"]
        text = json.dumps(program, sort_keys=True, separators=(",", ":"))
        return {
            "variant": mode,
            "seed": self.program.seed,
            "ir_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "tensors": {t["name"]: list(t["shape"]) for t in program["tensors"]},
            "timed_loop_iterations": self._steps,
        }

    def copy_with(self, **changes: Any) -> ProgramCase:
        """A copy with fields changed, keeping the path and the programs."""
        copied = self.model_copy(update=changes)
        copied._path, copied._programs, copied._steps = self._path, self._programs, self._steps
        return copied


Case = P10Case | ProgramCase

# Pair properties that are about step time or memory.
TIMING_PROPERTIES = ("grows", "rss_grows")


def claims_timing(case: Case, spec: RunSpec) -> bool:
    """Does the case claim anything about this run's step time or memory (a
    slowdown ratio or RSS growth bound, or a pair's `grows`/`rss_grows`)? Such
    a run is timed: it runs alone, with the noise controls, and is repeated
    with `--repeat`. Every other run only shows semantics (outcome, panic,
    flags, values) and may run side by side with others."""
    if spec.expect.slowdown_ratio is not None or spec.expect.rss_growth_mib_per_1000 is not None:
        return True
    return any(
        spec.ref in (pair.a, pair.b) and any(p in TIMING_PROPERTIES for p in (*pair.same, *pair.differ))
        for pair in case.pairs
    )
