"""The results document (`check --json`, `report`'s results.json, history
entries) as typed models: one schema from the producers to the readers.

`schemas/results.schema.json` is generated from `ResultsDocument` (and checked
by a test against it); `runner.model.migrate` reads older schema versions.
"""

from __future__ import annotations

import builtins
import datetime as dt
import json
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, PlainSerializer, model_validator

from . import nonfinite
from .base import (
    Measure,
    Model,
    NonNegativeInt,
    NonNegativeMeasure,
    PositiveInt,
    ShallowJson,
)
from .case import About, Outcome, RunRef, Tolerance, Tolerances

M = TypeVar("M", bound=Model)

SCHEMA_VERSION: Literal[2] = 2
# A file of several results documents (one per machine), as `report` writes it.
BUNDLE_KEY = "merged_results_schema_version"
BUNDLE_VERSION: Literal[2] = 2

ShortText = Annotated[str, Field(max_length=1_000_000)]
FlagValue = bool | str | int | float | None
# A run in a results document: (case, framework, mode), as `RawRun.key`.
RunKey = tuple[str, str, str]
# An expectation checked: (case, subject, check), as `Verdict.key`.
ClaimKey = tuple[str, str, str]
# A categorical property of a run that pairs compare (`runner.metrics.properties`): an outcome, or a flag.
PropertyValue = str | bool | None


