"""The history view's data: each run's key numbers in every history entry of a
machine (and in this run), oldest first, in the manner of asv.

A `Snapshot` keeps only what the history view and the difference cards need
from one results document (numbers per run, pair verdicts, provenance), so
that a long history is not held in memory as full documents. An entry that
cannot be read is listed and left out: the history view is a view, not a
check (the previous run, which the changes are computed from, is read
strictly by the command).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from ..errors import BadInput
from ..model.results import ClaimKey, ResultsDocument, RunKey, RunRecord
from ..wording import outcome_text
from .history import History, stamp_of
from .machines import MachineResults, fingerprint, utc

# Entries read per machine (the newest); ~16 ms each.
HISTORY_LIMIT = 120


@dataclass(frozen=True)
class RunNumbers:
    outcome: str
    outcome_text: str
    ratio: float | None
    last_ms: float | None
    rss: float | None
    tracked: bool | None

    @classmethod
    def of(cls, run: RunRecord) -> RunNumbers:
        m = run.metrics
        return cls(
            run.outcome, outcome_text(run), m.slowdown_ratio, m.last_median_ms, m.rss_growth_mib_per_1000, m.tracked
        )


@dataclass(frozen=True)
class Snapshot:
    """One results document, as much as the history view needs."""

    stamp: str  # 20261129T070238Z
    when: dt.datetime
    burn: str
    commit: str | None
    fingerprint: str
    architecture: str  # the processor architecture (`Provenance.machine`: x86_64, aarch64)
    source: str  # "history", "this run", "upgrade check"
    runs: dict[RunKey, RunNumbers] = field(default_factory=dict)
    claims: dict[ClaimKey, bool] = field(default_factory=dict)  # pair verdicts: passed

    @classmethod
    def of(cls, doc: ResultsDocument, source: str) -> Snapshot:
        p = doc.provenance
        return cls(
            stamp=stamp_of(p),
            when=utc(p.started),
            burn=p.burn or "unknown",
            commit=p.git_commit,
            fingerprint=fingerprint(p),
            architecture=p.machine,
            source=source,
            runs={r.key: RunNumbers.of(r) for r in doc.runs},
            claims={verdict.key: verdict.passed for verdict in doc.expectations if verdict.b is not None},
        )

    @property
    def date(self) -> str:
        return self.when.strftime("%Y-%m-%d %H:%M")


@dataclass
class HistoryView:
    """Per machine fingerprint, its snapshots oldest first (this run last for
    the machines of this report); entries that could not be read."""

    timelines: dict[str, list[Snapshot]] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)  # older entries beyond the limit

    def all(self) -> list[Snapshot]:
        return [s for line in self.timelines.values() for s in line]

    def timeline(self, machine: MachineResults) -> list[Snapshot]:
        return self.timelines.get(machine.fingerprint, [])


def version_changes(line: list[Snapshot]) -> list[int]:
    """Indexes of the snapshots whose burn version differs from the one before."""
    return [i for i in range(1, len(line)) if line[i].burn != line[i - 1].burn]


def load(history: History, machines: list[MachineResults], limit: int = HISTORY_LIMIT) -> HistoryView:
    view = HistoryView()
    current = {(m.fingerprint, stamp_of(m.provenance)) for m in machines}
    by_machine: dict[str, list[Snapshot]] = {}
    entries = history.entries()
    for fp in dict.fromkeys(entry.fingerprint for entry in entries):
        mine = [entry for entry in entries if entry.fingerprint == fp and (fp, entry.stamp) not in current]
        if len(mine) > limit:
            view.left_out[fp] = len(mine) - limit
            mine = mine[-limit:]
        for entry in mine:
            try:
                doc = entry.load()
            except BadInput as err:
                view.skipped.append((entry.name, str(err).removeprefix(f"{entry.path}: ")))
                continue
            by_machine.setdefault(fp, []).append(Snapshot.of(doc, "history"))
    for m in machines:
        by_machine.setdefault(m.fingerprint, []).append(Snapshot.of(m.doc, "this run"))
    view.timelines = {fp: sorted(line, key=lambda s: s.when) for fp, line in by_machine.items()}
    return view
