"""The first screen of `report.html`: one card per known difference (what
PyTorch does, what burn does, the evidence from this run, the fix, the burn
versions it was seen on), grouped and ordered by harm (`runner.harm`); then
the cases where both frameworks agree, in cards of their own; then the
expectations that do not hold."""

from __future__ import annotations

from ..harm import Harm, agreements_text, by_kind, differences_text
from ..wording import observed_text, value_text
from .differences import ROLE_AGREEMENT, ROLE_DIFFERENCE, ROLE_FIX, Difference, Fact, PairEvidence, slug
from .html_base import code_pair, esc, holds_text, prose, verdict
from .model import Report

ROLE_TEXT = {
    ROLE_DIFFERENCE: "the difference",
    ROLE_FIX: "the fix, against PyTorch",
    ROLE_AGREEMENT: "the same in both",
}


def _claim_cell(fact: Fact) -> str:
    if fact.claim is None:
        return '<td class="note">shown, not claimed</td>'
    passed, checked = fact.holds
    more = f' <span class="note">({esc(holds_text(fact.holds))})</span>' if checked > 1 and passed != checked else ""
    return f'<td class="claim">{esc(fact.claim)} {verdict(fact.verdict)}{more}</td>'


def _evidence_rows(ev: PairEvidence) -> list[str]:
    """A difference pair: one row per property. A fix (or a pair within one
    framework): one row, both runs' values in a few characters."""
    role = ROLE_TEXT.get(ev.role, ev.role)
    if ev.role != ROLE_DIFFERENCE:
        names = ", ".join(f.label.split(" (")[0] for f in ev.facts)
        head = (
            f'<th class="pair" scope="row">{esc(ev.pair.a)} vs {esc(ev.pair.b)} <span class="note">· {esc(role)}</span>'
        )
        if not ev.ran:
            return [f'<tr>{head}</th><td colspan="3" class="note">not run</td></tr>']
        a = ", ".join(f.short_a for f in ev.facts)
        b = ", ".join(f.short_b for f in ev.facts)
        claims = sorted({f.claim for f in ev.facts if f.claim})
        claim = f"{esc('/'.join(claims))} {verdict(ev.verdict)}" if claims else "-"
        return [
            f'<tr>{head}<br><span class="note">{esc(names)}</span></th><td>{esc(ev.pair.a)}: {esc(a)}</td>'
            f'<td>{esc(ev.pair.b)}: {esc(b)}</td><td class="claim">{claim}</td></tr>'
        ]
    head = (
        f'<tr><th class="pair" scope="rowgroup">{esc(ev.pair.a)} vs {esc(ev.pair.b)} <span class="note">· {esc(role)}'
        f'</span></th><th scope="col">{esc(ev.pair.a)}</th><th scope="col">{esc(ev.pair.b)}</th><th scope="col">claim</th></tr>'
    )
    if not ev.ran:
        return [head, '<tr><td colspan="4" class="note">not run on any machine of this report</td></tr>']
    rows = [head]
    for f in ev.facts:
        rows.append(
            f'<tr><td class="prop">{esc(f.label)}</td><td>{esc(f.a)}</td><td>{esc(f.b)}</td>{_claim_cell(f)}</tr>'
        )
        if f.detail:
            rows.append(f'<tr><td colspan="4" class="detail">{esc(f.detail)}</td></tr>')
    return rows


def _evidence(diff: Difference, machines: int) -> str:
    shown = next((ev.machine for ev in diff.evidence if ev.ran), "")
    where = f" ({esc(shown)}{f'; claims checked on {machines} machines' if machines > 1 else ''})" if shown else ""
    rows = [r for ev in diff.evidence for r in _evidence_rows(ev)]
    return (
        f'<p class="label">Evidence from this run{where}</p>'
        f'<div class="scroll"><table class="evidence"><tbody>{"".join(rows)}</tbody></table></div>'
    )


def _sightings(diff: Difference) -> str:
    if not diff.sightings:
        what = "agreement" if diff.agrees else "difference"
        return f'<p class="note">No run with the pair verdicts of this {what}.</p>'
    chips = "".join(
        f'<span class="chip {s.state.replace(" ", "-")}">burn {esc(s.burn)}: {esc(s.text())}</span>'
        for s in diff.sightings
    )
    return f'<p class="chips">{chips}</p>'


def _runs_text(diff: Difference, side: str) -> str:
    """For a card without [about]: what the runs of one side showed."""
    parts = []
    for ev in diff.evidence:
        if ev.role != ROLE_DIFFERENCE or not ev.ran:
            continue
        run = ev.pair.a if side == "a" else ev.pair.b
        values = ", ".join(f"{f.label.split(' (')[0]} {f.short_a if side == 'a' else f.short_b}" for f in ev.facts)
        parts.append(f"<code>{esc(run)}</code>: {esc(values)}")
    return "<br>".join(parts)


def _programs(diff: Difference) -> str:
    if not diff.programs:
        return ""
    blocks = []
    for name, code in diff.programs.items():
        blocks.append(f'<p class="note">variant <code>{esc(name)}</code></p>' + code_pair(code))
    return f"<details><summary>The program, as PyTorch and as burn code</summary>{''.join(blocks)}</details>"


AWAITS = (
    '<p class="lede awaits">Awaits a judgement: the fuzzer found this divergence and no one has yet said '
    "whether it is a burn bug, a torch quirk or a documented difference. What the runs showed:</p>"
)


