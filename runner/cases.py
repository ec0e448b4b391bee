"""Case files: load, validate, and apply command-line overrides.

A case file is data (TOML): parameters, windows, runs with their expected
semantics, and the torch-vs-burn pairs that state the differential claim.
`cases/README.md` documents every key. Every problem is reported as
`BadInput` naming the file, the key and what would be valid.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

from . import semver
from .errors import BadInput
from .frameworks import ADAPTERS, FRAMEWORKS, KINDS, modes_of

CASES_DIR = Path(__file__).resolve().parent.parent / "cases"

OUTCOMES = ("ok", "panic", "error", "crash", "timeout")
# Categorical properties a pair can compare (see `metrics.properties`).
PAIR_PROPERTIES = ("outcome", "tracked", "grows", "rss_grows")

P10_DEFAULTS: dict[str, Any] = {
    "d_in": 512,
    "d_out": 512,
    "batch": 64,
    "lr": 1e-3,
    "steps": 2000,
    "checkpoints": [1, 50, 100, 200, 500, 1000, 2000],
    "ema_decay": 0.99,
    "seed": 0,
    "rss_every": 25,
}


@dataclass(frozen=True)
class Bounds:
    min: float | None = None
    max: float | None = None

    def holds(self, value: float | None) -> bool:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return False
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)

    def describe(self) -> str:
        if self.min is not None and self.max is not None:
            return f"{self.min:g}..{self.max:g}"
        if self.min is not None:
            return f">= {self.min:g}"
        return f"<= {self.max:g}"


@dataclass(frozen=True)
class Expect:
    outcome: str | None = None
    tracked: bool | None = None
    panic_step: int | None = None
    panic_message: str | None = None
    slowdown_ratio: Bounds | None = None
    rss_growth_mib_per_1000: Bounds | None = None
    # A semver requirement: the expectations hold for these burn versions only.
    burn_versions: str | None = None


@dataclass(frozen=True)
class RunSpec:
    framework: str
    mode: str
    expect: Expect = field(default_factory=Expect)

    @property
    def key(self) -> str:
        return f"{self.framework}/{self.mode}"


@dataclass(frozen=True)
class Pair:
    a: str  # "framework/mode"
    b: str
    same: tuple[str, ...]
    differ: tuple[str, ...]
    reason: str
    # A semver requirement: the claim holds for these burn versions only; a
    # difference fixed upstream is recorded by narrowing this, not deleted.
    burn_versions: str | None = None


@dataclass(frozen=True)
class Windows:
    """Steps `1..warmup` are ignored; the reference window is the `reference`
    steps after them; the last window is the final `last` steps."""

    warmup: int
    reference: int
    last: int

    def reference_range(self) -> tuple[int, int]:
        return self.warmup + 1, self.warmup + self.reference

    def last_range(self, steps: int) -> tuple[int, int]:
        return steps - self.last + 1, steps


@dataclass(frozen=True)
class Thresholds:
    grows_ratio: float = 2.0
    rss_grows_mib_per_1000: float = 8.0


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    kind: str
    description: str
    params: dict[str, Any]
    windows: Windows
    thresholds: Thresholds
    timeout_s: float
    runs: tuple[RunSpec, ...]
    pairs: tuple[Pair, ...]

    @property
    def steps(self) -> int:
        return int(self.params["steps"])

    def run(self, key: str) -> RunSpec | None:
        return next((r for r in self.runs if r.key == key), None)


class _Table:
    """A TOML table with the path of keys that led to it, for messages."""

    def __init__(self, path: Path, where: str, data: Any):
        self.path, self.where = path, where
        if not isinstance(data, dict):
            self.fail(f"must be a table, got {_type_name(data)}")
        self.data: dict[str, Any] = data

    def name(self, key: str | None = None) -> str:
        if key is None:
            return self.where or "top level"
        return f"{self.where}.{key}" if self.where else key

    def fail(self, message: str, key: str | None = None) -> None:
        raise BadInput(f"{self.path}: {self.name(key)}: {message}")

    def only(self, allowed: tuple[str, ...]) -> None:
        for key in self.data:
            if key not in allowed:
                self.fail(f"unknown key; valid keys here: {', '.join(allowed)}", key)

    def sub(self, key: str, required: bool = False) -> "_Table":
        if key not in self.data:
            if required:
                self.fail("missing table", key)
            return _Table(self.path, self.name(key), {})
        return _Table(self.path, self.name(key), self.data[key])

    def get(self, key: str, kind: type, default: Any = None, required: bool = False) -> Any:
        if key not in self.data:
            if required:
                self.fail(f"missing; expected {kind.__name__}", key)
            return default
        value = self.data[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            self.fail(f"must be {kind.__name__}, got {_type_name(value)} {value!r}", key)
        return value

    def positive_int(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        value = self.get(key, int, default, required=default is None)
        if value < minimum:
            self.fail(f"must be an integer >= {minimum}, got {value}", key)
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str | None = None) -> str | None:
        value = self.get(key, str, default)
        if value is not None and value not in choices:
            self.fail(f"unknown value {value!r}; valid: {', '.join(choices)}", key)
        return value


def _type_name(value: Any) -> str:
    return {dict: "table", list: "array", str: "string", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def _bounds(table: _Table, key: str) -> Bounds | None:
    if key not in table.data:
        return None
    sub = table.sub(key)
    sub.only(("min", "max"))
    lo, hi = sub.get("min", float), sub.get("max", float)
    if lo is None and hi is None:
        sub.fail("needs min, max or both")
    if lo is not None and hi is not None and lo > hi:
        sub.fail(f"min ({lo:g}) is greater than max ({hi:g})")
    return Bounds(lo, hi)


def _requirement(table: _Table, key: str) -> str | None:
    text = table.get(key, str)
    if text is not None:
        try:
            semver.parse_requirement(text)
        except ValueError as err:
            table.fail(str(err), key)
    return text


def _params(table: _Table) -> dict[str, Any]:
    table.only(tuple(P10_DEFAULTS))
    params = dict(P10_DEFAULTS)
    for key in ("d_in", "d_out", "batch", "steps"):
        params[key] = table.positive_int(key, P10_DEFAULTS[key])
    params["seed"] = table.positive_int("seed", P10_DEFAULTS["seed"], minimum=0)
    params["rss_every"] = table.positive_int("rss_every", P10_DEFAULTS["rss_every"], minimum=0)
    lr = table.get("lr", float, P10_DEFAULTS["lr"])
    if not (math.isfinite(lr) and lr > 0):
        table.fail(f"must be a finite number > 0, got {lr}", "lr")
    params["lr"] = lr
    decay = table.get("ema_decay", float, P10_DEFAULTS["ema_decay"])
    if not (0.0 <= decay <= 1.0):
        table.fail(f"must be a number from 0 to 1, got {decay}", "ema_decay")
    params["ema_decay"] = decay
    steps = params["steps"]
    default_points = [p for p in P10_DEFAULTS["checkpoints"] if p < steps] + [steps]
    points = table.get("checkpoints", list, default_points)
    params["checkpoints"] = _checkpoints(table, points, steps)
    return params


def _checkpoints(table: _Table, points: list, steps: int) -> list[int]:
    if not points:
        table.fail(f"must list at least one step from 1 to steps ({steps})", "checkpoints")
    previous = 0
    for point in points:
        if not isinstance(point, int) or isinstance(point, bool):
            table.fail(f"every checkpoint must be an integer step, got {point!r}", "checkpoints")
        if not 1 <= point <= steps:
            table.fail(f"every checkpoint must be a step from 1 to steps ({steps}), got {point}", "checkpoints")
        if point <= previous:
            table.fail(f"must be strictly increasing, got {point} after {previous}", "checkpoints")
        previous = point
    return list(points)


def _windows(table: _Table, steps: int) -> Windows:
    table.only(("warmup", "reference", "last"))
    windows = Windows(
        warmup=table.positive_int("warmup", 50, minimum=0),
        reference=table.positive_int("reference", 150),
        last=table.positive_int("last", 200),
    )
    check_windows(windows, steps, f"{table.path}: {table.where}")
    return windows


def check_windows(windows: Windows, steps: int, where: str) -> None:
    """Reference and last windows must fit in the steps without overlapping."""
    needed = windows.warmup + windows.reference + windows.last
    if needed > steps:
        raise BadInput(
            f"{where}: warmup + reference + last = {windows.warmup} + {windows.reference} + "
            f"{windows.last} = {needed} steps, more than the {steps} steps run; "
            f"use at least {needed} steps or smaller windows"
        )


def _expect(table: _Table, framework: str, mode: str) -> Expect:
    table.only(("outcome", "tracked", "panic_step", "panic_message", "slowdown_ratio",
                "rss_growth_mib_per_1000", "burn_versions"))
    expect = Expect(
        outcome=table.choice("outcome", OUTCOMES),
        tracked=table.get("tracked", bool),
        panic_step=table.positive_int("panic_step") if "panic_step" in table.data else None,
        panic_message=table.get("panic_message", str),
        slowdown_ratio=_bounds(table, "slowdown_ratio"),
        rss_growth_mib_per_1000=_bounds(table, "rss_growth_mib_per_1000"),
        burn_versions=_requirement(table, "burn_versions"),
    )
    if expect.burn_versions and framework != "burn":
        table.fail(f"only burn runs can be limited to burn versions; this is a {framework} run", "burn_versions")
    if (expect.panic_step or expect.panic_message) and expect.outcome not in (None, "panic"):
        table.fail(f"panic_step/panic_message need outcome = \"panic\", got {expect.outcome!r}")
    return expect


def _runs(case: _Table, kind: str) -> tuple[RunSpec, ...]:
    raw = case.data.get("runs")
    if not isinstance(raw, list) or not raw:
        case.fail("needs at least one [[runs]] entry", "runs")
    runs: list[RunSpec] = []
    for index, item in enumerate(raw):
        table = _Table(case.path, f"runs[{index}]", item)
        table.only(("framework", "mode", "expect"))
        framework = table.choice("framework", FRAMEWORKS)
        if framework is None:
            table.fail(f"missing; valid: {', '.join(FRAMEWORKS)}", "framework")
        mode = table.choice("mode", modes_of(kind, framework))
        if mode is None:
            table.fail(f"missing; valid for {framework}: {', '.join(modes_of(kind, framework))}", "mode")
        spec = RunSpec(framework, mode, _expect(table.sub("expect"), framework, mode))
        if any(r.key == spec.key for r in runs):
            table.fail(f"{spec.key} is listed twice")
        runs.append(spec)
    return tuple(runs)


def _pairs(case: _Table, runs: tuple[RunSpec, ...]) -> tuple[Pair, ...]:
    raw = case.data.get("pairs", [])
    if not isinstance(raw, list):
        case.fail("must be an array of tables ([[pairs]])", "pairs")
    keys = [r.key for r in runs]
    pairs = []
    for index, item in enumerate(raw):
        table = _Table(case.path, f"pairs[{index}]", item)
        table.only(("a", "b", "same", "differ", "reason", "burn_versions"))
        ends = []
        for end in ("a", "b"):
            key = table.get(end, str, required=True)
            if key not in keys:
                table.fail(f"{key!r} is not a run of this case; runs: {', '.join(keys)}", end)
            ends.append(key)
        props = {}
        for group in ("same", "differ"):
            values = table.get(group, list, [])
            for value in values:
                if value not in PAIR_PROPERTIES:
                    table.fail(f"unknown property {value!r}; valid: {', '.join(PAIR_PROPERTIES)}", group)
            props[group] = tuple(values)
        if not props["same"] and not props["differ"]:
            table.fail("needs same, differ or both")
        reason = table.get("reason", str, required=True)
        pairs.append(Pair(ends[0], ends[1], props["same"], props["differ"], reason.strip(),
                          _requirement(table, "burn_versions")))
    return tuple(pairs)


def load_case(path: Path) -> Case:
    """Read and validate one case file."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such case file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise BadInput(f"{path}: cannot read case file: {err}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise BadInput(f"{path}: not valid TOML: {err}") from None
    top = _Table(path, "", data)
    top.only(("name", "kind", "description", "params", "windows", "thresholds", "execution", "runs", "pairs"))
    name = top.get("name", str, path.stem)
    if name != path.stem:
        top.fail(f"must match the file name {path.stem!r}, got {name!r}", "name")
    kind = top.choice("kind", KINDS)
    if kind is None:
        top.fail(f"missing; valid: {', '.join(KINDS)}", "kind")
    params = _params(top.sub("params"))
    windows = _windows(top.sub("windows"), params["steps"])
    thresholds_table = top.sub("thresholds")
    thresholds_table.only(("grows_ratio", "rss_grows_mib_per_1000"))
    thresholds = Thresholds(
        grows_ratio=thresholds_table.get("grows_ratio", float, Thresholds.grows_ratio),
        rss_grows_mib_per_1000=thresholds_table.get(
            "rss_grows_mib_per_1000", float, Thresholds.rss_grows_mib_per_1000
        ),
    )
    execution = top.sub("execution")
    execution.only(("timeout_s",))
    timeout_s = execution.get("timeout_s", float, 600.0)
    if timeout_s <= 0:
        execution.fail(f"must be > 0 seconds, got {timeout_s}", "timeout_s")
    runs = _runs(top, kind)
    return Case(
        name=name,
        path=path,
        kind=kind,
        description=top.get("description", str, "").strip(),
        params=params,
        windows=windows,
        thresholds=thresholds,
        timeout_s=timeout_s,
        runs=runs,
        pairs=_pairs(top, runs),
    )


