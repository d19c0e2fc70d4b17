"""reStructuredText (the hand-written line reader; replaced below)."""

from __future__ import annotations

import re
from pathlib import Path

from ..document import ParsedDocument, TextBuilder, decode_text, finish, normalize

_RST_ADORN = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")
_RST_ROLE = re.compile(r"(?<![\w:+.-]):[\w:+.-]+:`(?:([^`<]*)<[^`>]*>|([^`]*))`")
_RST_LITERAL = re.compile(r"``(.+?)``")
_RST_REF = re.compile(r"`([^`<]+)(?:<[^`>]*>)?`_{1,2}")
_RST_EMPH = re.compile(r"(?<![\w*])\*{1,2}([^*\n]+?)\*{1,2}(?![\w*])")
_RST_DIRECTIVE = re.compile(r"^\s*\.\.\s+([\w:-]+)::\s*(.*)$")
_RST_FIELD = re.compile(r"^\s+:[\w -]+:")
# Directives whose argument is prose worth keeping (a signature, a title, a version note).
_RST_DROP_DIRECTIVES = {"index", "toctree", "highlight", "sectionauthor", "moduleauthor", "tabularcolumns",
                        "only", "raw", "include", "literalinclude", "image", "figure", "testsetup",
                        "testcleanup", "currentmodule", "program", "cmdoption-group", "default-role"}  # fmt: skip


def parse_rst(data: bytes, path: Path) -> ParsedDocument:
    """reStructuredText, read for its structure and prose.

    Section titles are recognised by their adornment (an underline, optionally an
    overline, of one punctuation character); depth follows the order in which
    adornment styles first appear, as reST defines it. Inline markup (roles,
    literals, references, emphasis) is reduced to its text; directives keep their
    argument (a function signature, a note's text) unless they carry no prose.
    docutils itself rejects the Sphinx roles and directives that real reST
    sources are full of, so it would lose text rather than keep it.
    """
    notes: list[str] = []
    reader = _RstReader(normalize(decode_text(data, notes)).split("\n"))
    reader.read()
    return finish(reader.builder, path, "rst", notes)


class _RstReader:
    """parse_rst's line-by-line pass: each method handles one kind of line and says how many it used."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.builder = TextBuilder()
        self.styles: list[tuple[str, bool]] = []
        """Adornment styles (character, overlined) in order of first appearance: their depth."""
        self.para: list[str] = []
        self.skip_indent: int | None = None
        """While set, lines indented deeper than this belong to a block without prose (skipped)."""

    def flush(self) -> None:
        if self.para:
            self.builder.add(_rst_inline("\n".join(self.para)))
            self.para.clear()

    def read(self) -> None:
        i = 0
        while i < len(self.lines):
            line = self.lines[i]
            stripped = line.strip()
            indent = len(line) - len(line.lstrip(" "))
            if self.skip_indent is not None:
                if stripped and indent <= self.skip_indent:
                    self.skip_indent = None
                else:
                    i += 1
                    continue
            i += self.title(i, line, stripped, indent) or self.directive(line, indent) \
                or self.comment(stripped, indent) or self.text(line, stripped)  # fmt: skip
        self.flush()

    def title(self, i: int, line: str, stripped: str, indent: int) -> int:
        """A section title: [overline] title underline. Returns the lines used (0: not a title)."""
        lines, n = self.lines, len(self.lines)
        over = bool(_RST_ADORN.match(line)) and i + 2 < n and _RST_ADORN.match(lines[i + 2]) and lines[i + 1].strip()
        under = (stripped and not _RST_ADORN.match(line) and i + 1 < n and _RST_ADORN.match(lines[i + 1])
                 and len(lines[i + 1].rstrip()) >= len(stripped.rstrip()) and indent == 0)  # fmt: skip
        if not (over or under):
            return 0
        self.flush()
        title = lines[i + 1].strip() if over else stripped
        style = (line[0], True) if over else (lines[i + 1].strip()[0], False)
        if style not in self.styles:
            self.styles.append(style)
        self.builder.add(_rst_inline(title), "heading", depth=self.styles.index(style) + 1, keep_lines=False)
        return 3 if over else 2

    def directive(self, line: str, indent: int) -> int:
        """``.. name:: argument``: the argument is kept as prose unless the directive carries none."""
        m = _RST_DIRECTIVE.match(line)
        if not m:
            return 0
        self.flush()
        name, arg = m.group(1).lower(), m.group(2).strip()
        if name in _RST_DROP_DIRECTIVES:
            self.skip_indent = indent
        elif arg:
            self.builder.add(_rst_inline(arg), keep_lines=False)
        return 1

    def comment(self, stripped: str, indent: int) -> int:
        """A comment, target or footnote: no prose of its own, except a footnote's text."""
        if not stripped.startswith(".."):
            return 0
        self.flush()
        self.skip_indent = indent if not re.match(r"^\.\.\s+\[", stripped) else None
        if self.skip_indent is None:
            self.para.append(re.sub(r"^\.\.\s+\[[^\]]*\]\s*", "", stripped))
        return 1

    def text(self, line: str, stripped: str) -> int:
        if not stripped:
            self.flush()
        elif not _RST_FIELD.match(line) and not _RST_ADORN.match(line):
            self.para.append(line.rstrip())
        return 1


def _rst_inline(text: str) -> str:
    text = _RST_ROLE.sub(lambda m: ((m.group(1) or "").rstrip() or m.group(2) or "").lstrip("~!"), text)
    text = _RST_LITERAL.sub(r"\1", text)
    text = _RST_REF.sub(lambda m: m.group(1).rstrip(), text)
    text = _RST_EMPH.sub(r"\1", text)
    text = re.sub(r"::$", ":", text, flags=re.M)
    lines = [ln.strip() for ln in text.split("\n")]
    return "\n".join(ln for ln in lines if ln != "::")
