"""reason: one cited answer from the library, with every quotation verified.

    progressive search -> relevance gate -> evidence packet (fitted to the model's context)
    -> quotable sentences ranked -> GBNF grammar for this request -> one model call
    -> strict parse -> mechanical verification -> answer, citations, gaps, meta

The contract is shared/spec/reasoning.md. Decisions it leaves open:
- A statement left with no verified reference is dropped from the answer, and a gap
  says how many were withheld (it is never shown as supported).
- The model writes each statement's references before its text (JSON key order is
  free), so the text is written with the quotation in view.
- A statement's text may say no more than its quotations: a text with a content word (or number, or
  negation) that its verified quotations lack is replaced by the quotations, and a gap says so.
- A sentence that reads like instructions to an AI is never offered as a quotation (quotes.py), and a
  gap names the document it came from.
- reason is read-only: it never writes to the library.
"""

from __future__ import annotations

import html
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from . import search
from .errors import Cancelled, ValidationError
from .generate import Completion, GenerationError, Generator
from .quotes import MAX_LEAD, Quote, instruction_sentences, lead_count, rank_quotes, word_stem
from .text import STOPWORDS, collapse
from .types import EvidencePacket, PacketChunk

DEFAULT_ANSWER_BUDGET = 1000
"""The evidence budget (maxTokens) front ends use by default, chosen from the latency/support curve in
docs/benchmarks.md; the API accepts up to the spec's 8,000."""

NO_EVIDENCE_ANSWER = ("No sufficiently relevant evidence was retrieved for this question within the requested "
                      "scope and retrieval limits.")  # fmt: skip

ANSWER_GUARD = 2.25
SENTENCE_GUARD_WEIGHT = 0.2
"""reason's fixed relevance guard: evidence is strong enough to answer from when progressive search's
relevance (best cosine + coverage of the question's terms, search.relevance) plus
SENTENCE_GUARD_WEIGHT x the best quotable sentence's ranking score (quotes.WEIGHTS' scale) reaches
ANSWER_GUARD. Passage-level relevance alone cannot tell a passage on the topic from one that answers;
the best sentence can. Calibrated in scripts/tune_reason.py on questions the evaluation does not ask."""


def gate_score(relevance: float, best_sentence_score: float) -> float:
    """What the relevance gate compares with ANSWER_GUARD."""
    return relevance + SENTENCE_GUARD_WEIGHT * best_sentence_score


# Bounds that keep a small model from looping (and the output's worst case known).
# How many statements lead every answer, quoting the best-ranked sentences in rank order, is
# ``lead``: by default as many as the ranking needs to be confident (quotes.lead_count, 1-5);
# Settings.answer_quotes can fix it.
EXTRA_STATEMENTS = 1
"""Statements the model may add, each quoting one of the remaining candidates."""
MAX_TEXT_CHARS = 160
MAX_LIMITATIONS = 2
MAX_LIMITATION_CHARS = 120
EXTRA_CANDIDATES = 2
"""Quotable sentences offered beyond the lead ones, best first."""

SYSTEM_PROMPT = (
    "You answer a question using only the evidence given. Reply with JSON. Each statement first quotes the "
    "evidence sentence that answers the question, then gives the answer in a few words. If sources "
    "disagree, make one statement per source. If the evidence does not fully answer the question, say so "
    "in limitations."
)


# ---------------------------------------------------------------- values


@dataclass(frozen=True)
class Reference:
    chunk_id: str
    quotation: str
    document_id: str
    start: int
    """Character offsets of the quotation in its document's stored text."""
    end: int

    def to_dict(self) -> dict[str, Any]:
        return {"chunkId": self.chunk_id, "quotation": self.quotation, "documentId": self.document_id,
                "start": self.start, "end": self.end}  # fmt: skip


@dataclass(frozen=True)
class Statement:
    text: str
    references: tuple[Reference, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "references": [r.to_dict() for r in self.references]}


@dataclass(frozen=True)
class Citation:
    chunk_id: str
    document_id: str
    document_title: str

    def to_dict(self) -> dict[str, Any]:
        return {"chunkId": self.chunk_id, "documentId": self.document_id, "documentTitle": self.document_title}


