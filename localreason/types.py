"""Small frozen values that cross module boundaries (and the public API)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

# Levels of the document tree. The document itself is the root (level 0);
# sections hang under it and paragraph-level chunks under sections.
LEVEL_DOCUMENT = 0
LEVEL_SECTION = 1
LEVEL_PARAGRAPH = 2
LEVEL_NAMES = {LEVEL_DOCUMENT: "document", LEVEL_SECTION: "section", LEVEL_PARAGRAPH: "paragraph"}


class _AsDict:
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with camelCase keys, as the public API and CLI print them."""
        return {_camel(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        """The value back from its ``to_dict`` (e.g. received over HTTP): lists become tuples again, keys that
        ``to_dict`` derives (such as ``levelName``) are ignored, and a missing field takes its default."""
        values = {}
        for f in fields(cls):
            key = _camel(f.name)
            if key in data:
                value = data[key]
                values[f.name] = tuple(value) if str(f.type).startswith("tuple") and isinstance(value, list) else value
        return cls(**values)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.capitalize() for p in rest)


@dataclass(frozen=True)
class Collection(_AsDict):
    id: str
    name: str
    created_at: str
    document_count: int = 0
    chunk_count: int = 0


@dataclass(frozen=True)
class RecognizedPage(_AsDict):
    """A page of a document whose text was read by text recognition from an image (a scanned PDF page, a frame of an
    image file), not from a text layer (``Document.recognized``)."""

    page: int
    """1-based page (or image frame) number."""
    confidence: float
    """The recogniser's mean confidence over the page's lines (0 to 1; under ``ocr_min_confidence`` is low)."""
    lines: int = 0
    failed: str = ""
    """Why the page could not be read (its time limit, its size), or empty: such a page has no recognised text."""


@dataclass(frozen=True)
class Document(_AsDict):
    id: str
    collection_id: str
    title: str
    source_path: str
    format: str
    content_hash: str
    size_bytes: int
    char_count: int
    token_count: int
    chunk_count: int
    created_at: str
    updated_at: str
    recognized: tuple[RecognizedPage, ...] = ()
    """The pages read by text recognition (empty for a document read wholly from its text)."""

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["recognized"] = [p.to_dict() for p in self.recognized]
        return d


@dataclass(frozen=True)
class Chunk(_AsDict):
    """A node of a document's tree below the document itself."""

    id: str
    document_id: str
    level: int
    parent_id: str
    """The parent chunk id, or the document id for sections."""
    index: int
    """Position among siblings (0-based)."""
    section_path: tuple[str, ...]
    """The headings above this chunk, outermost first."""
    token_count: int
    text: str
    start: int
    """Character offset of ``text`` in the document's stored text."""
    end: int
    page_start: int | None = None
    page_end: int | None = None
    recognized: bool = False
    """Its text (or part of it) was read by text recognition from a scanned page or photo, not from a text layer:
    a letter may be misread."""

    @property
    def level_name(self) -> str:
        return LEVEL_NAMES[self.level]


@dataclass(frozen=True)
class FileResult(_AsDict):
    """What ingestion did with one file."""

    path: str
    status: str
    """One of: added, updated, unchanged, removed, skipped, failed."""
    reason: str = ""
    document_id: str | None = None
    chunks: int = 0
    recognized: tuple[RecognizedPage, ...] = ()
    """The file's pages read by text recognition, with their confidence (in JSON only when there are any)."""

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if not self.recognized:
            del d["recognized"]
        return d

    def detail(self) -> str:
        """The path, the chunks written and the reason or note, as a line of a report shows them after the status."""
        chunks = f" ({self.chunks} chunk{'s' * (self.chunks != 1)})" if self.status in ("added", "updated") else ""
        return f"{self.path}{chunks}" + (f": {self.reason}" if self.reason else "")


@dataclass
class IngestReport:
    """The summary of one ingest or sync run."""

    collection_id: str
    collection: str
    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0
    stopped: str = ""
    """Why the run stopped before the end (a full disk), or empty; the files not done are listed as failed."""
    kept: list[tuple[str, int, str]] = field(default_factory=list)
    """(folder or file, documents, why) for the documents whose files only seem gone (ingest/prune.py): a folder
    empty now (the mount point of a drive not mounted), a link to nowhere, a folder that could not be read. Pruning
    kept them; ``why`` says so and what removes them."""
    made: bool = True
    """False when the collection was new and nothing was written into it: it was not made (``collectionId`` is then
    null, since no collection has the id it would have had)."""

    def by_status(self, status: str) -> list[FileResult]:
        return [f for f in self.files if f.status == status]

    @property
    def counts(self) -> dict[str, int]:
        keys = ("added", "updated", "unchanged", "removed", "skipped", "failed")
        return {k: len(self.by_status(k)) for k in keys}

    @property
    def ok(self) -> bool:
        return not self.by_status("failed") and not self.stopped

    def to_dict(self) -> dict[str, Any]:
        return {
            "collectionId": self.collection_id if self.made else None,
            "collection": self.collection,
            **({} if self.made else {"collectionMade": False}),
            "counts": self.counts,
            "seconds": round(self.seconds, 3),
            **({"stopped": self.stopped} if self.stopped else {}),
            **({"kept": [{"folder": f, "documents": n, "why": why} for f, n, why in self.kept]} if self.kept else {}),
            "files": [f.to_dict() for f in self.files],
        }


# ---------------------------------------------------------------- retrieval values
# Similarity scores are internal: none of these values carries one.


@dataclass(frozen=True)
class Elsewhere(_AsDict):
    """Another passage with the same text as a search hit (a copy of the file, another version of it)."""

    chunk_id: str
    document_id: str
    document_title: str


@dataclass(frozen=True)
class SearchHit(_AsDict):
    """A chunk as retrieval returns it (deep_search, deep_read, deep_expand, evidence)."""

    chunk_id: str
    document_id: str
    document_title: str
    level: int
    chunk_index: int
    parent_id: str
    section_path: tuple[str, ...]
    content: str
    start: int = 0
    end: int = 0
    page_start: int | None = None
    page_end: int | None = None
    also_in: tuple[Elsewhere, ...] = ()
    """deep_search: the other passages among its candidates with the same text, shown once here."""
    recognized: bool = False
    """Its text (or part of it) was read by text recognition from a scanned page or photo: a letter may be misread."""

    @classmethod
    def of(cls, chunk: Chunk, title: str) -> "SearchHit":
        return cls(chunk.id, chunk.document_id, title, chunk.level, chunk.index, chunk.parent_id,
                   chunk.section_path, chunk.text, chunk.start, chunk.end, chunk.page_start, chunk.page_end,
                   recognized=chunk.recognized)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["sectionPath"] = list(self.section_path)
        d["levelName"] = LEVEL_NAMES[self.level]
        d["alsoIn"] = [e.to_dict() for e in self.also_in]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SearchHit":
        hit = super().from_dict(data)
        elsewhere = tuple(Elsewhere.from_dict(e) if isinstance(e, dict) else e for e in hit.also_in)
        return replace(hit, also_in=elsewhere)


@dataclass(frozen=True)
class ItemHit(_AsDict):
    """A document or collection found by find_items."""

    id: str
    type: str
    title: str
    preview: str
    collection_id: str | None = None


DIRECTIONS = ("up", "down", "previous", "next", "surrounding")
"""The moves deep_expand makes through a document's tree (an ExpandResult's ``direction``): here, in the vocabulary,
so that the servers' request schemas name them without importing search (numpy) at their start."""


@dataclass(frozen=True)
class ExpandResult(_AsDict):
    """What a move through the document tree found; empty with a reason when the move leads nowhere."""

    chunk_id: str
    direction: str
    items: tuple[SearchHit, ...]
    reason: str = ""
    document: dict | None = None
    """For ``up`` from a section: the document itself (id, title), which is not a chunk."""

    def to_dict(self) -> dict[str, Any]:
        return {"chunkId": self.chunk_id, "direction": self.direction, "items": [h.to_dict() for h in self.items],
                "reason": self.reason, **({"document": self.document} if self.document else {})}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ExpandResult":
        return cls(data["chunkId"], data["direction"], tuple(SearchHit.from_dict(h) for h in data["items"]),
                   data.get("reason", ""), data.get("document"))  # fmt: skip


@dataclass(frozen=True)
class Evidence:
    """The ranked evidence progressive search gathered for one query (scores stay inside)."""

    query: str
    hits: tuple[SearchHit, ...]
    strong: bool
    """True when the best evidence passes the fixed relevance guard."""
    scoped: bool
    """True when the caller gave a documentId or collectionId."""
    steps: tuple[str, ...] = ()
    """What the search did, in words (for --explain and debugging)."""
    relevance: float = field(default=0.0, repr=False)
    """The score behind ``strong`` (internal: reason's gate reuses it; never serialised)."""

    @property
    def chunks_gathered(self) -> int:
        return len(self.hits)

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "strong": self.strong, "scoped": self.scoped,
                "chunksGathered": self.chunks_gathered, "steps": list(self.steps),
                "hits": [h.to_dict() for h in self.hits]}  # fmt: skip


@dataclass(frozen=True)
class PacketChunk(_AsDict):
    chunk_id: str
    document_id: str
    document_title: str
    content: str
    """The text admitted (a prefix of the chunk's text when ``truncated``)."""
    truncated: bool = False


@dataclass(frozen=True)
class EvidencePacket:
    """The evidence of one answer, within a token budget: what its quotations are chosen from (the model
    reads the chosen sentences in these wrappers)."""

    query: str
    text: str
    chunks: tuple[PacketChunk, ...]
    tokens: int
    max_tokens: int
    chunks_gathered: int
    strong: bool
    scoped: bool
    truncated: bool
    """True when the budget cut the last admitted chunk or left gathered chunks out."""

    @property
    def empty(self) -> bool:
        return not self.chunks

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "packet": self.text, "tokens": self.tokens, "maxTokens": self.max_tokens,
                "chunksGathered": self.chunks_gathered, "chunksAdmitted": len(self.chunks),
                "strong": self.strong, "scoped": self.scoped, "truncated": self.truncated,
                "chunks": [c.to_dict() for c in self.chunks]}  # fmt: skip
