"""`report.html`: one self-contained page (inline CSS, SVG and one small
script; no network). It reads like an answer: first the known differences
between PyTorch and burn (`html_cards`), the expectations that do not hold
and what changed since the previous run; then the history across runs and
burn versions (`html_history`); then per case the plots, runs and pairs
(`html_details`); every expectation; provenance in the footer.

Everything reads with scripts off: the script only adds sorting and a filter
box to the tables, and opens every disclosure for printing."""

from __future__ import annotations

from ..errors import ExitCode
from ..model.results import CaseInfo
from ..wording import observed_text, value_text
from . import html_cards, html_curves, html_details, html_fuzz, html_history, html_operations
from .differences import slug
from .html_base import CSS, SCRIPT, esc, table, verdict
from .model import RSS_NOTE, Report, previous_text


def _expectations(report: Report) -> str:
    header = ["case", "subject", "check", "expected"]
    for m in report.machines:
        prefix = f"{esc(m.label)}<br>" if len(report.machines) > 1 else ""
        header += [f"{prefix}observed", "verdict"]
    rows = []
    for first, per_machine in report.expectation_rows():
        row = [esc(first.case), esc(first.subject), esc(first.check), esc(value_text(first.expected))]
        for item in per_machine:
            row += ["-", "-"] if item is None else [esc(observed_text(item)), verdict(item.passed)]
        rows.append(row)
    counts = "; ".join(
        f"{esc(m.label)}: {sum(check.passed for check in m.doc.expectations)} hold, "
        f"{sum(not check.passed for check in m.doc.expectations)} do not hold"
        for m in report.machines
    )
    skipped = [(m, item) for m in report.machines for item in m.doc.not_applicable]
    note = ""
    if skipped:
        note = (
            "<p>Not checked (limited to other burn versions): "
            + "; ".join(
                f"{esc(m.label)} {esc(i.case)} {esc(i.subject)} (burn_versions {esc(i.burn_versions)}, ran {esc(i.burn)})"
                for m, i in skipped
            )
            + "</p>"
        )
    return (
        f'<section id="expectations"><h2>Every expectation</h2><p>{counts}</p>{note}'
        f"{table(header, rows, 'expectations sortable filterable', 'expectations')}</section>"
    )


def _changes(report: Report) -> str:
    out = [
        f'<section id="changes"><h2>What changed since the previous run</h2>'
        f'<p class="note">Step times moved beyond noise when, {esc(report.rule)}. {esc(RSS_NOTE)}</p>'
    ]
    for m, comparison in zip(report.machines, report.comparisons, strict=True):
        if comparison.previous is None:
            out.append(f"<p><b>{esc(m.label)}</b>: {esc(comparison.note)}</p>")
            continue
        prev = comparison.previous
        head = (
            f"<p><b>{esc(m.label)}</b> compared with <code>{esc(prev.name)}</code> ({esc(previous_text(comparison))})"
        )
        if not comparison.changes:
            out.append(head + ": nothing changed.</p>")
            continue
        out.append(head + f": {len(comparison.changes)} change(s).</p>")
        rows = [[esc(c.kind), esc(c.subject), esc(c.before), esc(c.after), esc(c.detail)] for c in comparison.changes]
        out.append(table(["change", "what", "before", "now", "detail"], rows, "changes sortable filterable", "changes"))
    out.append("</section>")
    return "".join(out)


PROVENANCE_FIELDS = (
    "burn",
    "probe_profile",
    "torch",
    "rustc",
    "python",
    "cpu",
    "machine",
    "system",
    "cores",
    "git_commit",
    "started",
    "finished",
)


def _footer(report: Report) -> str:
    header = ["", *(esc(m.label) for m in report.machines)]
    rows = [[esc(k), *(esc(value_text(getattr(m.provenance, k))) for m in report.machines)] for k in PROVENANCE_FIELDS]
    rows.append(["fingerprint", *(esc(m.fingerprint) for m in report.machines)])
    rows.append(["results from", *(esc(", ".join(m.sources)) for m in report.machines)])
    return (
        f'<footer id="provenance"><h2>Provenance</h2>{table(header, rows, "provenance")}'
        f"<p>Report generated {esc(report.generated)} by <code>burn-torch-diff report</code>.</p></footer>"
    )


def _infos(report: Report) -> dict[str, CaseInfo]:
    found: dict[str, CaseInfo] = {}
    for m in report.machines:
        for info in m.doc.cases:
            found.setdefault(info.name, info)
    return found


CASE_LINKS_INLINE = 8  # more case links than this wait behind a disclosure


def case_links(cases: list[str]) -> str:
    """The header's links to the case sections: a few inline; many behind a "Cases (N)"
    disclosure, since dozens of links would push the headline off a phone's first screen."""
    links = " ".join(f'<a href="#case-{slug(c)}">Case {esc(c)}</a>' for c in cases)
    if len(cases) <= CASE_LINKS_INLINE:
        return f" {links}" if links else ""
    return f' <details class="toc-cases"><summary>Cases ({len(cases)})</summary>{links}</details>'


def _header(report: Report) -> str:
    status_cls = "ok" if report.exit_code == ExitCode.OK else "attention"
    burns = ", ".join(dict.fromkeys(m.provenance.burn or "?" for m in report.machines))
    torches = ", ".join(dict.fromkeys(m.provenance.torch or "?" for m in report.machines))
    machines = ", ".join(m.label for m in report.machines)
    cases = report.cases()
    links = [("#differences", "Differences")]
    links += [("#agreements", "Agreements")] if report.agreeing else []
    links += [("#changes", "Changes"), ("#history", "History")]
    links += [("#models", "Models")] if any(html_curves.all_curves(report, _infos(report))) else []
    links += [("#operations", "Operations"), ("#expectations", "Expectations"), ("#provenance", "Provenance")]
    nav = " ".join(f'<a href="{href}">{esc(text)}</a>' for href, text in links)
    nav += case_links(cases)
    return (
        "<header><h1>burn-torch-diff: where burn differs from PyTorch</h1>"
        f'<p class="status {status_cls}">{esc(report.status())}</p>'
        f'<p class="meta">burn {esc(burns)} · torch {esc(torches)} · {esc(machines)} · generated {esc(report.generated)}</p>'
        f'<nav class="toc">{nav}</nav></header>'
    )


def render(report: Report) -> str:
    infos = _infos(report)
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>burn-torch-diff nightly report</title>",
        f"<style>{CSS}</style></head><body>",
        _header(report),
        "<main>",
        html_cards.section(report),
        html_cards.agreements(report),
        html_cards.failing(report),
        _changes(report),
        html_history.section(report),
        html_curves.summary(report, infos),
        html_fuzz.section(report.fuzz),
    ]
    parts += [html_details.section(report, case, infos.get(case)) for case in report.cases()]
    parts += [html_operations.section(list(infos.values()))]
    parts += [_expectations(report), "</main>", _footer(report), f"<script>{SCRIPT}</script>", "</body></html>\n"]
    return "\n".join(parts)
