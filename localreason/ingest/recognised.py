"""The values of text recognition that cross between processes: how to recognise, and what was read.

Kept apart from ocr.py (which loads the recogniser) so that the parser, the pipeline and the store can
name them without importing any of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..types import RecognizedPage  # noqa: F401 - named here with the other values of recognition
from .layout import Paragraph


LINE_MIN_SCORE = 0.5
"""Lines recognised with less confidence than this are left out of the text (and counted in the report):
at that level a "line" is most often a picture's texture read as letters."""


@dataclass(frozen=True)
class Recognition:
    """How pages without a usable text layer are recognised (from the settings ``ocr_*``)."""

    dpi: float = 200.0
    max_pixels: int = 50_000_000


@dataclass(frozen=True)
class PageReading:
    """What recognition read on one page (or image frame)."""

    page: int
    """1-based page number (for an image file, its frame)."""
    paragraphs: tuple[Paragraph, ...] = ()
    confidence: float = 0.0
    """The recogniser's mean confidence over the kept lines, weighted by their length (0 when none)."""
    lines: int = 0
    low_lines: int = 0
    """Lines left out for a confidence under LINE_MIN_SCORE."""
    failed: str = ""
    """Why this page could not be read (its time limit, its size, a crash), or empty."""
    again: bool = False
    """It ran past its time or memory limit (a busy machine, say, or a limit raised since): the next ingest or sync
    reads its file again, although the file is unchanged (``pipeline.READ_AGAIN``)."""


class NeedsRecognition(Exception):
    """Raised by a reader on its first pass over a file with pages that need recognition (worker.Survey)."""

    def __init__(self, pages: tuple[int, ...], page_count: int) -> None:
        super().__init__(f"{len(pages)} page(s) need text recognition")
        self.pages = tuple(pages)
        self.page_count = page_count
