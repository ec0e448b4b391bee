"""The difference cards: what a porting engineer came for, computed once for
both renderings.

One card per case that says what it is about (`[about]` in the case file,
carried in the results as `CaseInfo.about`); for a case without one (older
results files have no case info), one card per torch-vs-burn pair that claims
a difference, made from the pair's reason and the runs. A case whose
torch-vs-burn pairs all claim `same` is an agreement: its card goes to its own
section. Cards are ordered by harm (`runner.harm`): a crash or panic, then
silently different values, then growth, then a different default.

A card holds the evidence from this run (per pair: what each side showed for
each property the pair claims, and on how many machines the claim holds; a
panic's text and step; a program's value errors and flags), the fix (the
case's, or else the `same` pairs from the same torch run to a burn run), and
the burn versions the difference was seen on: every history entry and every
upgrade-check side counts, by whether the pair verdicts that make the
difference held there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .. import versions
from ..harm import Standing, standing
from ..model.results import CaseInfo, ClaimKey, RunRecord, Verdict
from ..wording import outcome_text, short, value_text
from .code import ProgramCode, program_code
from .machines import MachineResults
from .pairs import Pair, side_key
from .trend import Snapshot
from .upgrades import UpgradeCheck

ROLE_DIFFERENCE = "difference"  # torch vs burn, claimed to differ
ROLE_FIX = "fix"  # torch vs burn, claimed the same, in a case that shows a difference: the idiom that matches
ROLE_AGREEMENT = "agreement"  # torch vs burn, claimed the same, in a case that shows no difference
ROLE_OTHER = "within one framework"

PROPERTY_LABELS = {"values": "values", "grads": "gradients"}

PANIC_LIMIT = 200


@dataclass(frozen=True)
class Fact:
    """One row of evidence: a property as both runs of a pair showed it."""

    label: str
    a: str
    b: str
    claim: str | None = None  # "same" / "differ"; None: context, not claimed
    holds: tuple[int, int] = (0, 0)  # machines where the claim holds, machines where it was checked
    detail: str = ""
    short_a: str = ""  # the values in a few characters (`×27.4`), for one-line summaries
    short_b: str = ""

    @property
    def verdict(self) -> bool | None:
        passed, checked = self.holds
        return None if not checked else passed == checked


@dataclass
class PairEvidence:
    pair: Pair
    role: str
    machine: str  # the machine whose values are shown
    facts: list[Fact] = field(default_factory=list)
    ran: bool = True

    @property
    def verdict(self) -> bool | None:
        known = [f.verdict for f in self.facts if f.verdict is not None]
        return None if not known else all(known)


@dataclass
class Sighting:
    """How often the difference showed (an agreement: held) on one burn version."""

    burn: str
    seen: int = 0
    partly: int = 0
    not_seen: int = 0
    build_break: int = 0
    sources: dict[str, None] = field(default_factory=dict)
    agreement: bool = False

    @property
    def runs(self) -> int:
        return self.seen + self.partly + self.not_seen

    def text(self) -> str:
        parts = []
        if self.runs:
            partly = f" (partly in {self.partly})" if self.partly else ""
            word = "held" if self.agreement else "seen"
            parts.append(f"{word} in {self.seen} of {self.runs} run{'s' * (self.runs != 1)}{partly}")
        if self.build_break:
            parts.append("the probe did not build")
        return f"{'; '.join(parts)}: {', '.join(self.sources)}"

    @property
    def state(self) -> str:
        """`seen`, `not seen`, `partly`, `build-break`: for the chip's style."""
        if not self.runs:
            return "build-break"
        if self.seen == self.runs:
            return "seen"
        if self.not_seen == self.runs:
            return "not seen"
        return "partly"


@dataclass
class Difference:
    """One card: a difference between PyTorch and burn, or an agreement (`standing.agrees`)."""

    case: str
    anchor: str
    title: str
    torch: str
    burn: str
    fix: str
    sources: list[str]
    documented: bool  # from the case's [about]
    evidence: list[PairEvidence]
    claim_keys: list[ClaimKey]  # the pair verdicts that make the difference (an agreement: the `same` claims)
    standing: Standing = field(default_factory=lambda: Standing(None))
    awaits_judgement: bool = False  # a found case no person has judged: its [about] is the fuzzer's
    sightings: list[Sighting] = field(default_factory=list)
    programs: dict[str, ProgramCode] = field(default_factory=dict)  # variant -> its code

    @property
    def agrees(self) -> bool:
        return self.standing.agrees

    @property
    def state(self) -> str | None:
        """Did this run show the difference (an agreement: did it hold): `seen` (every
        claim that makes it holds on every machine), `partly`, `not seen`; None if none was checked."""
        role = ROLE_AGREEMENT if self.agrees else ROLE_DIFFERENCE
        known = [
            f.verdict
            for ev in self.evidence
            if ev.role == role
            for f in ev.facts
            if f.claim is not None and f.verdict is not None
        ]
        return seen_state(known)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")


