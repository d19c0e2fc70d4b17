"""DOCX: paragraphs with Heading/Title styles as headings, tables as rows."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

from ...errors import IngestFileError
from ..document import ParsedDocument, TextBuilder, finish, list_number, normalize

DEFAULT_MAX_UNPACKED_BYTES = 200 * 2**20
"""Most bytes a DOCX's zip members may unpack to, unless the caller says otherwise."""

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_W_VAL, _W_TYPE, _W_P, _W_R, _W_T, _W_TBL = (_W + n for n in ("val", "type", "p", "r", "t", "tbl"))
_DOCX_RUN_TEXT = {_W + "tab": "\t", _W + "ptab": "\t", _W + "cr": "\n", _W + "noBreakHyphen": "-"}
_DOCX_ON = ("1", "true", "on")
_RUN_HOLDERS = frozenset(_W + n for n in ("hyperlink", "ins", "moveTo", "smartTag", "fldSimple", "customXml", "sdt",
                                          "sdtContent", "dir", "bdo"))  # fmt: skip
"""Elements of a paragraph whose runs are shown (a link, a tracked insertion, a field, a content control);
deleted text (``w:del``, ``w:moveFrom``) is not."""
_BLOCK_HOLDERS = frozenset(_W + n for n in ("sdt", "sdtContent", "customXml"))
"""Elements of the body whose paragraphs and tables are shown (content controls, custom XML)."""
_NOTES = (("footnotes", "footnote"), ("endnotes", "endnote"))


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
    numbering = _Numbering(document)
    builder = TextBuilder()
    for el in _docx_blocks(body):
        if el.tag == _W_TBL:
            _docx_table(el, builder)
            continue
        style_id, text = _docx_paragraph(el)
        text = numbering.label(el) + text
        depth = default_depth if style_id is None else depths.get(style_id, default_depth)
        if depth is not None:
            if depth == 0 and not title:
                title = text.strip()
            builder.add(text, "heading", depth=max(depth, 1), keep_lines=False)
        else:
            builder.add(text)
        for box in _text_boxes(el):  # (a text box's paragraphs follow the paragraph that anchors it)
            builder.add(box)
    for text in _docx_notes(document):
        builder.add(text)
    parsed = finish(builder, path, "docx", [])
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


def _docx_blocks(parent, tags: tuple[str, ...] = (_W_P, _W_TBL)):
    """The children of ``parent`` with one of ``tags`` (paragraphs and tables of the body, rows of a table,
    cells of a row, paragraphs of a cell), in order, those inside content controls included."""
    stack = [iter(parent)]
    while stack:
        el = next(stack[-1], None)
        if el is None:
            stack.pop()
        elif el.tag in tags:
            yield el
        elif el.tag in _BLOCK_HOLDERS:
            stack.append(iter(el))


class _Numbering:
    """The numbers Word shows before numbered paragraphs ("1.", "2.1", "b)"), from the numbering part."""

    _FORMATS = ("decimal", "lowerLetter", "upperLetter", "lowerRoman", "upperRoman", "decimalZero")

    def __init__(self, document) -> None:
        self.levels: dict[tuple[str, str], tuple[str, str, int]] = {}  # (numId, ilvl) -> format, text, start
        self.counts: dict[str, dict[int, int]] = {}
        root = _part_xml(document, "numbering")
        if root is None:
            return
        abstract = {a.get(_W + "abstractNumId"): a for a in root.iterchildren(_W + "abstractNum")}
        for num in root.iterchildren(_W + "num"):
            ref = num.find(_W + "abstractNumId")
            definition = abstract.get(ref.get(_W_VAL) if ref is not None else None)
            for lvl in definition.iterchildren(_W + "lvl") if definition is not None else ():
                fmt, text, start = (lvl.find(_W + tag) for tag in ("numFmt", "lvlText", "start"))
                self.levels[(num.get(_W + "numId"), lvl.get(_W + "ilvl"))] = (
                    fmt.get(_W_VAL, "") if fmt is not None else "", text.get(_W_VAL, "") if text is not None else "",
                    _docx_int(start, 1))  # fmt: skip

    def label(self, p) -> str:
        """The number before paragraph ``p`` and a space, or "" (not numbered, or a bullet)."""
        props = p.find(f"{_W}pPr/{_W}numPr")
        if props is None or not self.levels:
            return ""
        num_el, lvl_el = props.find(_W + "numId"), props.find(_W + "ilvl")
        num = num_el.get(_W_VAL) if num_el is not None else None
        level = _docx_int(lvl_el, 0)
        if (num, str(level)) not in self.levels:
            return ""
        counts = self.counts.setdefault(num, {})
        counts[level] = counts.get(level, self.levels[(num, str(level))][2] - 1) + 1
        for deeper in [d for d in counts if d > level]:
            del counts[deeper]
        fmt, text, _ = self.levels[(num, str(level))]
        if fmt not in self._FORMATS or not text:
            return ""

        def shown(match: re.Match) -> str:
            at = int(match.group(1)) - 1
            f, _, start = self.levels.get((num, str(at)), ("decimal", "", 1))
            return _number(counts.get(at, start), f)

        return re.sub(r"%([1-9])", shown, text) + " "


