"""What every part of `report.html` shares: escaping, tables, verdict marks,
the palette, the stylesheet (screen and print) and the one small inline
script (sortable and filterable tables; the page reads the same without it).

The palette is Okabe and Ito's, chosen to stay distinguishable for the common
colour-vision deficiencies; every series also has its own dash pattern and
marker shape, and every verdict its word and symbol, so nothing is told by
colour alone (grayscale prints included).
"""

from __future__ import annotations

import re
from html import escape
from typing import Any

from ..frameworks import P10_MODES
from ..model.case import RunRef
from . import svg
from .code import ProgramCode

# Okabe-Ito
BLUE, VERMILLION, GREEN, PURPLE, ORANGE, SKY, BLACK, YELLOW = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#000000",
    "#F0E442",
)
TORCH = svg.Style(BLUE, "", "circle")
BURN = svg.Style(VERMILLION, "7 3", "square")
# The other run of a pair within one framework (burn's fix against burn's detach).
TORCH_ALT = svg.Style(PURPLE, "2 2", "triangle")
BURN_ALT = svg.Style(GREEN, "2 2.5", "diamond")

# The full plots: one colour and marker per mode, the dash per framework.
MODE_COLORS = (BLUE, VERMILLION, GREEN, PURPLE, ORANGE, SKY, BLACK)


def pair_styles(a: RunRef, b: RunRef) -> tuple[svg.Style, svg.Style]:
    """Torch blue and solid, burn vermillion and dashed; within one framework the
    first run takes that framework's second style."""
    base = {"torch": TORCH, "burn": BURN}
    alt = {"torch": TORCH_ALT, "burn": BURN_ALT}
    if a.framework == b.framework:
        return alt[a.framework], base[b.framework]
    return base[a.framework], base[b.framework]


def mode_style(framework: str, mode: str, modes: list[str]) -> svg.Style:
    order = list(P10_MODES) + [m for m in modes if m not in P10_MODES]
    i = order.index(mode) if mode in order else 0
    dash = BURN.dash if framework == "burn" else ""
    return svg.Style(MODE_COLORS[i % len(MODE_COLORS)], dash, svg.MARKERS[i % len(svg.MARKERS)])


def esc(value: Any) -> str:
    """A value as HTML text (`<`, `&` and quotes escaped): everything from a results file passes here."""
    return escape(str(value))


_CODE = re.compile(r"`([^`]+)`")


def prose(text: str) -> str:
    """Plain text from a case file, escaped, with `code` spans."""
    return _CODE.sub(r"<code>\1</code>", escape(text))


def num(text: str, sort: float | None = None) -> str:
    """A number cell; `sort` is what the table script sorts by."""
    key = "" if sort is None else f' data-sort="{sort:.6g}"'
    return f'<td class="num"{key}>{esc(text)}</td>'


def verdict(passed: bool | None) -> str:
    if passed is None:
        return "-"
    return '<span class="pass">PASS</span>' if passed else '<span class="fail">FAIL</span>'


def holds_text(holds: tuple[int, int]) -> str:
    """`holds` / `does not hold` / `holds on 1 of 2 machines`."""
    passed, checked = holds
    if not checked:
        return "not checked"
    if checked == 1:
        return "holds" if passed else "does not hold"
    if passed == checked:
        return f"holds on all {checked} machines"
    return f"holds on {passed} of {checked} machines"


def code_pair(code: ProgramCode) -> str:
    """A program as PyTorch and as burn code, side by side (its source where a rendering is missing)."""
    return (
        '<div class="code2">'
        f"<figure><figcaption>PyTorch</figcaption><pre><code>{esc(code.torch or code.source)}</code></pre></figure>"
        f"<figure><figcaption>burn</figcaption><pre><code>{esc(code.burn or code.source)}</code></pre></figure></div>"
    )