def resolve(ref: str) -> Path:
    """A case given on the command line: a path, or a name in `cases/`."""
    path = Path(ref)
    if path.suffix == ".toml" or path.exists():
        return path
    candidate = CASES_DIR / f"{ref}.toml"
    if candidate.exists():
        return candidate
    known = ", ".join(sorted(p.stem for p in CASES_DIR.glob("*.toml"))) or "none"
    raise BadInput(f"case {ref!r}: no file {path} and no {candidate}; known cases: {known}")


def all_cases() -> list[Path]:
    return sorted(CASES_DIR.glob("*.toml"))


def with_steps(case: Case, steps: int) -> Case:
    """The case with its step count overridden (checkpoints past it dropped, `steps` added)."""
    if steps < 1:
        raise BadInput(f"--steps: must be a positive integer, got {steps}")
    check_windows(case.windows, steps, f"--steps {steps} with {case.path} [windows]")
    points = [p for p in case.params["checkpoints"] if p < steps] + [steps]
    params = {**case.params, "steps": steps, "checkpoints": points}
    return dataclasses.replace(case, params=params)


def load_selected(refs: list[str], steps: int | None = None, timeout: float | None = None,
                  frameworks: list[str] | None = None, modes: list[str] | None = None) -> list[Case]:
    """The cases named on a command line (default: every case), with the
    overrides and filters applied; cases left without runs are dropped."""
    refs = refs or [str(p) for p in all_cases()]
    if not refs:
        raise BadInput(f"no case files in {CASES_DIR}")
    selected = []
    for ref in refs:
        case = load_case(resolve(ref))
        if steps:
            case = with_steps(case, steps)
        if timeout:
            case = dataclasses.replace(case, timeout_s=timeout)
        case = select(case, frameworks, modes)
        if case.runs:
            selected.append(case)
    if not selected:
        raise BadInput("no run matches the given --framework/--mode filters")
    return selected


def select(case: Case, frameworks: list[str] | None, modes: list[str] | None) -> Case:
    """Only the runs of the given frameworks and modes; pairs whose ends both remain."""
    if modes:
        known = {m for (kind, fw), a in ADAPTERS.items() if kind == case.kind for m in a.modes}
        for mode in modes:
            if mode not in known:
                raise BadInput(f"--mode: unknown mode {mode!r} for {case.name}; valid: {', '.join(sorted(known))}")
    runs = tuple(
        r for r in case.runs if (not frameworks or r.framework in frameworks) and (not modes or r.mode in modes)
    )
    keys = {r.key for r in runs}
    pairs = tuple(p for p in case.pairs if p.a in keys and p.b in keys)
    return dataclasses.replace(case, runs=runs, pairs=pairs)
