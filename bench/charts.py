"""SVG plots for docs/measurements.md, drawn here (no plotting package): median and p95
bars for timed rows (``bar_chart``), and time against a size (``line_chart``); ``Plots``
writes them into one folder and answers the Markdown that shows each."""

from __future__ import annotations

import html
import math
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Bar", "bar_chart", "line_chart", "Plots", "fmt_ms"]


def fmt_ms(v: float | None) -> str:
    """A time in ms, as precise as its size deserves."""
    if v is None:
        return "-"
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"

# -- SVG -------------------------------------------------------------------------------

FONT = "DejaVu Sans, Arial, Helvetica, sans-serif"
MEDIAN = "#2b6cb0"
UPPER = "#a9c7ea"
INK = "#222222"
GRID = "#e2e6ea"
# Okabe and Ito's colours, told apart with colour blindness too.
SERIES = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]


def _f(v: float) -> str:
    return f"{v:.1f}"


def _text(x: float, y: float, s: str, size: int = 12, anchor: str = "start", weight: str = "normal",
          fill: str = INK) -> str:
    return (f'<text x="{_f(x)}" y="{_f(y)}" font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{fill}">{html.escape(s)}</text>')


def _wrap(label: str, width: int) -> list[str]:
    lines, line = [], ""
    for word in label.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line] if line else lines or [""]


@dataclass(frozen=True)
class _Axis:
    lo: float
    hi: float
    log: bool
    ticks: list[float]

    def at(self, v: float, x0: float, length: float) -> float:
        if self.log:
            v = max(v, self.lo)
            return x0 + length * (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        return x0 + length * (v - self.lo) / (self.hi - self.lo)


def _axis(values: list[float], log_over: float = 50.0) -> _Axis:
    vals = [v for v in values if v is not None and v > 0]
    if not vals:
        return _Axis(0.0, 1.0, False, [0.0, 1.0])
    vmin, vmax = min(vals), max(vals)
    if vmax / vmin > log_over:
        lo = 10 ** math.floor(math.log10(vmin))
        hi = 10 ** math.ceil(math.log10(vmax))
        decades = round(math.log10(hi / lo))
        mults = (1, 2, 5) if decades <= 3 else (1,)
        ticks = [lo * 10 ** d * m for d in range(decades + 1) for m in mults if lo * 10 ** d * m <= hi]
        return _Axis(lo, hi, True, ticks)
    raw = vmax / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    hi = math.ceil(vmax / step) * step
    n = round(hi / step)
    return _Axis(0.0, hi, False, [i * step for i in range(n + 1)])


def _tick(v: float) -> str:
    if v >= 1000:
        return f"{v:,.0f}"
    if v == int(v):
        return str(int(v))
    return f"{v:g}"


def _svg(width: float, height: float, body: list[str], title: str) -> str:
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(width)}" height="{_f(height)}" '
        f'viewBox="0 0 {_f(width)} {_f(height)}" font-family="{FONT}" role="img">',
        f"<title>{html.escape(title)}</title>",
        f'<rect x="0" y="0" width="{_f(width)}" height="{_f(height)}" fill="#ffffff"/>',
        *body,
        "</svg>",
        "",
    ])


@dataclass(frozen=True)
class Bar:
    """One row of a bar chart: ``main`` (the median) drawn dark over ``upper`` (the p95),
    and a line from ``lo`` to ``hi`` (fastest to slowest) where the bench kept them."""

    label: str
    main: float | None
    upper: float | None = None
    lo: float | None = None
    hi: float | None = None


