"""What a file is before it is read: files that are not documents (stylesheets, scripts, lock files ...), files no
reader takes (archives, binaries, document formats not read), and whether a file whose name says nothing is text.

A name the readers know (``parse.detect_format``) decides by itself. Any other file is judged by its first
``SNIFF_BYTES`` bytes (:func:`sniff`): Debian's ``copyright``, ``NEWS.Debian``, a ``.1`` manual page source or a
``.conf`` file is text and read as such; a program, a database or random bytes is not, and says why.
"""

from __future__ import annotations

import codecs
import re

SNIFF_BYTES = 8192
"""How much of a file whose name says nothing is looked at: enough to tell text, cheap for thousands of files."""

LOCK_NAMES = frozenset(
    "package-lock.json npm-shrinkwrap.json yarn.lock pnpm-lock.yaml poetry.lock pipfile.lock uv.lock pdm.lock "
    "cargo.lock gemfile.lock composer.lock podfile.lock flake.lock go.sum packages.lock.json".split()
)
NOT_DOCUMENT_SUFFIXES = {
    ".css": "a stylesheet", ".scss": "a stylesheet", ".sass": "a stylesheet", ".less": "a stylesheet",
    ".js": "a script (JavaScript)", ".mjs": "a script (JavaScript)", ".cjs": "a script (JavaScript)",
    ".map": "a source map", ".lock": "a lock file", ".svg": "a drawing (SVG)",
}  # fmt: skip
"""Text files that a folder of documents holds for its web pages or its build, not for reading: skipped in a folder
walk unless asked for (the file named, or an ``--include`` glob that picks them, such as ``*.css``)."""

ARCHIVES = {
    ".gz": "gzip", ".tgz": "gzip", ".bz2": "bzip2", ".tbz2": "bzip2", ".xz": "xz", ".txz": "xz", ".zst": "zstd",
    ".lz": "lzip", ".lzma": "lzma", ".z": "compress", ".zip": "ZIP", ".7z": "7-Zip", ".rar": "RAR", ".tar": "tar",
}  # fmt: skip
UNREAD_FORMATS = frozenset(
    ".doc .dot .rtf .odt .ott .ods .odp .xls .xlsx .ppt .pptx .epub .mobi .azw3 .djvu .pages .numbers .wpd "
    ".ps .eps".split()
)
"""Documents in a format no reader takes (``.rtf`` and PostScript are text, but not text to read)."""
UNREAD_IMAGES = frozenset(".gif .heic .heif .avif .jxl .svgz".split())
BINARY_SUFFIXES = frozenset(
    ".o .so .a .pyc .pyo .class .jar .war .exe .dll .dylib .bin .iso .img .dmg .deb .rpm .whl .egg .apk .msi "
    ".mp3 .mp4 .m4a .m4v .wav .ogg .oga .opus .flac .aac .avi .mkv .mov .webm .wmv .ico .icns .cur .woff .woff2 "
    ".ttf .otf .eot .db .sqlite .sqlite3 .mo .pickle .pkl .npy .npz .pt .onnx .safetensors .gguf .parquet".split()
)
"""Binary by their name: skipped without being opened."""

_MAGIC = (
    (b"\x1f\x8b", "archive", "gzip"), (b"\xfd7zXZ\x00", "archive", "xz"), (b"\x28\xb5\x2f\xfd", "archive", "zstd"),
    (b"7z\xbc\xaf\x27\x1c", "archive", "7-Zip"), (b"PK\x03\x04", "archive", "ZIP, or a format built on it"),
    (b"Rar!\x1a\x07", "archive", "RAR"), (b"\x7fELF", "binary", "an ELF program or library"),
    (b"%PDF-", "binary", "a PDF document whose name does not end in .pdf; rename it to have it read"),
    (b"\x89PNG\r\n\x1a\n", "binary", "a PNG image whose name does not say so; rename it to .png to have it read"),
    (b"\xff\xd8\xff", "binary", "a JPEG image whose name does not say so; rename it to .jpg to have it read"),
    (b"GIF8", "binary", "a GIF image"), (b"SQLite format 3\x00", "binary", "an SQLite database"),
    (b"{\\rtf", "binary", "an RTF document; save it as DOCX, PDF or text to have it read"),
    (b"%!PS", "binary", "PostScript; convert it to PDF to have it read"),
)  # fmt: skip
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f]")
"""Control characters text does not hold: not tab, line feed, vertical tab, form feed, carriage return or escape
(coloured logs)."""
MAX_CONTROL_SHARE = 0.02


def archive_reason(kind: str) -> str:
    return f"compressed file or archive ({kind}): files are not unpacked; unpack it, then ingest what it holds"


def not_a_document(name: str) -> tuple[str, str] | None:
    """(what the file is, an ``--include`` glob that asks for it) for a file that is not a document by its name:
    a stylesheet, a script, a source map, a lock file, a minified file, an SVG drawing; None for any other."""
    lower = name.lower()
    suffix = lower[lower.rfind("."):] if "." in lower.lstrip(".") else ""
    if lower in LOCK_NAMES:
        return "a lock file", name
    if ".min." in lower and suffix in (".js", ".mjs", ".cjs", ".css", ".map", ".json", ".html"):
        return "a minified file", f"*.min{suffix}"
    if suffix in NOT_DOCUMENT_SUFFIXES:
        return NOT_DOCUMENT_SUFFIXES[suffix], f"*{suffix}"
    return None


def not_a_document_reason(what: str, glob: str) -> str:
    """Why a file in a folder is skipped, and how to have it read: by name (--include would narrow the folder's
    ingest to that kind of file alone, and sync keeps the globs)."""
    return f"{what}, not a document (ingest the file by name to have it read)"


def unread_by_name(name: str) -> str | None:
    """Why a file whose name no reader knows is not read without looking into it, or None (then :func:`sniff`)."""
    lower = name.lower()
    suffix = lower[lower.rfind("."):] if "." in lower.lstrip(".") else ""
    if suffix in ARCHIVES:
        return archive_reason(ARCHIVES[suffix])
    if suffix in UNREAD_FORMATS:
        return f"{suffix} files are not read (save or convert it to PDF, DOCX, Markdown or plain text)"
    if suffix in UNREAD_IMAGES:
        return f"{suffix} images are not read (convert it to PNG or JPEG to have its text recognised)"
    if suffix in BINARY_SUFFIXES:
        return f"binary file ({suffix})"
    return None


def sniff(head: bytes) -> str:
    """'' when ``head``, a file's first bytes, is text; otherwise why the file is not read.

    Text: no NUL byte, decodes as UTF-8 (a character cut at the end of ``head`` is fine) or in an encoding that
    charset-normalizer finds, with few control characters. UTF-16 with its byte order mark is text too.
    """
    for magic, kind, what in _MAGIC:
        if head.startswith(magic):
            return archive_reason(what) if kind == "archive" else f"binary file ({what})"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) and not head.startswith(b"\xff\xfe\x00\x00"):
        return ""
    if b"\x00" in head:
        return "binary file (it holds NUL bytes)"
    text = _decoded(head)
    if text is None:
        return "binary file (no text encoding fits its bytes)"
    if len(_CONTROLS.findall(text)) > MAX_CONTROL_SHARE * len(text):
        return "binary file (too many control characters for text)"
    return ""


def _decoded(head: bytes) -> str | None:
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(head).best()
    return None if best is None else str(best)
