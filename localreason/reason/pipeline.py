"""reason: one cited answer from the library, with every quotation verified.

    check the request -> gather evidence (progressive search) -> pack it (evidence packet)
    -> choose quotations (ranked sentences, ranking.py; the reader, read.py; the relevance gate,
    gate.py; the model's re-ordering, likelihood.py; the offer, offer.py) -> fit the context
    -> generate (GBNF grammar for this request, one model call) -> verify (strict parse,
    mechanical verification) -> answer, citations, gaps, meta

This module wires the stages: what each decides is in its own module, and every fitted number they use
comes from the one ``Calibration`` the request carries (calibration.py; ``reason(..., calibration=...)``).

The contract is shared/spec/reasoning.md. Decisions it leaves open:
- A statement left with no verified reference is dropped from the answer, and a gap
  says how many were withheld (it is never shown as supported).
- The model writes each statement's references before its text (JSON key order is
  free), so the text is written with the quotation in view.
- A statement's text may say no more than its quotations: a text with a content word (or number, or
  negation) that its verified quotations lack is replaced by the quotations, and a gap says so.
- A sentence that reads like instructions to an AI is never offered as a quotation (candidates.py), and
  a gap names the document it came from.
- reason is read-only: it never writes to the library.
- The model reads the sentences it may quote (in their chunk wrappers), not the whole packet: the
  grammar lets it write nothing else, and reading the rest cost most of the request's time for no
  measured change in the answer (docs/benchmarks.md).
- Evidence on the topic that does not clearly answer (between the gate's two guards) is answered with
  its closest sentence alone and a gap that says so.
- With a reader (the ``reader`` setting, read.py), the trained cross-encoder re-orders the best-ranked
  sentences and its estimate for the best one decides the gate (gate.judge_read); when the retrieval gate
  already refuses, it is not run. If it fails, the ranking stands and the library is told (a notice).
- With ``rerank="likelihood"`` (the answer_rerank setting), before it writes, the model re-orders the
  four best-ranked sentences by how likely it finds the question after each (likelihood.py). Off by
  default: with the packaged 135M model it gained too little for its time (docs/benchmarks.md). The
  gate judges the retrieval ranking's best score, so that a question the gate refuses costs no model time.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, replace
from typing import Any

from .. import search
from ..config import ANSWER_RERANK_MODES
from ..errors import LocalReasonError, ModelError, ValidationError
from ..generate import Completion, GenerationError, Generator
from ..stages import Stage, reporter
from ..text import collapse
from ..types import EvidencePacket
from .answer import NO_EVIDENCE_ANSWER, Answer, SideMark, Timings
from .calibration import DEFAULT, Calibration
from .candidates import Quote
from .compare import compared, compared_terms, own_words, speaks_of, term_query
from .disagree import Disagreement, look, ordered, settled, told_apart, twins_close
from .gate import NOT_ANSWERED_GAP, NOT_ANSWERED_SIDES_GAP, NoEvidence, check_relevance, instruction_gaps, unread_gap
from .grammar import build_grammar, lead_groups, max_output_tokens, parse_output
from .likelihood import rerank
from .offer import EXTRA_CANDIDATES, MAX_LEAD, Offer, offer_of, offered, with_sides, without_repeats
from . import polarity
from .phrase import with_phrase
from .prompt import messages_for, offered_text
from .ranking import SYNOPSIS_HEADING, rank_quotes
from .read import reader_reads, second_reading
from .verify import Verified, compose, verify


@dataclass(frozen=True)
class Request:
    """One question, checked, and what answers it."""

    lib: Any
    query: str
    generator: Generator
    scope: dict
    """document_id and collection_id, as given (search checks them)."""
    limit: int
    budget: int
    style: str
    lead_quotes: int | None
    rerank: str
    """``likelihood`` (the model re-orders the best sentences, likelihood.py) or ``off``."""
    reader: Any = None
    """The trained reader (reader.Reader: ``logits(question, [(sentence, previous), ...])``), or None."""
    calibration: Calibration = DEFAULT
    """The fitted numbers every stage uses (calibration.py)."""


@dataclass(frozen=True)
class Prompt:
    """What goes to the model: the (fitted) packet, the offer, the messages, the longest output."""

    packet: EvidencePacket
    offer: Offer
    messages: list[dict]
    out_tokens: int


class Clock:
    """perf_counter marks of a request's stages."""

    def __init__(self) -> None:
        self.marks = {"start": time.perf_counter()}

    def mark(self, name: str) -> None:
        self.marks[name] = time.perf_counter()

    def ms(self, start: str, end: str) -> float:
        return (self.marks[end] - self.marks[start]) * 1000


