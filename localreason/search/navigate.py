"""Finding documents and collections (find_items) and moving through a document's tree (deep_read, deep_expand)."""

from __future__ import annotations

import os

import numpy as np

from ..errors import NotFoundError, ValidationError
from ..ids import check_id
from ..types import DIRECTIONS, LEVEL_DOCUMENT, LEVEL_SECTION, Chunk, Document, ExpandResult, ItemHit, SearchHit
from .index import Index
from .scope import DEFAULT_SEARCH_LIMIT, Grant, clamp_limit, clean_id, clean_query


def find_items(index: Index, query: str, *, limit: object = DEFAULT_SEARCH_LIMIT, grant: Grant = None) -> list[ItemHit]:
    """Documents and collections about ``query``: literal title/path/name matches first, then by meaning (only those
    of the collections in ``grant``, when given)."""
    q = clean_query(query)
    k = clamp_limit(limit, DEFAULT_SEARCH_LIMIT, 100)
    needle = q.lower()
    docs = [d for d in index.store.document_previews() if grant is None or d[1] in grant]
    cols = [c for c in index.store.collection_rows() if grant is None or c.id in grant]
    if not docs and not cols:
        return []
    qvec = index.embedder.embed([q])[0]
    doc_vecs = {}
    for d in docs:
        doc_vecs[d[0]] = np.frombuffer(d[5], dtype=np.float32) if d[5] is not None else _mean_chunk_vector(index, d[0])
    scored: list[tuple[float, ItemHit]] = []
    shown_path = _below_its_folder(index)
    for d in docs:
        title, path = d[2], shown_path(d[3])
        literal = 2.0 if title.lower() == needle else 1.0 if needle in title.lower() or needle in path.lower() else 0.0
        vec = doc_vecs[d[0]]
        cos = float(np.dot(qvec, vec)) if vec is not None else 0.0
        scored.append((literal + cos, ItemHit(d[0], "document", title, _preview(d[4]), d[1])))
    for c in cols:
        literal = 2.0 if c.name.lower() == needle else 1.0 if needle in c.name.lower() else 0.0
        members = [doc_vecs[d[0]] for d in docs if d[1] == c.id and doc_vecs[d[0]] is not None]
        cos = 0.0
        if members:
            centre = np.mean(members, axis=0)
            cos = float(np.dot(qvec, centre / (np.linalg.norm(centre) or 1.0)))
        titles = [d[2] for d in docs if d[1] == c.id]
        preview = f"{len(titles)} document(s): " + "; ".join(titles[:5]) + (" ..." if len(titles) > 5 else "")
        scored.append((literal + cos, ItemHit(c.id, "collection", c.name, preview)))
    scored.sort(key=lambda s: -s[0])
    return [hit for score, hit in scored[:k] if score >= 0.15]


def _below_its_folder(index: Index):
    """``path`` -> the part of a document's path below the folder it was ingested from (a file ingested by name: its
    name). A query matched against the whole path matched every document under a folder of that name above the
    library ("home", "Documents", the user's name): each got the literal bonus over those that match by meaning."""
    roots = sorted({s["path"].rstrip(os.sep) for s in index.store.sources(every=True)}, key=len, reverse=True)

    def below(path: str) -> str:
        root = next((r for r in roots if path.startswith(r + os.sep)), None)
        return path[len(root) + 1:] if root is not None else os.path.basename(path)

    return below


def _mean_chunk_vector(index: Index, doc_id: str) -> np.ndarray | None:
    vectors = index.store.paragraph_vectors(doc_id)
    if not vectors:
        return None
    centre = np.mean(vectors, axis=0)
    return centre / (np.linalg.norm(centre) or 1.0)


def _preview(text: str, n: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[:n].rsplit(" ", 1)[0] + " …"


def _chunk(index: Index, chunk_id: object, grant: Grant) -> tuple[Chunk, Document]:
    """The chunk with this id and its document; a malformed id is a ValidationError, an unknown one NotFoundError,
    and so is one outside the collections of ``grant`` (a key learns nothing of what it may not see)."""
    chunk_id = clean_id(chunk_id)
    check_id(chunk_id, "chunk", "chunk id")
    chunk = index.store.chunk_row(chunk_id)
    doc = index.store.document_row(chunk.document_id) if chunk is not None else None
    if chunk is None or doc is None or (grant is not None and doc.collection_id not in grant):
        raise NotFoundError(f"No chunk {chunk_id} in this library.")
    return chunk, doc


def deep_read(index: Index, chunk_id: str, *, grant: Grant = None) -> dict:
    """One chunk in full, with its place in the tree (parent, position, siblings, children, document)."""
    chunk, doc = _chunk(index, chunk_id, grant)
    siblings, children = index.store.child_count(chunk.parent_id), index.store.child_count(chunk.id)
    hit = SearchHit.of(chunk, doc.title)
    return {**hit.to_dict(), "tokenCount": chunk.token_count, "siblingCount": siblings, "childCount": children,
            "collectionId": doc.collection_id, "sourcePath": doc.source_path}  # fmt: skip


def deep_expand(index: Index, chunk_id: str, direction: str, *, window: object = 2,
                grant: Grant = None) -> ExpandResult:  # fmt: skip
    """Move from a chunk through its document's tree: up, down, previous, next or surrounding."""
    if not isinstance(direction, str) or direction.strip().lower() not in DIRECTIONS:
        raise ValidationError(f"Unknown direction {direction!r}.", hint=f"Use one of: {', '.join(DIRECTIONS)}.")
    direction = direction.strip().lower()
    n = clamp_limit(window, 2, 20, "window")
    chunk, doc = _chunk(index, chunk_id, grant)
    title = doc.title

    def result(chunks, reason="", document=None) -> ExpandResult:
        items = tuple(SearchHit.of(c, title) for c in chunks)
        return ExpandResult(chunk.id, direction, items, "" if items or document else reason, document)

    if direction == "up":
        if chunk.level == LEVEL_SECTION:
            return result([], document={"id": doc.id, "title": doc.title, "level": LEVEL_DOCUMENT,
                                        "collectionId": doc.collection_id})  # fmt: skip
        return result([index.store.chunk_row(chunk.parent_id)])
    if direction == "down":
        kids = [c for c in index.store.chunk_rows(chunk.document_id) if c.parent_id == chunk.id]
        return result(sorted(kids, key=lambda c: c.index), "a paragraph-level chunk has no children")
    # Siblings in reading order across the whole document: previous/next cross section boundaries.
    same_level = index.store.chunk_rows(chunk.document_id, chunk.level)
    same_level.sort(key=lambda c: (c.start, c.index))
    pos = next(i for i, c in enumerate(same_level) if c.id == chunk.id)
    if direction == "previous":
        return result(same_level[pos - 1:pos] if pos else [], "this is the first chunk of the document")
    if direction == "next":
        return result(same_level[pos + 1:pos + 2], "this is the last chunk of the document")
    around = same_level[max(0, pos - n):pos] + same_level[pos + 1:pos + 1 + n]
    return result(around, "the document has no other chunk at this level")
