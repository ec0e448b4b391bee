"""Which machine a results document came from, and results grouped per machine.

The fingerprint is a short hash of the provenance fields that describe the
hardware and system (`cpu`, `machine`, `cores`, `system`): the same machine
gives the same fingerprint every night; versions and times do not enter it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import BadInput
from ..model.results import ClaimKey, Provenance, ResultsDocument, RunKey, RunRecord, Summary, Verdict

FINGERPRINT_FIELDS = ("cpu", "machine", "cores", "system")


def fingerprint(provenance: Provenance | Mapping[str, Any]) -> str:
    data = provenance.model_dump() if isinstance(provenance, Provenance) else provenance
    identity = json.dumps([data.get(k) for k in FINGERPRINT_FIELDS])
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:10]


def utc(when: dt.datetime) -> dt.datetime:
    """A time in UTC (a time without zone is taken as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC)


@dataclass
class MachineResults:
    """The results of one machine (a host, told apart by its fingerprint): one document
    (several files merged into one)."""

    fingerprint: str
    doc: ResultsDocument
    sources: list[str] = field(default_factory=list)

    @property
    def provenance(self) -> Provenance:
        return self.doc.provenance

    @property
    def label(self) -> str:
        return f"{self.provenance.machine} {self.fingerprint[:6]}"

    def run(self, key: RunKey) -> RunRecord | None:
        return self.doc.run(key)

    def runs_of(self, case: str) -> list[RunRecord]:
        return [r for r in self.doc.runs if r.case == case]

    def verdict(self, key: ClaimKey) -> Verdict | None:
        return next((verdict for verdict in self.doc.expectations if verdict.key == key), None)


def _merge(into: MachineResults, doc: ResultsDocument, source: str) -> None:
    """Add another document of the same machine (other cases) to `into`."""
    mine = {r.key for r in into.doc.runs}
    for run in doc.runs:
        if run.key in mine:
            raise BadInput(
                f"{source}: run {'/'.join(run.key)} of machine {into.label} is also in "
                f"{', '.join(into.sources)}; give one results file per machine, or files with "
                "different runs"
            )
    prov = into.doc.provenance
    started = min(prov.started, doc.provenance.started, key=utc)
    ends = [p.finished for p in (prov, doc.provenance) if p.finished is not None]
    finished = max(ends, key=utc) if ends else None
    runs = into.doc.runs + doc.runs
    expectations = into.doc.expectations + doc.expectations
    into.doc = into.doc.model_copy(
        update={
            "provenance": prov.model_copy(update={"started": started, "finished": finished}),
            "runs": runs,
            "expectations": expectations,
            "not_applicable": into.doc.not_applicable + doc.not_applicable,
            "cases": into.doc.cases + [c for c in doc.cases if c.name not in {k.name for k in into.doc.cases}],
            "summary": Summary.of(runs, expectations),
            "partial": into.doc.partial or doc.partial,
            "partial_reason": "; ".join(d.partial_reason for d in (into.doc, doc) if d.partial_reason) or None,
        }
    )
    into.sources.append(source)


def group(documents: list[tuple[ResultsDocument, str]]) -> list[MachineResults]:
    """One MachineResults per fingerprint, in the order they first appear."""
    machines: dict[str, MachineResults] = {}
    for doc, source in documents:
        fp = fingerprint(doc.provenance)
        if fp in machines:
            _merge(machines[fp], doc, source)
        else:
            machines[fp] = MachineResults(fp, doc, [source])
    return list(machines.values())