def reason(lib, query: str, *, generator: Generator, document_id: object = search.UNSET,
           collection_id: object = search.UNSET, grant: search.Grant = None, limit: object = search.DEFAULT_EVIDENCE_LIMIT,
           max_tokens: object = search.DEFAULT_MAX_TOKENS, style: str = "extract", lead_quotes: int | None = None,
           rerank: str = "off", reader=None, stage=None, cancel=None,
           calibration: Calibration = DEFAULT) -> Answer:  # fmt: skip
    """Answer ``query`` from the library. ``stage(Stage, **info)`` is called as the work progresses.

    ``lead_quotes`` fixes how many best-ranked quotations lead the answer (1-5); None lets the
    ranking's confidence decide (offer.lead_count). ``rerank`` is ``likelihood`` (the model re-orders the
    best sentences before it writes; likelihood.py) or ``off``. ``reader`` is the trained reader (read.py) or
    None (the ranking of retrieval features and its gate). ``calibration`` holds the fitted numbers of every
    stage (the shipped ``calibration.DEFAULT`` unless given).

    ``cancel`` (a ``threading.Event``) stops the request between stages and inside the model call;
    the request then raises :class:`Cancelled`.
    """
    clock = Clock()
    say = reporter(stage, cancel)
    req = check_request(lib, query, generator, {"document_id": document_id, "collection_id": collection_id, "grant": grant},
                        limit, max_tokens, style, lead_quotes, rerank, reader, calibration)  # fmt: skip
    say(Stage.SEARCHING)
    evidence = gather_evidence(req)
    clock.mark("search")
    try:
        packet = pack_evidence(evidence, req.budget)
        say(Stage.READING, chunks=len(packet.chunks), tokens=packet.tokens)
        ranked = rank_sentences(req, packet, evidence)
        ranked, read_seconds = reader_reads(req.reader, req.query, evidence, ranked,
                                            getattr(req.lib, "reader_failed", None), calibration=req.calibration,
                                            chunks={c.chunk_id: c.content for c in packet.chunks})  # fmt: skip
        closest_only, gaps = check_relevance(evidence, packet, ranked, req.query, calibration=req.calibration,
                                             known=library_holds(req))  # fmt: skip
    except NoEvidence as none:
        return no_evidence_answer(req, evidence, none.notes, clock)
    clock.mark("packet")
    ranked, read = model_reorders(req, ranked, cancel)
    clock.mark("rerank")
    offer, found = lead_offer(req, ranked, closest_only, packet)
    if offer.several and NOT_ANSWERED_GAP in gaps:  # each side's closest sentence is quoted, not one statement
        gaps = [NOT_ANSWERED_SIDES_GAP if g == NOT_ANSWERED_GAP else g for g in gaps]
    prompt = fit_context(req, evidence, packet, offer, gaps)
    clock.mark("fitted")
    say(Stage.WRITING)
    completion = generate(req, prompt, cancel)
    clock.mark("generate")
    say(Stage.VERIFYING)
    return verified_answer(req, evidence, prompt, completion, gaps, clock, read, read_seconds, found)


