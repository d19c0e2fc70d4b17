"""render: the one readable form of an answer, for every front end.

``sections(answer)`` computes, once, what a person reads of an answer, in order:

    Answer       the answer prose (always), each statement followed by the numbers of its sources ([1],
                 [2] ...) where the spec's answer has its [[chunkId]] tokens (numbered_prose)
    Sources      each verified quotation, numbered [1], [2] ... in the order the statements cite
                 them, with its document title and chunk id (only when there are any); the answer
                 phrase, in the quotation that holds it, marked (``Source.phrase``, ``quotation_parts``)
    Limitations  the gaps (only when there are any)
    Meta         chunks gathered, citations dropped, latency (always)

Every front end renders that one structure: ``answer_markdown`` (the notebook view, the
exported file, an MCP server's readable tool output), ``answer_plain`` and ``answer_rich``
(the command line), and the TUI's answer rows. So the forms cannot drift apart.
Markdown escapes every document-derived text (``markdown_text``); the plain forms do not.
The answer phrase is bold in Markdown (``**phrase**``), in Rich and in the TUI; plain text cannot mark
it and shows the quotation as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .text import collapse, counted, pages_named

if TYPE_CHECKING:
    from rich.text import Text

ANSWER, SOURCES, LIMITATIONS, META = "Answer", "Sources", "Limitations", "Meta"
RECOGNIZED_MARK = "recognised text"
"""Shown beside a source whose passage was read by text recognition (the gaps say what it means)."""


@dataclass(frozen=True)
class Source:
    """One numbered quotation under Sources."""

    number: int
    """Its marker, from 1, in the order the statements cite their references."""
    title: str
    chunk_id: str
    quotation: str
    statement: int
    """The index of the statement that cites it (a statement's markers are its sources' numbers)."""
    reference: Any
    """The :class:`~localreason.reason.Reference` (chunk id and offsets), to open it in its document."""
    phrase: tuple[int, int] | None = None
    """Where the statement's answer phrase lies in ``quotation`` (offsets into it, ``Statement.phrase_in``), or
    None when this quotation does not hold it. Every front end marks the phrase from this one place."""

    @property
    def recognized(self) -> bool:
        """The quotation's passage was read by text recognition (a scanned page or photo): marked beside it."""
        return bool(getattr(self.reference, "recognized", False))

    def document_phrase(self) -> tuple[int, int] | None:
        """``phrase`` as offsets in the document's stored text, like the reference's (for the source viewer)."""
        return None if self.phrase is None else (self.reference.start + self.phrase[0],
                                                 self.reference.start + self.phrase[1])  # fmt: skip


@dataclass(frozen=True)
class Section:
    heading: str
    """ANSWER, SOURCES, LIMITATIONS or META."""
    items: tuple
    """Answer: (prose,); Sources: Source values; Limitations: the gaps; Meta: (meta line,)."""


def recognition_summary(doc) -> str:
    """What text recognition read of a document (``Document.recognized``), in a line; empty when nothing: how many
    pages, their mean confidence, the pages under ``low`` confidence and those not read."""
    pages = list(getattr(doc, "recognized", ()) or ())
    if not pages:
        return ""
    read = [p for p in pages if not p.failed and p.lines]
    parts = []
    if read:
        mean = sum(p.confidence * p.lines for p in read) / sum(p.lines for p in read)
        parts.append(f"{pages_named(p.page for p in read)} read by text recognition (mean confidence {mean:.2f})")
    failed = [p for p in pages if p.failed]
    if failed:
        parts.append(f"{pages_named(p.page for p in failed)} not read ({failed[0].failed})")
    return "; ".join(parts)


def low_confidence_pages(doc, threshold: float) -> list:
    """The recognised pages of ``doc`` whose confidence is under ``threshold``."""
    return [p for p in getattr(doc, "recognized", ()) or () if not p.failed and p.lines and p.confidence < threshold]


def latency_text(ms: int) -> str:
    """``850 ms`` under a second, else seconds to one decimal (``5.1 s``)."""
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def meta_line(answer) -> str:
    return (f"{counted(answer.chunks_gathered, 'chunk')} gathered · {counted(answer.citations_dropped, 'citation')} "
            f"dropped · {latency_text(answer.latency_ms)}")  # fmt: skip


def numbered_sources(answer) -> tuple[Source, ...]:
    """Every reference of every statement, numbered in citing order."""
    titles = {c.chunk_id: c.document_title for c in answer.citations}
    out: list[Source] = []
    for i, st in enumerate(answer.statements):
        for ref in st.references:
            out.append(Source(len(out) + 1, titles.get(ref.chunk_id, ""), ref.chunk_id, ref.quotation, i, ref,
                              _phrase_span(st, ref)))  # fmt: skip
    return tuple(out)