def summarize(value: Any, limit: int = 60) -> str:
    """An observed value in a few characters."""
    if isinstance(value, dict):
        text = ", ".join(f"{k} {summarize(v, 20)}" for k, v in list(value.items())[:4])
    elif isinstance(value, list):
        shown = ", ".join(summarize(v, 12) for v in value[:4])
        text = f"[{shown}{', ...' if len(value) > 4 else ''}]"
    else:
        text = value_text(value)
    return short(text, limit)


def _stopped(run: RunRecord) -> str:
    """What a run that did not finish said: panic, failure, error or crash."""
    if run.panic is not None and run.failure is None:
        return f"{run.framework}/{run.mode} panicked at step {run.panic.step}: {short(run.panic.message, PANIC_LIMIT)}"
    if run.failure is not None:
        f = run.failure
        where = ", ".join(
            x
            for x in (
                f"op {f.op_index} {f.op}" if f.op else "",
                f"line {f.line}" if f.line else "",
                f"iteration {f.iteration}" if f.iteration else "",
            )
            if x
        )
        return f"{run.framework}/{run.mode} stopped ({where}): {short(f.message, PANIC_LIMIT)}"
    if run.error is not None:
        return f"{run.framework}/{run.mode} raised {run.error.type}: {short(run.error.message, PANIC_LIMIT)}"
    if run.crash is not None:
        return f"{run.framework}/{run.mode}: {outcome_text(run)}"
    return ""


def _metric_value(prop: str, run: RunRecord) -> tuple[str, str]:
    """A p10-style property of one run, from its metrics: in full and short."""
    m = run.metrics
    if prop == "tracked":
        return value_text(m.tracked), value_text(m.tracked)
    if prop == "grows":
        if m.slowdown_ratio is None:
            return "-", "-"
        ratio = f"×{m.slowdown_ratio:.3g}"
        return f"{ratio} ({value_text(m.reference_median_ms, '.3g')} → {value_text(m.last_median_ms, '.3g')} ms)", ratio
    if prop == "rss_grows":
        g = m.rss_growth_mib_per_1000
        return ("-", "-") if g is None else (f"{g:+.2f} MiB/1000 steps", f"{g:+.2f} MiB")
    if prop == "outcome":
        return outcome_text(run), run.outcome
    raise KeyError(prop)


METRIC_LABELS = {
    "tracked": "tracked",
    "grows": "slowdown (last / reference window)",
    "rss_grows": "RSS growth",
    "outcome": "outcome",
}


def _value_fact(verdict: Verdict) -> tuple[str, str, str, str]:
    """A value verdict of a program case: label, both summaries, the error."""
    observed: Any = verdict.observed if isinstance(verdict.observed, dict) else {}
    kind = verdict.property.split(":", 1)[0]  # `values:y` claims the values of y
    what = PROPERTY_LABELS.get(kind, kind)
    label = f"{what} of {observed['label']}" if observed.get("label") else what
    detail = []
    for key, name in (("max_abs_error", "max abs error"), ("max_rel_error", "max rel error")):
        if observed.get(key) is not None:
            detail.append(f"{name} {value_text(observed[key], '.3g')}")
    if observed.get("first_index") is not None:
        detail.append(f"first at index {summarize(observed['first_index'])}")
    return label, summarize(observed.get("a")), summarize(observed.get("b")), ", ".join(detail)


def _flags_facts(ra: RunRecord, rb: RunRecord) -> list[Fact]:
    """Observed tensors whose flags differ between the two runs (program cases)."""
    out = []
    b_last = {o.label: o for o in rb.observations}
    seen: set[str] = set()
    for o in reversed(ra.observations):
        other = b_last.get(o.label)
        if other is None or o.label in seen:
            continue
        seen.add(o.label)
        fa, fb = o.flags, other.flags
        if (fa.tracked, fa.requires_grad) != (fb.tracked, fb.requires_grad):
            text = "tracked {}, requires_grad {}"
            out.append(
                Fact(
                    f"flags of {o.label}",
                    text.format(value_text(fa.tracked), value_text(fa.requires_grad)),
                    text.format(value_text(fb.tracked), value_text(fb.requires_grad)),
                    short_a=f"tracked {value_text(fa.tracked)}",
                    short_b=f"tracked {value_text(fb.tracked)}",
                )
            )
    return list(reversed(out))