def check_request(lib, query: str, generator: Generator, scope: dict, limit: object, max_tokens: object,
                  style: str, lead_quotes: object, rerank_mode: object = "off", reader=None,
                  calibration: Calibration = DEFAULT) -> Request:  # fmt: skip
    """The request with its inputs checked and clamped, or ValidationError before any work."""
    q = search.clean_query(query)
    k = search.clamp_limit(limit, search.DEFAULT_EVIDENCE_LIMIT, search.MAX_EVIDENCE_LIMIT)
    budget = search.clean_max_tokens(max_tokens)
    if lead_quotes is not None and (not isinstance(lead_quotes, int) or not 1 <= lead_quotes <= MAX_LEAD):
        raise ValidationError(f"lead_quotes must be a number from 1 to {MAX_LEAD} (got {lead_quotes!r}).",
                              hint="Leave it out to let the ranking decide how many quotations lead.")
    if rerank_mode not in ANSWER_RERANK_MODES:
        raise ValidationError(f"rerank must be one of {', '.join(ANSWER_RERANK_MODES)} (got {rerank_mode!r}).")
    return Request(lib, q, generator, scope, k, budget, style, lead_quotes, str(rerank_mode), reader, calibration)


# ---------------------------------------------------------------- stages


COMPARED_HITS = 2
"""A comparison question: the most passages added for each thing it names that the search found nothing on."""


def gather_evidence(req: Request):
    """Progressive search for the question within its scope (search.Evidence). A comparison question that names
    what it compares (compare.compared_terms) also gets the best passages on each named thing none of the hits
    speaks of, searched for on their own (at most COMPARED_HITS each), so that each side can be heard."""
    evidence = search.progressive_search(req.lib.index, req.query, limit=req.limit, **req.scope)
    if req.calibration.disagree_candidates:
        evidence = replace(evidence, hits=tuple(twins_close(list(evidence.hits), req.calibration.disagree_similarity)))
    terms = compared_terms(req.query)
    if not terms or len(terms) < 2:
        return evidence
    hits, extra, added = list(evidence.hits), [], []
    room = max(req.limit - 1, 0)  # the request's limit holds, and the question's best passage stays
    for i, own in enumerate(own_words(terms)):
        if not own or any(speaks_of(h.content + " " + h.document_title, own) for h in hits + extra):
            continue
        more = search.progressive_search(req.lib.index, term_query(req.query, terms, i), limit=COMPARED_HITS * 4,
                                         **req.scope)  # fmt: skip
        known = {h.chunk_id for h in hits + extra}
        new = [h for h in more.hits if h.chunk_id not in known and speaks_of(h.content + " " + h.document_title, own)]
        new = new[:min(COMPARED_HITS, room - len(extra))]
        extra += new
        added.append(f"{len(new)} on \u201c{terms[i]}\u201d")
    if not added:
        return evidence
    hits = room_for(hits, req.limit - len(extra), [own for own in own_words(terms) if own]) + extra
    return replace(evidence, hits=tuple(hits), steps=(*evidence.steps, "a comparison: added passages " + ", ".join(added)))


def library_holds(req: Request):
    """``holds(word)``: whether a passage the asker may see (the collections of the request's grant) holds the word,
    for the gate (gate.names_the_absent); asked only for a name the evidence lacks."""
    def holds(word: str) -> bool:
        granted = search.resolve_scope(req.lib.index, grant=req.scope.get("grant")).granted
        return req.lib.index.store.match_count(search.ranking.one(word.lower()), upto=1, collection_ids=granted) > 0

    return holds


def room_for(hits: list, keep: int, owns: list) -> list:
    """``keep`` of ``hits``, in their order: the best, those that speak of a compared thing (they are a side, and
    nothing was searched for it), then the next best; the weakest others make room for the passages added."""
    if len(hits) <= keep:
        return hits
    sides = [i for i, h in enumerate(hits) if any(speaks_of(h.content + " " + h.document_title, own) for own in owns)]
    kept = set(list(dict.fromkeys([0, *sides, *range(len(hits))]))[:max(keep, 0)])
    return [h for i, h in enumerate(hits) if i in kept]


def evidence_of(lib, query: str, *, scope: dict, limit: object, max_tokens: object,
                calibration: Calibration = DEFAULT) -> tuple:  # fmt: skip
    """(what ``reason`` gathers for ``query`` in ``scope``, the packet it sends the model), checked as ``reason``
    checks them; the packet may be empty (``reason`` then answers that there is no evidence)."""
    req = check_request(lib, query, None, scope, limit, max_tokens, "extract", None, calibration=calibration)
    evidence = gather_evidence(req)
    return evidence, search.build_packet(evidence, req.budget)


