"""Image files (PNG, JPEG, TIFF with every page, WebP, BMP): read by text recognition, one frame per page.

The first pass reads only the image's headers (its frames and their sizes, refused over the pixel
limit before anything is decoded) and asks for every frame to be recognised; the second builds the
text from what recognition read, a frame per page.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import IngestFileError
from ..document import ParsedDocument, TextBuilder, finish
from ..recognised import NeedsRecognition, PageReading, Recognition

MIN_PIXELS = 32 * 32
"""Smaller images (icons, spacers) hold no text worth reading."""
OCR_OFF = "an image file: text recognition is off (ocr = off); set ocr = auto to read images"


def parse_image(data: bytes, path: Path, recognition: Recognition | None = None,
                readings: tuple[PageReading, ...] | None = None) -> ParsedDocument:  # fmt: skip
    if recognition is None:
        raise IngestFileError(OCR_OFF, status="skipped")
    if readings is None:
        from ..ocr import image_frames

        sizes = image_frames(data, recognition.max_pixels)
        pages = tuple(i + 1 for i, (w, h) in enumerate(sizes) if w * h >= MIN_PIXELS)
        if not pages:
            w, h = sizes[0]
            raise IngestFileError(f"the image is too small to hold text ({w}x{h} pixels)", status="skipped")
        raise NeedsRecognition(pages, len(sizes))
    builder = TextBuilder()
    for reading in sorted(readings, key=lambda r: r.page):
        builder.add_reading(reading)
    if not builder.blocks:
        failed = [r for r in readings if r.failed]
        if failed and len(failed) == len(readings):
            raise IngestFileError(failed[0].failed if len(failed) == 1 else
                                  f"no page could be recognised ({failed[0].failed})")  # fmt: skip
        raise IngestFileError("recognition found no text in the image", status="skipped")
    parsed = finish(builder, path, "image", [])
    parsed.recognized = sorted(readings, key=lambda r: r.page)
    return parsed
