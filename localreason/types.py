"""Small frozen values that cross module boundaries (and the public API)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
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


@dataclass
class IngestReport:
    """The summary of one ingest or sync run."""

    collection_id: str
    collection: str
    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0

    def by_status(self, status: str) -> list[FileResult]:
        return [f for f in self.files if f.status == status]

    @property
    def counts(self) -> dict[str, int]:
        keys = ("added", "updated", "unchanged", "removed", "skipped", "failed")
        return {k: len(self.by_status(k)) for k in keys}

    @property
    def ok(self) -> bool:
        return not self.by_status("failed")

    def to_dict(self) -> dict[str, Any]:
        return {
            "collectionId": self.collection_id,
            "collection": self.collection,
            "counts": self.counts,
            "seconds": round(self.seconds, 3),
            "files": [f.to_dict() for f in self.files],
        }