def table(header: list[str], rows: list[list[str]], cls: str = "", name: str = "") -> str:
    """Cells are HTML already (escape before). `sortable` and `filterable` in
    `cls` ask the script for sorting and a filter box; the table is wrapped
    so that it scrolls sideways on a narrow screen instead of the page."""
    head = "".join(f'<th scope="col">{h}</th>' for h in header)
    body = "".join(
        "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in row) + "</tr>" for row in rows
    )
    label = f' data-name="{esc(name)}"' if name else ""
    return (
        f'<div class="scroll"><table class="{cls}"{label}><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


CSS = """
:root { --torch: #0072B2; --burn: #D55E00; --fix: #009E73; --ok: #00573b; --bad: #a33b00; --muted: #555; --rule: #c8c8c8; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1280px; padding: .6em 1em 2em; color: #1a1a1a; background: #fff; }
h1 { font-size: 1.45em; margin: .2em 0 .3em; } h2 { font-size: 1.25em; border-bottom: 1px solid var(--rule); margin: 1.4em 0 .5em; }
h3 { font-size: 1.08em; margin: 1em 0 .4em; } h4 { margin: .8em 0 .3em; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .88em; }
code { background: #f2f2f2; padding: 0 .2em; border-radius: 3px; }
.status { font-weight: bold; padding: .35em .6em; border-radius: 4px; margin: .3em 0; border-left: 6px solid; }
.status.ok { background: #e7f4ee; border-color: var(--fix); } .status.attention { background: #fbeadf; border-color: var(--burn); }
.meta, .note { color: var(--muted); font-size: 13px; } .meta { margin: .2em 0; }
nav.toc { font-size: 13px; margin: .3em 0 0; overflow-wrap: anywhere; } nav.toc a { margin-right: .9em; white-space: nowrap; display: inline-block; max-width: 100%; overflow: hidden; text-overflow: ellipsis; vertical-align: bottom; }
a { color: #005a8c; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .5em 0; font-size: 13px; }
th, td { border: 1px solid var(--rule); padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.pass { color: var(--ok); font-weight: bold; } .fail { color: var(--bad); font-weight: bold; }
.pass::before { content: "\\2713\\00a0"; } .fail::before { content: "\\2717\\00a0"; }
.panic { font-family: ui-monospace, monospace; font-size: 12px; max-width: 34em; }
th button.sort { font: inherit; font-weight: bold; background: none; border: 0; padding: 0; cursor: pointer; text-align: left; color: inherit; }
th button.sort::after { content: " \\2195"; color: #888; font-weight: normal; }
th[aria-sort=ascending] button.sort::after { content: " \\2191"; color: #000; }
th[aria-sort=descending] button.sort::after { content: " \\2193"; color: #000; }
input.filter { font: inherit; font-size: 13px; padding: 2px 6px; margin: .4em 0 0; width: min(22em, 100%); }
.cards { display: grid; gap: 12px; }
.card { overflow-wrap: break-word; border: 1px solid #aaa; border-left: 7px solid var(--burn); border-radius: 4px; padding: .5em .9em .7em; background: #fff; }
.card.gone { border-left-color: var(--fix); border-left-style: double; }
.card.agreement { border-left-color: var(--fix); } .card.awaits { border-left-style: dashed; }
p.kinds { margin: .1em 0 .2em; font-size: 14px; }
h3.kind { margin: .5em 0 .3em; font-size: 13px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.card h3 { margin: .1em 0 .4em; font-size: 1.12em; } .card h3 .case { font-weight: normal; color: var(--muted); font-size: .85em; }
.card .body { display: grid; grid-template-columns: minmax(0, 5fr) minmax(0, 6fr); gap: .3em 1.4em; }
.card .label { font-size: 11.5px; font-weight: bold; text-transform: uppercase; letter-spacing: .05em; margin: .35em 0 .05em; }
.card p { margin: 0 0 .2em; }
.label.torch { color: var(--torch); } .label.burn { color: var(--burn); } .label.fix { color: #006b4f; }
.card .fixtext { border-left: 4px solid var(--fix); padding-left: .5em; }
.card .lede { font-weight: 600; margin-bottom: .2em; }
table.evidence { width: 100%; margin: .2em 0; font-size: 12.5px; }
table.evidence th.pair { background: #fafafa; font-weight: normal; }
table.evidence td.claim { white-space: nowrap; }
.sparkcell { display: flex; align-items: center; justify-content: space-between; gap: .5em; }
table.evidence td.detail { font-family: ui-monospace, monospace; font-size: 11.5px; color: #333; }
.chip { display: inline-block; border: 1.5px solid #333; border-radius: 10px; padding: 0 .55em; margin: 0 .3em .2em 0; font-size: 12.5px; }
.chip.not-seen { border-style: dashed; color: var(--muted); } .chip.partly { border-style: dotted; } .chip.build-break { border-style: double; border-width: 3px; }
.sources { font-size: 12px; color: var(--muted); }
.multiples { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 10px 14px; }
figure { margin: 0; } figcaption { font-size: 12.5px; color: #333; }
svg.plot { width: 100%; height: auto; display: block; }
svg.plot.wide { max-width: 1040px; }
svg.spark { display: block; width: 180px; height: 34px; }
.code2 { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: .5em .7em; overflow-x: auto; margin: .3em 0; }
details { margin: .5em 0; } summary { cursor: pointer; font-weight: 600; }
footer { margin-top: 2em; border-top: 1px solid var(--rule); font-size: 12px; color: #444; }
@media (max-width: 760px) {
  body { font-size: 14px; padding: .4em .6em 2em; }
  .card .body, .code2, .multiples { grid-template-columns: minmax(0, 1fr); }
  .card { padding: .4em .6em .6em; border-left-width: 5px; }
  table.evidence { font-size: 12.5px; }
  table.evidence, table.evidence tbody { display: block; }
  table.evidence tr { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr) 6.8em; margin-top: -1px; }
  table.evidence th.pair, table.evidence td.prop, table.evidence td[colspan] { grid-column: 1 / -1; }
  table.evidence th.pair { margin-top: .5em; }
  table.evidence td.prop { font-weight: 600; background: #fafafa; }
}
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; color: #000; }
  nav.toc, input.filter, th button.sort::after { display: none; }
  .status, code, pre, th { background: none; }
  .card { break-inside: avoid; border-color: #000; }
  figure, tr, .spark { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
  .scroll { overflow: visible; }
  details::details-content { content-visibility: visible; display: contents; }
  summary { list-style: none; }
  a { color: #000; text-decoration: none; }
}
"""

# Sortable and filterable tables, and every <details> open when printing.
# Without it the tables read as written (already in a useful order).
SCRIPT = """
(() => {
  const value = td => td ? (td.dataset.sort ?? td.textContent.trim()) : "";
  const number = s => /^[\\u00d7x]?[-+]?\\d+(\\.\\d+)?(e[-+]?\\d+)?(\\s|$)/i.test(s) ? parseFloat(s.replace(/^[\\u00d7x]/, "")) : NaN;
  for (const table of document.querySelectorAll("table.sortable")) {
    const body = table.tBodies[0];
    table.querySelectorAll("thead th").forEach((th, i) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.append(...th.childNodes);
      th.append(button);
      button.addEventListener("click", () => {
        const dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        table.querySelectorAll("th[aria-sort]").forEach(h => h.removeAttribute("aria-sort"));
        th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
        const rows = [...body.rows].map((row, n) => [row, value(row.cells[i]), n]);
        rows.sort(([, a, m], [, b, n]) => {
          const x = number(a), y = number(b);
          if (isNaN(x) !== isNaN(y)) return isNaN(x) ? 1 : -1;
          const c = isNaN(x) ? a.localeCompare(b, undefined, {numeric: true}) : x - y;
          return c ? dir * c : m - n;
        });
        body.append(...rows.map(r => r[0]));
      });
    });
    if (table.classList.contains("filterable")) {
      const input = document.createElement("input");
      input.type = "search";
      input.className = "filter";
      input.placeholder = "Filter rows (any text)";
      input.setAttribute("aria-label", "Filter the rows of " + (table.dataset.name || "the table below"));
      input.addEventListener("input", () => {
        const q = input.value.trim().toLowerCase();
        for (const row of body.rows) row.hidden = q !== "" && !row.textContent.toLowerCase().includes(q);
      });
      table.parentElement.before(input);
    }
  }
  const closed = [];
  addEventListener("beforeprint", () => document.querySelectorAll("details:not([open])").forEach(d => { closed.push(d); d.open = true; }));
  addEventListener("afterprint", () => { closed.splice(0).forEach(d => { d.open = false; }); });
})();
"""
