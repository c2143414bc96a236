"""The one chart module: SVG drawn by our own code for the report, ``decide`` and ``recommend``.

Every chart is a self-contained ``<svg>`` element: no external fonts, images, scripts or
namespace URLs, so the report stays one offline file and its text (axis labels, legends)
is searchable and can be checked for disclosive content like the rest of the page.
Charts: bars (histogram on a log or linear axis, horizontal bars) and lines (ROC,
calibration, MCMC traces, the decision trade-off curve, recommendation paths), with
optional vertical threshold markers.

Safety contract: every piece of text put into an SVG here goes through
:func:`html.escape`, and every number is formatted by us, so a chart is safe markup and the
report's template inserts it with ``|safe`` (the only place it does so).

Files: :func:`plot_tradeoff` and :func:`plot_recommendations` write ``.svg`` with this code
(a standalone file with its own style rules) and ``.png`` through matplotlib, which is used
for PNG export only (``pip install 'sdcrisk[plot]'``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..analyses.decision import TradeoffCurve
from ..exceptions import ParameterError

if TYPE_CHECKING:
    from ..analyses.recommend import Recommendations

__all__ = ["Series", "Marker", "histogram", "hbars", "lines", "nice_ticks", "tradeoff",
           "recommendation_paths", "standalone", "plot_tradeoff", "plot_recommendations"]

# Okabe-Ito colour-blind safe palette
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
           "#000000")
_W, _H = 640, 280
_PAD = {"left": 64, "right": 16, "top": 16, "bottom": 46}
#: the markers' labels: one line each, the first 12 px below the plot's top
_LINE, _PAD_LABEL = 13, 6


@dataclass(frozen=True)
class Series:
    """One line of a line chart."""

    label: str
    x: ArrayLike
    y: ArrayLike
    dashed: bool = False
    points: bool = False
    colour: str | None = None


@dataclass(frozen=True)
class Marker:
    """A vertical reference line at ``x`` with a label (e.g. a risk threshold)."""

    x: float
    label: str
    colour: str = "#D55E00"
    extra: dict = field(default_factory=dict)


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering [lo, hi] (1, 2, 2.5, 5 x 10^k steps)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    t = first
    while t <= hi + step * 1e-9:
        ticks.append(0.0 if abs(t) < step * 1e-9 else t)
        t += step
    return ticks


def _tick_label(v: float, log: bool) -> str:
    if log:
        e = int(round(v))
        return {0: "1", -1: "0.1", -2: "0.01", -3: "0.001"}.get(e, f"1e{e}")
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e4 or a < 1e-3:
        return f"{v:.0e}".replace("e+0", "e").replace("e-0", "e-")
    if a >= 1000:
        return f"{v:,.0f}"
    return f"{v:.4g}"


class _Frame:
    """Plot area, scales and axes of one chart."""

    def __init__(self, xlim, ylim, *, xlabel, ylabel, log_x=False, log_y=False,
                 width=_W, height=_H):
        self.w, self.h = width, height
        self.x0, self.x1 = _PAD["left"], width - _PAD["right"]
        self.y0, self.y1 = height - _PAD["bottom"], _PAD["top"]
        self.xlim, self.ylim = xlim, ylim
        self.log_x, self.log_y = log_x, log_y
        self.xlabel, self.ylabel = xlabel, ylabel

    def sx(self, v: float) -> float:
        lo, hi = self.xlim
        return self.x0 + (self.x1 - self.x0) * ((v - lo) / (hi - lo) if hi > lo else 0.5)

    def sy(self, v: float) -> float:
        lo, hi = self.ylim
        return self.y0 - (self.y0 - self.y1) * ((v - lo) / (hi - lo) if hi > lo else 0.5)

    def axes(self, xticks=None, yticks=None) -> list[str]:
        out = [f'<rect x="{self.x0}" y="{self.y1}" width="{self.x1 - self.x0}" '
               f'height="{self.y0 - self.y1}" class="plotbg"/>']
        xt = nice_ticks(*self.xlim) if xticks is None else xticks
        yt = nice_ticks(*self.ylim) if yticks is None else yticks
        for v in yt:
            y = self.sy(v)
            out.append(f'<line x1="{self.x0}" x2="{self.x1}" y1="{y:.1f}" y2="{y:.1f}" '
                       'class="grid"/>')
            out.append(f'<text x="{self.x0 - 6}" y="{y + 4:.1f}" text-anchor="end" '
                       f'class="tick">{escape(_tick_label(v, self.log_y))}</text>')
        for v in xt:
            x = self.sx(v)
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{self.y0}" y2="{self.y0 + 4}" '
                       'class="axis"/>')
            out.append(f'<text x="{x:.1f}" y="{self.y0 + 17}" text-anchor="middle" '
                       f'class="tick">{escape(_tick_label(v, self.log_x))}</text>')
        out.append(f'<line x1="{self.x0}" x2="{self.x1}" y1="{self.y0}" y2="{self.y0}" '
                   'class="axis"/>')
        out.append(f'<line x1="{self.x0}" x2="{self.x0}" y1="{self.y0}" y2="{self.y1}" '
                   'class="axis"/>')
        out.append(f'<text x="{(self.x0 + self.x1) / 2:.1f}" y="{self.y0 + 36}" '
                   f'text-anchor="middle" class="label">{escape(self.xlabel)}</text>')
        cy = (self.y0 + self.y1) / 2
        out.append(f'<text x="14" y="{cy:.1f}" text-anchor="middle" class="label" '
                   f'transform="rotate(-90 14 {cy:.1f})">{escape(self.ylabel)}</text>')
        return out

    def svg(self, parts: list[str], title: str) -> str:
        return (f'<svg viewBox="0 0 {self.w} {self.h}" class="chart" role="img" '
                f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
                + "".join(parts) + "</svg>")


def _markers(frame: _Frame, markers: Sequence[Marker]) -> list[str]:
    """Dashed vertical lines with their labels, every line drawn before any label, so that a
    label's white halo hides a neighbouring line that crosses it."""
    out: list[str] = []
    labels: list[str] = []
    for i, m in enumerate(markers):
        v = math.log10(m.x) if frame.log_x and m.x > 0 else m.x
        if not (math.isfinite(v) and frame.xlim[0] <= v <= frame.xlim[1]):
            continue
        x = frame.sx(v)
        y = frame.y1 + 12 + _LINE * i
        anchor = "end" if x > (frame.x0 + frame.x1) / 2 else "start"
        dx = -4 if anchor == "end" else 4
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{frame.y0}" y2="{frame.y1}" '
                   f'stroke="{escape(m.colour)}" stroke-width="1.5" stroke-dasharray="5 3"/>')
        labels.append(f'<text x="{x + dx:.1f}" y="{y}" text-anchor="{anchor}" class="marker" '
                      f'fill="{escape(m.colour)}" stroke="#fff" stroke-width="3" '
                      f'paint-order="stroke">{escape(m.label)}</text>')
    return out + labels


