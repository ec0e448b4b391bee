"""What both renderings show, computed once: machines, their comparison with
the previous run, the pairs reconstructed from the expectations, the verdict
and the exit code."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..compare import RULE
from ..terminal import outcome_text
from .changes import Change
from .formatting import fmt
from .history import Entry
from .machines import Machine, expectation_key, run_key

# The pair table's rows: (label, property the pair may claim same/differ on).
PAIR_ROWS = (("tracked", "tracked"), ("outcome", "outcome"), ("panic", None),
             ("slowdown ratio", "grows"), ("RSS growth MiB/1000 steps", "rss_grows"))

RSS_NOTE = ("RSS is not compared between runs by that rule (its samples follow a trend, they are "
            "not repeated measurements of one quantity); RSS growth is checked by the case's "
            "expectations, and a flip is listed.")


@dataclass
class Comparison:
    previous: Entry | None
    changes: list[Change] = field(default_factory=list)
    previous_provenance: dict = field(default_factory=dict)
    note: str = ""  # why nothing was compared


@dataclass
class Pair:
    case: str
    a: str  # "framework/mode"
    b: str
    reason: str
    claims: dict[str, str] = field(default_factory=dict)  # property -> "same" or "differ"


@dataclass
class Report:
    machines: list[Machine]
    comparisons: list[Comparison]
    generated: str
    rule: str = RULE

    @property
    def failed(self) -> int:
        return sum(not e["passed"] for m in self.machines for e in m.doc["expectations"])

    @property
    def changed(self) -> int:
        return sum(len(c.changes) for c in self.comparisons)

    @property
    def exit_code(self) -> int:
        return 0 if self.failed == 0 and self.changed == 0 else 1

    def status(self) -> str:
        if self.exit_code == 0:
            missing = sum(c.previous is None for c in self.comparisons)
            if not missing:
                return "OK: nothing changed since the previous run and every expectation holds"
            who = "this machine has" if len(self.machines) == 1 else f"{missing} of {len(self.machines)} machines have"
            return f"OK: every expectation holds; {who} no previous run to compare with"
        parts = []
        if self.changed:
            parts.append(f"{self.changed} change{'s' * (self.changed != 1)} since the previous run")
        if self.failed:
            parts.append(f"{self.failed} expectation{'s' * (self.failed != 1)} "
                         f"do{'es' * (self.failed == 1)} not hold")
        return "ATTENTION: " + "; ".join(parts)

    def cases(self) -> list[str]:
        seen: dict[str, None] = {}
        for m in self.machines:
            for r in m.doc["runs"]:
                seen.setdefault(r["case"])
        return list(seen)

    def run_keys(self, case: str | None = None) -> list[tuple[str, str, str]]:
        seen: dict[tuple, None] = {}
        for m in self.machines:
            for r in m.doc["runs"]:
                if case is None or r["case"] == case:
                    seen.setdefault(run_key(r))
        return list(seen)

    def expectation_rows(self) -> list[tuple[dict, list[dict | None]]]:
        """Each expectation (first seen) with its verdict on every machine."""
        seen: dict[tuple, dict] = {}
        for m in self.machines:
            for e in m.doc["expectations"]:
                seen.setdefault(expectation_key(e), e)
        rows = []
        for key, first in seen.items():
            per_machine = [next((e for e in m.doc["expectations"] if expectation_key(e) == key), None)
                           for m in self.machines]
            rows.append((first, per_machine))
        return rows

    def pairs(self, case: str) -> list[Pair]:
        found: dict[str, Pair] = {}
        for m in self.machines:
            for e in m.doc["expectations"]:
                if e["case"] != case or not e.get("pair"):
                    continue
                a, b = (side.strip() for side in e["pair"].split("~"))
                pair = found.setdefault(e["pair"], Pair(case, a, b, e.get("reason", "")))
                relation, prop = e["check"].removeprefix("pair ").split(": ", 1)
                pair.claims.setdefault(prop, relation)
        return list(found.values())

    def claim_verdict(self, machine: Machine, pair: Pair, prop: str) -> bool | None:
        for e in machine.doc["expectations"]:
            if e.get("pair") == f"{pair.a} ~ {pair.b}" and e["case"] == pair.case \
                    and e["check"].endswith(f": {prop}"):
                return e["passed"]
        return None


def run_cell(run: dict | None, row: str) -> str:
    """One semantic value of a run, as the pair tables show it."""
    if run is None:
        return "not run"
    m = run["metrics"]
    if row == "tracked":
        return fmt(m["tracked"])
    if row == "outcome":
        return outcome_text(run)
    if row == "panic":
        p = run.get("panic")
        return f"step {p.get('step')}: {p['message']}" if p else "-"
    if row == "slowdown ratio":
        return fmt(m["slowdown_ratio"], ".2f")
    if row.startswith("RSS growth"):
        return fmt(m["rss_growth_mib_per_1000"], ".2f")
    raise KeyError(row)


def previous_text(comparison: Comparison) -> str:
    """`burn 0.22.1, commit 2a4b3d9e6e`: what the previous run ran."""
    prov = comparison.previous_provenance
    commit = (prov.get("git_commit") or "unknown")[:10]
    return f"burn {prov.get('burn') or comparison.previous.burn}, commit {commit}"


def claim_text(pair: Pair) -> str:
    """`differ: tracked, grows`"""
    groups = [(rel, [p for p, r in pair.claims.items() if r == rel]) for rel in ("same", "differ")]
    return "; ".join(f"{rel}: {', '.join(props)}" for rel, props in groups if props)


def side_key(case: str, side: str) -> tuple[str, str, str]:
    framework, mode = side.split("/", 1)
    return case, framework, mode
