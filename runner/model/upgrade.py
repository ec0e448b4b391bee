"""The upgrade check's report (`upgrade.json`) as typed models."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from .base import Model, NonNegativeFloat
from .case import Outcome
from .results import Metrics, Panic, PropertyValue


class UpgradeClass(StrEnum):
    """The class of one burn run seen before and after an upgrade, in the order
    the classification tries them: a run gets the first that applies. The
    values are what `upgrade.json` spells (files written before still read)."""

    BUILD_BREAK = "build-break"
    FIXED = "fixed"
    NEW_DIFFERENCE = "new difference"
    OUTCOME_CHANGED = "outcome changed"
    PERFORMANCE_CHANGED = "performance changed"
    SAME = "same"

    @classmethod
    def by_findings(cls) -> list[UpgradeClass]:
        """The classes a run earns by what was found on both sides (in order): every
        class but a build break (no second side to compare) and `same` (nothing found)."""
        return [c for c in cls if c not in (cls.BUILD_BREAK, cls.SAME)]


class Build(Model):
    """One side's probe: built, reused from the cache (by `key`), or the installed probe
    (`runner._probe`) when that is the very build the side asks for (nothing built)."""

    model_config = ConfigDict(frozen=False)

    source: str
    ok: bool
    key: str
    folder: str
    probe: str | None = None  # the built extension, loadable as runner._probe
    burn: str | None = None  # the burn version in the side's lock file
    seconds: NonNegativeFloat = 0.0
    cached: bool = False
    installed: bool = False  # the installed probe is this side's build: `probe` is its file
    errors: list[str] = []  # the first compiler errors, trimmed
    # Version of every burn-* crate in the side's lock, and pins that could not be made.
    burn_family: dict[str, str] = {}
    warnings: list[str] = []


class Side(Model):
    outcome: Outcome | None = None
    panic: Panic | None = None
    metrics: Metrics | None = None
    properties: dict[str, PropertyValue] = {}


class Classified(Model):
    """One burn run seen before and after, in exactly one class."""

    case: str
    run: str
    klass: Annotated[UpgradeClass, Field(strict=False)]  # `class` in upgrade.json
    findings: list[str] = []
    performance: dict[str, Any] | None = None  # `runner.compare.PerformanceChange` as a dict (tuples, NaN)
    before: Side | None = None
    after: Side | None = None


class UpgradeReport(Model):
    schema_version: Literal[2] = 2
    kind: Literal["upgrade-check"] = "upgrade-check"
    from_: Build
    to: Build
    rule: str
    torch_runs: str
    counts: dict[str, int]
    runs: list[Classified]

    def dump_json(self) -> str:
        data = self.model_dump(mode="json")
        data["from"] = data.pop("from_")
        for run in data["runs"]:
            run["class"] = run.pop("klass")
        import json

        return json.dumps(data, indent=1) + "\n"