def _legend(frame: _Frame, labels: Sequence[tuple[str, str, bool]]) -> list[str]:
    """One legend entry per line, below the x-axis label (the frame reserves the room)."""
    out = []
    for i, (label, colour, dashed) in enumerate(labels):
        x = frame.x0
        y = frame.y0 + 50 + 15 * i
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        out.append(f'<line x1="{x}" x2="{x + 18}" y1="{y - 4}" y2="{y - 4}" stroke="{colour}" '
                   f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{x + 24}" y="{y}" class="legend">{escape(label)}</text>')
    return out


def histogram(edges: ArrayLike, counts: ArrayLike, *, title: str, xlabel: str,
              ylabel: str, log_x: bool = False, markers: Sequence[Marker] = ()) -> str:
    """Bars over ``edges`` (len(counts) + 1); ``log_x``: edges are log10 values."""
    edges = np.asarray(edges, float)
    counts = np.asarray(counts, float)
    top = float(counts.max()) if counts.size else 1.0
    yt = nice_ticks(0.0, top if top > 0 else 1.0)
    lo, hi = float(edges[0]), float(edges[-1])
    for m in markers:  # widen the axis so that every marker is drawn
        v = math.log10(m.x) if log_x and m.x > 0 else (m.x if not log_x else math.nan)
        if math.isfinite(v):
            lo, hi = min(lo, math.floor(v) if log_x else v), max(hi, v)
    y_top = max(yt[-1], top, 1.0)
    if markers:  # headroom above the tallest bar for the markers' labels (one line each)
        room = (_PAD_LABEL + _LINE * len(markers)) / (_H - _PAD["bottom"] - _PAD["top"])
        y_top = max(y_top, top / (1.0 - min(room, 0.6)))
    frame = _Frame((lo, hi), (0.0, y_top), xlabel=xlabel, ylabel=ylabel, log_x=log_x)
    xt = None
    if log_x:
        xt = [float(e) for e in range(math.ceil(lo), math.floor(hi) + 1)]
    parts = frame.axes(xticks=xt, yticks=yt)
    for a, b, c in zip(edges[:-1], edges[1:], counts, strict=True):
        if c <= 0:
            continue
        xa, xb = frame.sx(a), frame.sx(b)
        y = frame.sy(c)
        parts.append(f'<rect x="{xa + 0.5:.1f}" y="{y:.1f}" width="{max(xb - xa - 1, 1):.1f}" '
                     f'height="{frame.y0 - y:.1f}" fill="{PALETTE[0]}"><title>'
                     f'{escape(_tick_label(c, False))}</title></rect>')
    parts += _markers(frame, markers)
    return frame.svg(parts, title)


def hbars(labels: Sequence[str], values: ArrayLike, *, title: str, xlabel: str,
          value_format: str = "{:.1f}") -> str:
    """Horizontal bars, one per label (values may be negative)."""
    values = np.asarray(values, float)
    n = len(labels)
    row = 22
    height = _PAD["top"] + _PAD["bottom"] + row * max(n, 1)
    lo = min(0.0, float(values.min())) if n else 0.0
    hi = max(0.0, float(values.max())) if n else 1.0
    if hi == lo:
        hi = lo + 1.0
    ticks = nice_ticks(lo, hi)
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])
    width = _W
    pad_left = 150
    frame = _Frame((lo, hi), (0.0, float(max(n, 1))), xlabel=xlabel, ylabel="",
                   width=width, height=height)
    frame.x0, frame.x1 = pad_left, width - 70
    parts = [f'<rect x="{frame.x0}" y="{frame.y1}" width="{frame.x1 - frame.x0}" '
             f'height="{frame.y0 - frame.y1}" class="plotbg"/>']
    for v in ticks:
        x = frame.sx(v)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{frame.y0}" y2="{frame.y1}" '
                     'class="grid"/>')
        parts.append(f'<text x="{x:.1f}" y="{frame.y0 + 17}" text-anchor="middle" '
                     f'class="tick">{escape(_tick_label(v, False))}</text>')
    zero = frame.sx(0.0)
    for i, (label, v) in enumerate(zip(labels, values, strict=True)):
        y = frame.y1 + row * i + 4
        x = frame.sx(v)
        left, w = (min(zero, x), abs(x - zero))
        parts.append(f'<rect x="{left:.1f}" y="{y}" width="{max(w, 0.5):.1f}" height="{row - 8}"'
                     f' fill="{PALETTE[0] if v >= 0 else PALETTE[1]}"/>')
        parts.append(f'<text x="{frame.x0 - 6}" y="{y + row / 2 + 1:.1f}" text-anchor="end" '
                     f'class="tick">{escape(label)}</text>')
        tx = x + 4 if v >= 0 else x - 4
        anchor = "start" if v >= 0 else "end"
        parts.append(f'<text x="{tx:.1f}" y="{y + row / 2 + 1:.1f}" text-anchor="{anchor}" '
                     f'class="legend">{escape(value_format.format(v))}</text>')
    parts.append(f'<line x1="{zero:.1f}" x2="{zero:.1f}" y1="{frame.y0}" y2="{frame.y1}" '
                 'class="axis"/>')
    parts.append(f'<text x="{(frame.x0 + frame.x1) / 2:.1f}" y="{height - 8}" '
                 f'text-anchor="middle" class="label">{escape(xlabel)}</text>')
    return frame.svg(parts, title)


