"""SQuAD v1.1 dev for benchmarks: fetched once from the bigbench source archive on PyPI, cached; and the library
of its paragraphs that bench.quality.retrieval and bench.speed.retrieval both search (``squad_library``).

The file (CC BY-SA 4.0) is inside `bigbench==1.0.0`'s sdist at
bigbench/benchmark_tasks/squad_shifts/squaddev_v1.1.json.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path


def squad_path(data_dir: Path) -> Path:
    """The cached SQuAD dev JSON, downloading and extracting it the first time."""
    from bench.data.qa_sets import member

    return member(data_dir, "squaddev_v1.1.json")


def load_squad(data_dir: Path) -> list[dict]:
    """The 48 articles: [{'title', 'paragraphs': [{'context', 'qas': [{'id', 'question', 'answers'}]}]}]."""
    return json.loads(squad_path(data_dir).read_text())["data"]


def write_corpus(articles: list[dict], folder: Path) -> None:
    """One folder per article, one text file per paragraph (``NNN.txt``), written once."""
    if (folder / ".complete").is_file():
        return
    for art in articles:
        d = folder / art["title"]
        d.mkdir(parents=True, exist_ok=True)
        for i, para in enumerate(art["paragraphs"]):
            (d / f"{i:03d}.txt").write_text(para["context"].strip() + "\n", encoding="utf-8")
    (folder / ".complete").write_text("ok")


def squad_library(data_dir: Path):
    """(library, embedder, settings, articles, corpus folder): each SQuAD dev paragraph a document, one collection
    per article, ingested into a new temporary library."""
    from localreason.config import load_settings
    from localreason.embed import SentenceTransformerEmbedder
    from localreason.library import Library
    from localreason.models import resolve_embedding_model

    articles = load_squad(data_dir)
    corpus = (data_dir / "corpus").resolve()  # documents are stored by absolute path
    write_corpus(articles, corpus)
    home = Path(tempfile.mkdtemp(prefix="lr-squad-"))
    settings = load_settings(home)
    embedder = SentenceTransformerEmbedder(resolve_embedding_model(settings), settings.embed_batch_size)
    lib = Library(settings=settings, embedder=embedder)
    t = time.perf_counter()
    for art in articles:
        lib.ingest([corpus / art["title"]], art["title"][:80])
    print(f"ingested {len(lib.documents())} paragraphs as documents, {lib.store.paragraph_count()} chunks, "
          f"in {time.perf_counter() - t:.0f} s", flush=True)  # fmt: skip
    return lib, embedder, settings, articles, corpus


def squad_questions(lib, articles: list[dict], corpus: Path, n: int):
    """([(question, gold document id)], {source path: document id}, {chunk rowid: document id}); ``n`` > 0: a fixed
    random sample of that many questions."""
    path_doc = {d.source_path: d.id for d in lib.documents()}
    chunk_doc = {r[0]: r[1] for r in lib.store.db.execute("SELECT rowid, document_id FROM chunks WHERE level = 2")}
    qs = []
    for art in articles:
        for i, para in enumerate(art["paragraphs"]):
            gold = path_doc[str(corpus / art["title"] / f"{i:03d}.txt")]
            qs += [(qa["question"], gold) for qa in para["qas"]]
    if n:
        qs = random.Random(1234).sample(qs, n)
    return qs, path_doc, chunk_doc
