"""Headless Chromium around `report.html`: screenshots of the first screen at
desktop and phone widths (and of the whole page at desktop width), for
`report --screenshots` and the browser test.

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

_MEASURE = """<script>
addEventListener("load", () => {
  const pre = document.createElement("pre");
  pre.id = "measured-height";
  pre.textContent = JSON.stringify({height: document.documentElement.scrollHeight});
  document.body.appendChild(pre);
});
</script>"""


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


def page_height(page: Path, width: int, scratch: Path) -> int:
    """The page's full height at `width`, as Chromium lays it out."""
    measured = scratch / "measured.html"
    measured.write_text(page.read_text().replace("</body>", _MEASURE + "</body>"))
    dom = run(
        scratch / "profile", f"--window-size={width},900", "--virtual-time-budget=5000", "--dump-dom", measured.as_uri()
    ).stdout
    found = re.search(r'<pre id="measured-height">(.*?)</pre>', dom, re.S)
    if not found:
        raise Infrastructure("chromium did not lay out the page (no measurement in --dump-dom)")
    return int(json.loads(unescape(found.group(1)))["height"])


def framed(page: Path, width: int, height: int, scratch: Path) -> Path:
    """A page holding `page` in an iframe of `width` x `height` at its top left:
    the page inside lays out (media queries included) as on a screen that wide.
    A message the page posts to its parent is written into the host as
    `<pre id="measured">`, for --dump-dom."""
    host = scratch / f"frame-{width}x{height}.html"
    host.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">'
        f'<iframe src="{page.resolve().as_uri()}" width="{width}" height="{height}" '
        'style="border:0;display:block"></iframe><script>addEventListener("message", e => {'
        'const pre = document.createElement("pre"); pre.id = "measured"; pre.textContent = e.data;'
        "document.body.appendChild(pre); });</script></body></html>"
    )
    return host


def screenshot(page: Path, png: Path, width: int, height: int, scratch: Path) -> Path:
    """The first `height` pixels of `page` laid out `width` wide."""
    target = framed(page, width, height, scratch) if width < MIN_WIDTH else page
    run(scratch / "profile", f"--window-size={width},{height}", f"--screenshot={png}", target.resolve().as_uri())
    if not png.is_file():
        raise Infrastructure(f"chromium wrote no screenshot {png}")
    return png


def screenshots(page: Path, folder: Path) -> list[Path]:
    """`desktop.png` and `phone.png` (the first screen), `desktop-full.png`
    (the whole page); each written to a scratch folder, then moved in place."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    with tempfile.TemporaryDirectory(prefix="report-shots-") as tmp:
        scratch = Path(tmp)
        shots = dict(VIEWPORTS)
        width = VIEWPORTS["desktop"][0]
        shots["desktop-full"] = (width, page_height(page, width, scratch))
        for name, (w, h) in shots.items():
            taken = screenshot(page, scratch / f"{name}.png", w, h, scratch)
            target = folder / f"{name}.png"
            shutil.move(taken, target)
            out.append(target)
    return out