def _thin(x: np.ndarray, y: np.ndarray, max_points: int) -> tuple[np.ndarray, np.ndarray]:
    if len(x) <= max_points:
        return x, y
    idx = np.unique(np.linspace(0, len(x) - 1, max_points).round().astype(int))
    return x[idx], y[idx]


def lines(series: Sequence[Series], *, title: str, xlabel: str, ylabel: str,
          xlim: tuple[float, float] | None = None, ylim: tuple[float, float] | None = None,
          log_x: bool = False, log_y: bool = False, diagonal: bool = False,
          max_points: int = 400, height: int = _H, width: int = _W) -> str:
    """Line chart; ``log_x``/``log_y`` draw log10 of the data (non-positive values dropped);
    ``diagonal`` draws the y = x reference line (ROC chance line, perfect calibration)."""
    prepared = []
    for s in series:
        x = np.asarray(s.x, float)
        y = np.asarray(s.y, float)
        ok = np.isfinite(x) & np.isfinite(y)
        if log_x:
            ok &= x > 0
        if log_y:
            ok &= y > 0
        x, y = x[ok], y[ok]
        if log_x:
            x = np.log10(x)
        if log_y:
            y = np.log10(y)
        x, y = _thin(x, y, max_points)
        prepared.append((s, x, y))
    allx = np.concatenate([p[1] for p in prepared]) if prepared else np.zeros(0)
    ally = np.concatenate([p[2] for p in prepared]) if prepared else np.zeros(0)

    def lim(given, data, log):
        if given is not None:
            lo, hi = given
            if log:
                lo, hi = math.log10(lo), math.log10(hi)
            return float(lo), float(hi)
        if data.size == 0:
            return 0.0, 1.0
        lo, hi = float(data.min()), float(data.max())
        if log:
            return math.floor(lo), math.ceil(hi) if math.ceil(hi) > math.floor(lo) else lo + 1
        if hi == lo:
            return lo - 0.5, hi + 0.5
        pad = 0.04 * (hi - lo)
        return lo - pad, hi + pad

    xl, yl = lim(xlim, allx, log_x), lim(ylim, ally, log_y)
    if diagonal and log_x and log_y:
        xl = yl = (min(xl[0], yl[0]), max(xl[1], yl[1]))
    show_legend = len(prepared) > 1 or bool(prepared and prepared[0][0].label)
    extra = 15 * len(prepared) + 4 if show_legend else 0
    frame = _Frame(xl, yl, xlabel=xlabel, ylabel=ylabel, log_x=log_x, log_y=log_y,
                   height=height + extra, width=width)
    frame.y0 -= extra
    xt = [float(e) for e in range(math.ceil(xl[0]), math.floor(xl[1]) + 1)] if log_x else None
    yt = [float(e) for e in range(math.ceil(yl[0]), math.floor(yl[1]) + 1)] if log_y else None
    parts = frame.axes(xticks=xt, yticks=yt)
    if diagonal:
        a, b = max(xl[0], yl[0]), min(xl[1], yl[1])
        parts.append(f'<line x1="{frame.sx(a):.1f}" y1="{frame.sy(a):.1f}" x2="{frame.sx(b):.1f}"'
                     f' y2="{frame.sy(b):.1f}" stroke="#888" stroke-dasharray="3 3"/>')
    legend = []
    for i, (s, x, y) in enumerate(prepared):
        colour = s.colour or PALETTE[i % len(PALETTE)]
        if x.size:
            pts = " ".join(f"{frame.sx(a):.1f},{frame.sy(b):.1f}" for a, b in zip(x, y,
                                                                                    strict=True))
            dash = ' stroke-dasharray="6 3"' if s.dashed else ""
            parts.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" '
                         f'stroke-width="1.6"{dash}/>')
            if s.points:
                parts += [f'<circle cx="{frame.sx(a):.1f}" cy="{frame.sy(b):.1f}" r="3" '
                          f'fill="{colour}"/>' for a, b in zip(x, y, strict=True)]
        legend.append((s.label, colour, s.dashed))
    if show_legend:
        parts += _legend(frame, legend)
    return frame.svg(parts, title)