def bar_chart(title: str, bars: list[Bar], unit: str = "ms", legend: tuple[str, str] = ("median", "p95"),
              spread: str = "fastest to slowest") -> str:
    wrap = 46
    labels = [_wrap(b.label, wrap) for b in bars]
    label_w = 14 + 6.6 * max(len(line) for lines in labels for line in lines)
    plot_x, plot_w, value_w = 16 + label_w, 400.0, 140.0
    width = plot_x + plot_w + value_w
    top = 64.0
    heights = [max(26.0, 15.0 * len(lines) + 11) for lines in labels]
    plot_h = sum(heights)
    height = top + plot_h + 46
    axis = _axis([v for b in bars for v in (b.main, b.upper, b.lo, b.hi) if v is not None])
    body = [_text(16, 24, title, 15, weight="bold")]
    # Legend.
    lx = 16.0
    body.append(f'<rect x="{_f(lx)}" y="36" width="14" height="10" fill="{MEDIAN}"/>')
    body.append(_text(lx + 19, 45, legend[0], 11))
    lx += 30 + 6.6 * len(legend[0])
    if any(b.upper is not None for b in bars):
        body.append(f'<rect x="{_f(lx)}" y="36" width="14" height="10" fill="{UPPER}"/>')
        body.append(_text(lx + 19, 45, legend[1], 11))
        lx += 30 + 6.6 * len(legend[1])
    if any(b.lo is not None and b.hi is not None for b in bars):
        body.append(f'<line x1="{_f(lx)}" y1="41" x2="{_f(lx + 16)}" y2="41" stroke="{INK}" stroke-width="1.2"/>')
        body.append(_text(lx + 21, 45, spread, 11))
    body.append(_text(plot_x + plot_w + 10, top - 6, f"{legend[0]}" + (f" / {legend[1]}" if any(
        b.upper is not None for b in bars) else ""), 11, fill="#555555"))
    scale_note = "log scale" if axis.log else ""
    # Grid and ticks.
    for t in axis.ticks:
        x = axis.at(t, plot_x, plot_w)
        body.append(f'<line x1="{_f(x)}" y1="{_f(top)}" x2="{_f(x)}" y2="{_f(top + plot_h)}" stroke="{GRID}"/>')
        body.append(_text(x, top + plot_h + 16, _tick(t), 11, "middle"))
    body.append(f'<line x1="{_f(plot_x)}" y1="{_f(top)}" x2="{_f(plot_x)}" y2="{_f(top + plot_h)}" stroke="{INK}"/>')
    body.append(_text(plot_x + plot_w / 2, top + plot_h + 34, f"{unit}{', ' + scale_note if scale_note else ''}", 11,
                      "middle"))
    y = top
    for b, lines, h in zip(bars, labels, heights):
        mid = y + h / 2
        for i, line in enumerate(lines):
            body.append(_text(plot_x - 8, mid + 4 + 15 * (i - (len(lines) - 1) / 2), line, 12, "end"))
        x0 = axis.at(axis.lo, plot_x, plot_w)
        if b.upper is not None:
            body.append(f'<rect x="{_f(x0)}" y="{_f(mid - 7)}" width="{_f(axis.at(b.upper, plot_x, plot_w) - x0)}" '
                        f'height="14" fill="{UPPER}"/>')
        if b.main is not None:
            body.append(f'<rect x="{_f(x0)}" y="{_f(mid - 7)}" width="{_f(axis.at(b.main, plot_x, plot_w) - x0)}" '
                        f'height="14" fill="{MEDIAN}"/>')
        if b.lo is not None and b.hi is not None:
            a, z = axis.at(b.lo, plot_x, plot_w), axis.at(b.hi, plot_x, plot_w)
            body.append(f'<line x1="{_f(a)}" y1="{_f(mid)}" x2="{_f(z)}" y2="{_f(mid)}" stroke="{INK}" stroke-width="1.2"/>')
            for x in (a, z):
                body.append(f'<line x1="{_f(x)}" y1="{_f(mid - 5)}" x2="{_f(x)}" y2="{_f(mid + 5)}" stroke="{INK}" '
                            'stroke-width="1.2"/>')
        value = fmt_ms(b.main) + ("" if b.upper is None else f" / {fmt_ms(b.upper)}")
        body.append(_text(plot_x + plot_w + 10, mid + 4, value, 11))
        y += h
    return _svg(width, height, body, title)


