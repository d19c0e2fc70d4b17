"""Plain text and source code: blocks between blank lines; for text, underlined and ALL-CAPS headings."""

from __future__ import annotations

import re
from pathlib import Path

from ..document import (
    BLANK_SPLIT,
    ParsedDocument,
    TextBuilder,
    decode_text,
    finish,
    normalize,
)

_UNDERLINE = re.compile(r"^([=\-~^*#+])\1{2,}\s*$")


def parse_plain(data: bytes, path: Path, fmt: str) -> ParsedDocument:
    """Plain text and source code: blank-line blocks; for text, also underlined and ALL-CAPS headings."""
    notes: list[str] = []
    text = normalize(decode_text(data, notes).replace("\f", "\n\n"))  # (a form feed: a page break, not nothing)
    builder = TextBuilder()
    for raw in BLANK_SPLIT.split(text):
        block = raw.strip("\n")
        if fmt == "text":
            heading = _plain_heading(block)
            if heading:
                title, rest = heading
                builder.add(title, "heading", depth=1)
                builder.add(rest)
                continue
        builder.add(block)
    return finish(builder, path, fmt, notes)


def _plain_heading(block: str) -> tuple[str, str] | None:
    """(heading, the rest of the block): an underlined line; an ALL-CAPS line alone; or an ALL-CAPS line at the
    margin over indented lines, as a man page rendered to text writes its sections ("OPTIONS" over "  -a, --all")."""
    lines = block.split("\n")
    first = lines[0].strip()
    if len(lines) >= 2 and _UNDERLINE.match(lines[1]) and 0 < len(first) <= 100:
        return first, "\n".join(lines[2:])
    capitals = (3 <= len(first) <= 60 and first.isupper() and sum(c.isalpha() for c in first) >= 3
                and not first.endswith((".", ",")))  # fmt: skip
    if capitals and len(lines) == 1:
        return first, ""
    if capitals and not lines[0][:1].isspace() and all(line[:1].isspace() for line in lines[1:] if line.strip()):
        return first, "\n".join(lines[1:])
    return None
