"""The report's operation table: every operation of the language by family, burn's support,
and the cases that exercise it (`operations`)."""

from __future__ import annotations

from ..model.results import CaseInfo
from . import operations
from .html_base import esc, table


def section(infos: list[CaseInfo]) -> str:
    rows = operations.rows(infos)
    body = [
        [
            f"<code>{esc(r.name)}</code>",
            esc(r.family),
            esc(r.summary),
            "yes" if r.burn else "<b>no</b>",
            ", ".join(f'<a href="#case-{esc(c)}">{esc(c)}</a>' for c in r.cases) or "-",
        ]
        for r in rows
    ]
    kinds = ", ".join(f"<code>{esc(m.source)}</code>" for m in operations.module_kinds())
    return (
        f'<section id="operations"><h2>Operations</h2><p>{esc(operations.summary(rows))}. '
        f"Module kinds: {kinds}. The table (`runner/contract/ops/`) is the one source of both interpreters' "
        "spellings; <code>cases/README.md</code> shows the PyTorch and burn columns.</p>"
        f"{table(['op', 'family', 'what it does', 'burn 0.22.1', 'cases'], body, 'operations sortable filterable', 'operations')}"
        "</section>"
    )