def _phrase_span(statement, ref) -> tuple[int, int] | None:
    """``statement.phrase_in(ref)`` when it is a non-blank stretch of the quotation that reads as the phrase's
    text (whitespace aside); None otherwise, so that offsets that do not fit the quotation mark nothing."""
    span = statement.phrase_in(ref)
    if span is None:
        return None
    lo, hi = span
    quoted = ref.quotation[lo:hi] if 0 <= lo < hi <= len(ref.quotation) else ""
    return (lo, hi) if quoted.strip() and collapse(quoted) == collapse(statement.phrase.text) else None


def quotation_parts(source: Source, *, collapsed: bool = True) -> tuple[str, str, str]:
    """(before, phrase, after) of ``source``'s quotation; the phrase empty when it has none or a blank one, and
    then before is the whole quotation. ``collapsed``: the parts of ``collapse(quotation)``, so that
    before + phrase + after is exactly that, the phrase collapsed and trimmed, the single spaces at the joins
    kept in before and after (a raw quotation cannot be collapsed and then cut at raw offsets); otherwise the
    raw quotation cut at ``source.phrase``."""
    q = source.quotation
    lo, hi = source.phrase or (0, 0)
    before, phrase, after = q[:lo], q[lo:hi], q[hi:]
    if not phrase.strip():
        return (collapse(q) if collapsed else q), "", ""
    if not collapsed:
        return before, phrase, after
    out_before, out_after = collapse(before), collapse(after)
    if out_before:
        out_before += _join(before, phrase)
    if out_after:
        out_after = _join(phrase, after) + out_after
    return out_before, collapse(phrase), out_after


def _join(left: str, right: str) -> str:
    """The one space ``collapse`` leaves between two adjacent texts, or none when a word runs across them."""
    return " " if left[-1:].isspace() or right[:1].isspace() else ""


_TOKENS = re.compile(r"(?:\s*\[\[chk_\w+\]\])+")
"""A statement's run of ``[[chunkId]]`` tokens in the answer prose (verify.compose writes one run per statement)."""


def numbered_prose(answer, sources: tuple[Source, ...] | None = None) -> str:
    """The answer prose with each statement's ``[[chunkId]]`` tokens replaced by the numbers of its sources
    under Sources (``[1][2]``), so that a reader can match them. The spec's form, with the tokens, stays in
    JSON, MCP's structured result and REST. Prose whose token runs do not match the statements one to one
    (an answer built elsewhere) is returned as it is."""
    sources = numbered_sources(answer) if sources is None else sources
    runs = list(_TOKENS.finditer(answer.answer))
    if not runs or len(runs) != len(answer.statements):
        return answer.answer
    out, pos = [], 0
    for i, run in enumerate(runs):
        numbers = "".join(f"[{s.number}]" for s in sources if s.statement == i)
        out += [answer.answer[pos:run.start()], f" {numbers}" if numbers else ""]
        pos = run.end()
    return "".join(out) + answer.answer[pos:]


def sections(answer) -> list[Section]:
    """What a person reads of ``answer``, in order; Sources and Limitations only when not empty."""
    sources = numbered_sources(answer)
    out = [Section(ANSWER, (numbered_prose(answer, sources),))]
    if sources:
        out.append(Section(SOURCES, sources))
    if answer.gaps:
        out.append(Section(LIMITATIONS, tuple(answer.gaps)))
    out.append(Section(META, (meta_line(answer),)))
    return out


def section(parts: list[Section], heading: str) -> tuple:
    """The items under ``heading`` in ``parts`` (``sections(answer)``), or () when it is absent."""
    return next((s.items for s in parts if s.heading == heading), ())


# ---------------------------------------------------------------- Markdown

_MARKUP = re.compile(r"[\\`*\[\]|~$]|<(?=[A-Za-z/!?])|&(?=#?\w+;)|(?<![^\W_])_|_(?![^\W_])")
"""What can turn inline text into markup: HTML tags, comments and autolinks (``<`` before a letter,
``/``, ``!`` or ``?``), entities (``&`` before ``name;``), links and images (brackets), emphasis
(``*``; ``_`` unless inside a word), code spans, tables, strikethrough, math, and the backslash."""
_LINE_START = re.compile(r"^(?:([-+=>#])|(\d+)([.)]))")
"""At the start of a line: a list item, setext underline, block quote, heading or numbered item."""


