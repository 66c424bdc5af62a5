"""Static figures for reports, drawn here as inline SVG: a few kilobytes each, no script, they
print and open anywhere (plotly's interactive figures need its 4.8 MB of JavaScript in the file).
Every text from the data is escaped (:func:`~vst_core.viz.safe.html_text`).

>>> table = pd.DataFrame({"system": ["a", "a", "b", "b"], "NR": [0.1, 0.3, 0.5, 0.9]})
>>> svg = box_plot_svg(table, "NR")
>>> svg.startswith("<svg") and svg.count('class="vst-box"') == 2
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from vst_core.analysis.intervals import MIN_INTERVAL_N
from vst_core.analysis.meta_eval.settings import METHODS
from vst_core.viz.safe import html_text

WIDTH, HEIGHT = 720, 340
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 40, 72
#: Colours of series (the same as the dashboard's scatter plots).
PALETTE = ("#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#4a5568", "#d69e2e", "#319795")
#: Points drawn beyond the whiskers, per system at most (the rest are counted in its label).
MAX_OUTLIERS = 200


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (steps of 1, 2 or 5 times a power of ten).

    >>> nice_ticks(0.03, 0.97)
    [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
    """
    if not high > low:
        low, high = low - 0.5, high + 0.5
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step)
    return [k * step for k in range(first, math.ceil(high / step) + 1)]


def _frame(title: str, ticks: Sequence[float], y_title: str) -> tuple[list[str], float, float]:
    """The SVG's opening, title, y grid and axis title; returns (parts, the y of the lowest tick,
    pixels per unit)."""
    plot_h = HEIGHT - TOP - BOTTOM
    low, high = ticks[0], ticks[-1]
    scale = plot_h / (high - low)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="vst-figure" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
        f'style="max-width:{WIDTH}px" role="img" aria-label="{html_text(title)}" font-family="system-ui,sans-serif" '
        'font-size="11">',
        f"<title>{html_text(title)}</title>",
        f'<text x="{LEFT}" y="20" font-size="14" fill="#1a202c">{html_text(title)}</text>',
    ]
    for tick in ticks:
        y = TOP + (high - tick) * scale
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e2e8f0"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#4a5568">{tick:.4g}</text>')
    middle = TOP + plot_h / 2
    parts.append(
        f'<text transform="translate(14 {middle:.1f}) rotate(-90)" text-anchor="middle" fill="#4a5568">{html_text(y_title)}</text>'
    )
    return parts, high, scale


def _label(x: float, text: str, limit: int = 18) -> str:
    """A category's name under the axis, turned when long; cut at ``limit`` characters, whole in its tooltip."""
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    y = HEIGHT - BOTTOM + 14
    return (
        f'<text x="{x:.1f}" y="{y}" text-anchor="end" transform="rotate(-30 {x:.1f} {y})" fill="#1a202c">'
        f"<title>{html_text(text)}</title>{html_text(shown)}</text>"
    )


def box_plot_svg(table: pd.DataFrame, column: str) -> str:
    """One box per system of ``column`` (quartiles, median, mean as a diamond, whiskers to the last
    value within 1.5 IQR, the values beyond as points): the box plot the report draws."""
    stats = []
    for system, values in table.groupby("system", sort=True)[column]:
        v = np.sort(values.dropna().to_numpy(dtype=float))
        v = v[np.isfinite(v)]
        if not v.size:
            continue
        q1, median, q3 = np.quantile(v, [0.25, 0.5, 0.75])
        inside = v[(v >= q1 - 1.5 * (q3 - q1)) & (v <= q3 + 1.5 * (q3 - q1))]
        outside = v[(v < inside.min()) | (v > inside.max())]
        stats.append((str(system), q1, median, q3, float(v.mean()), inside.min(), inside.max(), outside, v.size))
    title = f"{column} per system"
    if not stats:
        return ""
    every = np.concatenate([np.r_[s[5], s[6], s[7]] for s in stats])
    ticks = nice_ticks(float(every.min()), float(every.max()))
    parts, high, scale = _frame(title, ticks, column)
    band = (WIDTH - LEFT - RIGHT) / len(stats)
    half = min(band * 0.3, 40)

    def y(value: float) -> float:
        return TOP + (high - value) * scale

    for k, (system, q1, median, q3, mean, low, top, outside, n) in enumerate(stats):
        x = LEFT + band * (k + 0.5)
        colour = PALETTE[k % len(PALETTE)]
        parts.append(
            f'<g class="vst-box"><title>{html_text(system)}: N {n}, median {median:.4g}, quartiles {q1:.4g} to {q3:.4g}, '
            f"mean {mean:.4g}</title>"
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y(top):.1f}" y2="{y(low):.1f}" stroke="{colour}"/>'
            f'<line x1="{x - half / 2:.1f}" x2="{x + half / 2:.1f}" y1="{y(top):.1f}" y2="{y(top):.1f}" stroke="{colour}"/>'
            f'<line x1="{x - half / 2:.1f}" x2="{x + half / 2:.1f}" y1="{y(low):.1f}" y2="{y(low):.1f}" stroke="{colour}"/>'
            f'<rect x="{x - half:.1f}" y="{y(q3):.1f}" width="{2 * half:.1f}" height="{max(y(q1) - y(q3), 1):.1f}" '
            f'fill="{colour}" fill-opacity="0.25" stroke="{colour}"/>'
            f'<line x1="{x - half:.1f}" x2="{x + half:.1f}" y1="{y(median):.1f}" y2="{y(median):.1f}" stroke="{colour}" '
            'stroke-width="2"/>'
            f'<path d="M{x:.1f} {y(mean) - 4:.1f}l4 4l-4 4l-4 -4z" fill="{colour}"/>'
            + "".join(
                f'<circle cx="{x:.1f}" cy="{y(float(v)):.1f}" r="2.5" fill="none" stroke="{colour}"/>'
                for v in outside[:MAX_OUTLIERS]
            )
            + "</g>"
        )
        parts.append(_label(x, system))
    parts.append("</svg>")
    return "".join(parts)


