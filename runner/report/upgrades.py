"""Upgrade-check outputs (`python3 -m runner upgrade-check`): `upgrade.json`
and, next to it, both sides' results (`results-from.json`, `results-to.json`).

Read defensively: they are extra evidence for the report (which burn versions
a difference was seen on), never a reason to refuse it. A file that cannot be
read, or does not validate, is listed with the reason and left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import BadInput
from ..inputs import MAX_RESULTS_BYTES, parse_json, read_text
from ..model.base import describe_errors
from ..model.results import ResultsDocument
from ..model.upgrade import UpgradeReport
from ..results import load_results

NAME = "upgrade.json"
DEFAULT_GLOB = f"results/upgrade-*/{NAME}"
SIDES = ("from", "to")


@dataclass(frozen=True)
class UpgradeCheck:
    path: Path
    report: UpgradeReport
    sides: dict[str, ResultsDocument] = field(default_factory=dict)  # "from"/"to": that side's results

    def burn(self, side: str) -> str:
        """The burn version a side ran: its results' provenance, its lock, or what was asked for."""
        doc = self.sides.get(side)
        build = self.report.from_ if side == "from" else self.report.to
        return (doc.provenance.burn if doc else None) or build.burn or build.source

    @property
    def label(self) -> str:
        return f"burn {self.burn('from')} → {self.burn('to')}"

    def built(self, side: str) -> bool:
        return (self.report.from_ if side == "from" else self.report.to).ok


@dataclass(frozen=True)
class Unreadable:
    path: Path
    reason: str


def default_paths(root: Path = Path(".")) -> list[Path]:
    return sorted(root.glob(DEFAULT_GLOB))


def _nan_to_none(_: str) -> None:
    return None


def _parse(path: Path) -> UpgradeReport:
    text = read_text(path, "upgrade report", MAX_RESULTS_BYTES)
    try:
        # upgrade.json may hold NaN (a window that could not be compared): kept as null
        data: Any = json.loads(text, parse_constant=_nan_to_none)
    except (json.JSONDecodeError, RecursionError):
        parse_json(text, str(path), "upgrade report")  # raises BadInput, worded as for any input
        raise
    if not isinstance(data, dict) or data.get("kind") != "upgrade-check":
        raise ValueError("not an upgrade-check report (no kind: upgrade-check)")
    if "from" in data:
        data["from_"] = data.pop("from")
    for run in data.get("runs") or []:
        if isinstance(run, dict) and "class" in run:
            run["klass"] = run.pop("class")
    return UpgradeReport.model_validate_json(json.dumps(data))


def read_one(path: Path) -> UpgradeCheck | Unreadable:
    """`path`: an upgrade.json, or the folder that holds one."""
    if path.is_dir():
        path = path / NAME
    try:
        report = _parse(path)
    except ValidationError as err:
        return Unreadable(path, "; ".join(describe_errors(err, UpgradeReport, limit=2)))
    except BadInput as err:
        return Unreadable(path, str(err).removeprefix(f"{path}: "))
    except (OSError, ValueError) as err:
        return Unreadable(path, str(err) or type(err).__name__)
    sides: dict[str, ResultsDocument] = {}
    for side in SIDES:
        results = path.parent / f"results-{side}.json"
        if not results.is_file():
            continue
        try:
            docs = load_results(results)
        except BadInput:
            continue  # the classes in upgrade.json still count
        if len(docs) == 1:
            sides[side] = docs[0]
    return UpgradeCheck(path, report, sides)


def read(paths: list[Path]) -> tuple[list[UpgradeCheck], list[Unreadable]]:
    checks: list[UpgradeCheck] = []
    bad: list[Unreadable] = []
    for path in paths:
        found = read_one(path)
        if isinstance(found, UpgradeCheck):
            checks.append(found)
        else:
            bad.append(found)
    return checks, bad
