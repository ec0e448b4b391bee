"""What both renderings show, computed once: machines, their comparison with
the previous run, the pairs (from the structured verdicts), the verdict and
the exit code; the difference cards, the history view and the upgrade checks
(`differences`, `trend`, `upgrades`) are attached by the command."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..compare import RULE
from ..errors import ExitCode
from ..harm import Harm, headline
from ..model.results import ClaimKey, Provenance, RunKey, RunRecord, Verdict
from ..wording import outcome_text, value_text
from .changes import Change
from .differences import Difference
from .fuzzing import FuzzSection
from .history import Entry
from .machines import MachineResults
from .pairs import Pair
from .trend import HistoryView
from .upgrades import Unreadable, UpgradeCheck

# The pair table's rows: (label, property the pair may claim same/differ on).
PAIR_ROWS = (
    ("tracked", "tracked"),
    ("outcome", "outcome"),
    ("panic", None),
    ("slowdown ratio", "grows"),
    ("RSS growth MiB/1000 steps", "rss_grows"),
)

RSS_NOTE = (
    "RSS is not compared between runs by that rule (its samples follow a trend, they are "
    "not repeated measurements of one quantity); RSS growth is checked by the case's "
    "expectations, and a flip is listed."
)


@dataclass
class Comparison:
    previous: Entry | None
    changes: list[Change] = field(default_factory=list)
    previous_provenance: Provenance | None = None
    note: str = ""  # why nothing was compared


@dataclass
class Report:
    machines: list[MachineResults]
    comparisons: list[Comparison]
    generated: str
    rule: str = RULE
    differences: list[Difference] = field(default_factory=list)
    history: HistoryView | None = None
    upgrades: list[UpgradeCheck] = field(default_factory=list)
    unreadable_upgrades: list[Unreadable] = field(default_factory=list)
    fuzz: FuzzSection | None = None
    # Where each pair's training curves start to part ((case, run a, run b) -> the text, None: no
    # single statement found), asked by `report` for the cases it ran (`runner.fuzz.origins`);
    # None when the report was made from results files.
    origins: dict[tuple[str, str, str], str | None] | None = None

    @property
    def differing(self) -> list[Difference]:
        """The cards of differences, most harmful first (`runner.harm`)."""
        return [d for d in self.differences if not d.agrees]

    @property
    def agreeing(self) -> list[Difference]:
        """The cards of cases where both frameworks do the same."""
        return [d for d in self.differences if d.agrees]

    @property
    def harms(self) -> list[Harm]:
        """The kind of every difference card, most harmful first."""
        return [d.standing.harm for d in self.differing if d.standing.harm is not None]

    def headline(self) -> str:
        """`13 differences (4 a panic or error on one side, ...); 5 cases where both frameworks agree`"""
        return headline(self.harms, len(self.agreeing))

    @property
    def failed(self) -> int:
        return sum(not verdict.passed for m in self.machines for verdict in m.doc.expectations)

    @property
    def changed(self) -> int:
        return sum(len(c.changes) for c in self.comparisons)

    @property
    def partial(self) -> list[MachineResults]:
        """Machines whose results stop early (a check interrupted by a signal)."""
        return [m for m in self.machines if m.doc.partial]

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK if self.failed == 0 and self.changed == 0 and not self.partial else ExitCode.FAILED

    def status(self) -> str:
        if self.partial:
            reasons = "; ".join(f"{m.label}: {m.doc.partial_reason or 'partial'}" for m in self.partial)
            return f"PARTIAL RESULTS ({reasons}): {self._status()}"
        return self._status()

    def _status(self) -> str:
        if self.failed == 0 and self.changed == 0:
            missing = sum(c.previous is None for c in self.comparisons)
            if not missing:
                return "OK: nothing changed since the previous run and every expectation holds"
            who = "this machine has" if len(self.machines) == 1 else f"{missing} of {len(self.machines)} machines have"
            return f"OK: every expectation holds; {who} no previous run to compare with"
        parts = []
        if self.changed:
            parts.append(f"{self.changed} change{'s' * (self.changed != 1)} since the previous run")
        if self.failed:
            parts.append(f"{self.failed} expectation{'s' * (self.failed != 1)} do{'es' * (self.failed == 1)} not hold")
        return "ATTENTION: " + "; ".join(parts)

    def cases(self) -> list[str]:
        seen: dict[str, None] = {}
        for m in self.machines:
            for r in m.doc.runs:
                seen.setdefault(r.case)
        return list(seen)

    def run_keys(self, case: str | None = None) -> list[RunKey]:
        seen: dict[RunKey, None] = {}
        for m in self.machines:
            for r in m.doc.runs:
                if case is None or r.case == case:
                    seen.setdefault(r.key)
        return list(seen)

    def expectation_rows(self) -> list[tuple[Verdict, list[Verdict | None]]]:
        """Each expectation (first seen) with its verdict on every machine."""
        seen: dict[ClaimKey, Verdict] = {}
        for m in self.machines:
            for verdict in m.doc.expectations:
                seen.setdefault(verdict.key, verdict)
        return [(first, [m.verdict(key) for m in self.machines]) for key, first in seen.items()]

    def pairs(self, case: str) -> list[Pair]:
        found: dict[str, Pair] = {}
        for m in self.machines:
            for verdict in m.doc.expectations:
                if verdict.case != case or verdict.b is None:
                    continue
                pair = found.setdefault(verdict.subject, Pair(case, verdict.a, verdict.b, verdict.reason or ""))
                pair.claims.setdefault(verdict.property, verdict.relation)
        return list(found.values())

    def claim_verdict(self, machine: MachineResults, pair: Pair, prop: str) -> bool | None:
        verdict = machine.verdict(pair.claim_key(prop))
        return None if verdict is None else verdict.passed


def run_cell(run: RunRecord | None, row: str) -> str:
    """One semantic value of a run, as the pair tables show it."""
    if run is None:
        return "not run"
    m = run.metrics
    if row == "tracked":
        return value_text(m.tracked)
    if row == "outcome":
        return outcome_text(run)
    if row == "panic":
        p = run.panic
        return f"step {p.step}: {p.message}" if p else "-"
    if row == "slowdown ratio":
        return value_text(m.slowdown_ratio, ".2f")
    if row.startswith("RSS growth"):
        return value_text(m.rss_growth_mib_per_1000, ".2f")
    raise KeyError(row)


def previous_text(comparison: Comparison) -> str:
    """`burn 0.22.1, commit 2a4b3d9e6e`: what the previous run ran."""
    prov = comparison.previous_provenance
    commit = ((prov.git_commit if prov else None) or "unknown")[:10]
    burn = (prov.burn if prov else None) or (comparison.previous.burn if comparison.previous else "?")
    return f"burn {burn}, commit {commit}"
