"""Functional: the real all-MiniLM-L6-v2 embeddings, real SQLite/FAISS, real files of every format."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from localreason.config import load_settings
from localreason.library import Library

from files import make_docx, make_pdf

pytestmark = pytest.mark.real_model
SAMPLES = Path(__file__).resolve().parent.parent / "localreason" / "samples"


@pytest.fixture
def real_lib(isolated_home, real_embedder):
    library = Library(settings=load_settings(isolated_home), embedder=real_embedder)
    yield library
    library.close()


def top_document(lib: Library, question: str) -> str:
    q = lib.embedder.embed([question])[0]
    _, rowids = lib.vectors.search(q, 1)
    doc_id = lib.store.db.execute("SELECT document_id FROM chunks WHERE rowid = ?", (int(rowids[0]),)).fetchone()[0]
    return lib.document(doc_id).title


def test_every_format_with_real_embeddings(real_lib, tmp_path):
    folder = tmp_path / "mixed"
    shutil.copytree(SAMPLES, folder, ignore=shutil.ignore_patterns("LICENSES.md"))
    make_pdf(folder / "router.pdf", [["Router quick start.", "Plug the router into the wall socket."],
                                      ["To reset the router, hold the pin-hole button for thirty seconds."]])  # fmt: skip
    make_docx(folder / "inverter.docx", "Solar Inverter Guide",
              [("Warranty", ["The solar inverter is covered by a five year warranty."])])  # fmt: skip
    (folder / "backup.py").write_text("def backup(path):\n    \"\"\"Copy the database file to the backup disk.\"\"\"\n")
    report = real_lib.ingest([folder], "mixed")
    assert report.ok and report.counts["added"] == 8
    formats = {d.format for d in real_lib.documents()}
    assert formats == {"markdown", "rst", "html", "pdf", "docx", "code"}
    assert real_lib.vectors.size == real_lib.store.paragraph_count() > 100
    assert top_document(real_lib, "What disease killed much of Europe's population in the 14th century?") == \
        "Black Death"  # fmt: skip
    assert top_document(real_lib, "Which moon landing missions did NASA fly?") == "Apollo program"
    assert top_document(real_lib, "How do I reset the router?") == "router.pdf"
    assert top_document(real_lib, "How long is the inverter warranty?") == "Solar Inverter Guide"
    assert top_document(real_lib, "How do I catch an exception with try and except?") == "Errors and Exceptions"
    pdf = next(d for d in real_lib.documents() if d.format == "pdf")
    pages = {c.page_start for c in real_lib.chunks(pdf.id, 2)}
    assert pages == {1, 2}


def test_real_reingest_is_a_no_op_and_reopen_loads_the_saved_index(real_lib, isolated_home, real_embedder):
    real_lib.ingest([SAMPLES], "samples", exclude=["LICENSES*"])
    size = real_lib.vectors.size
    real_lib.close()
    again = Library(settings=load_settings(isolated_home), embedder=real_embedder)
    report = again.ingest([SAMPLES], "samples", exclude=["LICENSES*"])
    assert report.counts["unchanged"] == 5 and report.counts["added"] == 0
    assert again.vectors.size == size
    assert top_document(again, "How large is the Amazon rainforest?") == "Amazon rainforest"
    again.close()
