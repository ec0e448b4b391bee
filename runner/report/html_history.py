"""The history view of `report.html`, in the manner of asv: for each machine,
each run's key numbers (slowdown ratio, last-window median, RSS growth,
outcome) across its history entries and this run, oldest left, with burn's
version changes marked; the upgrade checks' results; every entry behind a
disclosure."""

from __future__ import annotations

from collections.abc import Callable

from ..model.results import RunKey
from ..wording import value_text
from . import svg
from .html_base import BURN, TORCH, esc, num, table
from .machines import MachineResults
from .model import Report
from .trend import RunNumbers, Snapshot, version_changes
from .upgrades import UpgradeCheck

ENTRY_ROWS = 10  # snapshots in the table of every entry (newest)

METRICS: list[tuple[str, Callable[[RunNumbers], float | None], str]] = [
    ("slowdown ratio", lambda n: n.ratio, ".2f"),
    ("last-window median ms", lambda n: n.last_ms, ".3g"),
    ("RSS growth MiB/1000 steps", lambda n: n.rss, ".2f"),
]


def _outcomes(values: list[RunNumbers | None]) -> str:
    """`ok ×12 → panic at step 3 (backward) ×2`: runs of equal outcomes, oldest first."""
    groups: list[list[str | int]] = []
    for n in values:
        text = n.outcome_text if n is not None else "not run"
        if groups and groups[-1][0] == text:
            groups[-1][1] = int(groups[-1][1]) + 1
        else:
            groups.append([text, 1])
    return " → ".join(f"{text} ×{count}" for text, count in groups)


def _upgrade_text(checks: list[UpgradeCheck], key: RunKey) -> str:
    out = []
    for check in checks:
        for row in check.report.runs:
            if (row.case, row.run) != (key[0], f"{key[1]}/{key[2]}"):
                continue
            before = row.before.metrics.slowdown_ratio if row.before and row.before.metrics else None
            after = row.after.metrics.slowdown_ratio if row.after and row.after.metrics else None
            ratio = f" (ratio ×{value_text(before, '.2f')} → ×{value_text(after, '.2f')})" if before or after else ""
            out.append(f"{check.label}: {row.klass}{ratio}")
    return "; ".join(out)


def _machine(report: Report, machine: MachineResults, line: list[Snapshot]) -> str:
    if not line:
        return ""
    changes = version_changes(line)
    burns = [s.burn for s in line]
    counts = {b: burns.count(b) for b in dict.fromkeys(burns)}
    versions = ", ".join(f"burn {b} ({n} run{'s' * (n != 1)})" for b, n in counts.items())
    assert report.history is not None
    left_out = report.history.left_out.get(machine.fingerprint, 0)
    older = f" (and {left_out} older entries, not shown)" if left_out else ""
    head = (
        f"<h3>{esc(machine.label)}: {len(line)} run{'s' * (len(line) != 1)}, {esc(line[0].date)} to "
        f"{esc(line[-1].date)} UTC{older}</h3><p>{esc(versions)}.</p>"
    )
    strip = svg.version_strip(burns)
    header = ["case", "run", *(f"{esc(name)}<br>{strip}" for name, _, _ in METRICS), "outcome, oldest first"]
    upgrades = bool(report.upgrades)
    if upgrades:
        header.append("upgrade checks")
    current = next((i for i, s in enumerate(line) if s.source == "this run"), len(line) - 1)
    rows = []
    for key in report.run_keys():
        values = [s.runs.get(key) for s in line]
        if all(v is None for v in values):
            continue
        style = TORCH if key[1] == "torch" else BURN
        row = [esc(key[0]), esc(f"{key[1]}/{key[2]}")]
        for name, get, spec in METRICS:
            numbers = [get(v) if v is not None else None for v in values]
            titles = [f"{s.date} burn {s.burn}: {name} {value_text(x, spec)}" for s, x in zip(line, numbers)]
            failed = [v is not None and v.outcome != "ok" and get(v) is None for v in values]
            latest = numbers[current]
            if all(x is None for x in numbers):
                row.append(num("-"))  # never a number (a run that always stops early): the outcome says why
                continue
            spark = svg.sparkline(numbers, titles=titles, failed=failed, changes=changes, style=style)
            row.append(
                f'<td class="num" data-sort="{"" if latest is None else f"{latest:.6g}"}">'
                f'<div class="sparkcell">{spark}<span>{esc(value_text(latest, spec))}</span></div></td>'
            )
        row.append(esc(_outcomes(values)))
        if upgrades:
            row.append(esc(_upgrade_text(report.upgrades, key)) or "-")
        rows.append(row)
    return (
        head
        + table(header, rows, "history sortable filterable", f"history of {machine.label}")
        + '<p class="note">Each line: one number across the runs, oldest left; the value written is this '
        "run's. A dotted rule: burn's version changed; a cross at the bottom: the run did not finish, so "
        "the number does not exist. Hover a point for its date and version.</p>" + _entries(line)
    )


