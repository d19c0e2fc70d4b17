"""Readers: bytes of one file -> normalised text plus its block structure.

Every reader produces a :class:`ParsedDocument`: the document's text, normalised
once (and stored as is), and a list of :class:`Block` spans into that text,
each a heading (with its depth) or a run of body text (with its page, for PDF).
The chunker only ever sees this shape, so every format gets the same hierarchy.
"""

from __future__ import annotations

import io
import re
import unicodedata
from dataclasses import dataclass, field
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
_TRAILING = re.compile(r"[ \t]+\n")
_MANY_NEWLINES = re.compile(r"\n{3,}")
_BLANK_SPLIT = re.compile(r"\n[ \t]*\n")


def normalize(text: str, *, keep_lines: bool = True) -> str:
    """NFC, one kind of newline, no control or zero-width characters, no trailing spaces.

    With ``keep_lines=False`` every whitespace run (newlines included) becomes one
    space: right for HTML, DOCX and PDF prose, where line breaks carry no meaning.
    """
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    if not keep_lines:
        return " ".join(text.split())
    text = _ODD_SPACES.sub(" ", text)  # indentation is kept: it carries meaning in code
    text = _TRAILING.sub("\n", text)
    return _MANY_NEWLINES.sub("\n\n", text).strip("\n")


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
        return data.decode("utf-16")
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
    """Markdown through markdown-it-py: headings, paragraphs, list items, code, tables, as plain text."""
    from markdown_it import MarkdownIt

    notes: list[str] = []
    source = decode_text(data, notes)
    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(source)
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


_TAG = re.compile(r"<[^>]+>")


def _strip_tags(html: str) -> str:
    return _TAG.sub(" ", html)


# ---------------------------------------------------------------- reStructuredText

_RST_ADORN = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")
_RST_ROLE = re.compile(r":[\w:+.-]+:`(?:([^`<]*?)\s*<[^`>]*>|([^`]*))`")
_RST_LITERAL = re.compile(r"``(.+?)``")
_RST_REF = re.compile(r"`([^`<]+?)\s*(?:<[^`>]*>)?`_{1,2}")
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
    lines = normalize(decode_text(data, notes)).split("\n")
    builder = TextBuilder()
    styles: list[tuple[str, bool]] = []
    para: list[str] = []
    skip_indent: int | None = None

    def flush() -> None:
        if para:
            builder.add(_rst_inline("\n".join(para)))
            para.clear()

    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if skip_indent is not None:
            if stripped and indent <= skip_indent:
                skip_indent = None
            else:
                i += 1
                continue
        # Section title: [overline] title underline
        over = bool(_RST_ADORN.match(line)) and i + 2 < n and _RST_ADORN.match(lines[i + 2]) and lines[i + 1].strip()
        under = (stripped and not _RST_ADORN.match(line) and i + 1 < n and _RST_ADORN.match(lines[i + 1])
                 and len(lines[i + 1].rstrip()) >= len(stripped.rstrip()) and indent == 0)  # fmt: skip
        if over or under:
            flush()
            title = lines[i + 1].strip() if over else stripped
            style = (line[0], True) if over else (lines[i + 1].strip()[0], False)
            if style not in styles:
                styles.append(style)
            builder.add(_rst_inline(title), "heading", depth=styles.index(style) + 1, keep_lines=False)
            i += 3 if over else 2
            continue
        m = _RST_DIRECTIVE.match(line)
        if m:
            flush()
            name, arg = m.group(1).lower(), m.group(2).strip()
            if name in _RST_DROP_DIRECTIVES:
                skip_indent = indent
            elif arg:
                builder.add(_rst_inline(arg), keep_lines=False)
            i += 1
            continue
        if stripped.startswith(".."):  # comment, target or footnote: no prose of its own
            flush()
            skip_indent = indent if not re.match(r"^\.\.\s+\[", stripped) else None
            if skip_indent is None:
                para.append(re.sub(r"^\.\.\s+\[[^\]]*\]\s*", "", stripped))
            i += 1
            continue
        if not stripped:
            flush()
        elif not _RST_FIELD.match(line) and not _RST_ADORN.match(line):
            para.append(line.rstrip())
        i += 1
    flush()
    return _finish(builder, path, "rst", notes)


def _rst_inline(text: str) -> str:
    text = _RST_ROLE.sub(lambda m: (m.group(1) or m.group(2) or "").lstrip("~!"), text)
    text = _RST_LITERAL.sub(r"\1", text)
    text = _RST_REF.sub(r"\1", text)
    text = _RST_EMPH.sub(r"\1", text)
    text = re.sub(r"::$", ":", text, flags=re.M)
    lines = [ln.strip() for ln in text.split("\n")]
    return "\n".join(ln for ln in lines if ln != "::")


# ---------------------------------------------------------------- HTML