# --- decision and recommendation charts, and files ---------------------------------------------
_STYLE = (".plotbg{fill:#fbfcfd;stroke:none}.grid{stroke:#e6e9ef;stroke-width:1}"
          ".axis{stroke:#6b7385;stroke-width:1}.tick{font-size:11px;fill:#4a5263}"
          ".label{font-size:12px;fill:#2b3242}.legend{font-size:11px;fill:#2b3242}"
          ".marker{font-size:11px}text{font-family:system-ui,Arial,sans-serif}")


def _curves(curves) -> list[TradeoffCurve]:
    if isinstance(curves, TradeoffCurve):
        return [curves]
    if isinstance(curves, Mapping):
        return [dataclasses.replace(c, label=k) for k, c in curves.items()]
    return list(curves)


def tradeoff(curves: TradeoffCurve | Sequence[TradeoffCurve] | Mapping[str, TradeoffCurve], *,
             risk_fraction: float | None = None, title: str | None = None) -> str:
    """Disclosure risk against nonpublication loss (Zaslavsky & Horton 2002, Fig. 1) as SVG.

    The dotted anti-diagonal is random suppression; ``risk_fraction`` draws a horizontal
    guide at that risk fraction.
    """
    series = [Series("random suppression", [0.0, 1.0], [1.0, 0.0], dashed=True,
                     colour="#888888")]
    for i, c in enumerate(_curves(curves)):
        series.append(Series(str(c.label or f"curve {i + 1}"), c.loss_fraction,
                             c.risk_fraction, dashed=i > 0, colour=PALETTE[i % len(PALETTE)]))
    if risk_fraction is not None:
        series.append(Series(f"risk fraction {risk_fraction:g}", [0.0, 1.0],
                             [risk_fraction, risk_fraction], dashed=True, colour="#555555"))
    return lines(series, title=title or "Disclosure risk against nonpublication loss",
                 xlabel="nonpublication loss (fraction of full suppression)",
                 ylabel="disclosure risk (fraction of full publication)",
                 xlim=(0, 1), ylim=(0, 1), width=560, height=420, max_points=2000)


