"""Re-reading search's first candidates (issue #52): search.rerank with the packaged passage reader, and
bench.quality.rerank's orders."""

from __future__ import annotations

import numpy as np

from localreason import models
from localreason.readers import Reader
from localreason.search.rerank import reread

from bench.quality.rerank import order, ranks_of


def test_the_passage_reader_rereads_the_answering_passage_above_ones_that_share_its_words():
    reader = Reader(models.PASSAGE_DIR)
    texts = ["The warranty card is in the box. Keep it with the receipt.",
             "The router's warranty lasts two years from the date of purchase.",
             "Warranty claims are handled by the shop where you bought it."]  # fmt: skip
    logits = reread(reader, "How long does the router warranty last?", texts)
    assert logits.shape == (3,) and np.isfinite(logits).all()
    assert int(np.argmax(logits)) == 1, logits
    assert reread(reader, "Anything?", []).shape == (0,)


def test_the_reread_order_moves_only_the_first_k_and_weighs_the_fused_score():
    rec = {"hybrid": ["a", "b", "c", "d"], "fused": [3.0, 2.0, 1.0, 0.0], "logits": [-2.0, 0.0, 5.0, 9.0],
           "gold": ["c"], "lex": [], "dense": []}  # fmt: skip
    assert order(rec, 3, 0.0) == ["c", "b", "a", "d"], "the reader alone over the first three; the rest as they were"
    assert order(rec, 2, 100.0) == ["a", "b", "c", "d"], "a heavy fused weight keeps the hybrid's order"
    assert ranks_of([rec], lambda r: order(r, 3, 0.0))["R@1"] == 1.0
    assert ranks_of([rec], lambda r: r["hybrid"])["MRR@10"] == 1 / 3


class _Store:
    def __init__(self, texts: dict[int, str]) -> None:
        self.texts = texts

    def hits(self, rowids):
        from types import SimpleNamespace

        return [SimpleNamespace(content=self.texts[r]) for r in rowids if r in self.texts]


class _WordReader:
    """A passage reader whose window logit is +5 when the passage holds ``word``."""

    def __init__(self, word: str, fail: bool = False) -> None:
        self.word, self.fail, self.read = word, fail, []

    def read_windows(self, question, windows):
        from types import SimpleNamespace

        from localreason.errors import ModelError

        if self.fail:
            raise ModelError("The passage reader's model file is damaged.")
        self.read.append([" ".join(w) for w in windows])
        return [SimpleNamespace(logit=5.0 if self.word in " ".join(w) else 0.0, sentences=np.zeros(len(w)), best=None)
                for w in windows]  # fmt: skip


def _ranked(n: int):
    from localreason.search.ranking import Ranked

    return [Ranked(i, float(n - i), 0.5) for i in range(n)]


def test_reread_first_orders_the_first_candidates_and_keeps_the_fused_scores_in_place():
    from types import SimpleNamespace

    from localreason.search.rerank import reread_first

    texts = {i: f"passage {i}" + (" warranty" if i == 3 else "") for i in range(6)}
    index = SimpleNamespace(store=_Store(texts), rereader=_WordReader("warranty"))
    got = reread_first(index, "How long is the warranty?", _ranked(6), depth=4, weight=0.5)
    assert [r.rowid for r in got] == [3, 0, 1, 2, 4, 5], "the one the reader finds answering leads; the rest after"
    assert [r.fused for r in got] == [6.0, 5.0, 4.0, 3.0, 2.0, 1.0], "each takes the fused score of its place"
    assert index.rereader.read == [[texts[i] for i in range(4)]], "only the first depth are read"
    index.store.texts.pop(2)
    assert [r.rowid for r in reread_first(index, "q", _ranked(6), depth=4)] == list(range(6)), "a text gone: as it was"


