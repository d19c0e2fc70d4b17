"""Readers: bytes of one file -> normalised text plus its block structure.

Every reader produces a :class:`ParsedDocument`: the document's text, normalised
once (and stored as is), and a list of :class:`Block` spans into that text,
each a heading (with its depth) or a run of body text (with its page, for PDF).
The chunker only ever sees this shape, so every format gets the same hierarchy.
"""

from __future__ import annotations

import html
import io
import re
import unicodedata
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..errors import IngestFileError

# ---------------------------------------------------------------- formats

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


# ---------------------------------------------------------------- values


@dataclass(frozen=True)
class Block:
    kind: str
    """``heading`` or ``text``."""
    start: int
    end: int
    depth: int = 0
    """Heading depth, 1 for the outermost."""
    page: int | None = None
    """1-based page number (PDF only)."""


@dataclass
class ParsedDocument:
    title: str
    text: str
    blocks: list[Block]
    format: str
    notes: list[str] = field(default_factory=list)
    """Things worth telling the user (e.g. the encoding that was guessed)."""
    outline: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """For PDF: the outline (bookmark) path in force at the start of each page."""


# ---------------------------------------------------------------- normalisation

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200d\u2060\ufeff]")
_ODD_SPACES = re.compile(r"[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_MANY_NEWLINES = re.compile(r"\n{3,}")
_BLANK_SPLIT = re.compile(r"\n[ \t]*\n")


def normalize(text: str, *, keep_lines: bool = True) -> str:
    """NFC, one kind of newline, no control or zero-width characters, no trailing spaces.

    With ``keep_lines=False`` every whitespace run (newlines included) becomes one
    space: right for HTML, DOCX and PDF prose, where line breaks carry no meaning.
    """
    if keep_lines and text.isascii() and text.isprintable():
        return text  # already normal: the common case of a short line, made cheap
    text = _nfc(text).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    if not keep_lines:
        return " ".join(text.split())
    text = _ODD_SPACES.sub(" ", text)  # indentation is kept: it carries meaning in code
    text = _strip_line_ends(text)
    return _MANY_NEWLINES.sub("\n\n", text).strip("\n")


def _strip_line_ends(text: str) -> str:
    """Spaces and tabs before each newline removed (line by line: a regex is quadratic on long space runs)."""
    lines = text.split("\n")
    return "\n".join([line.rstrip(" \t") for line in lines[:-1]] + lines[-1:])


_MAX_MARKS = 30
"""Combining marks kept in a row: no script needs more, and NFC sorts a run in quadratic time."""


def _nfc(text: str) -> str:
    """``text`` in NFC, after cutting any run of combining marks to 30 (a "Zalgo" run would take hours)."""
    if unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", _mark_runs().sub(_cut_marks, text))


@lru_cache(maxsize=1)
def _mark_runs() -> re.Pattern:
    """Matches more than 30 characters in a row that may be combining marks (any astral one may be)."""
    ranges: list[list[int]] = []
    for code in range(0x10000):
        if unicodedata.combining(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    members = "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    return re.compile(f"[{members}\U00010000-\U0010ffff]{{{_MAX_MARKS + 1},}}")


def _cut_marks(match: re.Match) -> str:
    """The run with no more than 30 combining marks in a row."""
    run = match.group()
    if max(run) < "\U00010000":  # only marks: the pattern admits no other BMP character
        return run[:_MAX_MARKS]
    kept, streak = [], 0
    for ch in run:
        streak = streak + 1 if unicodedata.combining(ch) else 0
        if streak <= _MAX_MARKS:
            kept.append(ch)
    return "".join(kept)


class TextBuilder:
    """Appends blocks to one text, separated by blank lines, recording their spans."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._len = 0
        self.blocks: list[Block] = []

    def add(self, text: str, kind: str = "text", *, depth: int = 0, page: int | None = None,
            keep_lines: bool = True) -> None:  # fmt: skip
        text = normalize(text, keep_lines=keep_lines)
        if not text.strip():
            return
        if self._parts:
            self._parts.append("\n\n")
            self._len += 2
        self.blocks.append(Block(kind, self._len, self._len + len(text), depth, page))
        self._parts.append(text)
        self._len += len(text)

    @property
    def text(self) -> str:
        return "".join(self._parts)


# ---------------------------------------------------------------- decoding


def decode_text(data: bytes, notes: list[str]) -> str:
    """Bytes of a text file -> str: UTF-8 (with or without BOM), UTF-16 by BOM, else a detected encoding."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            notes.append("damaged UTF-16: characters that could not be read were replaced by \ufffd")
            return data.decode("utf-16", errors="replace")
    if b"\x00" in data[:8192]:
        raise IngestFileError("binary file (it contains NUL bytes), not text", status="skipped")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data[:1_000_000]))
    best = matches[0] if matches else None
    if best is not None:
        # Ties are common between Western code pages; the most widespread one wins them.
        tied = [m for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
        best = next((m for m in tied if m.encoding in ("cp1252", "latin_1")), best)
    if best is None:
        raise IngestFileError("not UTF-8, and no other text encoding fits its bytes")
    try:
        text = data.decode(best.encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise IngestFileError(f"not UTF-8, and decoding it as {best.encoding} failed") from exc
    notes.append(f"not UTF-8: decoded as {best.encoding}")
    return text


# ---------------------------------------------------------------- plain text and code

_UNDERLINE = re.compile(r"^([=\-~^*#+])\1{2,}\s*$")


def parse_plain(data: bytes, path: Path, fmt: str) -> ParsedDocument:
    """Plain text and source code: blank-line blocks; for text, also underlined and ALL-CAPS headings."""
    notes: list[str] = []
    text = normalize(decode_text(data, notes))
    builder = TextBuilder()
    for raw in _BLANK_SPLIT.split(text):
        block = raw.strip("\n")
        if fmt == "text":
            heading = _plain_heading(block)
            if heading:
                title, rest = heading
                builder.add(title, "heading", depth=1)
                builder.add(rest)
                continue
        builder.add(block)
    return _finish(builder, path, fmt, notes)


def _plain_heading(block: str) -> tuple[str, str] | None:
    lines = block.split("\n")
    first = lines[0].strip()
    if len(lines) >= 2 and _UNDERLINE.match(lines[1]) and 0 < len(first) <= 100:
        return first, "\n".join(lines[2:])
    if (len(lines) == 1 and 3 <= len(first) <= 60 and first.isupper()
            and sum(c.isalpha() for c in first) >= 3 and not first.endswith((".", ","))):  # fmt: skip
        return first, ""
    return None


# ---------------------------------------------------------------- Markdown


def parse_markdown(data: bytes, path: Path) -> ParsedDocument:
    """Markdown through markdown-it-py: headings, paragraphs, list items, code, tables, as plain text.

    markdown-it silently drops everything after a list or quote nested past 20 levels;
    such a file is read as plain text instead, with a note.
    """
    from markdown_it import MarkdownIt

    notes: list[str] = []
    source = decode_text(data, notes)
    md = MarkdownIt("commonmark").enable("table")
    md.core.ruler.at("inline", _budgeted_inline(len(source), notes))
    _refuse_to_skip_deep_blocks(md)
    try:
        tokens = md.parse(source)
    except _MarkdownTooDeep:
        parsed = parse_plain(data, path, "text")
        parsed.format = "markdown"
        parsed.notes.append("lists or quotes nested deeper than the Markdown reader goes: read as plain text, "
                            "so the markup is left as written")  # fmt: skip
        return parsed
    builder = TextBuilder()
    cells: list[str] = []
    for i, tok in enumerate(tokens):
        if tok.type == "inline":
            prev = tokens[i - 1].type if i else ""
            text = _inline_text(tok)
            if prev == "heading_open":
                builder.add(text, "heading", depth=int(tokens[i - 1].tag[1:]), keep_lines=False)
            elif prev in ("th_open", "td_open"):
                cells.append(" ".join(text.split()))
            else:
                builder.add(text)
        elif tok.type in ("fence", "code_block"):
            builder.add(tok.content)
        elif tok.type == "html_block":
            builder.add(_strip_tags(tok.content))
        elif tok.type == "tr_close":
            builder.add(" | ".join(cells))
            cells = []
    return _finish(builder, path, "markdown", notes)


class _MarkdownTooDeep(Exception):
    """markdown-it reached its nesting limit with lines left, which it would skip."""


def _refuse_to_skip_deep_blocks(md) -> None:
    """Make ``md`` raise _MarkdownTooDeep where its block parser would drop the rest of a container."""
    tokenize = md.block.tokenize
    limit = md.options["maxNesting"]

    def guarded(state, start: int, end: int) -> None:
        line = state.skipEmptyLines(start)
        if state.level >= limit and line < end and state.sCount[line] >= state.blkIndent:
            raise _MarkdownTooDeep
        tokenize(state, start, end)

    md.block.tokenize = guarded


_MD_BUDGET = 100_000
"""Inline-markup cost every Markdown file may spend, plus 1 per 8 characters of it (see ``_markup_cost``)."""


def _markup_cost(text: str) -> int:
    """Rough cost of inline-parsing ``text``, in units of about 5 µs.

    markdown-it-py spends about 30 µs on each ``[`` (a possible link) and 10 µs on each
    emphasis mark, whatever follows them, so a file made of them alone would take hours.
    """
    return 6 * text.count("[") + 2 * (text.count("*") + text.count("_")) + text.count("&") + text.count("<")


def _budgeted_inline(source_len: int, notes: list[str]):
    """markdown-it's core "inline" rule, but paragraphs past the cost budget keep their markup as text."""
    from markdown_it.token import Token

    budget = _MD_BUDGET + source_len // 8
    note = "so much Markdown markup that some paragraphs were read with their markup left as written"

    def inline(state) -> None:
        nonlocal budget
        for token in state.tokens:
            if token.type != "inline":
                continue
            token.children = []
            cost = _markup_cost(token.content)
            if cost <= budget:
                budget -= cost
                state.md.inline.parse(token.content, state.md, state.env, token.children)
                continue
            token.children.append(Token("text", "", 0, content=token.content))
            if note not in notes:
                notes.append(note)

    return inline


def _inline_text(tok) -> str:
    out = []
    for child in tok.children or []:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type == "softbreak":
            out.append("\n")
        elif child.type == "hardbreak":
            out.append("\n")
        elif child.type == "image":
            out.append(child.content or "")
        elif child.type == "html_inline":
            continue
    return "".join(out)


_TAG = re.compile(r"<[^<>]+>")  # a run of "<" costs one scan each, not one to the end


def _strip_tags(html: str) -> str:
    return _TAG.sub(" ", html)


# ---------------------------------------------------------------- reStructuredText

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
    return _finish(reader.builder, path, "rst", notes)


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


# ---------------------------------------------------------------- HTML

_HTML_DROP = ("script", "style", "noscript", "template", "nav", "aside", "header", "footer", "form",
              "button", "select", "svg", "iframe")  # fmt: skip
_HTML_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_HTML_BLOCKS = frozenset("p li dt dd pre blockquote td th caption figcaption address div section article "
                         "main body tr table thead tbody tfoot ul ol dl summary details".split())  # fmt: skip


_HTML_DROPPED = "localreason-dropped"
"""Tag given to elements marked for removal, so that one C-level pass removes them all."""


def parse_html(data: bytes, path: Path) -> ParsedDocument:
    """HTML through lxml: the main content's headings and block elements, in document order.

    lxml stops building its tree at a resource limit (nesting deeper than 2048 levels, or
    a buffer that will not fit) without raising; such a file is read again, whole, by
    a streaming reader that builds no tree.
    """
    import lxml.html
    from lxml import etree

    if b"\x00" in data[:8192]:
        raise IngestFileError("binary file (it contains NUL bytes), not HTML", status="skipped")
    parser = lxml.html.HTMLParser(huge_tree=True)
    try:
        root = lxml.html.document_fromstring(data, parser=parser)
    except (etree.ParserError, ValueError) as exc:
        raise IngestFileError(f"not readable as HTML: {exc}") from exc
    limit = _html_resource_limit(parser.error_log)
    if limit:
        return parse_html_stream(data, path, limit)
    title_el = root.find(".//title")
    page_title = normalize(title_el.text_content(), keep_lines=False) if title_el is not None else ""
    for el in root.xpath('//*[@role="navigation" or @role="search" or @aria-hidden="true"]'
                         ' | //a[contains(concat(" ", @class, " "), " headerlink ")]'
                         ' | //div[contains(@class, "sphinxsidebar") or contains(@class, "related")]'):  # fmt: skip
        el.tag = _HTML_DROPPED
    # One pass in C; lxml's drop_tree() per element is quadratic in the text its tails pile up.
    etree.strip_elements(root, _HTML_DROPPED, *_HTML_DROP, with_tail=False)
    main = root.xpath('//main | //*[@role="main"] | //article')
    builder = TextBuilder()
    _html_walk(main[0] if main else (root.find("body") if root.find("body") is not None else root), builder)
    parsed = _finish(builder, path, "html", [])
    if page_title:
        parsed.title = page_title
    return parsed


def _html_resource_limit(error_log) -> str:
    """lxml's message if its parser stopped early at a resource limit, else ""."""
    from lxml import etree

    for entry in error_log:
        if entry.type == etree.ErrorTypes.ERR_RESOURCE_LIMIT or "XML_PARSE_HUGE" in entry.message:
            return re.sub(r",?\s*(use|try) XML_PARSE_HUGE.*", "", entry.message.strip(), flags=re.S)
    return ""


def _html_is_block(el) -> bool:
    return isinstance(el.tag, str) and (el.tag in _HTML_BLOCKS or el.tag in _HTML_HEADINGS)


def _html_walk(top, builder: TextBuilder) -> None:
    """Add the headings and text blocks under ``top`` in document order; a loop, so any depth is fine."""
    stack: list[tuple] = []  # (children left, loose text) of each open element with block children
    _html_enter(top, builder, stack)
    while stack:
        children, loose = stack[-1]
        child = next(children, None)
        if child is None:
            builder.add("".join(loose), keep_lines=False)
            stack.pop()
            continue
        if _html_is_block(child):
            # Loose text between block children forms blocks of its own.
            builder.add("".join(loose), keep_lines=False)
            loose.clear()
            _html_enter(child, builder, stack)
        elif isinstance(child.tag, str):
            loose.append(child.text_content())
        loose.append(child.tail or "")


def _html_enter(el, builder: TextBuilder, stack: list) -> None:
    """Add ``el`` whole if it is a heading, row, ``pre`` or has no block children; else open it on ``stack``."""
    tag = el.tag if isinstance(el.tag, str) else ""
    if tag in _HTML_HEADINGS:
        builder.add(el.text_content(), "heading", depth=_HTML_HEADINGS[tag], keep_lines=False)
    elif tag == "pre":
        builder.add(el.text_content())
    elif tag == "tr":
        cells = [" ".join(c.text_content().split()) for c in el if c.tag in ("td", "th")]
        builder.add(" | ".join(c for c in cells if c), keep_lines=False)
    elif not any(_html_is_block(c) for c in el):
        builder.add(el.text_content(), keep_lines=False)
    else:
        stack.append((iter(el), [el.text or ""]))


# ---------------------------------------------------------------- HTML, streaming

_HTML_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_HTML_RAW = frozenset("script style xmp iframe noembed noframes textarea title plaintext".split())
_HTML_MARKUP = re.compile(r"<(?:(/?)([a-zA-Z][^\s/>\x00]*)|(!--)|[!?]|/(?![a-zA-Z]))")
_HTML_TAG_END = re.compile(r"""=\s*(["'])|>""")
_HTML_ATTR = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]*)))?""")
_HTML_RAW_CLOSE = {name: re.compile(rf"</{name}[\s/>]", re.IGNORECASE) for name in _HTML_RAW}
_HTML_HUGE_CHARREF = re.compile(r"&#(?:[xX]0*[0-9a-fA-F]{7,}|0*[0-9]{8,});?")


def parse_html_stream(data: bytes, path: Path, reason: str) -> ParsedDocument:
    """HTML read tag by tag with no tree, for files lxml cannot hold (``reason`` is lxml's message).

    Keeps what the tree reader keeps (headings, blocks, table rows, the main content,
    no scripts or navigation), in linear time whatever the nesting or the markup errors.
    """
    notes: list[str] = []
    source = decode_text(data, notes)
    reader = _HtmlStream()
    for kind, value, attrs in _html_events(source):
        if kind == "text":
            reader.text(value)
        elif kind == "start":
            reader.start(value, attrs)
        else:
            reader.end(value)
    reader.finish()
    builder = TextBuilder()
    in_main = any(b[4] for b in reader.blocks)
    for kind, text, depth, keep_lines, main in reader.blocks:
        if main or not in_main:
            builder.add(text, kind, depth=depth, keep_lines=keep_lines)
    notes.append(f"too deeply nested or too large for a full HTML parse ({reason}): read by a simpler "
                 "streaming reader, which keeps all the text but may group paragraphs differently")  # fmt: skip
    parsed = _finish(builder, path, "html", notes)
    title = normalize("".join(reader.title), keep_lines=False)
    if title:
        parsed.title = title
    return parsed


def _html_events(source: str):
    """Yield ("text", text, None), ("start", tag, attribute text) and ("end", tag, None) in order.

    Every branch moves forward by a search that is never repeated over the same text,
    so hostile markup (unclosed comments, tags or quotes) costs linear time.
    """
    pos, n = 0, len(source)
    while pos < n:
        m = _HTML_MARKUP.search(source, pos)
        if m is None:
            yield "text", _html_unescape(source[pos:]), None
            return
        if m.start() > pos:
            yield "text", _html_unescape(source[pos:m.start()]), None
        if m.group(2):
            end = _html_tag_end(source, m.end())
            if end < 0:
                return  # the file ends inside a tag: browsers drop the rest too
            name = m.group(2).lower()
            if m.group(1):
                yield "end", name, None
                pos = end
                continue
            yield "start", name, source[m.end():end - 1]
            pos = end
            if name in _HTML_RAW:
                close = _HTML_RAW_CLOSE[name].search(source, pos)
                stop = close.start() if close else n
                yield "text", _html_unescape(source[pos:stop]), None
                pos = stop
        else:  # a comment, a doctype, a processing instruction or another bogus comment
            closer = "-->" if m.group(3) else ">"
            close = source.find(closer, m.end())
            pos = n if close < 0 else close + len(closer)


def _html_tag_end(source: str, pos: int) -> int:
    """Index just past the ``>`` closing the tag whose attributes start at ``pos``, or -1."""
    while True:
        m = _HTML_TAG_END.search(source, pos)
        if m is None:
            return -1
        if not m.group(1):
            return m.end()
        close = source.find(m.group(1), m.end())
        if close < 0:
            return -1
        pos = close + 1


def _html_unescape(text: str) -> str:
    """Character references decoded; absurdly long numeric ones (which ``int`` refuses) become U+FFFD."""
    if "&" not in text:
        return text
    return html.unescape(_HTML_HUGE_CHARREF.sub("\ufffd", text))


def _html_attrs(text: str) -> dict[str, str]:
    """The attributes in the text of a start tag (names lower-cased)."""
    return {m.group(1).lower(): next((v for v in m.group(2, 3, 4) if v is not None), "")
            for m in _HTML_ATTR.finditer(text)}  # fmt: skip


def _html_drops(tag: str, attrs: dict[str, str]) -> bool:
    """Whether the element is one the tree reader removes (navigation, hidden text, Sphinx chrome)."""
    if tag in _HTML_DROP or attrs.get("role") in ("navigation", "search") or attrs.get("aria-hidden") == "true":
        return True
    cls = attrs.get("class", "")
    if tag == "a":
        return "headerlink" in cls.split()
    return tag == "div" and ("sphinxsidebar" in cls or "related" in cls)


class _HtmlStream:
    """Collects headings, text blocks and table rows from start, end and text events."""

    def __init__(self) -> None:
        self.blocks: list[tuple[str, str, int, bool, bool]] = []  # kind, text, depth, keep lines, in main
        self.title: list[str] = []
        self._open: list[tuple[str, bool, bool, int]] = []  # tag, dropped, main, heading depth
        self._counts: Counter = Counter()
        self._dropped = self._main = self._pre = self._in_title = 0
        self._headings: list[int] = []
        self._parts: list[str] = []
        self._row: list[list[str]] | None = None
        self._row_at = -1

    def start(self, tag: str, attr_text: str) -> None:
        if tag in _HTML_VOID:
            return
        attrs = _html_attrs(attr_text) if attr_text.strip() else {}
        dropped = _html_drops(tag, attrs)
        main = tag in ("main", "article") or attrs.get("role") == "main"
        depth = _HTML_HEADINGS.get(tag, 0)
        if self._row is None and (tag in _HTML_BLOCKS or depth or main or tag in ("pre", "title")):
            self._flush()
        self._open.append((tag, dropped, main, depth))
        self._counts[tag] += 1
        self._dropped += dropped
        self._main += main
        self._pre += tag == "pre"
        self._in_title += tag == "title"
        if depth:
            self._headings.append(depth)
        if self._dropped:
            return
        if tag == "tr" and self._row is None:
            self._row, self._row_at = [], len(self._open) - 1
        elif tag in ("td", "th") and self._row is not None and len(self._open) - 2 == self._row_at:
            self._row.append([])

    def end(self, tag: str) -> None:
        if not self._counts[tag]:
            return  # a stray end tag
        while True:
            closed = self._close()
            if closed == tag:
                return

    def text(self, text: str) -> None:
        if self._dropped:
            return
        if self._in_title:
            self.title.append(text)
        elif self._row is not None:
            if self._row:
                self._row[-1].append(text)
        else:
            self._parts.append(text)

    def finish(self) -> None:
        while self._open:
            self._close()
        self._flush()

    def _close(self) -> str:
        """Close the innermost open element and return its tag."""
        tag, dropped, main, depth = self._open.pop()
        self._counts[tag] -= 1
        if self._row is not None and len(self._open) == self._row_at:
            cells = (" ".join("".join(cell).split()) for cell in self._row)
            self.blocks.append(("text", " | ".join(c for c in cells if c), 0, False, self._main > 0))
            self._row = None
        elif self._row is None and (tag in _HTML_BLOCKS or depth or main or tag in ("pre", "title")):
            self._flush()
        self._dropped -= dropped
        self._main -= main
        self._pre -= tag == "pre"
        self._in_title -= tag == "title"
        if depth:
            self._headings.pop()
        return tag

    def _flush(self) -> None:
        text = "".join(self._parts)
        self._parts.clear()
        if not text.strip():
            return
        if self._headings:
            self.blocks.append(("heading", text, self._headings[-1], False, self._main > 0))
        else:
            self.blocks.append(("text", text, 0, self._pre > 0, self._main > 0))


# ---------------------------------------------------------------- PDF


def parse_pdf(data: bytes, path: Path) -> ParsedDocument:
    """PDF through pypdfium2: text per page (page numbers kept), blank-line blocks, outline titles."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise IngestFileError(f"corrupt or unreadable PDF ({exc})") from exc
    try:
        builder = TextBuilder()
        notes: list[str] = []
        for index in range(len(pdf)):
            page = pdf[index]
            try:
                textpage = page.get_textpage()
                raw = _page_text(textpage)
                textpage.close()
            finally:
                page.close()
            for block in _BLANK_SPLIT.split(normalize(raw)):
                builder.add(_unwrap_lines(block), page=index + 1)
        outline = _pdf_outline(pdf)
        meta_title = (pdf.get_metadata_value("Title") or "").strip() if hasattr(pdf, "get_metadata_value") else ""
    except pdfium.PdfiumError as exc:
        raise IngestFileError(f"corrupt PDF: reading its pages failed ({exc})") from exc
    finally:
        pdf.close()
    if not builder.blocks:
        raise IngestFileError("the PDF has no extractable text (scanned images need OCR first)")
    parsed = _finish(builder, path, "pdf", notes)
    parsed.outline = outline
    if meta_title:
        parsed.title = normalize(meta_title, keep_lines=False)
    return parsed


def _page_text(textpage) -> str:
    """The page's text; by its bounding box if pypdfium2 cannot give it by character range.

    pypdfium2 recurses once per excluded character at either end of a page, so a page
    with a thousand of them raises RecursionError (wrapped in a ctypes ArgumentError).
    """
    import ctypes

    try:
        return textpage.get_text_range()
    except (RecursionError, ctypes.ArgumentError):
        return textpage.get_text_bounded()


_DOT_LEADER = re.compile(r"(?:\. ?){4,}")


def _unwrap_lines(block: str) -> str:
    # A hyphen at a line end joined with a lower-case continuation is a broken word;
    # dot leaders of a table of contents are noise to search and to the token budget.
    return _DOT_LEADER.sub(" … ", re.sub(r"(\w)-\n(?=[a-z])", r"\1", block))


def _pdf_outline(pdf) -> dict[int, tuple[str, ...]]:
    """Page number -> the bookmark path in force at that page's start."""
    try:
        items = list(pdf.get_toc(max_depth=6))
    except Exception:  # a damaged outline is no reason to lose the text
        return {}
    starts: list[tuple[int, int, str]] = []
    for item in items:
        dest = item.get_dest()
        page_index = dest.get_index() if dest is not None else None
        title = normalize(item.get_title() or "", keep_lines=False)
        if page_index is not None and title:
            starts.append((page_index + 1, item.level, title))
    starts.sort(key=lambda s: s[0])
    outline: dict[int, tuple[str, ...]] = {}
    stack: list[tuple[int, str]] = []
    j = 0
    for page in range(1, len(pdf) + 1):
        while j < len(starts) and starts[j][0] <= page:
            _, level, title = starts[j]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            j += 1
        if stack:
            outline[page] = tuple(t for _, t in stack)
    return outline


# ---------------------------------------------------------------- DOCX


DEFAULT_MAX_UNPACKED_BYTES = 200 * 2**20
"""Most bytes a DOCX's zip members may unpack to, unless the caller says otherwise."""

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_W_VAL, _W_TYPE, _W_P, _W_R, _W_T, _W_TBL = (_W + n for n in ("val", "type", "p", "r", "t", "tbl"))
_DOCX_RUN_TEXT = {_W + "tab": "\t", _W + "ptab": "\t", _W + "cr": "\n", _W + "noBreakHyphen": "-"}
_DOCX_ON = ("1", "true", "on")


def parse_docx(data: bytes, path: Path, *, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES) -> ParsedDocument:
    """DOCX: paragraphs with Heading/Title styles as headings, tables as rows.

    python-docx opens the package; the body is then read from its XML directly, with
    style names looked up once, because python-docx resolves a paragraph's style by
    scanning every style in the file (20 s per MB of text).
    """
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    _check_unpacked_size(data, max_unpacked_bytes)
    try:
        document = docx.Document(io.BytesIO(data))
        body = document.element.body
        title = (document.core_properties.title or "").strip()
        styles = document.styles.element
    except (zipfile.BadZipFile, PackageNotFoundError, KeyError, ValueError) as exc:
        raise IngestFileError(f"not a valid DOCX file ({exc.__class__.__name__}: {exc})") from exc
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # lxml errors, or parts of the wrong kind, inside a damaged package
        raise IngestFileError(f"damaged DOCX file ({exc.__class__.__name__}: {exc})") from exc
    if body is None:
        raise IngestFileError("damaged DOCX file: its main part has no document body")
    depths, default_depth = _docx_heading_depths(styles)
    builder = TextBuilder()
    for el in body.iterchildren(_W_P, _W_TBL):
        if el.tag == _W_TBL:
            _docx_table(el, builder)
            continue
        style_id, text = _docx_paragraph(el)
        depth = default_depth if style_id is None else depths.get(style_id, default_depth)
        if depth is not None:
            if depth == 0 and not title:
                title = text.strip()
            builder.add(text, "heading", depth=max(depth, 1), keep_lines=False)
        else:
            builder.add(text)
    parsed = _finish(builder, path, "docx", [])
    if title:
        parsed.title = normalize(title, keep_lines=False)
    return parsed


def _check_unpacked_size(data: bytes, limit: int) -> None:
    """Fail a DOCX whose members declare more than ``limit`` bytes in all (a decompression bomb).

    zipfile never inflates a member past its declared size (it fails the CRC check
    instead), so the declared sizes bound what python-docx can be made to read.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError, OSError) as exc:
        raise IngestFileError(f"not a valid DOCX file ({exc.__class__.__name__}: {exc})") from exc
    total = sum(m.file_size for m in members)
    largest = max(members, key=lambda m: m.file_size, default=None)
    if largest is not None and total > limit:
        raise IngestFileError(
            f"would unpack to {_mb(total)} ({largest.filename} alone is {_mb(largest.file_size)}), more than the "
            f"limit of {_mb(limit)} for compressed documents: a decompression bomb, or too large to read safely. "
            "If it is genuine, raise max_unpacked_mb (LOCALREASON_MAX_UNPACKED_MB).")  # fmt: skip


def _mb(size: int) -> str:
    return f"{size / 2**20:,.1f} MB"


def _docx_heading_depths(styles) -> tuple[dict[str, int | None], int | None]:
    """Heading depth (0 for Title, None for body text) per paragraph style id, and for the default style.

    Mirrors python-docx: the first style with an id wins, and an id of a style that is
    not a paragraph style (or of none) means the default paragraph style.
    """
    first: dict[str, object] = {}
    default = ""
    for style in styles.iterchildren(_W + "style"):
        first.setdefault(style.get(_W + "styleId"), style)
        if style.get(_W_TYPE) == "paragraph" and style.get(_W + "default") in _DOCX_ON:
            default = _docx_style_name(style)
    names = {sid: _docx_style_name(s) if s.get(_W_TYPE) == "paragraph" else default for sid, s in first.items()}
    return {sid: _docx_heading_depth(name) for sid, name in names.items()}, _docx_heading_depth(default)


def _docx_style_name(style) -> str:
    from docx.styles import BabelFish

    name = style.find(_W + "name")
    value = name.get(_W_VAL) if name is not None else None
    return BabelFish.internal2ui(value) if value else ""


def _docx_paragraph(p) -> tuple[str | None, str]:
    """A paragraph's style id and its text as python-docx gives it: its runs and its hyperlinks' runs."""
    props = None
    parts: list[str] = []
    for child in p:
        tag = child.tag
        if tag == _W_R:
            _docx_run_text(child, parts)
        elif tag == _W + "hyperlink":
            for run in child.iterchildren(_W_R):
                _docx_run_text(run, parts)
        elif tag == _W + "pPr" and props is None:
            props = child
    style = props.find(_W + "pStyle") if props is not None else None
    return (style.get(_W_VAL) if style is not None else None), "".join(parts)


def _docx_run_text(run, parts: list[str]) -> None:
    for child in run:
        tag = child.tag
        if tag == _W_T:
            parts.append(child.text or "")
        elif tag == _W + "br":
            parts.append("\n" if child.get(_W_TYPE) in (None, "textWrapping") else "")
        elif isinstance(tag, str):
            parts.append(_DOCX_RUN_TEXT.get(tag, ""))


def _docx_table(tbl, builder: TextBuilder) -> None:
    """One text block per row: its cells' texts joined by " | ", merged cells once.

    A cell that continues a vertical merge shows the text of the cell above it, found
    by grid column in the previous row (python-docx does the same, recursively).
    """
    above: dict[int, str] = {}
    for tr in tbl.iterchildren(_W + "tr"):
        row: dict[int, str] = {}
        cells: list[str] = []
        column = _docx_int(tr.find(f"{_W}trPr/{_W}gridBefore"), 0)
        for tc in tr.iterchildren(_W + "tc"):
            props = tc.find(_W + "tcPr")
            span = _docx_int(props.find(_W + "gridSpan") if props is not None else None, 1)
            merge = props.find(_W + "vMerge") if props is not None else None
            own = " ".join("\n".join(_docx_paragraph(p)[1] for p in tc.iterchildren(_W_P)).split())
            continues = merge is not None and merge.get(_W_VAL, "continue") == "continue"
            value = above.get(column, own) if continues else own
            row[column] = value
            if value and (not cells or cells[-1] != value):  # merged cells repeat
                cells.append(value)
            column += max(span, 1)
        above = row
        builder.add(" | ".join(cells), keep_lines=False)


def _docx_int(el, default: int) -> int:
    """The integer ``w:val`` of ``el``, or ``default`` if it is missing or not a small integer."""
    value = el.get(_W_VAL) if el is not None else None
    return int(value) if value and value.isascii() and value.isdigit() and len(value) < 7 else default


def _docx_heading_depth(style: str) -> int | None:
    if style == "Title":
        return 0
    m = re.match(r"Heading (\d)", style)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------- dispatch


def _finish(builder: TextBuilder, path: Path, fmt: str, notes: list[str]) -> ParsedDocument:
    text = builder.text
    first_heading = next((b for b in builder.blocks if b.kind == "heading"), None)
    if fmt in ("markdown", "rst", "docx") and first_heading is not None:
        title = text[first_heading.start:first_heading.end]
    else:
        title = path.name
    return ParsedDocument(title=title[:300], text=text, blocks=builder.blocks, format=fmt, notes=notes)


READERS = {
    "text": lambda d, p: parse_plain(d, p, "text"),
    "code": lambda d, p: parse_plain(d, p, "code"),
    "markdown": parse_markdown,
    "rst": parse_rst,
    "html": parse_html,
    "pdf": parse_pdf,
    "docx": parse_docx,
}


def parse_bytes(data: bytes, path: Path, fmt: str, *,
                max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES) -> ParsedDocument:  # fmt: skip
    """Parse ``data`` (the bytes of ``path``) with the reader for ``fmt``.

    Whatever the bytes, this returns a ParsedDocument or raises IngestFileError: a
    reader's own failure (too deep, out of memory, a bug, input no reader expected)
    becomes a failed file with the reason, so one hostile file never stops an ingest.
    ``max_unpacked_bytes`` bounds what a compressed format (DOCX) may unpack to.
    """
    reader = READERS[fmt]
    options = {"max_unpacked_bytes": max_unpacked_bytes} if fmt == "docx" else {}
    if not data.strip():
        raise IngestFileError("empty file", status="skipped")
    failure = ""
    try:
        parsed = reader(data, path, **options)
    except IngestFileError:
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