def line_chart(title: str, series: list[tuple[str, list[tuple[float, float, float | None]]]],
               x_label: str, y_label: str) -> str:
    """``series``: (name, [(x, median, p95 or None)]); the p95 is a whisker above the point."""
    plot_x, plot_y, plot_w, plot_h = 72.0, 48.0, 440.0, 260.0
    legend_w = 20 + 6.6 * max(len(name) for name, _ in series) + 16
    width = plot_x + plot_w + 24 + legend_w
    height = plot_y + plot_h + 52
    xs = [p[0] for _, pts in series for p in pts]
    x_axis = _axis(xs, log_over=3.9)
    if not x_axis.log:
        x_axis = _Axis(0.0, x_axis.hi, False, x_axis.ticks)
    else:
        x_axis = _Axis(min(xs) / 1.25, max(xs) * 1.25, True, sorted(set(xs)))
    y_axis = _axis([v for _, pts in series for p in pts for v in (p[1], p[2]) if v is not None], log_over=30.0)
    body = [_text(16, 24, title, 15, weight="bold")]
    for t in y_axis.ticks:
        y = plot_y + plot_h - (y_axis.at(t, 0, plot_h))
        body.append(f'<line x1="{_f(plot_x)}" y1="{_f(y)}" x2="{_f(plot_x + plot_w)}" y2="{_f(y)}" stroke="{GRID}"/>')
        body.append(_text(plot_x - 6, y + 4, _tick(t), 11, "end"))
    for t in x_axis.ticks:
        x = x_axis.at(t, plot_x, plot_w)
        body.append(f'<line x1="{_f(x)}" y1="{_f(plot_y)}" x2="{_f(x)}" y2="{_f(plot_y + plot_h)}" stroke="{GRID}"/>')
        body.append(_text(x, plot_y + plot_h + 16, _tick(t), 11, "middle"))
    body.append(f'<polyline points="{_f(plot_x)},{_f(plot_y)} {_f(plot_x)},{_f(plot_y + plot_h)} '
                f'{_f(plot_x + plot_w)},{_f(plot_y + plot_h)}" fill="none" stroke="{INK}"/>')
    body.append(_text(plot_x + plot_w / 2, plot_y + plot_h + 36, x_label + (", log scale" if x_axis.log else ""), 11,
                      "middle"))
    body.append(f'<text x="16" y="{_f(plot_y + plot_h / 2)}" font-size="11" text-anchor="middle" fill="{INK}" '
                f'transform="rotate(-90 16 {_f(plot_y + plot_h / 2)})">'
                f'{html.escape(y_label + (", log scale" if y_axis.log else ""))}</text>')
    for i, (name, pts) in enumerate(series):
        colour = SERIES[i % len(SERIES)]
        placed = [(x_axis.at(x, plot_x, plot_w), plot_y + plot_h - y_axis.at(m, 0, plot_h),
                   None if p is None else plot_y + plot_h - y_axis.at(p, 0, plot_h)) for x, m, p in sorted(pts)]
        if len(placed) > 1:
            body.append(f'<polyline points="{" ".join(f"{_f(x)},{_f(y)}" for x, y, _ in placed)}" fill="none" '
                        f'stroke="{colour}" stroke-width="2"/>')
        for x, y, p in placed:
            if p is not None:
                body.append(f'<line x1="{_f(x)}" y1="{_f(y)}" x2="{_f(x)}" y2="{_f(p)}" stroke="{colour}" '
                            'stroke-width="1.2"/>')
                body.append(f'<line x1="{_f(x - 4)}" y1="{_f(p)}" x2="{_f(x + 4)}" y2="{_f(p)}" stroke="{colour}" '
                            'stroke-width="1.2"/>')
            body.append(f'<circle cx="{_f(x)}" cy="{_f(y)}" r="3.5" fill="{colour}"/>')
        ly = plot_y + 10 + 20 * i
        lx = plot_x + plot_w + 24
        body.append(f'<line x1="{_f(lx)}" y1="{_f(ly)}" x2="{_f(lx + 16)}" y2="{_f(ly)}" stroke="{colour}" '
                    'stroke-width="2"/>')
        body.append(f'<circle cx="{_f(lx + 8)}" cy="{_f(ly)}" r="3.5" fill="{colour}"/>')
        body.append(_text(lx + 22, ly + 4, name, 11))
    ly = plot_y + 10 + 20 * len(series) + 6
    body.append(_text(plot_x + plot_w + 24, ly + 4, "point: median; whisker: p95", 11, fill="#555555"))
    return _svg(width, height, body, title)


class Plots:
    """Writes plots into one folder and answers the Markdown that shows each."""

    def __init__(self, folder: Path, page: Path):
        self.folder = folder
        self.link = Path(os.path.relpath(folder, page.parent)).as_posix()
        self.written: list[Path] = []

    def _put(self, name: str, svg: str, alt: str) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{name}.svg"
        path.write_text(svg)
        self.written.append(path)
        return f"![{alt}]({self.link}/{name}.svg)"

    def bars(self, name: str, title: str, bars: list[Bar], **kw) -> str:
        return self._put(name, bar_chart(title, bars, **kw), title)

    def lines(self, name: str, title: str, series, x_label: str, y_label: str) -> str:
        return self._put(name, line_chart(title, series, x_label, y_label), title)

    def remove_others(self) -> list[Path]:
        """Delete the plots of earlier runs that this run did not write."""
        gone = []
        if self.folder.is_dir():
            for path in sorted(self.folder.glob("*.svg")):
                if path not in self.written:
                    path.unlink()
                    gone.append(path)
        return gone
