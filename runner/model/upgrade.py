"""The upgrade check's report (`upgrade.json`) as typed models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, JsonValue

from .base import Model, NonNegativeFloat
from .case import Outcome
from .results import Metrics, Panic

UpgradeClass = Literal["build-break", "fixed", "new difference", "outcome changed", "performance changed", "same"]
CLASSES: tuple[str, ...] = UpgradeClass.__args__  # type: ignore[attr-defined]


class Build(Model):
    """One side's probe build (cached by `key`)."""

    model_config = ConfigDict(frozen=False)

    source: str
    ok: bool
    key: str
    folder: str
    probe: str | None = None  # the built extension, loadable as runner._probe
    burn: str | None = None  # the burn version in the side's lock file
    seconds: NonNegativeFloat = 0.0
    cached: bool = False
    errors: list[str] = []  # the first compiler errors, trimmed
    # Version of every burn-* crate in the side's lock, and pins that could not be made.
    burn_family: dict[str, str] = {}
    warnings: list[str] = []


class Side(Model):
    outcome: Outcome | None = None
    panic: Panic | None = None
    metrics: Metrics | None = None
    properties: dict[str, JsonValue] = {}


class Classified(Model):
    """One burn run seen before and after, in exactly one class."""

    case: str
    run: str
    klass: UpgradeClass
    findings: list[str] = []
    performance: dict[str, Any] | None = None
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
