"""The charts of a fuzz campaign's report (issue 19), as plain SVG files: coverage and
examples over the search's time, and the time each property was given. No script, no
dependency: each chart is a handful of elements a browser or GitHub renders as is."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import escape

from .fuzz_adaptive import AdaptiveSummary

WIDTH, HEIGHT = 640, 300
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 36, 44
BAR_ROWS = 20
COVERAGE_SVG = "coverage.svg"
EXAMPLES_SVG = "examples.svg"
TIME_SVG = "time-per-property.svg"


def _ticks(top: float, count: int = 4) -> list[float]:
    return [top * i / count for i in range(count + 1)]


def _number(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def line_chart(points: Sequence[tuple[float, float]], title: str, y_label: str) -> str:
    """``points`` (seconds, value) as a line over a labelled frame."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    max_x = max((x for x, _ in points), default=0.0) or 1.0
    max_y = max((y for _, y in points), default=0.0) or 1.0
    parts = _frame(title)
    for tick in _ticks(max_y):
        y = TOP + plot_h - tick / max_y * plot_h
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        parts.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_number(tick)}</text>'
        )
    for tick in _ticks(max_x):
        x = LEFT + tick / max_x * plot_w
        parts.append(
            f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
            f"{_number(tick)}</text>"
        )
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle">'
        "seconds of search</text>"
    )
    middle = TOP + plot_h / 2
    parts.append(
        f'<text x="14" y="{middle}" text-anchor="middle" '
        f'transform="rotate(-90 14 {middle})">{escape(y_label)}</text>'
    )
    if points:
        path = " ".join(
            f"{LEFT + x / max_x * plot_w:.1f},{TOP + plot_h - y / max_y * plot_h:.1f}"
            for x, y in points
        )
        parts.append(f'<polyline points="{path}" fill="none" stroke="#1f6feb" stroke-width="2"/>')
    return _svg(parts)


def bar_chart(rows: Sequence[tuple[str, float]], title: str, unit: str) -> str:
    """One horizontal bar per row, largest first, its value written beside it."""
    rows = sorted(rows, key=lambda row: -row[1])[:BAR_ROWS]
    height = TOP + 18 * max(len(rows), 1) + 12
    top = max((value for _, value in rows), default=0.0) or 1.0
    label_w, bar_w = 330, WIDTH - 330 - 80
    parts = _frame(title, height)
    for i, (label, value) in enumerate(rows):
        y = TOP + 18 * i
        shown = label if len(label) <= 52 else "..." + label[-49:]
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{escape(shown)}</text>'
        )
        parts.append(
            f'<rect x="{label_w}" y="{y + 2}" width="{value / top * bar_w:.1f}" '
            'height="13" fill="#1f6feb"/>'
        )
        parts.append(
            f'<text x="{label_w + value / top * bar_w + 4:.1f}" y="{y + 12}">'
            f"{_number(value)} {escape(unit)}</text>"
        )
    if not rows:
        parts.append(
            f'<text x="{WIDTH / 2}" y="{TOP + 12}" text-anchor="middle">nothing ran</text>'
        )
    return _svg(parts, height)


def _frame(title: str, height: int = HEIGHT) -> list[str]:
    return [
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="20" text-anchor="middle" font-weight="bold">'
        f"{escape(title)}</text>",
    ]


def _svg(parts: list[str], height: int = HEIGHT) -> str:
    body = "\n".join(parts)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">\n'
        f"{body}\n</svg>\n"
    )


def write_charts(summary: AdaptiveSummary, out: Path) -> list[Path]:
    """The three charts of the search, written into ``out``; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    charts = {
        COVERAGE_SVG: line_chart(
            [(t, arcs) for t, arcs, _ in summary.timeline],
            "Coverage over time (branch arcs reached, summed over workers)",
            "arcs",
        ),
        EXAMPLES_SVG: line_chart(
            [(t, examples) for t, _, examples in summary.timeline],
            "Examples run over time (all workers)",
            "examples",
        ),
        TIME_SVG: bar_chart(
            [(p.nodeid, p.seconds) for p in summary.properties],
            f"Time per property (the {BAR_ROWS} given the most)",
            "s",
        ),
    }
    written = []
    for name, text in charts.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