def pack_evidence(evidence, budget: int) -> EvidencePacket:
    """The evidence packet of what progressive search gathered, within ``budget`` tokens; NoEvidence if empty."""
    if not evidence.hits:
        raise NoEvidence([unread_gap(budget)] if budget == 0 else [])
    packet = search.build_packet(evidence, budget)
    if packet.empty:
        raise NoEvidence([unread_gap(budget)])
    return packet


def rank_sentences(req: Request, packet: EvidencePacket, evidence) -> list[Quote]:
    """The packet's quotable sentences for the question, best first (as many as an offer can use); the
    titles and section headings of the evidence are not sentences."""
    headings = frozenset(collapse(h) for hit in evidence.hits for h in (hit.document_title, *hit.section_path))
    cal = req.calibration
    limit = max((req.lead_quotes or MAX_LEAD) + EXTRA_CANDIDATES, cal.rerank_candidates)
    if req.reader is not None:
        limit = max(limit, cal.read_candidates)
    synopses = frozenset(h.chunk_id for h in evidence.hits  # a Synopsis section's passages: usage, not answers
                         if h.section_path and SYNOPSIS_HEADING.match(h.section_path[-1]))  # fmt: skip
    return rank_quotes(req.query, [(c.chunk_id, c.content) for c in packet.chunks], req.lib.embedder.embed, limit,
                       headings, calibration=cal, synopses=synopses)  # fmt: skip


def model_reorders(req: Request, ranked: list[Quote], cancel) -> tuple[list[Quote], tuple[int, float]]:
    """The ranked sentences after the model's re-ordering (likelihood.rerank), and what that read: (tokens,
    seconds)."""
    if req.rerank == "off":
        return ranked, (0, 0.0)
    done = rerank(req.generator, req.query, ranked, cancel, calibration=req.calibration)
    return done.quotes, (done.tokens, done.seconds)


def fit_context(req: Request, evidence, packet: EvidencePacket, offer: Offer, gaps: list[str]) -> Prompt:
    """The packet, the instructions and the longest possible output, fitted in the model's context.

    Appends to ``gaps`` when evidence was left out for the context, or for the evidence budget when the evidence
    did not clearly answer (``offer.closest_only``: a larger budget may find what answers). Under a clear answer
    the budget's cut goes unsaid, as the spec allows: said on nearly every answer, it buried the gaps that matter.
    """
    prompt = prompt_for(req, packet, offer)
    if not _fits(req.generator, prompt):
        gaps.append("Part of the evidence was left out to fit the model's context window.")
        prompt = shrink_prompt(req, evidence, prompt)
    if offer.closest_only and packet.truncated and packet.chunks_gathered > len(packet.chunks):  # the budget's cut
        gaps.append(f"Only {len(packet.chunks)} of {packet.chunks_gathered} gathered passages fit the evidence "
                    f"budget of {packet.max_tokens} tokens (a larger budget, maxTokens, considers more).")  # fmt: skip
    return prompt


def generate(req: Request, prompt: Prompt, cancel) -> Completion:
    """One model call under this request's grammar (its forced opening placed as the reply's prefix)."""
    offer = prompt.offer
    prefix, grammar = build_grammar(offer.quotes, style=req.style, lead_quotes=offer.lead_quotes, joined=offer.joined)
    return req.generator.complete(prompt.messages, grammar, prompt.out_tokens, prefix=prefix, cancel=cancel)