@dataclass(frozen=True)
class Timings:
    search_ms: float = 0.0
    packet_ms: float = 0.0
    prompt_ms: float = 0.0
    generate_ms: float = 0.0
    verify_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class Answer:
    """The response of reason: answer, citations, gaps, meta, plus the verified statements."""

    query: str
    answer: str
    citations: tuple[Citation, ...]
    gaps: tuple[str, ...]
    chunks_gathered: int
    citations_dropped: int
    latency_ms: int
    statements: tuple[Statement, ...] = ()
    no_evidence: bool = False
    timings: Timings = field(default_factory=Timings)

    @property
    def meta(self) -> dict[str, int]:
        return {"chunksGathered": self.chunks_gathered, "citationsDropped": self.citations_dropped,
                "latencyMs": self.latency_ms}  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "citations": [c.to_dict() for c in self.citations], "gaps": list(self.gaps),
                "meta": self.meta, "statements": [s.to_dict() for s in self.statements]}  # fmt: skip

    def _repr_markdown_(self) -> str:
        return "\n".join([f"**Q:** {markdown_text(self.query)}", "", *markdown_body(self)])


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

    def escape(m: re.Match) -> str:
        return {"<": "&lt;", "&": "&amp;"}.get(m.group(0), "\\" + m.group(0))

    flat = _MARKUP.sub(escape, collapse(text))
    return _LINE_START.sub(lambda m: "\\" + m.group(1) if m.group(1) else m.group(2) + "\\" + m.group(3), flat)


def markdown_body(a: Answer) -> list[str]:
    """The lines of an answer in Markdown (prose, sources with quotations, limitations, meta), every
    document-derived text escaped; the notebook view and the exported file both start from these."""
    lines = [markdown_text(a.answer), ""]
    if a.statements:
        lines.append("**Sources**")
        titles = {c.chunk_id: c.document_title for c in a.citations}
        for st in a.statements:
            for ref in st.references:
                lines.append(f"- *{markdown_text(titles.get(ref.chunk_id, ''))}* `{ref.chunk_id}`: "
                             f"\u201c{markdown_text(ref.quotation)}\u201d")  # fmt: skip
        lines.append("")
    if a.gaps:
        lines.append("**Limitations**")
        lines += [f"- {markdown_text(g)}" for g in a.gaps]
        lines.append("")
    lines.append(f"*{a.chunks_gathered} chunks gathered · {a.citations_dropped} citations dropped · "
                 f"{a.latency_ms} ms*")  # fmt: skip
    return lines


# ---------------------------------------------------------------- grammar


def _gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return '"' + out.replace("\t", "\\t") + '"'


def _json_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


LIMITATION_CHOICES = (
    "The evidence does not answer the question directly.",
    "The evidence answers only part of the question.",
    "The sources disagree.",
)
"""In the ``extract`` style the model may only pick among these (a small model's free text degenerates)."""


def _statement_json(q: Quote) -> str:
    """An extract-style statement quoting ``q``, exactly as the model's output spells it."""
    ref = '{"quotation":' + _json_str(q.text) + ',"chunkId":' + _json_str(q.chunk_id) + "}"
    return '{"references":[' + ref + '],"text":""}'


