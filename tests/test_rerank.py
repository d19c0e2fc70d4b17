"""Re-reading search's first candidates (issue #52): search.rerank with the packaged passage reader, and
bench.quality.rerank's orders."""

from __future__ import annotations

import numpy as np

from localreason import models
from localreason.reason.reader import Reader
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