def verified_answer(req: Request, evidence, prompt: Prompt, completion: Completion, gaps: list[str],
                    clock: Clock, read: tuple[int, float] = (0, 0.0), read_seconds: float = 0.0,
                    found: Disagreement | None = None) -> Answer:  # fmt: skip
    """The answer from the model's output: statements verified, prose composed, gaps and timings. When the
    sources disagree (``found``), each side's statement is marked, no phrase leads, and a gap names it."""
    verified, gaps = verify_output(evidence, prompt, completion, gaps)
    clock.mark("verified")
    titles = {c.chunk_id: (c.document_id, c.document_title) for c in prompt.packet.chunks}
    if found is None:
        statements = answer_phrase(req, evidence, prompt, verified.statements)
    else:
        statements = marked_sides(verified.statements, found)
        gaps.append(found.gap())
    if not statements:
        answer_text, citations = "None of the generated statements could be verified against the evidence.", ()
    else:
        answer_text, citations = compose(statements, titles)
    clock.mark("end")
    timings = Timings(
        search_ms=clock.ms("start", "search"),
        packet_ms=max(0.0, clock.ms("search", "packet") - read_seconds * 1000) + clock.ms("rerank", "fitted"),
        rerank_ms=read[1] * 1000, rerank_tokens=read[0], read_ms=read_seconds * 1000,
        prompt_ms=completion.prompt_seconds * 1000, generate_ms=completion.generate_seconds * 1000,
        verify_ms=clock.ms("generate", "verified"), phrase_ms=clock.ms("verified", "end"),
        prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens,
    )  # fmt: skip
    return Answer(req.query, answer_text, citations, tuple(dict.fromkeys(gaps)), evidence.chunks_gathered,
                  verified.dropped, int(clock.ms("start", "end")), tuple(statements), False, timings)  # fmt: skip


def answer_phrase(req: Request, evidence, prompt: Prompt, statements: list) -> list:
    """The verified statements with the reader's answer phrase on the first (phrase.with_phrase): the phrase of
    the best offered sentence the reader read (the first, or the second when the naming sentence leads). None
    when the gate found the evidence not clearly answering (a phrase would claim an answer)."""
    if prompt.offer.closest_only or prompt.offer.several:
        return statements
    lead = prompt.offer.quotes[:2]
    best = next((q for q in lead if q.phrase is not None), None)
    starts = {h.chunk_id: h.start for h in evidence.hits}
    best_start = starts[best.chunk_id] + best.start if best is not None and best.chunk_id in starts else None
    passage = getattr(req.reader, "passage", None)
    confirm = None
    if passage is not None and req.calibration.phrase_agreement > 0:
        confirm = second_reading(passage, req.query, {c.chunk_id: c.content for c in prompt.packet.chunks},
                                 calibration=req.calibration)  # fmt: skip
    elif getattr(req.reader, "needs_second_reading", False) and req.calibration.phrase_agreement > 0:
        return statements  # the packaged reader without its passage reader: no phrase, not even a figure's
    return with_phrase(statements, best, best_start, req.query, calibration=req.calibration, confirm=confirm)


def lead_offer(req: Request, ranked: list[Quote], closest_only: bool,
               packet: EvidencePacket) -> tuple[Offer, Disagreement | None]:  # fmt: skip
    """What the model is offered (offer.offer_of), led by each side when the sources disagree (``disagreement``)
    or by each document a comparison question asks about (compare.compared); and the disagreement, if any."""
    found = disagreement(req, ranked, packet, closest_only)
    if found is not None:
        sides = [s.quote for s in found.sides]
    else:  # a comparison hears each document even when the gate doubts the evidence: each side's closest sentence
        sides = compared(req.query, ranked[:req.calibration.disagree_candidates], _documents(packet))
    offer = offer_of(req.query, ranked, req.lead_quotes, closest_only, None if sides else packet,
                     calibration=req.calibration, documents=documents_of(packet))  # fmt: skip
    return (with_sides(offer, sides) if sides else offer), found


def documents_of(packet: EvidencePacket) -> dict[str, str]:
    """Each admitted chunk's document id."""
    return {c.chunk_id: c.document_id for c in packet.chunks}


def _documents(packet: EvidencePacket) -> dict[str, tuple[str, str]]:
    """chunk id -> (document id, title) of the packet's chunks."""
    return {c.chunk_id: (c.document_id, c.document_title) for c in packet.chunks}


