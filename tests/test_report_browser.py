"""report.html in a real browser: Debian's chromium, headless, started here.

1. `--dump-dom` of a copy of the page with a measuring script appended: for
   every plot, Chromium's own layout of each series (points parsed, drawn
   length, bounding box) and of the plot area.
2. `--screenshot` of the page itself: every plot area holds coloured pixels
   of its lines, and the page is not blank.

Without chromium the test is skipped, except in CI (CI=true), where it fails:
scripts/bootstrap installs chromium where apt-get is available.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from report_fixtures import SAMPLE_1, SAMPLE_2, load, on_aarch64, report, save

pytestmark = pytest.mark.browser

WIDTH = 1300

MEASURE = """
<script>
const plots = [...document.querySelectorAll("svg.plot")].map(svg => {
  const box = r => { const b = r.getBoundingClientRect();
    return {x: b.left + scrollX, y: b.top + scrollY, w: b.width, h: b.height}; };
  return {
    id: svg.id, box: box(svg), area: box(svg.querySelector("rect.plot-area")),
    series: [...svg.querySelectorAll("g.series")].map(g => {
      const line = g.querySelector("polyline"), dot = g.querySelector("circle");
      return {label: g.dataset.series, expected: +g.dataset.points,
              parsed: line ? line.points.numberOfItems : 1,
              length: line ? line.getTotalLength() : 0,
              line: line ? box(line) : null, dot: box(dot)};
    })};
});
const pre = document.createElement("pre");
pre.id = "measured";
pre.textContent = JSON.stringify({plots, height: document.documentElement.scrollHeight});
document.body.appendChild(pre);
</script>
"""


def chromium() -> str:
    found = shutil.which("chromium")
    if found:
        return found
    reason = "chromium is not installed (scripts/bootstrap installs Debian's chromium package with apt-get)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def run_chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--force-device-scale-factor=1",
            f"--user-data-dir={tmp_path / 'profile'}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out


def read_png(data: bytes) -> tuple[int, int, list[bytes], int]:
    """Width, height, rows of pixels, bytes per pixel (8-bit RGB or RGBA, not interlaced)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, compressed = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
        elif kind == b"IDAT":
            compressed += body
    bpp = 3 if color == 2 else 4
    raw, stride = zlib.decompress(compressed), width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[i], bytearray(raw[i + 1 : i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows, bpp


def coloured_pixels(rows: list[bytes], bpp: int, box: dict) -> int:
    """Pixels inside `box` that are clearly coloured (not white, grey or black text)."""
    count = 0
    for y in range(int(box["y"]) + 2, int(box["y"] + box["h"]) - 2):
        row = rows[y]
        for x in range(int(box["x"]) + 2, int(box["x"] + box["w"]) - 2):
            r, g, b = row[x * bpp : x * bpp + 3]
            count += max(r, g, b) - min(r, g, b) > 60
    return count


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    chromium()
    arm = save(tmp / "arm.json", on_aarch64(load(SAMPLE_2)))  # provenance-only TEST fixture
    out = tmp / "out"
    report("--from-results", SAMPLE_1, "--out", out)
    report("--from-results", SAMPLE_2, arm, "--out", out)  # two machines, compared with run 1
    html = (out / "report.html").read_text()
    measured = tmp / "measured.html"
    measured.write_text(html.replace("</body>", MEASURE + "</body>"))
    dom = run_chromium(
        tmp, f"--window-size={WIDTH},1000", "--virtual-time-budget=5000", "--dump-dom", measured.as_uri()
    ).stdout
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    layout = json.loads(
        found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    )
    shot = tmp / "report.png"
    run_chromium(
        tmp, f"--window-size={WIDTH},{layout['height']}", f"--screenshot={shot}", (out / "report.html").as_uri()
    )
    return html, layout, shot


def test_every_plot_and_series_is_laid_out_by_chromium(page):
    html, layout, _ = page
    ids = re.findall(r'<svg class="plot" id="([^"]+)"', html)
    assert len(ids) == 4 and [p["id"] for p in layout["plots"]] == ids
    for plot in layout["plots"]:
        assert plot["box"]["w"] > 600 and plot["box"]["h"] > 200, plot["id"]
        area = plot["area"]
        assert len(plot["series"]) == 10, plot["id"]
        for s in plot["series"]:
            where = f"{plot['id']} {s['label']}"
            assert s["parsed"] == s["expected"], where  # every point of the polyline parsed
            if s["expected"] >= 2:
                assert s["length"] > 0 and s["line"]["w"] > 0, where
            dot = s["dot"]
            assert area["x"] - 4 <= dot["x"] <= area["x"] + area["w"] + 4, where
            assert area["y"] - 4 <= dot["y"] <= area["y"] + area["h"] + 4, where
        # the step-time lines of the 2000-step runs span the whole x axis
        if plot["id"].startswith("steps-"):
            widest = max(s["line"]["w"] for s in plot["series"] if s["line"])
            assert widest > 0.95 * area["w"], plot["id"]


def test_the_screenshot_shows_every_plot(page):
    _, layout, shot = page
    width, height, rows, bpp = read_png(shot.read_bytes())
    assert width == WIDTH and height == layout["height"]
    for plot in layout["plots"]:
        assert plot["area"]["y"] + plot["area"]["h"] <= height
        inside = coloured_pixels(rows, bpp, plot["area"])
        assert inside > 1500, (plot["id"], inside)  # coloured line pixels drawn in the plot area
    # and the page as a whole is not blank
    colours = {row[x : x + 3] for row in rows[::25] for x in range(0, width * bpp, bpp * 7)}
    assert len(colours) > 50