def build_grammar(quotes: list[Quote], style: str = "extract", lead: int = 3) -> tuple[str, str]:
    """The output's forced opening and a GBNF grammar for the rest: quotations only from ``quotes``.

    Output shape (keys in this order, no free whitespace), one reference per statement so that
    each claim stands on one source and disagreeing sources stay separate statements:
    {"statements":[{"references":[{"quotation":Q,"chunkId":ID}],"text":T}],"limitations":[L]}

    The first ``lead`` statements quote the best-ranked sentences in rank order (measured: the
    ranking's order beats the 135M model's own choice); the model may add one more statement
    quoting any of the remaining candidates, and chooses the limitations.

    ``extract`` (default): T is empty, and the statement's text is its verified quotation, bound by
    the server (see ``verify``); L is one of LIMITATION_CHOICES. Nothing a small model writes can
    drift from the evidence, and no decoding step is spent on text a 135M model writes badly.
    Because the lead statements admit exactly one spelling, they are returned as the *prefix*:
    the generator places it at the start of the model's reply (evaluated like the prompt, in one
    batch) and the grammar constrains only what follows. The output is the same as if the grammar
    forced those characters one decoding step at a time, at a fraction of the cost.
    ``free``: T and L are free text of bounded length, for larger models; no prefix.

    Every candidate keeps its own ``stmtN`` rule (the lead ones unused after a prefix), so the
    grammar also documents the whole offer.
    """
    rules: list[str] = []
    for i, q in enumerate(quotes):
        if style == "extract":
            rules.append(f"stmt{i} ::= {_gbnf_literal(_statement_json(q))}")
        else:
            ref = '{"quotation":' + _json_str(q.text) + ',"chunkId":' + _json_str(q.chunk_id) + "}"
            head = _gbnf_literal('{"references":[' + ref + '],"text":"')
            rules.append(f'stmt{i} ::= {head} free "\\"}}"')
    lead = max(1, min(lead, len(quotes)))
    rest = [f"stmt{i}" for i in range(lead, len(quotes))]
    extra = ""
    if rest and EXTRA_STATEMENTS:
        rules.append("extra ::= " + " | ".join(rest))
        extra = ' ("," extra)?'
    if style == "extract":
        limit = " | ".join(_gbnf_literal(_json_str(c)) for c in LIMITATION_CHOICES)
        limits = f"limits ::= ({limit})?"
        prefix = '{"statements":[' + ",".join(_statement_json(q) for q in quotes[:lead])
        root = f'root ::={extra} "],\\"limitations\\":[" limits "]}}"'
    else:
        item = f'"\\"" lchar{{1,{MAX_LIMITATION_CHARS}}} "\\""'
        limits = f'limits ::= ({item} ("," {item}){{0,{MAX_LIMITATIONS - 1}}})?'
        prefix = ""
        stmts = ' "," '.join(f"stmt{i}" for i in range(lead))
        root = f'root ::= "{{\\"statements\\":[" {stmts}{extra} "],\\"limitations\\":[" limits "]}}"'
    grammar = "\n".join([
        root,
        *rules,
        limits,
        f"free ::= char{{1,{MAX_TEXT_CHARS}}}",
        r'char ::= [^"\\\x00-\x1f]',
        r'lchar ::= [^"\\\x00-\x1f]',
    ])  # fmt: skip
    return prefix, grammar


def max_output_tokens(quotes: list[Quote], style: str = "extract", lead: int = 3) -> int:
    """The longest output the grammar allows, counted as one token per character.

    Under a grammar the sampler may spell forced text in pieces smaller than the tokenizer
    would, so a token count of the text underestimates; a token is never less than a
    character, so characters are a true upper bound.
    """
    longest = max((len('{"references":[{"quotation":' + _json_str(q.text) + ',"chunkId":' + _json_str(q.chunk_id)
                       + '}],"text":""}') for q in quotes), default=0)  # fmt: skip
    if style == "free":
        longest += MAX_TEXT_CHARS
        limits = MAX_LIMITATIONS * (MAX_LIMITATION_CHARS + 3)
    else:
        limits = max(len(_json_str(c)) for c in LIMITATION_CHOICES)
    statements = min(len(quotes), max(1, lead) + EXTRA_STATEMENTS)
    return len('{"statements":[],"limitations":[]}') + statements * (longest + 1) + limits


# ---------------------------------------------------------------- parsing and verification