def disagreement(req: Request, ranked: list[Quote], packet: EvidencePacket,
                 closest_only: bool = False) -> Disagreement | None:  # fmt: skip
    """Whether the best-ranked sentences' sources disagree (disagree.find, with the reader's stance reader when it
    has one), in the answer's order and settled when the evidence settles it (the sides' documents read for a note
    that one replaces the other). ``closest_only``: the relevance gate answers from the closest passage only
    (disagree.look says what is looked for then)."""
    stance = getattr(req.reader, "stance", None)
    documents = _documents(packet)
    contradiction, least = (stance.contradiction, None) if stance is not None else (None, None)
    if stance is None and req.calibration.stance_rule:
        contradiction, least = polarity.for_quotes(req.query, ranked, documents), polarity.RULE_LEAST
    try:
        found = look(req.query, ranked, documents, closest_only, calibration=req.calibration,
                     contradiction=contradiction, least=least)
    except ModelError as exc:  # a damaged stance reader: said once, then near-twins are still found without it
        warnings.warn(f"{exc} Opposite stances are not looked for.", RuntimeWarning, stacklevel=2)
        req.reader.stance = None
        found = look(req.query, ranked, documents, closest_only, calibration=req.calibration)
    if found is None:
        return None
    texts, paths = {}, {}
    for side in found.sides:
        try:
            texts[side.document_id] = req.lib.document_text(side.document_id)
            paths[side.document_id] = req.lib.document(side.document_id).source_path
        except (AttributeError, LocalReasonError):  # gone since the search, or a fake library: nothing to read
            texts[side.document_id] = ""
    return settled(ordered(told_apart(found, paths)), req.query, texts)


def marked_sides(statements: list, found: Disagreement) -> list:
    """``statements`` with each one that quotes a side's sentence marked as that side (Statement.side)."""
    out = []
    for st in statements:
        mark = None
        for k, side in enumerate(found.sides):
            text = collapse(side.quote.text)
            if any(r.chunk_id == side.quote.chunk_id and text in collapse(r.quotation) for r in st.references):
                mark = SideMark(chr(ord("A") + k), side.says, side.title, found.stands == k)
                break
        out.append(replace(st, side=mark) if mark is not None else st)
    return out


def verify_output(evidence, prompt: Prompt, completion: Completion, gaps: list[str]) -> tuple[Verified, list[str]]:
    """The strictly parsed output verified against the admitted chunks, and all the gaps: the model's
    limitations first, then ``gaps`` and what verification found."""
    raw_statements, limitations = parse_output(completion.text)
    admitted = {c.chunk_id: c for c in prompt.packet.chunks}
    starts = {h.chunk_id: h.start for h in evidence.hits}
    verified = verify(raw_statements, admitted, starts, frozenset(h.chunk_id for h in evidence.hits if h.recognized))
    if verified.withheld:
        gaps.append(f"{verified.withheld} statement(s) withheld: none of their quotations could be verified in the "
                    "evidence.")  # fmt: skip
    if verified.replaced:
        gaps.append(f"{verified.replaced} statement text(s) said more than their quotations, so the quotations are "
                    "shown instead.")  # fmt: skip
    gaps += instruction_gaps(prompt.packet)
    gaps += recognized_gaps(evidence, verified.statements)
    return verified, [collapse(x) for x in limitations if collapse(x)] + gaps


def recognized_gaps(evidence, statements: list) -> list[str]:
    """A gap per document whose quoted passages were read by text recognition: the quotation is checked against
    the recognised text, which may hold a misread letter, so the reader should check it against the page."""
    hits = {h.chunk_id: h for h in evidence.hits}
    pages: dict[str, tuple[str, set[int]]] = {}
    for st in statements:
        for ref in st.references:
            hit = hits.get(ref.chunk_id)
            if ref.recognized and hit is not None:
                entry = pages.setdefault(hit.document_id, (hit.document_title, set()))
                if hit.page_start is not None:
                    entry[1].update(range(hit.page_start, (hit.page_end or hit.page_start) + 1))
    out = []
    for title, numbers in pages.values():
        where = f" (page{'s' * (len(numbers) > 1)} {', '.join(map(str, sorted(numbers)))})" if numbers else ""
        out.append(f"The quotations from \u201c{title}\u201d{where} come from text recognised in a scanned image, not "
                   "from a text layer: a letter may have been misread, so check them against the page.")  # fmt: skip
    return out