def pair_evidence(pair: Pair, role: str, machines: list[MachineResults]) -> PairEvidence:
    ran = [m for m in machines if m.run(side_key(pair.case, pair.a)) and m.run(side_key(pair.case, pair.b))]
    if not ran:
        return PairEvidence(pair, role, "", ran=False)
    shown = ran[0]
    ra, rb = shown.run(side_key(pair.case, pair.a)), shown.run(side_key(pair.case, pair.b))
    assert ra is not None and rb is not None
    facts: list[Fact] = []
    for prop, relation in pair.claims.items():
        verdicts = [m.verdict(pair.claim_key(prop, relation)) for m in ran]
        known = [v for v in verdicts if v is not None]
        holds = (sum(v.passed for v in known), len(known))
        first = next(iter(known), None)
        detail = ""
        short_a = short_b = ""
        if prop in METRIC_LABELS:
            (a, short_a), (b, short_b) = _metric_value(prop, ra), _metric_value(prop, rb)
            label = METRIC_LABELS[prop]
        elif first is not None and isinstance(first.observed, dict) and "max_abs_error" in first.observed:
            label, a, b, detail = _value_fact(first)
        else:
            observed: Any = first.observed if first is not None and isinstance(first.observed, dict) else {}
            label, a, b = PROPERTY_LABELS.get(prop, prop), summarize(observed.get("a")), summarize(observed.get("b"))
        if prop == "outcome":
            detail = "; ".join(x for x in (_stopped(ra), _stopped(rb)) if x)
        facts.append(Fact(label, a, b, relation, holds, detail, short_a or a, short_b or b))
    if "outcome" not in pair.claims and (ra.outcome != "ok" or rb.outcome != "ok"):
        stopped = "; ".join(x for x in (_stopped(ra), _stopped(rb)) if x)
        facts.append(Fact("outcome", outcome_text(ra), outcome_text(rb), None, (0, 0), stopped, ra.outcome, rb.outcome))
    facts += _flags_facts(ra, rb)
    return PairEvidence(pair, role, shown.label, facts)


def role_of(pair: Pair, agreement: bool = False) -> str:
    """A pair's role on its case's card (`agreement`: the case shows no difference)."""
    if not pair.across:
        return ROLE_OTHER
    if pair.claims_difference:
        return ROLE_DIFFERENCE
    return ROLE_AGREEMENT if agreement else ROLE_FIX


def _claim_keys(pairs: list[Pair], relation: str = "differ") -> list[ClaimKey]:
    return [p.claim_key(prop) for p in pairs for prop, rel in p.claims.items() if rel == relation]


def _differ(pairs: list[Pair]) -> list[str]:
    """The properties the torch-vs-burn pairs claim differ."""
    return [prop for p in pairs if p.across for prop, rel in p.claims.items() if rel == "differ"]


def _programs(info: CaseInfo | None) -> dict[str, ProgramCode]:
    if info is None:
        return {}
    return {name: program_code(p) for name, p in info.programs.items()}


TITLE_LIMIT = 120


def observed_title(evidence: list[PairEvidence]) -> str | None:
    """A card's title from what its runs showed, for a found case no person has
    judged yet: `values of v3: PyTorch [8.21e+07], burn [8.21e+07]`."""
    for ev in evidence:
        if ev.role != ROLE_DIFFERENCE or not ev.ran:
            continue
        fact = next((f for f in ev.facts if f.claim == "differ"), None)
        if fact is not None:
            label = fact.label.split(" (")[0]
            return short(f"{label}: PyTorch {fact.short_a}, burn {fact.short_b}", TITLE_LIMIT)
    return None


def _fallback_fix(pair: Pair, pairs: list[Pair]) -> str:
    fixes = [p for p in pairs if role_of(p) == ROLE_FIX and p.a == pair.a]
    if not fixes:
        return ""
    return " ".join(f"{p.b} matches {p.a}: {p.reason}" if p.reason else f"{p.b} matches {p.a}." for p in fixes)


def _order(evidence: list[PairEvidence]) -> list[PairEvidence]:
    rank = {ROLE_DIFFERENCE: 0, ROLE_AGREEMENT: 1, ROLE_FIX: 1, ROLE_OTHER: 2}
    return sorted(evidence, key=lambda ev: rank[ev.role])