def correlation_bars_svg(correlations: pd.DataFrame, method: str, min_n: int = MIN_INTERVAL_N) -> str:
    """Grouped bars of one coefficient per metric and human aspect, with the bootstrap interval as
    an error bar where N ≥ ``min_n`` (the tables' rule); an undefined coefficient draws no bar."""
    part = correlations[correlations["method"] == method]
    metrics = list(dict.fromkeys(part["metric"].astype(str)))
    aspects = list(dict.fromkeys(part["aspect"].astype(str)))
    if not metrics:
        return ""
    values = part["value"].astype(float)
    enough = part["n"].fillna(0) >= min_n
    lows = part["ci_low"].astype(float).where(enough)
    highs = part["ci_high"].astype(float).where(enough)
    seen = pd.concat([values, lows, highs]).dropna()
    ticks = nice_ticks(min(0.0, float(seen.min()) if len(seen) else 0.0), max(0.0, float(seen.max()) if len(seen) else 1.0))
    name = METHODS.get(method, method)
    parts, high, scale = _frame(f"{name} with human judgements (intervals where N ≥ {min_n})", ticks, name)

    def y(value: float) -> float:
        return TOP + (high - value) * scale

    band = (WIDTH - LEFT - RIGHT) / len(metrics)
    width = band * 0.8 / max(len(aspects), 1)
    for row, value, low, top in zip(part.itertuples(), values, lows, highs, strict=True):
        k, j = metrics.index(str(row.metric)), aspects.index(str(row.aspect))
        x = LEFT + band * k + band * 0.1 + width * j
        colour = PALETTE[j % len(PALETTE)]
        about = f"{row.metric}, {row.aspect}: " + (
            f"{value:+.3f} (N {int(row.n) if not pd.isna(row.n) else 0})" if math.isfinite(value) else "undefined"
        )
        if not math.isfinite(value):
            parts.append(f'<g class="vst-bar"><title>{html_text(about)}</title></g>')
            continue
        bar = f'<rect x="{x:.1f}" y="{min(y(value), y(0)):.1f}" width="{width * 0.9:.1f}" height="{abs(y(value) - y(0)):.1f}" fill="{colour}"/>'
        if not pd.isna(low) and not pd.isna(top):
            c = x + width * 0.45
            bar += (
                f'<line x1="{c:.1f}" x2="{c:.1f}" y1="{y(top):.1f}" y2="{y(low):.1f}" stroke="#1a202c"/>'
                f'<line x1="{c - 3:.1f}" x2="{c + 3:.1f}" y1="{y(top):.1f}" y2="{y(top):.1f}" stroke="#1a202c"/>'
                f'<line x1="{c - 3:.1f}" x2="{c + 3:.1f}" y1="{y(low):.1f}" y2="{y(low):.1f}" stroke="#1a202c"/>'
            )
            about += f" [{low:+.2f}, {top:+.2f}]"
        parts.append(f'<g class="vst-bar"><title>{html_text(about)}</title>{bar}</g>')
    parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#718096"/>')
    for k, metric in enumerate(metrics):
        parts.append(_label(LEFT + band * (k + 0.5), metric))
    for j, aspect in enumerate(aspects):  # the legend, along the top right
        x = WIDTH - RIGHT - 110 * (len(aspects) - j)
        parts.append(
            f'<rect x="{x}" y="26" width="10" height="10" fill="{PALETTE[j % len(PALETTE)]}"/>'
            f'<text x="{x + 14}" y="35" fill="#1a202c"><title>{html_text(aspect)}</title>{html_text(aspect[:14])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


__all__ = ["box_plot_svg", "correlation_bars_svg", "nice_ticks"]