_HTML_DROP = ("script", "style", "noscript", "template", "nav", "aside", "header", "footer", "form",
              "button", "select", "svg", "iframe")  # fmt: skip
_HTML_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_HTML_BLOCKS = frozenset("p li dt dd pre blockquote td th caption figcaption address div section article "
                         "main body tr table ul ol dl summary details".split())  # fmt: skip


def parse_html(data: bytes, path: Path) -> ParsedDocument:
    """HTML through lxml: the main content's headings and block elements, in document order."""
    import lxml.html
    from lxml import etree

    if b"\x00" in data[:8192]:
        raise IngestFileError("binary file (it contains NUL bytes), not HTML", status="skipped")
    try:
        root = lxml.html.document_fromstring(data)
    except (etree.ParserError, ValueError) as exc:
        raise IngestFileError(f"not readable as HTML: {exc}") from exc
    title_el = root.find(".//title")
    page_title = normalize(title_el.text_content(), keep_lines=False) if title_el is not None else ""
    for el in root.iter(*_HTML_DROP):
        el.drop_tree() if el.getparent() is not None else None
    for el in root.xpath('//*[@role="navigation" or @role="search" or @aria-hidden="true"]'
                         ' | //a[contains(concat(" ", @class, " "), " headerlink ")]'
                         ' | //div[contains(@class, "sphinxsidebar") or contains(@class, "related")]'):  # fmt: skip
        if el.getparent() is not None:
            el.drop_tree()
    main = root.xpath('//main | //*[@role="main"] | //article')
    builder = TextBuilder()
    _html_walk(main[0] if main else (root.find("body") if root.find("body") is not None else root), builder)
    parsed = _finish(builder, path, "html", [])
    if page_title:
        parsed.title = page_title
    return parsed


def _html_walk(el, builder: TextBuilder) -> None:
    tag = el.tag if isinstance(el.tag, str) else ""
    if tag in _HTML_HEADINGS:
        builder.add(el.text_content(), "heading", depth=_HTML_HEADINGS[tag], keep_lines=False)
        return
    if tag == "pre":
        builder.add(el.text_content())
        return
    if tag == "tr":
        cells = [" ".join(c.text_content().split()) for c in el if c.tag in ("td", "th")]
        builder.add(" | ".join(c for c in cells if c), keep_lines=False)
        return
    has_block_child = any(isinstance(c.tag, str) and (c.tag in _HTML_BLOCKS or c.tag in _HTML_HEADINGS)
                          for c in el)  # fmt: skip
    if not has_block_child:
        builder.add(el.text_content(), keep_lines=False)
        return
    # Mixed content: loose text between block children forms blocks of its own.
    loose = [el.text or ""]
    for child in el:
        ctag = child.tag if isinstance(child.tag, str) else ""
        if ctag in _HTML_BLOCKS or ctag in _HTML_HEADINGS:
            builder.add("".join(loose), keep_lines=False)
            loose = []
            _html_walk(child, builder)
        elif ctag:
            loose.append(child.text_content())
        loose.append(child.tail or "")
    builder.add("".join(loose), keep_lines=False)


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
                raw = textpage.get_text_range()
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


def parse_docx(data: bytes, path: Path) -> ParsedDocument:
    """DOCX through python-docx: paragraphs with Heading/Title styles as headings, tables as rows."""
    import zipfile

    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, PackageNotFoundError, KeyError, ValueError) as exc:
        raise IngestFileError(f"not a valid DOCX file ({exc.__class__.__name__}: {exc})") from exc
    except Exception as exc:  # lxml errors inside a damaged package
        raise IngestFileError(f"damaged DOCX file ({exc.__class__.__name__}: {exc})") from exc
    builder = TextBuilder()
    title = (document.core_properties.title or "").strip()
    for item in document.iter_inner_content():
        if hasattr(item, "rows"):
            for row in item.rows:
                cells = []
                for cell in row.cells:
                    value = " ".join(cell.text.split())
                    if value and (not cells or cells[-1] != value):  # merged cells repeat
                        cells.append(value)
                builder.add(" | ".join(cells), keep_lines=False)
            continue
        style = (item.style.name if item.style is not None else "") or ""
        depth = _docx_heading_depth(style)
        if depth is not None:
            if depth == 0 and not title:
                title = item.text.strip()
            builder.add(item.text, "heading", depth=max(depth, 1), keep_lines=False)
        else:
            builder.add(item.text)
    parsed = _finish(builder, path, "docx", [])
    if title:
        parsed.title = normalize(title, keep_lines=False)
    return parsed


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


def parse_bytes(data: bytes, path: Path, fmt: str) -> ParsedDocument:
    """Parse ``data`` (the bytes of ``path``) with the reader for ``fmt``."""
    if not data.strip():
        raise IngestFileError("empty file", status="skipped")
    parsed = READERS[fmt](data, path)
    if not parsed.text.strip():
        raise IngestFileError("no text found in the file", status="skipped")
    return parsed