def _state(diff: Difference) -> str:
    if diff.agrees:
        if diff.state == "not seen":
            return '<p class="lede">Does not hold in this run: the frameworks differ here (see the evidence).</p>'
        if diff.state == "partly":
            return '<p class="lede">Partly holds in this run: some of its claims do not (FAIL below).</p>'
        return ""
    if diff.state == "not seen":
        return '<p class="lede">Not seen in this run: no claim of the difference holds (see the evidence).</p>'
    if diff.state == "partly":
        return '<p class="lede">Partly seen in this run: some claims of the difference do not hold (FAIL below).</p>'
    return ""


def card(diff: Difference, machines: int) -> str:
    gone = diff.state == "not seen"
    state = _state(diff)
    if diff.awaits_judgement:
        about = (
            AWAITS + f'<p class="label torch">PyTorch</p><p>{_runs_text(diff, "a")}</p>'
            f'<p class="label burn">burn</p><p>{_runs_text(diff, "b")}</p>'
        )
    elif diff.documented:
        about = (
            f'<p class="label torch">PyTorch</p><p>{prose(diff.torch)}</p>'
            f'<p class="label burn">burn</p><p>{prose(diff.burn)}</p>'
        )
    else:
        about = (
            '<p class="note">The case carries no [about] (or the results predate it): the title is the '
            "pair's reason; below, what the runs showed.</p>"
            f'<p class="label torch">PyTorch</p><p>{_runs_text(diff, "a")}</p>'
            f'<p class="label burn">burn</p><p>{_runs_text(diff, "b")}</p>'
        )
    label = "In burn" if diff.agrees else "Fix"
    if diff.awaits_judgement:
        fix = f'<p class="label fix">{label}</p><p class="note">None yet: it awaits a judgement.</p>'
    elif diff.fix:
        fix = f'<p class="label fix">{label}</p><p class="fixtext">{prose(diff.fix)}</p>'
    else:
        fix = (
            f'<p class="label fix">{label}</p><p class="note">None declared: no <code>same</code> pair from this '
            "PyTorch run to a burn run.</p>"
        )
    sources = (
        f'<p class="sources">Sources: {", ".join(f"<code>{esc(s)}</code>" for s in diff.sources)}</p>'
        if diff.sources
        else ""
    )
    kind = diff.standing.harm.word if diff.standing.harm is not None else "agreement"
    classes = " ".join(["card", kind, *(["gone"] if gone else []), *(["awaits"] if diff.awaits_judgement else [])])
    return (
        f'<article class="{classes}" id="{esc(diff.anchor)}" data-case="{esc(diff.case)}">'
        f'<h3>{esc(diff.title)} <span class="case">· case <a href="#case-{slug(diff.case)}">{esc(diff.case)}</a></span></h3>'
        f'{state}<div class="body"><div class="about">{about}{fix}'
        f'<p class="label">{"Held on" if diff.agrees else "Seen on"}</p>{_sightings(diff)}{sources}</div>'
        f'<div class="evidence-col">{_evidence(diff, machines)}{_programs(diff)}</div></div></article>'
    )


def section(report: Report) -> str:
    """The differences, one group per kind of harm (most harmful first), and the headline that counts them."""
    diffs = report.differing
    machines = len(report.machines)
    # The headline's counts, each a link to its group: most harmful first, then the agreements.
    kinds = [f'<a href="#kind-{harm.word}">{n} {esc(harm.text)}</a>' for harm, n in by_kind(report.harms)]
    if report.agreeing:
        kinds.append(f'<a href="#agreements">{esc(agreements_text(len(report.agreeing)))}</a>')
    intro = (
        f"<h2>What differs: {esc(differences_text(len(diffs)))}</h2>"
        f'<p class="kinds" title="most harmful first" aria-label="{esc(report.headline())}">{" · ".join(kinds)}</p>'
        if diffs
        else "<h2>What differs</h2><p>No case of this report claims a difference between PyTorch and burn.</p>"
    )
    groups = []
    for harm in Harm:
        mine = [d for d in diffs if d.standing.harm == harm]
        if mine:
            cards = "".join(card(d, machines) for d in mine)
            groups.append(
                f'<h3 class="kind" id="kind-{harm.word}">{esc(harm.text.capitalize())} ({len(mine)})</h3>'
                f'<div class="cards">{cards}</div>'
            )
    return f'<section id="differences">{intro}{"".join(groups)}</section>'


def agreements(report: Report) -> str:
    """The cases where both frameworks do the same: worth knowing when porting, so they keep their cards."""
    same = report.agreeing
    if not same:
        return ""
    n = len(same)
    cards = "".join(card(d, len(report.machines)) for d in same)
    return (
        f'<section id="agreements"><h2>Where both frameworks agree: {n} case{"s" * (n != 1)}</h2>'
        '<p class="note">PyTorch and burn do the same here: what to write in burn, with the evidence that '
        f'it holds.</p><div class="cards">{cards}</div></section>'
    )


def failing(report: Report) -> str:
    """The expectations that do not hold, one line each (the full table is further down)."""
    rows = [(m, x) for m in report.machines for x in m.doc.expectations if not x.passed]
    if not rows:
        return ""
    multi = len(report.machines) > 1
    items = "".join(
        f"<li>{esc(m.label) + ': ' if multi else ''}<b>{esc(x.case)} {esc(x.subject)}</b> {esc(x.check)}: "
        f"expected {esc(value_text(x.expected))}, observed {esc(observed_text(x))} {verdict(False)}</li>"
        for m, x in rows
    )
    return (
        f'<section id="failing"><h2>Expectations that do not hold ({len(rows)})</h2><ul>{items}</ul>'
        '<p class="note">Every expectation: <a href="#expectations">the table at the end</a>.</p></section>'
    )
