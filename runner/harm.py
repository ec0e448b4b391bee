"""How much a difference between PyTorch and burn hurts a person porting
code, and so the order in which `check`'s summary, `report.md` and
`report.html` list the cases, and the counts their headlines give.

A case shows a difference when one of its torch-vs-burn pairs claims that a
property differs. Each property has a kind of harm, most harmful first:

- `crash`: the outcome (a panic or an error on one side);
- `values`: values, gradients, autodiff flags (silently different numbers);
- `growth`: step time or memory that grows (a slowdown, a leak);
- `default`: a default that differs (named by the case: `[about]
  difference = "default"`, since a claim alone cannot tell a default from a
  value).

A case's harm is the most harmful kind among its claims (or the one its
`[about]` names); a case whose torch-vs-burn pairs all claim `same` is an
agreement: both frameworks do the same, which a porter also needs to know.
Cases are ordered by harm, then by how many kinds they show (the anchor
case, p10: a panic and a 30x slowdown, leads its kind), then by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum

from .model.case import DeclaredHarm
from .model.results import CaseInfo


class Harm(IntEnum):
    """A kind of difference; a lower value hurts more."""

    CRASH = 0
    VALUES = 1
    GROWTH = 2
    DEFAULT = 3

    @property
    def text(self) -> str:
        """`a panic or error on one side`: what the headline counts."""
        return _TEXT[self]

    @property
    def word(self) -> str:
        """`crash`: the kind in one word, for tables and styles."""
        return self.name.lower()


_TEXT = {
    Harm.CRASH: "a panic or error on one side",
    Harm.VALUES: "silently different values or gradients",
    Harm.GROWTH: "slowdown or memory growth",
    Harm.DEFAULT: "a different default",
}

GROWTH_PROPERTIES = ("grows", "rss_grows")


def harm_of(prop: str) -> Harm:
    """The kind of a claimed property: `outcome`, `grows`, `values:y`, `grads:w`, `flags`, `tracked`."""
    name = prop.split(":", 1)[0]
    if name == "outcome":
        return Harm.CRASH
    if name in GROWTH_PROPERTIES:
        return Harm.GROWTH
    return Harm.VALUES


@dataclass(frozen=True)
class Standing:
    """Where a case stands: its harm (None: both frameworks agree) and every kind its claims show."""

    harm: Harm | None
    kinds: tuple[Harm, ...] = ()

    @property
    def agrees(self) -> bool:
        return self.harm is None

    def order(self, name: str) -> tuple[int, int, int, str]:
        """The sort key: differences by harm, the case showing more kinds first, then by name; agreements last."""
        if self.harm is None:
            return 1, 0, 0, name
        return 0, int(self.harm), -len(self.kinds), name


def standing(differ: Iterable[str], declared: DeclaredHarm | None = None) -> Standing:
    """A case's standing from the properties its torch-vs-burn pairs claim differ (and its declared kind)."""
    kinds = {harm_of(prop) for prop in differ}
    if not kinds:
        return Standing(None)
    harm = Harm[declared.upper()] if declared is not None else min(kinds)
    return Standing(harm, tuple(sorted(kinds | {harm})))


def case_standing(info: CaseInfo) -> Standing:
    differ = [prop for pair in info.pairs if pair.a.framework != pair.b.framework for prop in pair.differ]
    return standing(differ, info.about.difference if info.about is not None else None)


def by_kind(harms: Sequence[Harm]) -> list[tuple[Harm, int]]:
    """How many differences of each kind there are, most harmful first (kinds with none left out)."""
    return [(h, harms.count(h)) for h in Harm if harms.count(h)]


def differences_text(n: int) -> str:
    return f"{n} difference{'s' * (n != 1)}"


def agreements_text(n: int) -> str:
    return f"{n} case{'s' * (n != 1)} where both frameworks agree"


def headline(harms: Sequence[Harm], agreements: int) -> str:
    """`13 differences (4 a panic or error on one side, 5 silently different values or gradients, ...);
    5 cases where both frameworks agree`"""
    counts = [f"{n} {h.text}" for h, n in by_kind(harms)]
    head = differences_text(len(harms)) + (f" ({', '.join(counts)})" if counts else "")
    return f"{head}; {agreements_text(agreements)}"
