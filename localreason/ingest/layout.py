"""Reading order for recognised text: the detector's line boxes -> paragraphs, columns and table rows.

The recogniser (ocr.py) returns one box per run of text, in no order a reader would follow. This module
puts them back in order with a recursive XY cut, the classic way to read a page from its whitespace:

- A block of boxes is first cut **across** where a band of the page holds no text taller than
  ``PARAGRAPH_GAP`` line heights (a paragraph break, the space above a heading, a table's row gap).
- Otherwise it is cut **down** at the widest empty gutter, when the two sides look like columns of
  prose: several lines on each side, each side a quarter of the page wide or more, most of its lines
  filling its width (justified or ragged text does; a table's cells mostly do not).
- A block that cannot be cut is one paragraph: its boxes grouped into rows by their vertical overlap,
  each row read left to right (so a table row reads as one line, cell after cell), rows top to bottom.

A one-row paragraph set in letters much taller than the page's body text is a heading (depth 1 or 2).
Everything here is arithmetic on boxes: it is tested with made-up boxes, and measured on real pages by
``bench/quality/ocr/``.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

PARAGRAPH_GAP = 0.6
"""A horizontal band free of text at least this many (median) line heights tall separates two blocks."""
GUTTER = 0.8
"""A vertical gutter between columns is at least this many line heights wide (and 1.5% of the page)."""
COLUMN_FILL = 0.6
"""Most lines of a column of prose reach at least this share of the column's width."""
COLUMN_MIN = 0.25
"""A column of prose spans at least this share of the page's width: a table's narrow column of short cells
(a "type" beside its "meaning") fills its own width too, and must be read across, row by row."""
HEADING_1, HEADING_2 = 1.6, 1.25
"""A one-row block whose letters are this many times taller than the body text is a heading of depth 1 / 2."""


@dataclass(frozen=True)
class Line:
    """One box the detector found, with the text the recogniser read in it."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    score: float = 1.0

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def width(self) -> float:
        return self.x1 - self.x0


@dataclass(frozen=True)
class Paragraph:
    text: str
    heading: int = 0
    """0 for body text, else the heading's depth (1 outermost)."""


def reading_order(lines: list[Line], page_width: float) -> list[Paragraph]:
    """The page's paragraphs in reading order (see the module's docstring)."""
    lines = [ln for ln in lines if ln.text.strip() and ln.height > 0 and ln.width > 0]
    if not lines:
        return []
    unit = statistics.median(ln.height for ln in lines)
    blocks: list[list[Line]] = []
    _cut(lines, unit, page_width, blocks)
    rows_per_block = [_rows(b, unit) for b in blocks]
    body = statistics.median(_row_height(r) for rows in rows_per_block for r in rows)
    many = sum(len(r) for r in rows_per_block) >= 5
    out = []
    for rows in rows_per_block:
        text = join_rows([" ".join(ln.text.strip() for ln in row) for row in rows])
        heading = 0
        if many and len(rows) == 1 and len(text) <= 120:
            ratio = _row_height(rows[0]) / body
            heading = 1 if ratio >= HEADING_1 else 2 if ratio >= HEADING_2 else 0
        out.append(Paragraph(text, heading))
    return out


_BROKEN_WORD = re.compile(r"(\w)-\n(?=[a-z])")


def join_rows(rows: list[str]) -> str:
    """Rows of one paragraph as its text: one row per line, a word broken at a line's end by a hyphen joined."""
    return _BROKEN_WORD.sub(r"\1", "\n".join(r for r in rows if r))


def _cut(lines: list[Line], unit: float, page_width: float, out: list[list[Line]]) -> None:
    across = _gaps([(ln.y0, ln.y1) for ln in lines], PARAGRAPH_GAP * unit)
    if across:
        for part in _split(lines, across, lambda ln: (ln.y0 + ln.y1) / 2):
            _cut(part, unit, page_width, out)
        return
    down = _gaps([(ln.x0, ln.x1) for ln in lines], max(GUTTER * unit, 0.015 * page_width))
    if down:
        widest = max(down, key=lambda g: g[1] - g[0])
        left = [ln for ln in lines if ln.x1 <= widest[0]]
        right = [ln for ln in lines if ln.x0 >= widest[1]]
        if _prose(left, page_width) and _prose(right, page_width):
            _cut(left, unit, page_width, out)
            _cut(right, unit, page_width, out)
            return
    out.append(lines)


def _gaps(spans: list[tuple[float, float]], least: float) -> list[tuple[float, float]]:
    """The empty stretches at least ``least`` long between the covered parts of one axis."""
    spans = sorted(spans)
    gaps = []
    reach = spans[0][1]
    for a, b in spans[1:]:
        if a - reach >= least:
            gaps.append((reach, a))
        reach = max(reach, b)
    return gaps


def _split(lines: list[Line], gaps: list[tuple[float, float]], centre) -> list[list[Line]]:
    parts: list[list[Line]] = [[] for _ in range(len(gaps) + 1)]
    for ln in lines:
        c = centre(ln)
        parts[sum(1 for g in gaps if c >= g[1])].append(ln)
    return [p for p in parts if p]


def _prose(lines: list[Line], page_width: float) -> bool:
    """Lines that look like a column of running text: at least 3, spanning a quarter of the page or more, most
    reaching 60% of the column's width."""
    if len(lines) < 3:
        return False
    span = max(ln.x1 for ln in lines) - min(ln.x0 for ln in lines)
    return span >= COLUMN_MIN * page_width and statistics.median(ln.width for ln in lines) >= COLUMN_FILL * span


def _rows(lines: list[Line], unit: float) -> list[list[Line]]:
    """Boxes grouped into rows (a box joins a row whose vertical middle it overlaps), each left to right."""
    rows: list[list[Line]] = []
    for ln in sorted(lines, key=lambda ln: (ln.y0 + ln.y1) / 2):
        mid = (ln.y0 + ln.y1) / 2
        row = rows[-1] if rows else None
        if row is not None and min(r.y0 for r in row) <= mid <= max(r.y1 for r in row):
            row.append(ln)
        else:
            rows.append([ln])
    return [sorted(r, key=lambda ln: ln.x0) for r in rows]


def _row_height(row: list[Line]) -> float:
    return statistics.median(ln.height for ln in row)
