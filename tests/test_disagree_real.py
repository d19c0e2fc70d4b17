"""Sources that disagree, with the real models (embedding model, packaged reader, GGUF model) on a library that
holds the bundled samples beside realistic near-copies: two versions of a manual with one figure changed, a
draft and a final policy, a comparison over a collection (the spec's own example). Each side is cited, the
disagreement is named, no single phrase leads; the samples' own questions raise no alarm."""

from __future__ import annotations

import pytest

from localreason.config import load_settings
from localreason.library import Library

from test_disagree import GRAPHQL, LUNCH, NEW, OLD, REST, ROUTER, WARRANTY

pytestmark = pytest.mark.real_model

DRAFT = ("# Remote work policy (draft)\n\nThis policy sets out how staff may work away from the office.\n\n## Days\n\n"
         "Employees may work remotely for up to two days a week, agreed with their team lead in advance. Core hours "
         "are 10:00 to 15:00.\n\n## Approval\n\nApproval from a manager is required before working abroad.\n")
FINAL = (DRAFT.replace("(draft)", "(final)").replace("up to two days", "up to three days")
         .replace("is required before", "is not required before"))  # fmt: skip


@pytest.fixture(scope="module")
def library(tmp_path_factory, real_embedder):
    from localreason.demo import samples_dir

    root = tmp_path_factory.mktemp("conflicts")
    folders = {"manuals": {"manual-2023.md": OLD, "manual-2025.md": NEW, "router.md": ROUTER},
               "policies": {"remote-draft.md": DRAFT, "remote-final.md": FINAL},
               "API Decisions": {"adr-7.md": REST, "adr-12.md": GRAPHQL}, "office": {"lunch.md": LUNCH}}  # fmt: skip
    lib = Library(settings=load_settings(root / "home"), embedder=real_embedder)
    lib.ingest([samples_dir()], "samples", exclude=["LICENSES*"])
    for collection, files in folders.items():
        (root / collection).mkdir()
        for name, text in files.items():
            (root / collection / name).write_text(text)
        lib.ingest([root / collection], collection)
    yield lib
    lib.close()


@pytest.mark.parametrize("question, sides", [
    (WARRANTY, {"Heat pump manual (2025)": "three years", "Heat pump manual (2023)": "five years"}),
    ("How many days a week may employees work remotely?", {"Remote work policy (draft)": "two days",
                                                           "Remote work policy (final)": "three days"}),
    ("Is approval from a manager required before working abroad?", {"Remote work policy (final)": "not required"}),
])  # fmt: skip
def test_each_side_is_cited_and_the_disagreement_is_named(library, question, sides):
    a = library.ask(question, max_tokens=1000)
    marked = {s.side.document_title: s for s in a.statements if s.side is not None}
    assert set(marked) >= set(sides), a.to_dict()
    for title, says in sides.items():
        assert says in marked[title].side.says and says.split()[-1] in marked[title].references[0].quotation
    assert all(s.phrase is None for s in a.statements), "no single phrase leads"
    assert any("The sources disagree" in g and all(f"\u201c{t}\u201d" in g for t in sides) for g in a.gaps), a.gaps
    assert a.meta["citationsDropped"] == 0


def test_the_specs_comparison_cites_both_decisions(library):
    collection = next(c for c in library.collections() if c.name == "API Decisions")
    a = library.ask("Which interface is required, REST or GraphQL?", collection_id=collection.id, limit=12)
    cited = {c.document_title for c in a.citations}
    assert cited == {"ADR 7: Public API style", "ADR 12: Mobile backend"}, a.to_dict()
    assert "REST" in a.statements[0].references[0].quotation and "GraphQL" in a.statements[1].references[0].quotation
    assert all(s.phrase is None for s in a.statements)


@pytest.mark.parametrize("question", [
    "When did the Apollo program run?", "How large is the area covered by the Amazon rainforest?",
    "Where did the Black Death originate?", "How much of Europe's population did the Black Death kill?",
    "How many ethernet ports does the router have?", "When is lunch served?",
])  # fmt: skip
def test_ordinary_questions_raise_no_alarm(library, question):
    a = library.ask(question, max_tokens=1000)
    assert all(s.side is None for s in a.statements) and not any("disagree" in g for g in a.gaps), a.to_dict()
