"""The fuzz section of `report.html`: what the last fuzz campaign did, and the
divergences it wrote as cases with their reproducers (`fuzzing`)."""

from __future__ import annotations

from . import fuzzing
from .fuzzing import FuzzSection
from .html_base import esc, table

FOUND_HEADER = ["signature", "class", "case", "PyTorch reproducer", "Rust reproducer"]


def section(fuzz: FuzzSection | None) -> str:
    if fuzz is None:
        return ""
    head = '<section id="fuzzing"><h2>Fuzzing</h2>'
    if fuzz.doc is None:
        return head + f"<p>The fuzz summary could not be read: {esc(fuzz.error)}</p></section>"
    doc = fuzz.doc
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in fuzzing.facts(doc))
    shown, more = fuzzing.found(doc)
    cells = [
        [
            f"<code>{esc(fuzzing.text(f.signature))}</code>",
            esc(fuzzing.text(f.class_)),
            f"<code>{esc(fuzzing.text(f.case))}</code>",
            f"<code>{esc(fuzzing.text(f.torch))}</code>",
            f"<code>{esc(fuzzing.text(f.rust))}</code>",
        ]
        for f in shown
    ]
    listing = (
        "<h3>Divergences written by this run</h3>"
        + table(FOUND_HEADER, cells, "found")
        + (f'<p class="note">... and {more} more (see the summary file).</p>' if more else "")
        if shown
        else "<p>No new divergence: every divergence met was filtered or is a documented difference.</p>"
    )
    note = f'<p class="note">From <code>{esc(fuzz.source)}</code>.</p>'
    return f'{head}{note}<div class="scroll"><table>{rows}</table></div>{listing}</section>'