def no_evidence_answer(req: Request, evidence, notes: list[str], clock: Clock) -> Answer:
    """The no-evidence answer (no model call), with ``notes`` as its gaps."""
    clock.mark("end")
    return Answer(req.query, NO_EVIDENCE_ANSWER, (), tuple(dict.fromkeys(notes)), evidence.chunks_gathered, 0,
                  int(clock.ms("start", "end")), no_evidence=True,
                  timings=Timings(search_ms=clock.ms("start", "search")))  # fmt: skip


# ---------------------------------------------------------------- fitting the context


def prompt_for(req: Request, packet: EvidencePacket, offer: Offer) -> Prompt:
    """The messages for ``offer`` (the offered sentences of ``packet``) and the longest output it allows."""
    out_tokens = max_output_tokens(offer.quotes, req.style, offer.lead_quotes, offer.joined)
    shown = offered_text(packet, offer.quotes[in_prefix(offer, req.style):])
    return Prompt(packet, offer, messages_for(req.query, shown), out_tokens)


def in_prefix(offer: Offer, style: str) -> int:
    """How many of the offered quotes the reply's forced opening already quotes (the extract style's lead
    statements, grammar.lead_groups): the model reads those there, once, and the evidence before the question
    holds only the rest. The free style has no forced opening: its model reads every offered sentence."""
    if style != "extract" or not offer.quotes:
        return 0
    return sum(len(g) for g in lead_groups(offer.quotes, offer.lead_quotes, offer.joined))


def _fits(generator: Generator, prompt: Prompt) -> bool:
    return generator.prompt_tokens(prompt.messages) <= generator.context_size - prompt.out_tokens


def shrink_prompt(req: Request, evidence, prompt: Prompt) -> Prompt:
    """Smaller packets until the prompt the model reads (the offered sentences) fits with the longest
    output; a smaller packet may offer other sentences, under the same verdict of the gate.
    GenerationError when not even the instructions and one quotation fit."""
    gen = req.generator
    budget = prompt.packet.max_tokens
    while budget > 0:
        budget = int(budget * 0.8)
        packet = search.build_packet(evidence, budget)
        if packet.empty:
            break
        ranked = without_repeats(_in_order_of(rank_sentences(req, packet, evidence), prompt.offer.quotes),
                                 documents_of(packet))  # fmt: skip
        if not ranked:
            break
        lead = min(prompt.offer.lead_quotes, len(ranked))  # the lead count already decided
        joined = prompt.offer.joined and _same_lead(ranked, prompt.offer.quotes)
        base = offered(ranked, lead, prompt.offer.closest_only)._replace(joined=joined)
        # the sides of a disagreement or a comparison (offer.with_sides) are each heard even under the gate's doubt
        smaller = prompt_for(req, packet, base._replace(several=True) if prompt.offer.several else base.narrowed())
        if _fits(gen, smaller):
            return smaller
    raise GenerationError(f"The model's context ({gen.context_size} tokens) is too small for the instructions and "
                          "the longest possible answer.", hint="Configure a GGUF model with a larger context window.")


def _same_lead(ranked: list[Quote], chosen: list[Quote]) -> bool:
    """Whether a smaller packet's ``ranked`` still opens with the two sentences of a joined lead in ``chosen``."""
    return [(q.chunk_id, q.start) for q in ranked[:2]] == [(q.chunk_id, q.start) for q in chosen[:2]]


def _in_order_of(ranked: list[Quote], chosen: list[Quote]) -> list[Quote]:
    """``ranked`` with the sentences of ``chosen`` (the model's order, with its estimates) first: a smaller
    packet keeps the model's decision for the sentences it still holds."""
    order = {(q.chunk_id, q.start): (i, q) for i, q in enumerate(chosen)}
    kept = sorted(order[k] for k in ((q.chunk_id, q.start) for q in ranked) if k in order)
    return [q for _, q in kept] + [q for q in ranked if (q.chunk_id, q.start) not in order]