def recommendation_paths(rec: Recommendations) -> str:
    """The objective against records changed along each plan's greedy path, as SVG."""
    series = []
    xs: list[float] = []
    for i, p in enumerate(rec.plans):
        x = [float(s["records_changed"]) for s in p.path]
        y = [float(s["objective"]) for s in p.path]
        xs += x
        series.append(Series(p.label(), x, y, points=True, colour=PALETTE[i % len(PALETTE)]))
    hi = max(xs) if xs else 1.0
    series.append(Series(f"target {rec.target.value:g}", [0.0, hi or 1.0],
                         [rec.target.value] * 2, dashed=True, colour="#555555"))
    return lines(series, title=f"{rec.target.objective} along each plan ({rec.method})",
                 xlabel="records changed", ylabel=f"{rec.target.objective} ({rec.method})",
                 width=600, height=380)


def standalone(svg: str) -> str:
    """An inline chart as a standalone ``.svg`` file: namespace and style rules added."""
    head = '<svg xmlns="http://www.w3.org/2000/svg" '
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + svg.replace("<svg ", head, 1)
            .replace("</title>", f"</title><style>{_STYLE}</style>", 1) + "\n")


def _check_path(path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise ParameterError(f"plot file {str(path)!r}: use a .png or .svg name")
    return path


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ParameterError("PNG plots need matplotlib: pip install 'sdcrisk[plot]' (or "
                             "write a .svg, which needs nothing)") from exc
    return Figure, FigureCanvasAgg


def plot_tradeoff(curves: TradeoffCurve | Sequence[TradeoffCurve] | Mapping[str, TradeoffCurve],
                  path: str | Path, *, risk_fraction: float | None = None,
                  title: str | None = None) -> Path:
    """Draw trade-off curves (ZH Fig. 1) to an SVG or PNG file.

    ``.svg`` is drawn by :func:`tradeoff` (no plotting library needed); ``.png`` needs
    matplotlib (``pip install sdcrisk[plot]``). The dotted diagonal is random suppression;
    ``risk_fraction`` draws a horizontal guide (e.g. 0.2).

    Raises
    ------
    ParameterError
        The file suffix is not .png/.svg, or a PNG is asked for without matplotlib.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sdcrisk import BetaBinomialPrior, decision_table, plot_tradeoff
    >>> t = decision_table([(3, 8, 1), (5, 20, 3)], BetaBinomialPrior(1, 10), l1="exp:10")
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     plot_tradeoff(t.curve, pathlib.Path(tmp) / "curve.svg").exists()
    True
    """
    path = _check_path(path)
    items = _curves(curves)
    if path.suffix.lower() == ".svg":
        path.write_text(standalone(tradeoff(items, risk_fraction=risk_fraction, title=title)),
                        encoding="utf-8")
        return path
    figure_cls, canvas = _matplotlib()
    fig = figure_cls(figsize=(5.5, 5))
    canvas(fig)
    ax = fig.add_subplot()
    ax.plot([0, 1], [1, 0], ":", color="grey", label="random suppression")
    for i, c in enumerate(items):
        ax.plot(c.loss_fraction, c.risk_fraction, "-" if i == 0 else "--", label=c.label)
    if risk_fraction is not None:
        ax.axhline(risk_fraction, color="grey", lw=0.5)
    ax.set_xlabel("nonpublication loss (fraction of full suppression)")
    ax.set_ylabel("disclosure risk (fraction of full publication)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(title or "Disclosure risk against nonpublication loss")
    ax.legend(loc="upper right", fontsize="small")
    fig.savefig(path)
    return path


def plot_recommendations(rec: Recommendations, path: str | Path) -> Path:
    """The objective against records changed along each plan (``recommend --plot``): ``.svg``
    by :func:`recommendation_paths`, ``.png`` through matplotlib."""
    path = _check_path(path)
    if path.suffix.lower() == ".svg":
        path.write_text(standalone(recommendation_paths(rec)), encoding="utf-8")
        return path
    figure_cls, canvas = _matplotlib()
    fig = figure_cls(figsize=(6, 4.5))
    canvas(fig)
    ax = fig.add_subplot()
    for p in rec.plans:
        ax.plot([s["records_changed"] for s in p.path], [s["objective"] for s in p.path],
                marker=".", label=p.label())
    ax.axhline(rec.target.value, color="grey", ls=":", label="target")
    ax.set_xlabel("records changed")
    ax.set_ylabel(rec.target.objective + f" ({rec.method})")
    ax.legend(fontsize="small")
    fig.savefig(path)
    return path