def case_differences(
    case: str, info: CaseInfo | None, pairs: list[Pair], machines: list[MachineResults]
) -> list[Difference]:
    programs = _programs(info)
    if info is not None and info.about is not None:
        about = info.about
        where = standing(_differ(pairs), about.difference)
        evidence = _order([pair_evidence(p, role_of(p, where.agrees), machines) for p in pairs])
        if where.agrees:
            keys = _claim_keys([p for p in pairs if p.across], "same")
        else:
            keys = _claim_keys([p for p in pairs if role_of(p) == ROLE_DIFFERENCE])
        waiting = about.awaits_judgement
        return [
            Difference(
                case=case,
                anchor=f"diff-{slug(case)}",
                title=(observed_title(evidence) or about.title) if waiting else about.title,
                torch=about.torch,
                burn=about.burn,
                fix=about.fix,
                sources=list(about.sources),
                documented=True,
                evidence=evidence,
                claim_keys=keys,
                standing=where,
                awaits_judgement=waiting,
                programs=programs,
            )
        ]
    out = []
    for pair in pairs:
        if role_of(pair) != ROLE_DIFFERENCE:
            continue
        fixes = [p for p in pairs if role_of(p) == ROLE_FIX and p.a == pair.a]
        evidence = [pair_evidence(pair, ROLE_DIFFERENCE, machines)] + [
            pair_evidence(p, ROLE_FIX, machines) for p in fixes
        ]
        modes = {pair.a.mode, pair.b.mode} | {p.b.mode for p in fixes}
        out.append(
            Difference(
                case=case,
                anchor=f"diff-{slug(case)}-{slug(pair.subject)}",
                title=pair.reason or f"{pair.a} and {pair.b} differ",
                torch="",
                burn="",
                fix=_fallback_fix(pair, pairs),
                sources=[],
                documented=False,
                evidence=evidence,
                claim_keys=_claim_keys([pair]),
                standing=standing(_differ([pair])),
                programs={k: v for k, v in programs.items() if k in modes},
            )
        )
    return out


def seen_state(known: list[bool]) -> str | None:
    """Whether the difference's claims held: seen (all), partly, not seen (none); None: not checked."""
    if not known:
        return None
    return "seen" if all(known) else "partly" if any(known) else "not seen"


def _status(claims: dict[ClaimKey, bool], keys: list[ClaimKey]) -> str | None:
    return seen_state([claims[k] for k in keys if k in claims])


def _version_key(text: str) -> tuple[int, Any]:
    return (0, versions.parse(text)) if versions.is_version(text) else (1, text)


@dataclass(frozen=True)
class UpgradeSide:
    """One side of an upgrade check: its burn version and what it showed."""

    burn: str
    snapshot: Snapshot | None  # None: no results for this side
    built: bool
    cases: frozenset[str]

    @classmethod
    def of(cls, check: UpgradeCheck) -> list[UpgradeSide]:
        cases = frozenset(r.case for r in check.report.runs)
        out = []
        for side in ("from", "to"):
            doc = check.sides.get(side)
            snap = Snapshot.of(doc, "upgrade check") if doc is not None else None
            out.append(cls(check.burn(side), snap, check.built(side), cases))
        return out


def sightings(diff: Difference, snapshots: list[Snapshot], upgrades: list[UpgradeSide]) -> list[Sighting]:
    """Per burn version: in how many runs the difference showed (history, this
    run, upgrade-check sides), and where the probe did not build."""
    found: dict[str, Sighting] = {}

    def add(burn: str, status: str | None, source: str) -> None:
        if status is None:
            return
        s = found.setdefault(burn, Sighting(burn, agreement=diff.agrees))
        if status == "seen":
            s.seen += 1
        elif status == "partly":
            s.partly += 1
        elif status == "not seen":
            s.not_seen += 1
        else:
            s.build_break += 1
        s.sources.setdefault(source)

    for snap in snapshots:
        add(snap.burn, _status(snap.claims, diff.claim_keys), snap.source)
    for side in upgrades:
        if side.snapshot is not None:
            add(side.burn, _status(side.snapshot.claims, diff.claim_keys), "upgrade check")
        elif not side.built and diff.case in side.cases:
            add(side.burn, "build-break", "upgrade check")
    return sorted(found.values(), key=lambda s: _version_key(s.burn))


def differences(
    machines: list[MachineResults],
    cases: list[str],
    pairs: dict[str, list[Pair]],
    snapshots: list[Snapshot],
    upgrades: list[UpgradeCheck],
) -> list[Difference]:
    """Every card, in the order of harm (differences first, agreements last)."""
    infos: dict[str, CaseInfo] = {}
    for m in machines:
        for info in m.doc.cases:
            infos.setdefault(info.name, info)
    sides = [side for check in upgrades for side in UpgradeSide.of(check)]
    out = []
    for case in cases:
        for diff in case_differences(case, infos.get(case), pairs.get(case, []), machines):
            diff.sightings = sightings(diff, snapshots, sides)
            out.append(diff)
    return sorted(out, key=lambda d: d.standing.order(d.case))
