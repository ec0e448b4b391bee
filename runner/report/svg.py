"""Line plots as inline SVG, written by hand: no library, no script, no network.

Each series is a `<g class="series" data-series=... data-points=N>` with a
`<polyline>` (two points or more) and a circle on its last point, so a run
that stopped after one step is still visible. The y axis is logarithmic when
the values are all positive and span more than `LOG_SPAN` (1st to 99th
percentile). A series longer than `MAX_POINTS` is drawn through the medians
of groups of consecutive points (the caption says how many), so that a trend
stays readable through per-step noise.

Any finite values plot: they are drawn within +-1e300 (magnitudes below 1e-300
count as 0, or as 1e-300 on a log axis), and an axis whose values are all one
value is widened around it, so that no scale divides by zero or overflows.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from html import escape

LOG_SPAN = 10.0
MAX_POINTS = 500
# Where plotted values are clamped: far inside a double's range, so that spans and steps stay finite.
SAFE_MAX = 1e300
SAFE_MIN = 1e-300
# A log axis over more decades than this labels every few decades only.
MAX_DECADES = 12


@dataclass(frozen=True)
class Series:
    label: str
    points: list[tuple[float, float]]
    color: str
    dashed: bool = False


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


def _nice_step(span: float) -> float:
    raw = span / 5 if span > 0 else 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def _linear_ticks(low: float, high: float) -> tuple[float, float, list[float]]:
    low, high = _widened(low, high)
    step = _nice_step(high - low)
    start, end = math.floor(low / step) * step, math.ceil(high / step) * step
    if not end - start > 1e-9 * max(abs(start), abs(end)):
        start, end = low, high
    count = min(round((end - start) / step), 20)
    if count < 1:
        return start, end, [start, end]
    step = (end - start) / count
    return start, end, [start + i * step for i in range(count + 1)]


def _log_ticks(low: float, high: float) -> tuple[float, float, list[float]]:
    lo, hi = math.floor(math.log10(low)), math.ceil(math.log10(high))
    if hi == lo:
        hi += 1
    multiples = (1, 2, 5) if hi - lo <= 3 else (1,)
    stride = max(1, math.ceil((hi - lo) / MAX_DECADES))
    ticks = [m * 10.0**e for e in range(lo, hi + 1, stride) for m in multiples if m * 10.0**e <= 10.0**hi]
    return 10.0**lo, 10.0**hi, [t for t in ticks if t > 0]


def _label(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1e4 or abs(value) < 1e-3:
        return f"{value:.0e}"
    return f"{value:g}"


def line_plot(
    series: list[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    width: int = 1040,
    height: int = 340,
    plot_id: str = "",
) -> str:
    left, right, top, bottom = 62, 200, 26, 42
    pw, ph = width - left - right, height - top - bottom
    raw = [(s, thin(s.points)) for s in series if s.points]
    log = use_log_scale([y for _, pts in raw for _, y in pts])
    drawn = [(s, [(_clamped(x), _clamped(y, log)) for x, y in pts]) for s, pts in raw]
    xs = [x for _, pts in drawn for x, _ in pts] or [0.0, 1.0]
    ys = [y for _, pts in drawn for _, y in pts] or [0.0, 1.0]
    x0, x1 = _widened(min(xs), max(xs))
    if log:
        y0, y1, ticks = _log_ticks(min(ys), max(ys))
    else:
        y0, y1, ticks = _linear_ticks(min(0.0, min(ys)), max(ys))

    def ty(v: float) -> float:
        return math.log10(v) if log else v

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + ph - (ty(y) - ty(y0)) / (ty(y1) - ty(y0)) * ph

    scale = "log scale" if log else "linear scale"
    out = [
        f'<svg class="plot" id="{escape(plot_id)}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'data-y-scale="{"log" if log else "linear"}" aria-label="{escape(title)}">',
        f"<title>{escape(title)} ({scale})</title>",
        f'<rect class="plot-area" x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#999"/>',
        f'<text x="{left}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]
    for t in ticks:
        y = py(t)
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e4e4"/>'
            f'<text x="{left - 5}" y="{y + 4:.1f}" font-size="11" text-anchor="end">'
            f"{_label(t)}</text>"
        )
    _, _, xticks = _linear_ticks(x0, x1)
    for t in xticks:
        if x0 <= t <= x1:
            x = px(t)
            out.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + ph}" y2="{top + ph + 4}" stroke="#999"/>'
                f'<text x="{x:.1f}" y="{top + ph + 16}" font-size="11" text-anchor="middle">'
                f"{_label(t)}</text>"
            )
    out.append(
        f'<text x="{left + pw / 2:.0f}" y="{height - 6}" font-size="12" text-anchor="middle">{escape(x_label)}</text>'
    )
    out.append(
        f'<text transform="translate(14 {top + ph / 2:.0f}) rotate(-90)" font-size="12" '
        f'text-anchor="middle">{escape(y_label)}{" (log)" if log else ""}</text>'
    )
    for s, pts in drawn:
        dash = ' stroke-dasharray="6 3"' if s.dashed else ""
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(
            f'<g class="series" data-series="{escape(s.label)}" data-points="{len(pts)}" '
            f'data-samples="{len(s.points)}">'
        )
        if len(pts) >= 2:
            out.append(f'<polyline points="{coords}" fill="none" stroke="{s.color}" stroke-width="1.4"{dash}/>')
        lx, ly = pts[-1]
        out.append(f'<circle cx="{px(lx):.1f}" cy="{py(ly):.1f}" r="2.6" fill="{s.color}"/></g>')
    for i, s in enumerate(series):
        y = top + 8 + i * 17
        lx = left + pw + 12
        dash = ' stroke-dasharray="6 3"' if s.dashed else ""
        out.append(
            f'<g class="legend"><line x1="{lx}" x2="{lx + 24}" y1="{y}" y2="{y}" stroke="{s.color}" '
            f'stroke-width="2"{dash}/><text x="{lx + 30}" y="{y + 4}" font-size="11">'
            f"{escape(s.label)}</text></g>"
        )
    out.append("</svg>")
    return "\n".join(out)
