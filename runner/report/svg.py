"""Plots as inline SVG, written by hand: no library, no script, no network.

Each series is a `<g class="series" data-series=... data-points=N>` with a
`<polyline>` (two points or more), a few markers along it and a marker on its
last point (`.last`), so a run that stopped after one step is still visible.
Series are told apart by colour, dash pattern and marker shape together, so a
plot still reads in grayscale and for colour-blind readers (`Style`).

The y axis is logarithmic when the values are all positive and span more than
`LOG_SPAN` (1st to 99th percentile). A series longer than `max_points` is
drawn through the medians of groups of consecutive points (the caption says
how many), so that a trend stays readable through per-step noise.

`plot` draws one panel (the small multiples use it with the legend on top,
the full plots with the legend on the right); `sparkline` draws one number
across the history entries, with the burn version changes marked.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from html import escape

LOG_SPAN = 10.0
MAX_POINTS = 500
MARKERS_PER_SERIES = 6
MARKED_SPARK = 30  # a sparkline this long or shorter marks (and titles) every point


@dataclass(frozen=True)
class Style:
    color: str
    dash: str = ""  # stroke-dasharray, "" for a solid line
    marker: str = "circle"  # see MARKERS


@dataclass(frozen=True)
class Series:
    label: str
    points: list[tuple[float, float]]
    style: Style


@dataclass(frozen=True)
class Mark:
    """An event on the x axis: a run that stopped (panic at step 3)."""

    x: float
    label: str
    color: str = "#000"


@dataclass
class Axes:
    """How data maps to the plot area."""

    left: float
    top: float
    width: float
    height: float
    x0: float
    x1: float
    y0: float
    y1: float
    log: bool
    y_ticks: list[float] = field(default_factory=list)

    def px(self, x: float) -> float:
        return self.left + (x - self.x0) / (self.x1 - self.x0) * self.width

    def _t(self, v: float) -> float:
        return math.log10(v) if self.log else v

    def py(self, y: float) -> float:
        return (
            self.top
            + self.height
            - (self._t(y) - self._t(self.y0)) / (self._t(self.y1) - self._t(self.y0)) * (self.height)
        )


def thin(points: list[tuple[float, float]], max_points: int = MAX_POINTS) -> list[tuple[float, float]]:
    """At most `max_points` points: each the median of a group of consecutive points
    (median x, median y); series that short already are drawn as they are."""
    if len(points) <= max_points:
        return list(points)
    size = math.ceil(len(points) / max_points)
    out = []
    for start in range(0, len(points), size):
        chunk = points[start : start + size]
        out.append((statistics.median(p[0] for p in chunk), statistics.median(p[1] for p in chunk)))
    return out


def group_size(n: int, max_points: int = MAX_POINTS) -> int:
    """How many consecutive points `thin` takes the median of (1: none thinned)."""
    return 1 if n <= max_points else math.ceil(n / max_points)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def use_log_scale(values: list[float]) -> bool:
    if not values or min(values) <= 0:
        return False
    return _percentile(values, 0.99) / _percentile(values, 0.01) > LOG_SPAN


# Where plotted values are clamped: far inside a double's range, so that spans and steps stay finite.
SAFE_MAX = 1e300
SAFE_MIN = 1e-300
# A log axis over more decades than this labels every few decades only.
MAX_DECADES = 12


def _clamped(value: float, log: bool = False) -> float:
    """`value` within +-SAFE_MAX; a magnitude below SAFE_MIN is 0 (SAFE_MIN on a log axis)."""
    if log:
        return min(max(value, SAFE_MIN), SAFE_MAX)
    value = min(max(value, -SAFE_MAX), SAFE_MAX)
    return 0.0 if abs(value) < SAFE_MIN else value


def _widened(low: float, high: float) -> tuple[float, float]:
    """An axis range that is not empty: one value, or values too close to tell apart, get room around them."""
    magnitude = max(abs(low), abs(high))
    if high > low and high - low > 1e-9 * magnitude:
        return low, high
    pad = magnitude * 0.01 if magnitude * 0.01 >= SAFE_MIN else 1.0
    return low - pad, high + pad


def _nice_step(span: float, count: int = 5) -> float:
    raw = span / count if span > 0 else 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def _linear_ticks(low: float, high: float, count: int = 5) -> tuple[float, float, list[float]]:
    low, high = _widened(_clamped(low) / 2, _clamped(high) / 2)  # halved: the span of two clamped values stays finite
    low, high = low * 2, high * 2
    step = _nice_step((high - low) / 2, count) * 2
    start, end = math.floor(low / step) * step, math.ceil(high / step) * step
    if not end - start > 1e-9 * max(abs(start), abs(end)) or not math.isfinite(end - start):
        start, end = low, high
    n = min(round((end - start) / step), 20) if math.isfinite((end - start) / step) else 1
    if n < 1:
        return start, end, [start, end]
    step = (end - start) / n
    return start, end, [start + i * step for i in range(n + 1)]


def _log_ticks(low: float, high: float) -> tuple[float, float, list[float]]:
    low, high = _clamped(low, True), _clamped(high, True)
    lo, hi = math.floor(math.log10(low)), math.ceil(math.log10(high))
    lo, hi = max(lo, -299), min(hi, 299)
    if hi <= lo:
        hi = lo + 1
    multiples = (1, 2, 5) if hi - lo <= 2 else (1,)
    stride = max(1, math.ceil((hi - lo) / MAX_DECADES))
    ticks = [m * 10.0**e for e in range(lo, hi + 1, stride) for m in multiples if m * 10.0**e <= 10.0**hi]
    return 10.0**lo, 10.0**hi, [t for t in ticks if t > 0]


def label(value: float) -> str:
    """A tick label: `0`, `0.5`, `200`, `1e+04`."""
    if value == 0:
        return "0"
    if abs(value) >= 1e4 or abs(value) < 1e-3:
        return f"{value:.0e}"
    return f"{value:g}"


def marker(shape: str, x: float, y: float, color: str, r: float = 3.2, cls: str = "marker") -> str:
    """One marker; filled shapes, and a cross for events."""
    if shape == "circle":
        return f'<circle class="{cls}" cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{color}"/>'
    if shape == "square":
        s = r * 0.9
        return f'<rect class="{cls}" x="{x - s:.1f}" y="{y - s:.1f}" width="{2 * s:.1f}" height="{2 * s:.1f}" fill="{color}"/>'
    if shape == "triangle":
        d = f"M{x:.1f} {y - r * 1.2:.1f}L{x + r * 1.1:.1f} {y + r * 0.8:.1f}L{x - r * 1.1:.1f} {y + r * 0.8:.1f}Z"
        return f'<path class="{cls}" d="{d}" fill="{color}"/>'
    if shape == "diamond":
        d = f"M{x:.1f} {y - r * 1.3:.1f}L{x + r:.1f} {y:.1f}L{x:.1f} {y + r * 1.3:.1f}L{x - r:.1f} {y:.1f}Z"
        return f'<path class="{cls}" d="{d}" fill="{color}"/>'
    if shape == "ring":
        return f'<circle class="{cls}" cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="#fff" stroke="{color}" stroke-width="1.6"/>'
    # "cross"
    d = f"M{x - r:.1f} {y - r:.1f}L{x + r:.1f} {y + r:.1f}M{x - r:.1f} {y + r:.1f}L{x + r:.1f} {y - r:.1f}"
    return f'<path class="{cls}" d="{d}" stroke="{color}" stroke-width="2" fill="none"/>'


MARKERS = ("circle", "square", "triangle", "diamond", "ring", "cross")


def _axes(
    drawn: list[tuple[Series, list[tuple[float, float]]]],
    box: tuple[float, float, float, float],
    x_range: tuple[float, float] | None,
    y_floor_zero: bool,
    y_ticks: int,
    y_range: tuple[float, float] | None = None,
    log: bool | None = None,
) -> Axes:
    left, top, pw, ph = box
    xs = [x for _, pts in drawn for x, _ in pts] or [0.0, 1.0]
    ys = list(y_range) if y_range else [y for _, pts in drawn for _, y in pts] or [0.0, 1.0]
    x0, x1 = x_range if x_range else (min(xs), max(xs))
    x0, x1 = _widened(_clamped(x0) / 2, _clamped(x1) / 2)
    x0, x1 = x0 * 2, x1 * 2
    log = use_log_scale(ys) if log is None else log and min(ys) > 0
    if log:
        y0, y1, ticks = _log_ticks(min(ys), max(ys))
    else:
        low = min(0.0, min(ys)) if y_floor_zero else min(ys)
        y0, y1, ticks = _linear_ticks(low, max(ys), y_ticks)
    return Axes(left, top, pw, ph, x0, x1, y0, y1, log, ticks)


def _series_svg(s: Series, pts: list[tuple[float, float]], ax: Axes) -> str:
    st = s.style
    dash = f' stroke-dasharray="{st.dash}"' if st.dash else ""
    out = [
        f'<g class="series" data-series="{escape(s.label)}" data-points="{len(pts)}" data-samples="{len(s.points)}">'
    ]
    if len(pts) >= 2:
        coords = " ".join(f"{ax.px(x):.1f},{ax.py(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{coords}" fill="none" stroke="{st.color}" stroke-width="1.6"{dash}/>')
        every = max(1, len(pts) // MARKERS_PER_SERIES)
        for x, y in pts[every // 2 : -1 : every]:
            out.append(marker(st.marker, ax.px(x), ax.py(y), st.color, 2.6))
    lx, ly = pts[-1]
    out.append(marker(st.marker, ax.px(lx), ax.py(ly), st.color, 3.4, "marker last"))
    out.append("</g>")
    return "".join(out)


def _legend_item(s: Series, x: float, y: float) -> str:
    st = s.style
    dash = f' stroke-dasharray="{st.dash}"' if st.dash else ""
    return (
        f'<g class="legend"><line x1="{x:.0f}" x2="{x + 26:.0f}" y1="{y:.0f}" y2="{y:.0f}" stroke="{st.color}" '
        f'stroke-width="2"{dash}/>{marker(st.marker, x + 13, y, st.color, 3.0, "legend-marker")}'
        f'<text x="{x + 31:.0f}" y="{y + 4:.0f}" font-size="11">{escape(s.label)}</text></g>'
    )


def plot(
    series: list[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    plot_id: str = "",
    width: int = 440,
    height: int = 250,
    legend: str = "top",  # "top" (small multiples) or "right"
    marks: list[Mark] | None = None,
    x_range: tuple[float, float] | None = None,
    max_points: int = MAX_POINTS,
    y_floor_zero: bool = True,
    y_range: tuple[float, float] | None = None,
    log: bool | None = None,
    note: str = "",
) -> str:
    """One plot. `marks` sit on the x axis (a run that stopped there); `note`
    is written in the plot area when no series has points. `y_range` and `log`
    give several panels the same y axis (see `shared_y`)."""
    marks = marks or []
    top = 26 + (17 if legend == "top" else 0)
    left, bottom = 54, 36
    right = 190 if legend == "right" else 14
    pw, ph = width - left - right, height - top - bottom
    drawn = [(s, [(_clamped(x), _clamped(y)) for x, y in thin(s.points, max_points)]) for s in series if s.points]
    ax = _axes(drawn, (left, top, pw, ph), x_range, y_floor_zero, 5 if ph > 150 else 3, y_range, log)
    if ax.log:
        drawn = [(s, [(x, _clamped(y, True)) for x, y in pts]) for s, pts in drawn]
    scale = "log" if ax.log else "linear"
    out = [
        f'<svg class="plot" id="{escape(plot_id)}" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'data-y-scale="{scale}" aria-label="{escape(title)}">',
        f"<title>{escape(title)} ({scale} scale)</title>",
        f'<rect class="plot-area" x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#999"/>',
        f'<text x="{left}" y="15" font-size="12.5" font-weight="bold">{escape(title)}</text>',
    ]
    for t in ax.y_ticks:
        y = ax.py(t)
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e6e6e6"/>'
            f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="10.5" text-anchor="end">{label(t)}</text>'
        )
    _, _, xticks = _linear_ticks(ax.x0, ax.x1, 5 if pw > 300 else 3)
    for t in xticks:
        if ax.x0 <= t <= ax.x1:
            x = ax.px(t)
            out.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + ph}" y2="{top + ph + 4}" stroke="#999"/>'
                f'<text x="{x:.1f}" y="{top + ph + 15}" font-size="10.5" text-anchor="middle">{label(t)}</text>'
            )
    out.append(
        f'<text x="{left + pw / 2:.0f}" y="{height - 4}" font-size="11" text-anchor="middle">{escape(x_label)}</text>'
        f'<text transform="translate(12 {top + ph / 2:.0f}) rotate(-90)" font-size="11" text-anchor="middle">'
        f"{escape(y_label)}{' (log)' if ax.log else ''}</text>"
    )
    if not drawn and note:
        out.append(
            f'<text x="{left + pw / 2:.0f}" y="{top + ph / 2:.0f}" font-size="11" text-anchor="middle" '
            f'fill="#555">{escape(note)}</text>'
        )
    out += [_series_svg(s, pts, ax) for s, pts in drawn]
    for m in marks:
        x = min(max(ax.px(m.x), left + 4), left + pw - 4)
        y = top + ph - 8
        anchor = "end" if x > left + pw * 0.6 else "start"
        dx = -7 if anchor == "end" else 7
        out.append(
            f'<g class="mark">{marker("cross", x, y, m.color, 4.5)}'
            f'<text x="{x + dx:.1f}" y="{y - 6:.1f}" font-size="10.5" text-anchor="{anchor}" '
            f'fill="{m.color}">{escape(m.label)}</text></g>'
        )
    if legend == "right":
        for i, s in enumerate(series):
            out.append(_legend_item(s, left + pw + 12, top + 8 + i * 17))
    else:
        x = float(left)
        for s in series:
            out.append(_legend_item(s, x, 32))
            x += 40 + 6.3 * len(s.label)
    out.append("</svg>")
    return "\n".join(out)


def shared_y(panels: list[list[Series]], max_points: int = MAX_POINTS) -> tuple[tuple[float, float] | None, bool]:
    """One y range (and scale) for a set of small multiples, from what they draw,
    so that the panels compare at a glance."""
    ys = [y for series in panels for s in series for _, y in thin(s.points, max_points)]
    if not ys:
        return None, False
    return (min(ys), max(ys)), use_log_scale(ys)


def line_plot(series: list[Series], *, title: str, x_label: str, y_label: str, plot_id: str = "", **kw: int) -> str:
    """The full plot of every run: wide, legend on the right."""
    return plot(
        series,
        title=title,
        x_label=x_label,
        y_label=y_label,
        plot_id=plot_id,
        legend="right",
        width=kw.get("width", 1040),
        height=kw.get("height", 340),
    )


def sparkline(
    values: list[float | None],
    *,
    titles: list[str],
    failed: list[bool],
    changes: list[int],
    style: Style,
    width: int = 180,
    height: int = 34,
) -> str:
    """One number across the history entries (oldest left): a line through the
    known values, a marker on each (its title names the entry; beyond
    `MARKED_SPARK` entries only on the last and at version changes), a cross
    at the bottom for a run that did not finish, and a dotted rule where burn's
    version changed (`changes`: the indexes of the first entry of a new version)."""
    n = len(values)
    pad = 5.0
    known = [v for v in values if v is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 1.0)
    if hi == lo:
        lo, hi = lo - 1, hi + 1

    def px(i: int) -> float:
        return pad + (i / (n - 1) if n > 1 else 0.5) * (width - 2 * pad)

    def py(v: float) -> float:
        return height - pad - 2 - (v - lo) / (hi - lo) * (height - 2 * pad - 4)

    span = f"{titles[0]} … {titles[-1]}" if n > 1 else (titles[0] if titles else "")
    out = [
        f'<svg class="spark" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" data-points="{len(known)}"><title>{escape(span)}</title>'
    ]
    for i in changes:
        x = (px(i - 1) + px(i)) / 2
        out.append(
            f'<line class="version" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height}" stroke="#555" stroke-dasharray="2 2"/>'
        )
    segment: list[str] = []
    segments: list[list[str]] = [segment]
    for i, v in enumerate(values):
        if v is None:
            segment = []
            segments.append(segment)
        else:
            segment.append(f"{px(i):.1f},{py(v):.1f}")
    dash = f' stroke-dasharray="{style.dash}"' if style.dash else ""
    for seg in segments:
        if len(seg) >= 2:
            out.append(
                f'<polyline points="{" ".join(seg)}" fill="none" stroke="{style.color}" stroke-width="1.4"{dash}/>'
            )
    marked = n <= MARKED_SPARK
    crosses = []
    for i, (v, t, bad) in enumerate(zip(values, titles, failed)):
        cls = "marker last" if i == n - 1 else "marker"
        if bad and not marked and i != n - 1:
            x, y, r = px(i), height - pad, 2.5
            crosses.append(
                f"M{x - r:.1f} {y - r:.1f}L{x + r:.1f} {y + r:.1f}M{x - r:.1f} {y + r:.1f}L{x + r:.1f} {y - r:.1f}"
            )
            continue
        if not marked and i != n - 1 and i not in changes:
            continue  # a long history: the line alone, so the page stays light
        if bad:
            out.append(f"<g><title>{escape(t)}</title>{marker('cross', px(i), height - pad, '#000', 3.0, cls)}</g>")
        elif v is not None:
            r = 3.0 if i == n - 1 else 2.0
            out.append(f"<g><title>{escape(t)}</title>{marker(style.marker, px(i), py(v), style.color, r, cls)}</g>")
    if crosses:
        out.append(f'<path class="marker" d="{"".join(crosses)}" stroke="#000" stroke-width="1.5" fill="none"/>')
    out.append("</svg>")
    return "".join(out)


def version_strip(burns: list[str], *, width: int = 180, height: int = 16) -> str:
    """The burn version of each history entry, as bands aligned with `sparkline`'s
    points (same width and padding): one band and label per version run."""
    n = len(burns)
    pad = 5.0

    def px(i: float) -> float:
        return pad + (i / (n - 1) if n > 1 else 0.5) * (width - 2 * pad)

    out = [
        f'<svg class="spark versions" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="burn versions: {escape(", ".join(dict.fromkeys(burns)))}">'
    ]
    start = 0
    for i in range(1, n + 1):
        if i < n and burns[i] == burns[start]:
            continue
        x0 = 0.0 if start == 0 else (px(start - 1) + px(start)) / 2
        x1 = float(width) if i == n else (px(i - 1) + px(i)) / 2
        shade = "#e8e8e8" if len(out) % 2 else "#f7f7f7"
        out.append(
            f'<rect x="{x0:.1f}" y="0" width="{x1 - x0:.1f}" height="{height}" fill="{shade}"/>'
            f'<text x="{x0 + 2:.1f}" y="{height - 4}" font-size="10">{escape(burns[start])}</text>'
        )
        start = i
    out.append("</svg>")
    return "".join(out)
