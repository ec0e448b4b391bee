"""The pairs of a case as the report reads them from the structured verdicts:
two runs, the properties claimed `same` or `differ`, and the keys that find
each claim's verdict in a results document."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.case import RunRef
from ..model.results import ClaimKey, RunKey, pair_check


@dataclass
class Pair:
    case: str
    a: RunRef
    b: RunRef
    reason: str
    claims: dict[str, str] = field(default_factory=dict)  # property -> "same" or "differ"

    @property
    def subject(self) -> str:
        return f"{self.a} ~ {self.b}"

    def claim_key(self, prop: str, relation: str | None = None) -> ClaimKey:
        """The key of the verdict on `prop` (`Verdict.key`), for the claim's relation or `relation`."""
        return self.case, self.subject, pair_check(relation or self.claims.get(prop), prop)

    @property
    def across(self) -> bool:
        """A torch run against a burn run (not two runs of one framework)."""
        return self.a.framework != self.b.framework

    @property
    def claims_difference(self) -> bool:
        return "differ" in self.claims.values()


def claim_text(pair: Pair) -> str:
    """`differ: tracked, grows`"""
    groups = [(rel, [p for p, r in pair.claims.items() if r == rel]) for rel in ("same", "differ")]
    return "; ".join(f"{rel}: {', '.join(props)}" for rel, props in groups if props)


def side_key(case: str, side: RunRef) -> RunKey:
    return case, side.framework, side.mode
