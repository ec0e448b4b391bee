"""Which machine a results document came from, and results grouped per machine.

The fingerprint is a short hash of the provenance fields that describe the
hardware and system (`cpu`, `machine`, `cores`, `system`): the same machine
gives the same fingerprint every night; versions and times do not enter it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field

from ..errors import BadInput
from ..results import summary

FINGERPRINT_FIELDS = ("cpu", "machine", "cores", "system")


def fingerprint(provenance: dict) -> str:
    identity = json.dumps([provenance.get(k) for k in FINGERPRINT_FIELDS])
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:10]


def started_at(provenance: dict) -> dt.datetime:
    """The run's start time in UTC (a time without zone is taken as UTC)."""
    when = dt.datetime.fromisoformat(provenance["started"])
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone(dt.timezone.utc)


@dataclass
class Machine:
    """The results of one machine: one document (several files merged into one)."""

    fingerprint: str
    doc: dict
    sources: list[str] = field(default_factory=list)

    @property
    def provenance(self) -> dict:
        return self.doc["provenance"]

    @property
    def label(self) -> str:
        return f"{self.provenance['machine']} {self.fingerprint[:6]}"

    def run(self, key: tuple[str, str, str]) -> dict | None:
        return next((r for r in self.doc["runs"] if run_key(r) == key), None)


def run_key(run: dict) -> tuple[str, str, str]:
    return run["case"], run["framework"], run["mode"]


def expectation_key(item: dict) -> tuple[str, str, str, str]:
    return item["case"], item["framework"], item["mode"], item["check"]


def _merge(into: Machine, doc: dict, source: str) -> None:
    """Add another document of the same machine (other cases) to `into`."""
    mine = {run_key(r) for r in into.doc["runs"]}
    for run in doc["runs"]:
        if run_key(run) in mine:
            raise BadInput(
                f"{source}: run {'/'.join(run_key(run))} of machine {into.label} is also in "
                f"{', '.join(into.sources)}; give one results file per machine, or files with "
                "different runs")
    prov = dict(into.doc["provenance"])
    if started_at(doc["provenance"]) < started_at(prov):
        prov["started"] = doc["provenance"]["started"]
    ends = [p["finished"] for p in (prov, doc["provenance"]) if p.get("finished")]
    if ends:
        prov["finished"] = max(ends, key=lambda s: started_at({"started": s}))
    runs = into.doc["runs"] + doc["runs"]
    expectations = into.doc["expectations"] + doc["expectations"]
    into.doc = {**into.doc, "provenance": prov, "runs": runs, "expectations": expectations,
                "summary": summary(runs, expectations)}
    into.sources.append(source)


def group(documents: list[tuple[dict, str]]) -> list[Machine]:
    """One Machine per fingerprint, in the order they first appear."""
    machines: dict[str, Machine] = {}
    for doc, source in documents:
        fp = fingerprint(doc["provenance"])
        if fp in machines:
            _merge(machines[fp], doc, source)
        else:
            machines[fp] = Machine(fp, doc, [source])
    return list(machines.values())