def markdown_text(text: str) -> str:
    """``text`` from a document or a user as inline Markdown that renders literally, never as markup.

    One line (a newline could open a heading or a list); each character that could start markup
    (``_MARKUP``, ``_LINE_START``) escaped, ``<`` and ``&`` as HTML entities so that no renderer
    sees a tag, the rest with a backslash. Prose without such characters is left as it is.
    """
    return _line_start(_inline(collapse(text)))


def _inline(flat: str) -> str:
    """``flat`` (one line) with each character of ``_MARKUP`` escaped."""

    def escape(m: re.Match) -> str:
        return {"<": "&lt;", "&": "&amp;"}.get(m.group(0), "\\" + m.group(0))

    return _MARKUP.sub(escape, flat)


def _line_start(flat: str) -> str:
    """``flat`` with a ``_LINE_START`` at its start escaped."""
    return _LINE_START.sub(lambda m: "\\" + m.group(1) if m.group(1) else m.group(2) + "\\" + m.group(3), flat)


def markdown_quotation(source: Source) -> str:
    """``source``'s quotation as ``markdown_text`` writes it, its answer phrase (if any) in ``**``: the parts
    (``quotation_parts``) escaped one by one, so the phrase's escaped text is what is bold."""
    before, phrase, after = quotation_parts(source)
    if not phrase:
        return markdown_text(source.quotation)
    return _line_start(f"{_inline(before)}**{_inline(phrase)}**{_inline(after)}")


def _markdown_item(heading: str, item) -> str:
    if heading == SOURCES:
        mark = f" ({RECOGNIZED_MARK})" if item.recognized else ""
        return (f"- \\[{item.number}\\] *{markdown_text(item.title)}* `{item.chunk_id}`{mark}: "
                f"\u201c{markdown_quotation(item)}\u201d")  # fmt: skip
    if heading == LIMITATIONS:
        return f"- {markdown_text(item)}"
    if heading == META:
        return f"*{markdown_text(item)}*"
    return markdown_text(item)


def markdown_lines(answer) -> list[str]:
    """``answer_markdown`` as lines: each section a bold heading, a blank line, its items, a blank line."""
    lines: list[str] = []
    for s in sections(answer):
        lines += [f"**{s.heading}**", ""]
        lines += [_markdown_item(s.heading, item) for item in s.items]
        lines.append("")
    return lines[:-1]


def answer_markdown(answer) -> str:
    """The canonical readable form of ``answer``: **Answer**, **Sources**, **Limitations**, **Meta**.

    Document-derived text is escaped (``markdown_text``), so it renders literally in any
    CommonMark renderer; our own markup is only the bold headings, the italic titles and meta
    line and the chunk ids' code spans.
    """
    return "\n".join(markdown_lines(answer))


# ---------------------------------------------------------------- plain text and Rich


def plain_lines(answer) -> list[list[tuple[str, str]]]:
    """The command line's form as lines of (text, Rich style) spans, built from ``sections``."""
    lines: list[list[tuple[str, str]]] = []
    for s in sections(answer):
        if s.heading == META:
            lines += [[], [(f"Meta: {s.items[0]}", "dim")]]
            continue
        lines += ([[]] if lines else []) + [[(s.heading, "bold")]]
        for item in s.items:
            lines += _plain_item(s.heading, item)
    return lines


def _plain_item(heading: str, item) -> list[list[tuple[str, str]]]:
    """One item's lines; each text on one line (whitespace runs collapsed), as in Markdown; a quotation's answer
    phrase its own span, bold (answer_plain drops the styles: plain text shows the quotation unmarked)."""
    if heading == SOURCES:
        before, phrase, after = quotation_parts(item)
        quotation = [(f"      \u201c{before}", ""), (phrase, "bold"), (f"{after}\u201d", "")]
        if not phrase:
            quotation = [(f"      \u201c{before}\u201d", "")]
        mark = [(f"  ({RECOGNIZED_MARK})", "yellow")] if item.recognized else []
        return [[(f"  [{item.number}] ", ""), (collapse(item.title), "bold"), ("  ", ""), (item.chunk_id, "cyan"),
                 *mark], quotation]  # fmt: skip
    if heading == LIMITATIONS:
        return [[(f"  - {collapse(item)}", "")]]
    return [[(collapse(item), "")]]


def answer_plain(answer) -> str:
    """``answer`` as plain text (nothing escaped): the same sections as ``answer_markdown``."""
    return "\n".join("".join(text for text, _ in line) for line in plain_lines(answer))


def answer_rich(answer) -> Text:
    """``answer_plain`` with its styles (bold headings, titles and answer phrase, cyan chunk ids, dim meta), for
    Rich."""
    from rich.text import Text

    out = Text()
    for n, line in enumerate(plain_lines(answer)):
        if n:
            out.append("\n")
        for text, style in line:
            out.append(text, style=style or None)
    return out
