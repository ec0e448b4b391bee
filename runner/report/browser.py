"""Headless Chromium around `report.html`: screenshots of the first screen at
desktop and phone widths, of the whole page at desktop width (its first
MAX_HEIGHT pixels when taller) and of each reference model's training curves at
both widths, for `report --screenshots` and the browser test.

Debian's `chromium` (installed by scripts/bootstrap where apt-get is
available). Nothing is fetched: the page is a local file with no external
asset, and Chromium runs with a throw-away profile.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from html import escape as html_escape
from html import unescape
from pathlib import Path

from ..errors import Infrastructure

SHOTS = "screenshots"
VIEWPORTS = {"desktop": (1366, 900), "phone": (390, 844)}
# Headless Chromium lays a page out at least this wide, whatever --window-size
# says; a narrower viewport is an iframe of that width (see `framed`).
MIN_WIDTH = 500
NAMES = ("chromium", "chromium-browser")
TIMEOUT_S = 120

# A screenshot is at most this tall: a full report is ~180,000 px at desktop width (a PNG
# of ~1 GB raw that Chromium does not finish within TIMEOUT_S); 16,384 px takes seconds.
MAX_HEIGHT = 16384
# The page's blocks of training curves (`html_curves.case_block`: the prefix and a slug of the
# case's name), each photographed too, into a file named after its id.
CURVES_PREFIX = "curves-"
CURVES_ID = re.compile(re.escape(CURVES_PREFIX) + r"[A-Za-z0-9_-]*")

# Measures the page once it has loaded: its height and that of every block of training curves,
# written into the page (for --dump-dom at top level) and posted to a parent (inside `framed`).
_MEASURE = """<script>
addEventListener("load", () => {
  const blocks = {};
  for (const e of document.querySelectorAll('[id^="PREFIX"]')) blocks[e.id] = Math.ceil(e.getBoundingClientRect().height);
  const text = JSON.stringify({height: document.documentElement.scrollHeight, blocks});
  const pre = document.createElement("pre");
  pre.id = "measured-height";
  pre.textContent = text;
  document.body.appendChild(pre);
  if (window.parent !== window) window.parent.postMessage(text, "*");
});
</script>""".replace("PREFIX", CURVES_PREFIX)


@dataclass(frozen=True)
class Layout:
    """The page as Chromium lays it out at one width: its height, and each curves block's."""

    height: int
    blocks: dict[str, int]


@dataclass(frozen=True)
class Shot:
    path: Path
    note: str = ""  # e.g. that a tall page was cut


def find() -> str:
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise Infrastructure(
        "chromium is not installed (scripts/bootstrap installs Debian's chromium package with apt-get); "
        "it is needed for --screenshots"
    )


