"""Paragraph-retrieval libraries of the shared SQuAD-format sets (bench/data/qa.py): every paragraph of a set is a
document, one collection per article; each question's relevant document is the paragraph it was written on.
bench.quality.retrieval, bench.speed.retrieval and bench.speed.reason search them (``paragraph_library``).

Kinds of text (``KINDS``): SQuAD 1.1 dev (Wikipedia), SQuAD-shifts new_wiki (newer Wikipedia), reddit (posts;
its one "article" is cut into one collection a post) and Amazon reviews.
"""

from __future__ import annotations

import random
import re
import tempfile
import time
from pathlib import Path

from bench.data import qa

KINDS = {"squad-dev": "Wikipedia (SQuAD 1.1 dev)", "new_wiki": "newer Wikipedia (SQuAD-shifts)",
         "reddit": "reddit posts (SQuAD-shifts)", "amazon": "product reviews (SQuAD-shifts)"}  # fmt: skip


def load_squad(qa_data: Path | str | None = None) -> list[dict]:
    """SQuAD 1.1 dev's 48 articles: [{'title', 'paragraphs': [{'context', 'qas': [{'id', 'question', 'answers'}]}]}]."""
    return qa.articles("squad-dev", qa_data)


def kind_articles(kind: str, qa_data: Path | str | None = None) -> list[dict]:
    """The articles of a kind of text (KINDS); reddit's single article becomes one article a post."""
    articles = qa.articles(kind, qa_data)
    if len(articles) == 1:
        return [{"title": f"post-{i:04d}", "paragraphs": [p]} for i, p in enumerate(articles[0]["paragraphs"])]
    return articles


def folder_name(title: str) -> str:
    return re.sub(r"[^\w.-]+", "_", title)[:80]


def write_corpus(articles: list[dict], folder: Path) -> None:
    """One folder per article, one text file per paragraph (``NNN.txt``), written once."""
    if (folder / ".complete").is_file():
        return
    for art in articles:
        d = folder / folder_name(art["title"])
        d.mkdir(parents=True, exist_ok=True)
        for i, para in enumerate(art["paragraphs"]):
            (d / f"{i:03d}.txt").write_text(para["context"].strip() + "\n", encoding="utf-8")
    (folder / ".complete").write_text("ok")


def paragraph_library(kind: str, data_dir: Path, qa_data: Path | str | None = None, embedder=None,
                      store: str = "local"):  # fmt: skip
    """(library, embedder, settings, articles, corpus folder): each paragraph of ``kind`` a document, one collection
    per article, ingested into a new temporary library (``store``: local, or an empty PostgreSQL database's URL);
    the corpus is written once under ``data_dir``."""
    from localreason.config import load_settings
    from localreason.library import Library

    articles = kind_articles(kind, qa_data)
    corpus = (data_dir / "corpus" / kind).resolve()  # documents are stored by absolute path
    write_corpus(articles, corpus)
    home = Path(tempfile.mkdtemp(prefix=f"lr-{kind}-"))
    settings = load_settings(home, store=store)
    lib = Library(settings=settings, embedder=embedder)
    embedder = lib.embedder
    t = time.perf_counter()
    for art in articles:
        lib.ingest([corpus / folder_name(art["title"])], folder_name(art["title"]))
    print(f"{kind}: ingested {len(lib.documents())} paragraphs as documents, {lib.store.paragraph_count()} chunks, "
          f"in {time.perf_counter() - t:.0f} s", flush=True)  # fmt: skip
    return lib, embedder, settings, articles, corpus


def squad_library(data_dir: Path, qa_data: Path | str | None = None):
    """``paragraph_library`` of SQuAD 1.1 dev."""
    return paragraph_library("squad-dev", data_dir, qa_data)


def paragraph_questions(lib, articles: list[dict], corpus: Path, n: int, seed: int = 1234):
    """([(question, gold document id, article title)], {source path: document id}, {chunk rowid: document id}); ``n``
    > 0: a fixed random sample of that many questions. Unanswerable questions are not asked."""
    path_doc = {d.source_path: d.id for d in lib.documents()}
    chunk_doc = {r[0]: r[1] for r in lib.store.db.execute("SELECT rowid, document_id FROM chunks WHERE level = 2")}
    qs = []
    for art in articles:
        for i, para in enumerate(art["paragraphs"]):
            gold = path_doc[str(corpus / folder_name(art["title"]) / f"{i:03d}.txt")]
            qs += [(q["question"], gold, art["title"]) for q in para["qas"] if not q.get("is_impossible")]
    if n and n < len(qs):
        qs = random.Random(seed).sample(qs, n)
    return qs, path_doc, chunk_doc


def squad_questions(lib, articles: list[dict], corpus: Path, n: int):
    """``paragraph_questions`` as (question, gold document id) pairs."""
    qs, path_doc, chunk_doc = paragraph_questions(lib, articles, corpus, n)
    return [(q, gold) for q, gold, _ in qs], path_doc, chunk_doc