def parse_output(text: str) -> tuple[list[dict], list[str]]:
    """Strictly parse the model's JSON: exactly the expected keys and types, or GenerationError."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GenerationError(f"The model's output is not valid JSON ({exc.msg} at character {exc.pos}).",
                              hint="The output may have been cut off; this request failed rather than "
                              "guess an answer.") from exc  # fmt: skip

    def fail(why: str):
        raise GenerationError(f"The model's output does not have the required shape: {why}.")

    if not isinstance(data, dict) or set(data) != {"statements", "limitations"}:
        fail("expected exactly the keys statements and limitations")
    if not isinstance(data["statements"], list) or not isinstance(data["limitations"], list):
        fail("statements and limitations must be lists")
    for st in data["statements"]:
        if not isinstance(st, dict) or set(st) != {"text", "references"}:
            fail("each statement needs exactly text and references")
        if not isinstance(st["text"], str) or not isinstance(st["references"], list):
            fail("a statement's text must be a string and its references a list")
        for ref in st["references"]:
            if not isinstance(ref, dict) or set(ref) != {"chunkId", "quotation"}:
                fail("each reference needs exactly chunkId and quotation")
            if not isinstance(ref["chunkId"], str) or not isinstance(ref["quotation"], str):
                fail("chunkId and quotation must be strings")
    if not all(isinstance(x, str) for x in data["limitations"]):
        fail("limitations must be strings")
    return data["statements"], data["limitations"]


def locate(quotation: str, content: str) -> tuple[int, int] | None:
    """Where ``quotation`` occurs in ``content`` when whitespace runs are collapsed and both are trimmed."""
    words = collapse(quotation).split(" ")
    if not words or words == [""]:
        return None
    m = re.search(r"\s+".join(re.escape(w) for w in words), content)
    return (m.start(), m.end()) if m else None


def find_quotation(quotation: str, content: str) -> tuple[int, int] | None:
    """Where ``quotation`` occurs in ``content``: as written, else with HTML entities decoded.

    The packet shows chunks XML-escaped, so a model copying from it may write ``&amp;`` for ``&``;
    a document can also contain entity text itself ("&gt;, &#62;"), which must match as written.
    """
    span = locate(quotation, content)
    unescaped = html.unescape(quotation)
    if span is None and unescaped != quotation:
        span = locate(unescaped, content)
    return span


_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|\w+(?:['\u2019]\w+)*")
_NEGATIONS = frozenset("no not nor never none neither cannot without".split())


def content_words(text: str) -> set[str]:
    """The words a statement's text must share with its quotations to be kept.

    Lower-cased words that are not stop words, stemmed (quotes.word_stem); numbers exactly as
    written ("2.5" is not "2"); every negation as "not", so a text cannot deny its quotation.
    """
    words = set()
    for token in _TOKEN.findall(text.lower()):
        if token in _NEGATIONS or token.endswith(("n't", "n\u2019t")):
            words.add("not")
            continue
        word = re.split("['\u2019]", token)[0]  # "warranty's" -> "warranty"
        if any(ch.isdigit() for ch in word):
            words.add(token)
        elif word not in STOPWORDS:
            words.add(word_stem(word))
    return words


def says_no_more(text: str, quotations: list[str]) -> bool:
    """True when every content word of ``text`` occurs in ``quotations`` (see ``content_words``)."""
    quoted: set[str] = set()
    for q in quotations:
        quoted |= content_words(q)
    return content_words(text) <= quoted


@dataclass(frozen=True)
class Verified:
    """What verification kept, and what it counted on the way."""

    statements: list[Statement]
    dropped: int
    """References whose quotation is not in the admitted chunk they name."""
    withheld: int
    """Statements left with no verified reference."""
    replaced: int
    """Statement texts replaced by their quotations because they said more."""


def verify(raw_statements: list[dict], admitted: dict[str, PacketChunk], chunk_starts: dict[str, int]) -> Verified:
    """Keep only references whose quotation occurs in the admitted chunk they name, and texts they support.

    A statement with no verified reference is withheld; a text that says more than its
    quotations (``says_no_more``) is replaced by them. Retained duplicates are removed without
    being counted.
    """
    kept: list[Statement] = []
    dropped = withheld = replaced = 0
    seen_statements: set[tuple] = set()
    for st in raw_statements:
        refs: list[Reference] = []
        seen: set[tuple[str, str]] = set()
        for ref in st["references"]:
            chunk = admitted.get(ref["chunkId"])
            span = find_quotation(ref["quotation"], chunk.content) if chunk is not None else None
            if span is None:
                dropped += 1
                continue
            quoted = chunk.content[span[0]:span[1]]
            key = (chunk.chunk_id, collapse(quoted))
            if key in seen:
                continue
            seen.add(key)
            base = chunk_starts[chunk.chunk_id]
            refs.append(Reference(chunk.chunk_id, quoted, chunk.document_id, base + span[0], base + span[1]))
        if not refs:
            withheld += 1
            continue
        quotations = [collapse(r.quotation) for r in refs]
        text = collapse(st["text"])
        if text and not says_no_more(text, quotations):
            replaced += 1
            text = ""
        text = text or " ".join(quotations)
        signature = (text, tuple((r.chunk_id, r.start) for r in refs))
        if signature in seen_statements:
            continue
        seen_statements.add(signature)
        kept.append(Statement(text, tuple(refs)))
    return Verified(kept, dropped, withheld, replaced)


_ENDS_SENTENCE = re.compile(r"[.!?…][\"'\u201d\u2019)\]]*$")


def _as_sentence(text: str) -> str:
    """``text`` ending like a sentence in the prose: a period added, or an ellipsis where a quotation was cut."""
    if _ENDS_SENTENCE.search(text):
        return text
    if text.endswith((";", ":", ",", "\u2014", "-")):
        return text.rstrip(";:,\u2014- ") + "\u2026"
    return text + "."


def compose(statements: list[Statement], titles: dict[str, tuple[str, str]]) -> tuple[str, tuple[Citation, ...]]:
    """Answer prose with server-bound [[chunkId]] tokens, and each cited chunk once."""
    parts = []
    cited: dict[str, Citation] = {}
    for st in statements:
        ids = list(dict.fromkeys(r.chunk_id for r in st.references))
        text = _as_sentence(st.text)
        parts.append(text + " " + " ".join(f"[[{i}]]" for i in ids))
        for i in ids:
            doc_id, title = titles[i]
            cited.setdefault(i, Citation(i, doc_id, title))
    return " ".join(parts), tuple(cited.values())


# ---------------------------------------------------------------- the pipeline


def messages_for(query: str, packet_text: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Evidence:\n{packet_text}\nQuestion: {query}"}]  # fmt: skip


def reporter(stage, cancel):
    """``say(name, **info)``: raises :class:`Cancelled` once ``cancel`` is set, else tells ``stage``."""

    def say(name: str, **info) -> None:
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        if stage is not None:
            stage(name, **info)

    return say


def reason(lib, query: str, *, generator: Generator, document_id: object = search.UNSET,
           collection_id: object = search.UNSET, limit: object = search.DEFAULT_EVIDENCE_LIMIT,
           max_tokens: object = search.DEFAULT_MAX_TOKENS, style: str = "extract", lead: int | None = None,
           stage=None, cancel=None) -> Answer:  # fmt: skip
    """Answer ``query`` from the library. ``stage(name, **info)`` is called as the work progresses.

    ``lead`` fixes how many best-ranked quotations lead the answer (1-5); None lets the ranking's
    confidence decide (quotes.lead_count).

    ``cancel`` (a ``threading.Event``) stops the request between stages and inside the model call;
    the request then raises :class:`Cancelled`.
    """
    t0 = time.perf_counter()
    say = reporter(stage, cancel)
    q = search.clean_query(query)
    k = search.clamp_limit(limit, search.DEFAULT_EVIDENCE_LIMIT, search.MAX_EVIDENCE_LIMIT)
    budget = search.clean_max_tokens(max_tokens)
    if lead is not None and (not isinstance(lead, int) or not 1 <= lead <= MAX_LEAD):
        raise ValidationError(f"lead must be a number from 1 to {MAX_LEAD} (got {lead!r}).",
                              hint="Leave it out to let the ranking decide how many quotations lead.")
    say("searching")
    evidence = search.progressive_search(lib.index, q, document_id=document_id, collection_id=collection_id,
                                         limit=k)  # fmt: skip
    t_search = time.perf_counter()
    gaps: list[str] = []

    def no_evidence(notes: tuple[str, ...] | list[str] = ()) -> Answer:
        elapsed = int((time.perf_counter() - t0) * 1000)
        return Answer(q, NO_EVIDENCE_ANSWER, (), tuple(dict.fromkeys(notes)), evidence.chunks_gathered, 0, elapsed,
                      no_evidence=True, timings=Timings(search_ms=(t_search - t0) * 1000))  # fmt: skip

    if not evidence.hits:
        return no_evidence([unread_gap(budget)] if budget == 0 else [])
    packet = search.build_packet(evidence, budget)
    if packet.empty:
        return no_evidence([unread_gap(budget)])
    say("reading", chunks=len(packet.chunks), tokens=packet.tokens)

    def choose(packet: EvidencePacket) -> tuple[list[Quote], int]:
        """The quotable sentences offered to the model, best first, and how many lead."""
        offered = rank_quotes(q, [(c.chunk_id, c.content) for c in packet.chunks], lib.embedder.embed,
                              (lead or MAX_LEAD) + EXTRA_CANDIDATES)  # fmt: skip
        n = lead_count([o.probability for o in offered]) if lead is None else min(lead, len(offered))
        return offered[:n + EXTRA_CANDIDATES], n

    quotes, n_lead = choose(packet)
    if not quotes:
        return no_evidence(instruction_gaps(packet))
    # The relevance gate: weak unscoped evidence skips synthesis; weak scoped evidence is answered with a gap.
    if gate_score(evidence.relevance, quotes[0].score) < ANSWER_GUARD:
        if not evidence.scoped:
            return no_evidence(instruction_gaps(packet))
        gaps.append("The evidence in the requested scope matches the question only weakly.")
    # Fit the packet, the instructions and the longest possible output in the model's context.
    out_tokens = max_output_tokens(quotes, style, n_lead)
    msgs = messages_for(q, packet.text)
    if generator.prompt_tokens(msgs) > generator.context_size - out_tokens:
        gaps.append("Part of the evidence was left out to fit the model's context window.")
        while True:  # a smaller packet may offer other sentences, hence another longest output
            packet = _shrink_to_context(evidence, packet, q, generator, generator.context_size - out_tokens)
            quotes, n_lead = choose(packet) if not packet.empty else ([], 0)
            if not quotes:
                raise GenerationError(
                    f"The model's context ({generator.context_size} tokens) is too small for the instructions and "
                    "the longest possible answer.", hint="Configure a GGUF model with a larger context window.")
            out_tokens = max_output_tokens(quotes, style, n_lead)
            msgs = messages_for(q, packet.text)
            if generator.prompt_tokens(msgs) <= generator.context_size - out_tokens:
                break
    if packet.truncated and packet.chunks_gathered > len(packet.chunks):
        gaps.append(f"Only {len(packet.chunks)} of {packet.chunks_gathered} gathered passages fit the evidence "
                    f"budget of {packet.max_tokens} tokens (a larger budget, maxTokens, reads more, more slowly).")  # fmt: skip
    t_packet = time.perf_counter()
    say("writing")
    prefix, grammar = build_grammar(quotes, style=style, lead=n_lead)
    completion: Completion = generator.complete(msgs, grammar, out_tokens, prefix=prefix, cancel=cancel)
    t_gen = time.perf_counter()
    say("verifying")
    raw_statements, limitations = parse_output(completion.text)
    admitted = {c.chunk_id: c for c in packet.chunks}
    starts = {h.chunk_id: h.start for h in evidence.hits}
    verified = verify(raw_statements, admitted, starts)
    statements, dropped = verified.statements, verified.dropped
    if verified.withheld:
        gaps.append(f"{verified.withheld} statement(s) withheld: none of their quotations could be verified in the "
                    "evidence.")  # fmt: skip
    if verified.replaced:
        gaps.append(f"{verified.replaced} statement text(s) said more than their quotations, so the quotations are "
                    "shown instead.")  # fmt: skip
    gaps += instruction_gaps(packet)
    gaps = [collapse(x) for x in limitations if collapse(x)] + gaps
    titles = {c.chunk_id: (c.document_id, c.document_title) for c in packet.chunks}
    if not statements:
        answer_text, citations = "None of the generated statements could be verified against the evidence.", ()
    else:
        answer_text, citations = compose(statements, titles)
    t_end = time.perf_counter()
    timings = Timings(
        search_ms=(t_search - t0) * 1000, packet_ms=(t_packet - t_search) * 1000,
        prompt_ms=completion.prompt_seconds * 1000, generate_ms=completion.generate_seconds * 1000,
        verify_ms=(t_end - t_gen) * 1000, prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
    )  # fmt: skip
    return Answer(q, answer_text, citations, tuple(dict.fromkeys(gaps)), evidence.chunks_gathered, dropped,
                  int((t_end - t0) * 1000), tuple(statements), False, timings)  # fmt: skip


def unread_gap(budget: int) -> str:
    """Why no evidence was read although passages were gathered: the budget admitted none of them."""
    if budget == 0:
        return ("The evidence budget (maxTokens) was 0 tokens (negative values count as 0), so no evidence was "
                "read.")  # fmt: skip
    return f"The evidence budget (maxTokens) of {budget} tokens is too small for any passage, so no evidence was read."


def instruction_gaps(packet: EvidencePacket) -> list[str]:
    """One gap per document whose admitted text has a sentence that reads like instructions to an AI."""
    flagged = {c.chunk_id for c in instruction_sentences([(c.chunk_id, c.content) for c in packet.chunks])}
    titles = dict.fromkeys(c.document_title for c in packet.chunks if c.chunk_id in flagged)
    return [f"A passage of \u201c{t}\u201d reads like instructions to an AI, so it was not used as evidence."
            for t in titles]  # fmt: skip


def _shrink_to_context(evidence, packet: EvidencePacket, query: str, generator: Generator, room: int) -> EvidencePacket:
    """Rebuild the packet with smaller budgets until the prompt fits in ``room`` model tokens."""
    budget = packet.max_tokens
    while budget > 0:
        budget = int(budget * 0.8)
        smaller = search.build_packet(evidence, budget)
        if smaller.empty or generator.prompt_tokens(messages_for(query, smaller.text)) <= room:
            return smaller
    return search.build_packet(evidence, 0)