def _reasonable_time(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    try:
        utc = value.astimezone(dt.UTC)
    except OverflowError:
        raise ValueError("a time that cannot be converted to UTC") from None
    if not 1970 <= utc.year <= 9999:
        raise ValueError(f"a time in the year {utc.year}, expected 1970 to 9999")
    return value


Timestamp = Annotated[dt.datetime, AfterValidator(_reasonable_time)]


class Panic(Model):
    """A panic inside burn, caught by the probe."""

    message: ShortText
    location: str | None = None  # file:line:column
    file: str | None = None
    line: NonNegativeInt | None = None
    column: NonNegativeInt | None = None
    step: NonNegativeInt | None = None  # 0: during setup
    phase: str | None = None


class RunError(Model):
    """An exception raised by the adapter (torch or the probe's Python face)."""

    type: str
    message: ShortText
    traceback: ShortText | None = None


class Crash(Model):
    """The worker died without a record: a signal or an exit code."""

    signal: str | None = None
    exit_code: Annotated[int, Field(ge=-(2**31), lt=2**31)] | None = None
    stderr_tail: ShortText = ""


class OutOfMemory(Model):
    """The run reached its memory limit (`execution.memory_mib`), or the machine's."""

    limit_mib: PositiveInt | None = None
    peak_mib: NonNegativeMeasure | None = None  # the worker's peak address space, where it was seen
    # What said so: "MemoryError: ...", "memory allocation of 268435456 bytes failed", "SIGKILL at the limit".
    detail: ShortText
    stderr_tail: ShortText = ""


# A tensor's value as observed: NaN and infinities are observations too. JSON has
# no words for them, so the results file spells them "NaN", "Infinity", "-Infinity".
ValueFloat = Annotated[
    float,
    Field(allow_inf_nan=True),
    BeforeValidator(nonfinite.read_word),
    PlainSerializer(nonfinite.spell, return_type=float | str, when_used="json"),
]


class Failure(Model):
    """Where a program run stopped: the operation (index in pre-order, name,
    source line), the loop iteration, and what the framework said."""

    op_index: NonNegativeInt | None = None
    op: str | None = None
    line: NonNegativeInt | None = None
    iteration: PositiveInt | None = None
    message: ShortText
    type: str | None = None  # the exception type (torch), or the kind of failure
    location: str | None = None  # a panic's file:line:column (burn)


class Flags(Model):
    """A tensor's autodiff flags, normalised (`tracked`, `requires_grad`) and as the framework names them."""

    tracked: bool
    requires_grad: bool
    raw: dict[str, FlagValue] = {}


class Observation(Model):
    """One `observe` of a program: the tensor's shape, values, gradient and flags."""

    label: str
    tensor: str
    op_index: NonNegativeInt
    iteration: PositiveInt | None = None
    shape: list[NonNegativeInt]
    values: list[ValueFloat] | None = None
    grad: list[ValueFloat] | None = None
    flags: Flags


class Checkpoint(Model):
    """State at a checkpoint of a timed loop: the mean time per step since the previous one,
    the RSS, and the tracked tensor's flags as the framework names them."""

    step: PositiveInt
    ms_per_step: NonNegativeMeasure
    rss_bytes: NonNegativeInt | None = None
    rss_delta_mib: Measure | None = None
    tracked: bool | None = None
    flags: dict[str, FlagValue] = {}


class InterpreterResult(Model):
    """What a program interpreter returns for one run (`docs/program-ir.md` section 4): the
    probe's `ProgramResult` (`rust_probe/src/record.rs`, held to this model by
    `tests/test_contract.py`) and the torch interpreter's, alike."""

    outcome: Literal["ok", "panic", "error", "unsupported"]
    failure: Failure | None = None
    observations: list[Observation] = []
    step_ms: list[NonNegativeMeasure] = []
    checkpoints: list[Checkpoint] = []
    rss_samples: list[tuple[NonNegativeInt, Measure]] = []
    setup_ms: NonNegativeMeasure = 0.0

    @model_validator(mode="after")
    def _failure_matches(self) -> InterpreterResult:
        if (self.outcome == "ok") != (self.failure is None):
            raise ValueError(f"outcome {self.outcome!r}: a failure goes with every outcome but 'ok'")
        return self


class Slope(Model):
    value: Measure
    ci95: tuple[Measure, Measure]


def _ordered(window: tuple[int, int]) -> tuple[int, int]:
    if window[0] > window[1]:
        raise ValueError(f"a window from step {window[0]} to step {window[1]}: the first step is after the last")
    return window


# Steps first..last (1-based, inclusive).
Window = Annotated[tuple[PositiveInt, PositiveInt], AfterValidator(_ordered)]


class Spread(Model):
    """A metric over a run's repeats: the lowest and highest per-repeat value
    (the metric itself is their median) and how many repeats had one."""

    min: Measure
    max: Measure
    n: PositiveInt

    def relative(self, median: float | None) -> float | None:
        """(max - min) / median: the spread as a fraction of the metric."""
        return (self.max - self.min) / median if median else None


class Metrics(Model):
    """Computed from a run's per-step times and checkpoints (`runner.metrics`).

    A run repeated K times (`--repeat K`) has, for each timing metric, the
    median over its repeats, and the repeats' range in `spread`."""

    steps_completed: NonNegativeInt
    # None: the run has no timed loop long enough for the case's windows.
    reference_window: Window | None
    last_window: Window | None
    reference_median_ms: NonNegativeMeasure | None = None
    last_median_ms: NonNegativeMeasure | None = None
    slowdown_ratio: NonNegativeMeasure | None = None
    slope_ms_per_1000: Slope | None = None
    rss_growth_mib_per_1000: Measure | None = None
    tracked: bool | None = None
    tracked_consistent: bool = True
    # The cost of one step in context: floating-point operations of one step (p10:
    # the hand count of `runner.cost`; a program: torch's count of one iteration of
    # its timed loop, `runner.program.flops`, the same for the torch and the burn
    # run of a variant), and the rate achieved over the reference window (a timed
    # loop too short for the windows: over its median iteration), in GFLOP/s; None
    # where the count is not known.
    step_mflop: NonNegativeMeasure | None = None
    gflops: NonNegativeMeasure | None = None
    # How many repeats (fresh processes) the timing metrics are medians of, and
    # each metric's range over them ("reference_median_ms", "slowdown_ratio", ...).
    repeats: PositiveInt = 1
    spread: dict[str, Spread] = {}


class Conditions(Model):
    """What a run ran under (`runner.noise`): alone with the noise controls
    (`timed`, a run its case makes timing or memory claims about) or side by
    side with other semantic runs, the controls, the CPU it was pinned to, and
    the machine's 1-minute load average when it started and ended."""

    timed: bool | None = None
    controls: str | None = None
    cpu: NonNegativeInt | None = None
    load_before: NonNegativeMeasure | None = None
    load_after: NonNegativeMeasure | None = None


class RawRun(Model):
    """One run as the worker (or the parent, for a crash or timeout) reported it."""

    case: str
    framework: Literal["torch", "burn"]
    mode: str
    outcome: Outcome
    panic: Panic | None = None
    error: RunError | None = None
    crash: Crash | None = None
    oom: OutOfMemory | None = None
    timeout_s: NonNegativeMeasure | None = None
    # The address space the worker was limited to (RLIMIT_AS), in MiB.
    memory_mib: PositiveInt | None = None
    stderr_tail: ShortText | None = None
    versions: dict[str, str | None] = {}
    params: dict[str, ShallowJson] = {}
    step_ms: list[NonNegativeMeasure] = []
    checkpoints: list[Checkpoint] = []
    rss_samples: list[tuple[NonNegativeInt, Measure]] = []
    wall_s: NonNegativeMeasure = 0.0
    # Making the initial tensors and modules, before the first step (milliseconds).
    setup_ms: NonNegativeMeasure | None = None
    # Program runs: where the program stopped, and what each `observe` saw.
    failure: Failure | None = None
    observations: list[Observation] = []
    conditions: Conditions | None = None

    @model_validator(mode="after")
    def _failure_as_panic_or_error(self) -> RawRun:
        """A program run says where it stopped in `failure`; every run's panic or error is
        also read from `panic` / `error` (the report's and the verdicts' view of any run)."""
        failure = self.failure
        if failure is not None and self.outcome == "panic" and self.panic is None:
            panic = Panic(message=failure.message, location=failure.location, step=failure.iteration, phase=failure.op)
            object.__setattr__(self, "panic", panic)
        elif failure is not None and self.outcome == "error" and self.error is None:
            object.__setattr__(self, "error", RunError(type=failure.type or "Error", message=failure.message))
        return self

    @model_validator(mode="after")
    def _details_match_outcome(self) -> RawRun:
        needs = {
            "panic": self.panic,
            "error": self.error,
            "crash": self.crash,
            "oom": self.oom,
            "unsupported": self.failure,
        }
        if self.outcome in needs and needs[self.outcome] is None:
            raise ValueError(f"outcome {self.outcome!r} needs its {self.outcome!r} details")
        return self

    @property
    def ref(self) -> RunRef:
        return RunRef(framework=self.framework, mode=self.mode)

    @property
    def key(self) -> RunKey:
        return self.case, self.framework, self.mode


class Repeat(Model):
    """One repeat of a timed run (`--repeat K`): a fresh worker process, and
    the metrics of its own per-step times."""

    outcome: Outcome
    steps_completed: NonNegativeInt
    reference_median_ms: NonNegativeMeasure | None = None
    last_median_ms: NonNegativeMeasure | None = None
    slowdown_ratio: NonNegativeMeasure | None = None
    rss_growth_mib_per_1000: Measure | None = None
    gflops: NonNegativeMeasure | None = None
    wall_s: NonNegativeMeasure = 0.0
    conditions: Conditions | None = None


class RunRecord(RawRun):
    """One run: what the worker reported, and the metrics computed from it.

    A repeated run is recorded as its first repeat (outcome, per-step times,
    checkpoints, observations), with every repeat's own metrics in `repeats`
    (in the order they ran) and `metrics` their medians."""

    metrics: Metrics
    repeats: list[Repeat] = []


def from_data(model: type[M], data: Any) -> M:
    """Validate plain data (lists where the model has tuples) as JSON would be. NaN and
    infinities pass the encoder; only observed values (`ValueFloat`) accept them."""
    return model.model_validate_json(json.dumps(data))


def pair_check(relation: str | None, prop: str) -> str:
    """What a pair verdict checks, as its key says it: `pair same: tracked`."""
    return f"pair {relation}: {prop}"


class Verdict(Model):
    """One expectation checked: a run's (`relation` "expect") or a pair's
    (`relation` "same" or "differ", `b` set, `observed` {"a": ..., "b": ...})."""

    case: str
    a: RunRef
    b: RunRef | None = None
    relation: Literal["expect", "same", "differ"]
    property: str
    expected: ShallowJson
    observed: ShallowJson
    passed: bool
    reason: str | None = None

    @model_validator(mode="after")
    def _pair_has_both_ends(self) -> Verdict:
        if (self.relation == "expect") != (self.b is None):
            raise ValueError("a pair verdict (same/differ) names both runs a and b; a run's (expect) only a")
        return self

    @builtins.property
    def is_pair(self) -> bool:
        return self.b is not None

    @builtins.property
    def subject(self) -> str:
        """`burn/detach`, or `torch/detach ~ burn/detach` for a pair."""
        return f"{self.a} ~ {self.b}" if self.b is not None else str(self.a)

    @builtins.property
    def check(self) -> str:
        """`slowdown_ratio`, or `pair same: tracked`."""
        return self.property if self.b is None else pair_check(self.relation, self.property)

    @builtins.property
    def key(self) -> ClaimKey:
        return self.case, self.subject, self.check


class Skipped(Model):
    """An expectation limited to other burn versions (`burn_versions`), not checked."""

    case: str
    a: RunRef
    b: RunRef | None = None
    burn_versions: str
    burn: str | None = None

    @builtins.property
    def subject(self) -> str:
        return f"{self.a} ~ {self.b}" if self.b is not None else str(self.a)


class Provenance(Model):
    """Where and when the runs ran. The machine's state is part of it: the
    1-minute load average at the start and at the end, the mean CPU frequency
    where readable, the noise controls and repeats of the timed runs, and the
    nominal float32 peak of one core (`runner.cost.cpu_peak`)."""

    burn: str | None = None
    probe_profile: str | None = None
    torch: str | None = None
    rustc: str | None = None
    python: str | None = None
    cpu: str
    machine: str  # the processor architecture, as platform.machine() names it (x86_64, aarch64)
    system: str
    cores: Annotated[int, Field(ge=1, le=1 << 20)] | None = None
    git_commit: str | None = None
    started: Timestamp
    finished: Timestamp | None = None
    load_start: NonNegativeMeasure | None = None
    load_end: NonNegativeMeasure | None = None
    cpu_mhz: NonNegativeMeasure | None = None
    noise_controls: str | None = None
    repeat: PositiveInt | None = None
    peak_gflops: NonNegativeMeasure | None = None
    peak_basis: str | None = None


class Summary(Model):
    runs: NonNegativeInt
    expectations: NonNegativeInt
    passed: NonNegativeInt
    failed: NonNegativeInt

    @classmethod
    def of(cls, runs: list[RunRecord], expectations: list[Verdict]) -> Summary:
        failed = sum(not verdict.passed for verdict in expectations)
        return cls(runs=len(runs), expectations=len(expectations), passed=len(expectations) - failed, failed=failed)


class PairInfo(Model):
    a: RunRef
    b: RunRef
    same: list[str] = []
    differ: list[str] = []
    reason: str = ""


class ProgramInfo(Model):
    """One variant of a program case, as its source and what its runs record
    (the report renders the PyTorch and burn code it stands for from these,
    `runner.report.code`)."""

    source: str
    # The program's settings (`runner.program.ir.Settings`): the timed loop's
    # checkpoints, RSS sampling, the tensor whose flags each checkpoint records.
    checkpoints: list[PositiveInt] = []
    rss_every: NonNegativeInt = 0
    track: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _rendered_code_is_not_kept(cls, data: Any) -> Any:
        """Results written before kept the rendered code too (`torch_code`, `burn_code`): read, and left."""
        if isinstance(data, dict) and ("torch_code" in data or "burn_code" in data):
            return {k: v for k, v in data.items() if k not in ("torch_code", "burn_code")}
        return data


class CaseInfo(Model):
    """What a case is about, carried in the results so that a report made from
    results files alone can explain each difference."""

    name: str
    kind: str
    description: str = ""
    about: About | None = None
    pairs: list[PairInfo] = []
    programs: dict[str, ProgramInfo] = {}
    # A program case's tolerance (`[program] tolerance`): when two observed values count as the
    # same; the report's loss curves say where they part beyond it. None: not a program case.
    tolerance: Tolerance | None = None
    # Its tolerances of the values and gradients observed inside the timed loop (`[program]
    # weights_tolerance`, `grads_tolerance`): the report's checkpoints. None: the one before applies.
    weights_tolerance: Tolerance | None = None
    grads_tolerance: Tolerance | None = None

    @property
    def tolerances(self) -> Tolerances:
        """The case's tolerances, as its oracles apply them (`runner.model.case.Tolerances`)."""
        return Tolerances(self.tolerance or Tolerance(), self.weights_tolerance, self.grads_tolerance)


class ResultsDocument(Model):
    schema_version: Literal[2]
    provenance: Provenance
    summary: Summary
    cases: list[CaseInfo] = []
    runs: list[RunRecord]
    expectations: list[Verdict]
    not_applicable: list[Skipped] = []
    # A check stopped before its end (a signal): the runs completed until then.
    partial: bool = False
    partial_reason: ShortText | None = None

    @model_validator(mode="after")
    def _partial_has_its_reason(self) -> ResultsDocument:
        if self.partial_reason is not None and not self.partial:
            raise ValueError("partial_reason: only a partial document (partial = true) has one")
        return self

    @model_validator(mode="after")
    def _runs_unique(self) -> ResultsDocument:
        seen: set[RunKey] = set()
        for index, run in enumerate(self.runs):
            if run.key in seen:
                raise ValueError(f"runs[{index}]: a second run of {run.case} {run.framework}/{run.mode}")
            seen.add(run.key)
        return self

    def run(self, key: RunKey) -> RunRecord | None:
        return next((r for r in self.runs if r.key == key), None)


class Bundle(Model):
    """Several results documents in one file (one per machine)."""

    merged_results_schema_version: Literal[2]
    results: Annotated[list[ResultsDocument], Field(min_length=1)]


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a results document, as committed in `schemas/`."""
    schema = ResultsDocument.model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://github.com/burn-torch-diff/schemas/results.schema.json"
    return schema