def test_without_a_rereader_or_when_it_fails_the_hybrids_order_stands():
    from types import SimpleNamespace

    from localreason.search.rerank import reread_first

    texts = {i: f"passage {i} warranty" for i in range(4)}
    assert reread_first(SimpleNamespace(store=_Store(texts)), "q", _ranked(4)) == _ranked(4)
    failures = []
    index = SimpleNamespace(store=_Store(texts), rereader=_WordReader("x", fail=True), reread_failed=failures.append)
    assert [r.rowid for r in reread_first(index, "q", _ranked(4))] == [0, 1, 2, 3]
    assert len(failures) == 1 and "damaged" in str(failures[0])


ECHO = ("The bridge over the river is a stone bridge. The bridge over the river is popular with walkers, and the "
        "river is wide.\n")
ANSWER = "After the flood destroyed it, the crossing was rebuilt in 1821 by the engineer John Rennie.\n"


def _library(home, embedder, files_dir, **settings):
    from localreason.config import load_settings
    from localreason.library import Library

    lib = Library(settings=load_settings(home, **settings), embedder=embedder)
    assert lib.ingest([files_dir], "work").ok
    return lib


def test_deep_search_and_the_evidence_are_reread_by_the_packaged_passage_reader(isolated_home, fake_embedder, tmp_path,
                                                                              store_setting):  # fmt: skip
    """On both stores (PostgreSQL: one database the three libraries share, the second and third ingest finding it
    unchanged)."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "echo.md").write_text(ECHO)
    (files / "answer.md").write_text(ANSWER)
    q = "When was the bridge over the river rebuilt?"
    plain = _library(isolated_home / "a", fake_embedder, files, search_reread="off", store=store_setting)
    assert plain.rereader is None
    assert plain.deep_search(q)[0].content.startswith("The bridge over"), "the hybrid: the passage echoing the question"
    plain.close()
    lib = _library(isolated_home / "b", fake_embedder, files, store=store_setting)
    assert lib.rereader is not None and lib.rereader.format == 3, "the packaged passage reader"
    assert lib.deep_search(q)[0].content.startswith("After the flood"), "the reader: the passage that answers"
    assert lib.progressive_search(q).hits[0].content.startswith("After the flood")
    lib.close()
    off = _library(isolated_home / "c", fake_embedder, files, reader="off", store=store_setting)
    assert off.rereader is None, "no reader: no re-reading"
    off.close()


def test_a_copied_passage_among_the_first_is_read_once_and_scored_alike():
    from types import SimpleNamespace

    from localreason.search.rerank import reread_first

    texts = {0: "passage zero", 1: "the warranty passage", 2: "the warranty passage", 3: "passage three"}
    index = SimpleNamespace(store=_Store(texts), rereader=_WordReader("warranty"))
    got = reread_first(index, "q", _ranked(4), depth=4, weight=0.5)
    assert index.rereader.read == [["passage zero", "the warranty passage", "passage three"]]
    assert [r.rowid for r in got][:2] == [1, 2]


def test_a_second_passage_reader_is_a_signal_the_fit_parts_choose_among(capsys):
    """bench.quality.rerank --passage NAME=DIR: the other reader's logits are recorded as "NAME:window", and the grid
    on the fit parts chooses it when it orders them better (here the shipped reader's logits put the gold last)."""
    from bench.quality.rerank import report

    def rec(i: int) -> dict:
        units = [f"u{i}-{j}" for j in range(12)]
        return {"part": "squad-dev fit", "q": f"question {i}?", "gold": [units[3]], "lex": units, "dense": units,
                "hybrid": units, "fused": [1.0 - j / 12 for j in range(12)], "ms": 10.0, "chars": [100] * 12,
                "logits_window": [float(12 - j) for j in range(12)],
                "logits_new:window": [9.0 if j == 3 else 0.0 for j in range(12)]}  # fmt: skip

    report([rec(i) for i in range(6)])
    out = capsys.readouterr().out
    assert "new:window K=10" in out
    assert "chosen on the fit parts: new:window, K=10" in out, out
    assert order(rec(0), 10, 0.0, "new:window")[0] == "u0-3"