def _number(n: int, fmt: str) -> str:
    """Word's number format ``fmt`` (decimal, lowerLetter, upperRoman, decimalZero, ...) of ``n``."""
    style = "alpha" if fmt.endswith("Letter") else "roman" if fmt.endswith("Roman") else "arabic"
    shown = f"{n:02d}" if fmt == "decimalZero" else list_number(n, style)
    return shown.upper() if fmt.startswith("upper") else shown


def _part_xml(document, name: str):
    """The parsed XML of the document's related part ``name`` (numbering, footnotes, ...), or None."""
    from lxml import etree

    part = next((rel.target_part for rel in document.part.rels.values()
                 if not rel.is_external and rel.reltype.endswith("/" + name)), None)  # fmt: skip
    if part is None:
        return None
    try:
        return etree.fromstring(part.blob, etree.XMLParser(resolve_entities=False, huge_tree=True))
    except etree.XMLSyntaxError:
        return None  # a damaged part is no reason to lose the body


def _docx_notes(document) -> list[str]:
    """The text of each footnote and endnote, "[n] text", in the order of their ids (Word numbers them so)."""
    out: list[str] = []
    for part_name, tag in _NOTES:
        root = _part_xml(document, part_name)
        if root is None:
            continue
        for note in root.iterchildren(_W + tag):
            if note.get(_W_TYPE) in ("separator", "continuationSeparator", "continuationNotice"):
                continue
            text = " ".join(_docx_paragraph(p)[1] for p in note.iter(_W_P)).strip()
            if text:
                out.append(f"[{note.get(_W + 'id', '')}] {text}")
    return out


def _docx_paragraph(p) -> tuple[str | None, str]:
    """A paragraph's style id and its text: its runs, and those of its links, fields, content controls and
    tracked insertions (not of deleted text)."""
    props = p.find(_W + "pPr")
    parts: list[str] = []
    stack = [iter(p)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
        elif child.tag == _W_R:
            _docx_run_text(child, parts)
        elif child.tag in _RUN_HOLDERS:
            stack.append(iter(child))
    style = props.find(_W + "pStyle") if props is not None else None
    return (style.get(_W_VAL) if style is not None else None), "".join(parts)


_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_TEXT_BOX = _W + "txbxContent"


def _shown_paragraphs(el) -> list:
    """Every paragraph under ``el`` a reader sees: those of tables nested in a cell and of text boxes too (they were
    left out), but not the copies Word writes for old readers (``mc:Fallback``: each text box twice)."""
    return [p for p in el.iter(_W_P) if not any(a.tag == _MC_FALLBACK for a in p.iterancestors())]


def _text_boxes(p) -> list[str]:
    """The text of the text boxes a body paragraph anchors (a warning drawn in a box), one block per paragraph."""
    boxes = [box for box in p.iter(_TEXT_BOX) if not any(a.tag == _MC_FALLBACK for a in box.iterancestors())]
    return [text for box in boxes for q in box.iter(_W_P) if (text := _docx_paragraph(q)[1].strip())]


def _docx_run_text(run, parts: list[str]) -> None:
    for child in run:
        tag = child.tag
        if tag == _W_T:
            parts.append(child.text or "")
        elif tag == _W + "br":
            parts.append("\n" if child.get(_W_TYPE) in (None, "textWrapping") else "")
        elif tag in (_W + "footnoteReference", _W + "endnoteReference"):
            parts.append(f"[{child.get(_W + 'id', '')}]")
        elif isinstance(tag, str):
            parts.append(_DOCX_RUN_TEXT.get(tag, ""))


def _docx_table(tbl, builder: TextBuilder) -> None:
    """One text block per row: its cells' texts joined by " | ", merged cells once.

    A cell that continues a vertical merge shows the text of the cell above it, found
    by grid column in the previous row (python-docx does the same, recursively).
    """
    above: dict[int, str] = {}
    for tr in _docx_blocks(tbl, (_W + "tr",)):
        row: dict[int, str] = {}
        cells: list[str] = []
        column = _docx_int(tr.find(f"{_W}trPr/{_W}gridBefore"), 0)
        for tc in _docx_blocks(tr, (_W + "tc",)):
            props = tc.find(_W + "tcPr")
            span = _docx_int(props.find(_W + "gridSpan") if props is not None else None, 1)
            merge = props.find(_W + "vMerge") if props is not None else None
            own = " ".join("\n".join(_docx_paragraph(p)[1] for p in _shown_paragraphs(tc)).split())
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