def _entries(line: list[Snapshot]) -> str:
    shown = list(reversed(line))[:ENTRY_ROWS]
    rows = []
    for s in shown:
        for key, n in s.runs.items():
            rows.append(
                [
                    f'<td data-sort="{esc(s.stamp)}">{esc(s.date)}</td>',
                    esc(s.burn),
                    esc((s.commit or "-")[:10]),
                    esc(s.source),
                    esc(key[0]),
                    esc(f"{key[1]}/{key[2]}"),
                    esc(n.outcome_text),
                    num(value_text(n.ratio, ".2f")),
                    num(value_text(n.last_ms, ".3g")),
                    num(value_text(n.rss, ".2f")),
                ]
            )
    more = f" (the newest {ENTRY_ROWS} of {len(line)})" if len(line) > ENTRY_ROWS else ""
    header = ["started (UTC)", "burn", "commit", "from", "case", "run", "outcome", "ratio", "last ms", "RSS MiB/1k"]
    return (
        f"<details><summary>Every run of every entry{more}</summary>"
        + table(header, rows, "entries sortable filterable", "every entry")
        + "</details>"
    )


def _upgrades(report: Report) -> str:
    out = ["<h3>Upgrade checks</h3>"]
    if not report.upgrades:
        out.append(
            '<p class="note">No upgrade-check output was given (<code>--upgrades</code>, by default '
            "<code>results/upgrade-*/upgrade.json</code>): <code>python3 -m runner upgrade-check</code> "
            "writes one.</p>"
        )
    rows = []
    for check in report.upgrades:
        builds = ", ".join(
            f"{side} {check.burn(side)}: {'built' if check.built(side) else 'BUILD FAILED'}" for side in ("from", "to")
        )
        for row in check.report.runs:
            b, a = row.before, row.after
            rows.append(
                [
                    esc(check.label),
                    esc(builds),
                    esc(row.case),
                    esc(row.run),
                    f"<b>{esc(row.klass)}</b>",
                    num(
                        f"×{value_text(b.metrics.slowdown_ratio if b and b.metrics else None, '.2f')} → "
                        f"×{value_text(a.metrics.slowdown_ratio if a and a.metrics else None, '.2f')}"
                    ),
                    esc(f"{(b.outcome if b else None) or '-'} → {(a.outcome if a else None) or '-'}"),
                    "<br>".join(esc(f) for f in row.findings) or "-",
                ]
            )
    if rows:
        header = ["check", "probe builds", "case", "run", "class", "slowdown ratio", "outcome", "findings"]
        out.append(table(header, rows, "upgrades sortable filterable", "upgrade checks"))
        out.append(
            f'<p class="note">Read from {", ".join(f"<code>{esc(c.path)}</code>" for c in report.upgrades)}.</p>'
        )
    if report.unreadable_upgrades:
        items = "".join(f"<li><code>{esc(u.path)}</code>: {esc(u.reason)}</li>" for u in report.unreadable_upgrades)
        out.append(f'<p class="note">Left out (could not be read):</p><ul class="note">{items}</ul>')
    return "".join(out)


def section(report: Report) -> str:
    view = report.history
    parts = [
        '<section id="history"><h2>History</h2><p class="note">Every run recorded in the history folder for the '
        "machines of this report, and this run.</p>"
    ]
    if view is not None:
        parts += [_machine(report, m, view.timeline(m)) for m in report.machines]
        if view.skipped:
            items = "".join(f"<li><code>{esc(name)}</code>: {esc(reason)}</li>" for name, reason in view.skipped)
            parts.append(
                f'<p class="note">History entries left out (could not be read):</p><ul class="note">{items}</ul>'
            )
    parts.append(_upgrades(report))
    parts.append("</section>")
    return "".join(parts)
