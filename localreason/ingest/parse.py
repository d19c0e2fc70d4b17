"""Readers: bytes of one file -> normalised text plus its block structure.

Which reader a file gets (by its name), and the one entry point, :func:`parse_bytes`, that
runs it and turns any failure into an :class:`IngestFileError`. Each format's reader lives
in its own module under ``ingest/formats/``; what they all produce is in ``ingest/document.py``.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import IngestFileError
from .document import Block, ParsedDocument, normalize
from .formats.docx import DEFAULT_MAX_UNPACKED_BYTES, parse_docx
from .formats.html import parse_html
from .formats.html_stream import parse_html_stream
from .formats.image import parse_image
from .formats.markdown import parse_markdown
from .formats.pdf import parse_pdf
from .formats.plain import parse_plain
from .formats.rst import parse_rst
from .recognised import NeedsRecognition, PageReading, Recognition

__all__ = ["Block", "ParsedDocument", "READERS", "detect_format", "normalize", "parse_bytes", "parse_html_stream"]

CODE_SUFFIXES = frozenset(
    ".py .pyi .js .mjs .cjs .ts .tsx .jsx .c .h .cc .cpp .cxx .hpp .hh .java .kt .kts .go .rs "
    ".rb .php .cs .swift .scala .sh .bash .zsh .fish .sql .r .lua .pl .pm .hs .ml .mli .ex .exs "
    ".clj .dart .m .mm .jl .toml .yaml .yml .ini .cfg .conf .json .xml .css .scss .less .tex "
    ".bib .proto .gradle .cmake .vim .el .ps1 .bat".split()
)
SUFFIX_FORMATS = {
    ".txt": "text", ".text": "text", ".log": "text",
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown",
    ".rst": "rst", ".rest": "rst",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".png": "image", ".jpg": "image", ".jpeg": "image", ".tif": "image", ".tiff": "image", ".webp": "image",
    ".bmp": "image",
}  # fmt: skip
PLAIN_NAMES = {"readme": "text", "license": "text", "copying": "text", "authors": "text",
               "changelog": "text", "news": "text", "makefile": "code", "dockerfile": "code"}  # fmt: skip


def detect_format(path: Path) -> str | None:
    """The reader for ``path`` by its name, or None if the type is not supported."""
    name = path.name.lower()
    if name.endswith((".rst.txt", ".rest.txt")):  # Sphinx ships its reST sources so
        return "rst"
    suffix = path.suffix.lower()
    if suffix in SUFFIX_FORMATS:
        return SUFFIX_FORMATS[suffix]
    if suffix in CODE_SUFFIXES:
        return "code"
    if not suffix or suffix in (".txt",):
        return PLAIN_NAMES.get(name)
    return None


READERS = {
    "text": lambda d, p: parse_plain(d, p, "text"),
    "code": lambda d, p: parse_plain(d, p, "code"),
    "markdown": parse_markdown,
    "rst": parse_rst,
    "html": parse_html,
    "pdf": parse_pdf,
    "docx": parse_docx,
    "image": parse_image,
}
RECOGNISED_FORMATS = ("pdf", "image")
"""The formats whose pages may be read by text recognition (their readers take ``recognition`` and ``readings``)."""


def parse_bytes(data: bytes, path: Path, fmt: str, *, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
                recognition: Recognition | None = None,
                readings: tuple[PageReading, ...] | None = None) -> ParsedDocument:  # fmt: skip
    """Parse ``data`` (the bytes of ``path``) with the reader for ``fmt``.

    Whatever the bytes, this returns a ParsedDocument or raises IngestFileError: a
    reader's own failure (too deep, out of memory, a bug, input no reader expected)
    becomes a failed file with the reason, so one hostile file never stops an ingest.
    ``max_unpacked_bytes`` bounds what a compressed format (DOCX) may unpack to.
    For PDF and images: ``recognition`` None means pages without a usable text layer are
    not recognised (``ocr = off``); otherwise a first pass raises NeedsRecognition naming
    them, and the second pass reads them from ``readings``.
    """
    reader = READERS[fmt]
    options: dict = {"max_unpacked_bytes": max_unpacked_bytes} if fmt == "docx" else {}
    if fmt in RECOGNISED_FORMATS:
        options = {"recognition": recognition, "readings": readings}
    if not data.strip():
        raise IngestFileError("empty file", status="skipped")
    failure = ""
    try:
        parsed = reader(data, path, **options)
    except (IngestFileError, NeedsRecognition):
        raise
    except RecursionError:
        failure = "the file is nested too deeply to parse"
    except MemoryError:
        failure = "the file is too large to parse in memory"
    except Exception as exc:  # a parser bug or a file no parser expected
        raise IngestFileError(f"could not be parsed ({exc.__class__.__name__}: {str(exc)[:300]})") from exc
    if failure:  # raised outside the handler, which would keep the failed parse's frames (and memory) alive
        raise IngestFileError(failure)
    if not parsed.text.strip():
        raise IngestFileError("no text found in the file", status="skipped")
    return parsed
