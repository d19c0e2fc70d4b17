"""The values of an answer: statements with verified references, citations, timings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NO_EVIDENCE_ANSWER = ("No sufficiently relevant evidence was retrieved for this question within the requested "
                      "scope and retrieval limits.")  # fmt: skip


@dataclass(frozen=True)
class Reference:
    chunk_id: str
    quotation: str
    document_id: str
    start: int
    """Character offsets of the quotation in its document's stored text."""
    end: int
    recognized: bool = False
    """The quotation's passage was read by text recognition from a scanned page or photo: it is verified against
    the recognised text, which may hold a misread letter (the answer's gaps say so)."""

    def to_dict(self) -> dict[str, Any]:
        return {"chunkId": self.chunk_id, "quotation": self.quotation, "documentId": self.document_id,
                "start": self.start, "end": self.end, "recognized": self.recognized}  # fmt: skip


@dataclass(frozen=True)
class AnswerPhrase:
    """The phrase that answers, inside one of its statement's verified quotations (phrase.py): a name, a date,
    a number, a place. ``start``/``end`` are offsets in the document's stored text, like a Reference's, so
    ``reference.start <= start < end <= reference.end`` for the reference of ``chunk_id`` it lies in."""

    text: str
    chunk_id: str
    start: int
    end: int

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "chunkId": self.chunk_id, "start": self.start, "end": self.end}


@dataclass(frozen=True)
class SideMark:
    """The side a statement speaks for when the sources disagree (disagree.py): its letter in the answer's order
    ("A", "B" ...), what its source says where they differ, the source's title, and whether the evidence itself
    settles on it (``stands``)."""

    label: str
    says: str
    document_title: str
    stands: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "says": self.says, "documentTitle": self.document_title, "stands": self.stands}


@dataclass(frozen=True)
class Statement:
    text: str
    references: tuple[Reference, ...]
    phrase: AnswerPhrase | None = None
    """The answer phrase inside one of ``references`` (only on an answer's first statement, when the reader
    found one); the answer's prose leads with it."""
    side: SideMark | None = None
    """When the sources disagree: the side this statement speaks for (no single phrase then leads)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "references": [r.to_dict() for r in self.references]}
        if self.phrase is not None:
            out["answerPhrase"] = self.phrase.to_dict()
        if self.side is not None:
            out["side"] = self.side.to_dict()
        return out

    def phrase_in(self, ref: Reference) -> tuple[int, int] | None:
        """Where the answer phrase lies in ``ref``'s quotation (offsets into ``ref.quotation``), or None when
        it is not in that reference."""
        p = self.phrase
        if p is None or p.chunk_id != ref.chunk_id or not (ref.start <= p.start and p.end <= ref.end):
            return None
        return p.start - ref.start, p.end - ref.start


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
    rerank_ms: float = 0.0
    """The model reading the best sentences with the question (rerank.py)."""
    rerank_tokens: int = 0
    read_ms: float = 0.0
    """The reader reading the best sentences with the question (read.py)."""
    prompt_ms: float = 0.0
    generate_ms: float = 0.0
    verify_ms: float = 0.0
    phrase_ms: float = 0.0
    """Choosing the answer phrase, the passage reader's second reading included (phrase.py, read.py)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0

    STAGES = {"search": "search_ms", "packet": "packet_ms", "read": "read_ms", "rerank": "rerank_ms",
              "prompt": "prompt_ms", "generate": "generate_ms", "verify": "verify_ms", "phrase": "phrase_ms"}  # fmt: skip
    """The stages of an answer as ``stagesMs`` names them, none inside another: gathering the evidence; packing it,
    ranking its sentences, choosing the quotations offered and fitting the prompt; the readers reading the best
    sentences; the model re-ordering them (off by default); the model reading its prompt; writing; verifying the
    quotations; choosing the answer phrase (the passage reader's second reading). What is left of ``latencyMs`` is
    the model call's own setting up (the grammar, the tokens)."""

    def stages(self) -> dict[str, float]:
        return {name: round(getattr(self, attr), 1) for name, attr in self.STAGES.items()}

    @classmethod
    def from_stages(cls, stages: dict | None) -> "Timings":
        """The timings back from ``stages()`` (an answer received over HTTP); unknown or missing ones are 0."""
        stages = stages if isinstance(stages, dict) else {}
        return cls(**{attr: float(stages.get(name, 0.0) or 0.0) for name, attr in cls.STAGES.items()})


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
    def meta(self) -> dict[str, Any]:
        """The spec's three fields, and ``stagesMs``: where the time went, stage by stage (``Timings``)."""
        return {"chunksGathered": self.chunks_gathered, "citationsDropped": self.citations_dropped,
                "latencyMs": self.latency_ms, "stagesMs": self.timings.stages()}  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "citations": [c.to_dict() for c in self.citations], "gaps": list(self.gaps),
                "meta": self.meta, "statements": [s.to_dict() for s in self.statements]}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any], query: str = "") -> "Answer":
        """The answer back from its ``to_dict`` (e.g. received over HTTP). ``to_dict`` carries neither the query
        nor the token counts nor ``no_evidence``: the query is given, the rest take their defaults."""
        meta = data["meta"]
        return cls(
            query=query, answer=data["answer"],
            citations=tuple(Citation(c["chunkId"], c["documentId"], c["documentTitle"]) for c in data["citations"]),
            gaps=tuple(data["gaps"]), chunks_gathered=meta["chunksGathered"],
            citations_dropped=meta["citationsDropped"], latency_ms=meta["latencyMs"],
            timings=Timings.from_stages(meta.get("stagesMs")),
            statements=tuple(Statement(s["text"], tuple(Reference(r["chunkId"], r["quotation"], r["documentId"],
                                                                  r["start"], r["end"], bool(r.get("recognized")))
                                                        for r in s["references"]),
                                       _phrase_of(s.get("answerPhrase")), _side_of(s.get("side")))
                             for s in data.get("statements", ())),
        )  # fmt: skip

    def _repr_markdown_(self) -> str:
        """The notebook view: ``render.answer_markdown``."""
        from ..render import answer_markdown

        return answer_markdown(self)


def _phrase_of(data: dict | None) -> AnswerPhrase | None:
    return None if not data else AnswerPhrase(data["text"], data["chunkId"], data["start"], data["end"])


def _side_of(data: dict | None) -> SideMark | None:
    return None if not data else SideMark(data["label"], data["says"], data["documentTitle"], bool(data.get("stands")))