def run(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Chromium, headless, with a profile in `profile` (a scratch folder)."""
    command = [
        find(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--force-device-scale-factor=1",
        f"--user-data-dir={profile}",
        *args,
    ]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Infrastructure(f"chromium did not finish within {TIMEOUT_S} s") from None
    if out.returncode != 0:
        raise Infrastructure(f"chromium exited {out.returncode}: {out.stderr[-500:]}")
    return out


def layout(page: Path, width: int, scratch: Path) -> Layout:
    """The page's full height at `width`, and its curves blocks' heights, as Chromium lays it out
    (a width below MIN_WIDTH inside `framed`)."""
    measured = scratch / f"measured-{width}.html"
    measured.write_text(page.read_text().replace("</body>", _MEASURE + "</body>"))
    if width < MIN_WIDTH:
        target, marker = framed(measured, width, VIEWPORTS["phone"][1], scratch), "measured"
    else:
        target, marker = measured, "measured-height"
    dom = run(
        scratch / "profile", f"--window-size={width},900", "--virtual-time-budget=5000", "--dump-dom", target.as_uri()
    ).stdout
    found = re.search(rf'<pre id="{marker}">(.*?)</pre>', dom, re.S)
    if not found:
        raise Infrastructure("chromium did not lay out the page (no measurement in --dump-dom)")
    data = json.loads(unescape(found.group(1)))
    blocks = {str(k): int(v) for k, v in data.get("blocks", {}).items() if CURVES_ID.fullmatch(str(k))}
    return Layout(int(data["height"]), blocks)


def framed(page: Path, width: int, height: int, scratch: Path, fragment: str = "") -> Path:
    """A page holding `page` in an iframe of `width` x `height` at its top left:
    the page inside lays out (media queries included) as on a screen that wide,
    scrolled to the element `fragment` names (an id of CURVES_ID's characters).
    A message the page posts to its parent is written into the host as
    `<pre id="measured">`, for --dump-dom."""
    if fragment and not CURVES_ID.fullmatch(fragment):
        raise ValueError(f"not a curves block id: {fragment!r}")
    host = scratch / f"frame-{width}x{height}{'-' + fragment if fragment else ''}.html"
    src = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    host.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">'
        f'<iframe src="{html_escape(src)}" width="{width}" height="{height}" '
        'style="border:0;display:block"></iframe><script>addEventListener("message", e => {'
        'const pre = document.createElement("pre"); pre.id = "measured"; pre.textContent = e.data;'
        "document.body.appendChild(pre); });</script></body></html>"
    )
    return host


def screenshot(page: Path, png: Path, width: int, height: int, scratch: Path, fragment: str = "") -> Path:
    """`height` pixels of `page` laid out `width` wide: from its top, or from the element
    `fragment` names (inside `framed`: Chromium's --screenshot of `page#id` comes out blank)."""
    if width < MIN_WIDTH or fragment:
        target = framed(page, width, height, scratch, fragment)
        wait = ["--virtual-time-budget=5000"] if fragment else []
    else:
        target, wait = page, []
    run(scratch / "profile", f"--window-size={width},{height}", *wait, f"--screenshot={png}", target.resolve().as_uri())
    if not png.is_file():
        raise Infrastructure(f"chromium wrote no screenshot {png}")
    return png


def screenshots(page: Path, folder: Path) -> list[Shot]:
    """`desktop.png` and `phone.png` (the first screen); `desktop-full.png`, the whole page, or
    its first MAX_HEIGHT pixels when it is taller; and `curves-CASE-desktop.png` /
    `curves-CASE-phone.png`, each reference model's training curves at both widths. Each is
    taken in a scratch folder, then moved in place; curves shots of cases the page no longer
    has are removed."""
    folder.mkdir(parents=True, exist_ok=True)
    out: list[Shot] = []
    with tempfile.TemporaryDirectory(prefix="report-shots-") as tmp:
        scratch = Path(tmp)
        width = VIEWPORTS["desktop"][0]
        layouts = {name: layout(page, w, scratch) for name, (w, _h) in VIEWPORTS.items()}
        full = layouts["desktop"].height
        planned: list[tuple[str, int, int, str, str]] = [(n, w, h, "", "") for n, (w, h) in VIEWPORTS.items()]
        cut = f"the first {MAX_HEIGHT} px of the page's {full}" if full > MAX_HEIGHT else ""
        planned.append(("desktop-full", width, min(full, MAX_HEIGHT), "", cut))
        for block in sorted(layouts["desktop"].blocks):
            for name, (w, _h) in VIEWPORTS.items():
                tall = layouts[name].blocks.get(block, layouts["desktop"].blocks[block])
                planned.append((f"{block}-{name}", w, max(1, min(tall + 40, MAX_HEIGHT)), block, ""))
        for name, w, h, block, note in planned:
            png = scratch / f"{name}.png"
            taken = screenshot(page, png, w, h, scratch, block)
            target = folder / f"{name}.png"
            shutil.move(taken, target)
            out.append(Shot(target, note))
    kept = {shot.path.name for shot in out}
    for stale in folder.glob(f"{CURVES_PREFIX}*.png"):
        if stale.name not in kept:
            stale.unlink(missing_ok=True)
    return out
