"""The dashboard's charts: server-rendered SVG (no script, nothing from a CDN).

Each chart is an ``<svg role="img">`` with a ``<title>`` and a ``<desc>``
(what a screen reader says) and comes with its numbers as a table
(:class:`Chart`'s ``headers`` and ``rows``), which the page shows beneath
it: the table is the chart's text alternative, and the way to read exact
values. Every label is escaped; every number is drawn to scale from zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import count

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

#: One colour per series, in order (no red or green: those mean something);
#: readable on the admin's light and dark themes.
PALETTE = ("#2f7ed8", "#8e44ad", "#16a2b8", "#f3a712", "#5d6d7e", "#a569bd", "#5dade2", "#2c3e50")
#: Colours that mean something wherever they appear.
MEANING = {
    "completed": "#17a589",
    "failed": "#e4572e",
    "canceled": "#7f8c8d",
    "rejected": "#c0392b",
    "working": "#2f7ed8",
    "submitted": "#8e44ad",
    "input-required": "#f3a712",
    "auth-required": "#d35400",
    "delivered": "#17a589",
    "retry": "#f3a712",
    "gave-up": "#7f8c8d",
    "refused": "#c0392b",
    "disabled": "#e4572e",
    "input": "#2f7ed8",
    "output": "#f3a712",
}

_ids = count(1)  # unique element ids for aria-labelledby on one page


@dataclass
class Chart:
    """A chart and its numbers: the SVG, and the same data as a table."""

    title: str
    svg: SafeString
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    #: What the chart counts and over which window, in a sentence.
    note: str = ""


def colour(name: str, index: int) -> str:
    return MEANING.get(name, PALETTE[index % len(PALETTE)])


def _open(title: str, desc: str, width: int, height: int) -> str:
    n = next(_ids)
    return (
        f'<svg class="tnx-chart" role="img" viewBox="0 0 {width} {height}" '
        f'width="100%" aria-labelledby="tnx-c{n}-t tnx-c{n}-d" '
        f'xmlns="http://www.w3.org/2000/svg"><title id="tnx-c{n}-t">{escape(title)}</title>'
        f'<desc id="tnx-c{n}-d">{escape(desc)}</desc>'
    )


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = 11) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'fill="currentColor">{escape(text)}</text>'
    )


def bars(
    title: str, rows: Sequence[tuple[str, int]], unit: str = "", keys: Sequence[str] = ()
) -> SafeString:
    """Horizontal bars, one per ``(label, value)``, longest scale = the largest;
    ``keys``: each bar's colour key (a state, an outcome) when not its label."""
    width, label_w, bar_h, gap = 480, 170, 18, 6
    height = max(1, len(rows)) * (bar_h + gap) + gap
    top = max((v for _, v in rows), default=0) or 1
    desc = "; ".join(f"{label}: {value}{unit}" for label, value in rows) or "no data"
    out = [_open(title, desc, width, height)]
    if not rows:
        out.append(_text(width / 2, height / 2 + 4, "no data", "middle"))
    for i, (label, value) in enumerate(rows):
        y = gap + i * (bar_h + gap)
        length = (width - label_w - 70) * value / top
        out.append(_text(label_w - 6, y + bar_h - 5, _cut(label, 26), "end"))
        out.append(
            f'<rect x="{label_w}" y="{y}" width="{length:.1f}" height="{bar_h}" '
            f'fill="{colour(keys[i] if i < len(keys) else label, i)}">'
            f"<title>{escape(label)}: {value}{escape(unit)}</title></rect>"
        )
        out.append(_text(label_w + length + 4, y + bar_h - 5, f"{value:,}{unit}"))
    out.append("</svg>")
    return mark_safe("".join(out))  # every label went through escape()


def columns(
    title: str,
    buckets: Sequence[str],
    series: dict[str, list[int]],
    *,
    every: int = 1,
    width: int = 480,
) -> SafeString:
    """Stacked columns: one per bucket (an hour, a day), one colour per
    series, a legend below; every ``every``-th bucket is labelled. ``width``:
    the drawing's, about the width it is shown at (its text stays legible)."""
    left, top_pad, plot_h = 56, 10, 170
    height = top_pad + plot_h + 44 + 16 * ((len(series) + 3) // 4)
    totals = [sum(values[i] for values in series.values()) for i in range(len(buckets))]
    top = max(totals, default=0) or 1
    step = (width - left - 8) / max(1, len(buckets))
    desc = "; ".join(
        f"{b}: " + ", ".join(f"{name} {values[i]}" for name, values in series.items() if values[i])
        for i, b in enumerate(buckets)
        if totals[i]
    )
    out = [_open(title, desc or "no data", width, height)]
    base = top_pad + plot_h
    for fraction in (0, 0.5, 1):  # the scale: 0, half, the top
        y = base - plot_h * fraction
        out.append(f'<line x1="{left}" x2="{width - 8}" y1="{y:.1f}" y2="{y:.1f}" '
                   'stroke="currentColor" stroke-opacity="0.15"/>')  # fmt: skip
        out.append(_text(left - 6, y + 4, f"{round(top * fraction):,}", "end", 10))
    for i, bucket in enumerate(buckets):
        x, y = left + i * step + 1, float(base)
        for s, (name, values) in enumerate(series.items()):
            h = plot_h * values[i] / top
            if h > 0:
                y -= h
                out.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{step - 2:.1f}" height="{h:.1f}" '
                    f'fill="{colour(name, s)}"><title>{escape(bucket)} · {escape(name)}: '
                    f"{values[i]:,}</title></rect>"
                )
        if i % every == 0:
            out.append(_text(x + step / 2, base + 14, bucket, "middle", 10))
    out.extend(_legend(list(series), left, base + 30))
    out.append("</svg>")
    return mark_safe("".join(out))  # every label went through escape()


def _legend(names: list[str], left: int, y: float) -> list[str]:
    out = []
    for i, name in enumerate(names):
        x, row = left + (i % 4) * 110, y + 16 * (i // 4)
        out.append(f'<rect x="{x}" y="{row - 9}" width="10" height="10" fill="{colour(name, i)}"/>')
        out.append(_text(x + 14, row, name))
    return out


def _cut(text: str, length: int) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"
