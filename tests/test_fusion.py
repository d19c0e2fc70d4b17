"""The fusion of the dense and lexical rankings (issue #52, "fusion that cannot drag"): the dense half's weight follows
how close its best passage is to the query (search.ranking.fusion_weight), with the packaged embedder only."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from localreason.config import DEFAULT_EMBEDDING_MODEL
from localreason.search import ranking


def _dense(best: float, second: tuple[int, float] | None = None, rest: float = 0.25) -> list[tuple[int, float]]:
    head = [(1, best)] + ([second] if second else [])
    return head + [(i, rest - 0.005 * i) for i in range(2, 9)]


def test_the_dense_weight_falls_only_where_the_best_cosine_is_low():
    weights = [ranking.fusion_weight(_dense(c)) for c in (0.3, 0.35, 0.4, 0.44)]
    assert all(b - a > 0.05 for a, b in zip(weights, weights[1:])) and weights[-1] < ranking.DENSE_WEIGHT
    assert ranking.fusion_weight(_dense(ranking.FUSION_KNEE)) == ranking.fusion_weight(_dense(0.9)) \
        == ranking.DENSE_WEIGHT, "a close match weighs as it always did, never more"  # fmt: skip
    floor = ranking.FUSION_FLOOR
    assert ranking.fusion_weight([(1, -0.5)]) == ranking.fusion_weight([(1, 0.1), (2, 0.05)]) == floor > 0
    assert ranking.fusion_weight([]) == ranking.DENSE_WEIGHT
    assert ranking.fusion_weight(_dense(0.3), slope=0.0) == ranking.DENSE_WEIGHT, "slope 0: the constant weight"


def test_a_dense_ranking_that_found_nothing_close_does_not_drag_the_lexical_winner_down():
    dense = _dense(0.35)  # passage 1 stands out of a list of weak matches; the lexical winner 9 is not in it
    lexical = [(9, 6.0), (1, 3.0), (2, 1.0), (3, 1.0)]
    assert ranking.fuse(dense, lexical, "zsum", ranking.DENSE_WEIGHT)[0][0] == 1, "the constant weight: dragged"
    assert ranking.fuse(dense, lexical, "zsum", ranking.fusion_weight(dense))[0][0] == 9


def test_a_weak_dense_ranking_still_orders_what_the_lexical_half_leaves_tied():
    dense = [(50, 0.19), (7, 0.18), (30, 0.17), (2, 0.1)]  # an off-topic query: no word matched, weak cosines
    assert [r for r, _ in ranking.fuse(dense, [], "zsum", ranking.fusion_weight(dense))] == [50, 7, 30, 2]


def test_the_rule_is_used_with_the_packaged_embedder_only():
    dense = _dense(0.35)
    packaged = SimpleNamespace(embedder=SimpleNamespace(name=DEFAULT_EMBEDDING_MODEL))
    other = SimpleNamespace(embedder=SimpleNamespace(name="my-own-embedder"))
    assert ranking.dense_weight_for(packaged, dense) == ranking.fusion_weight(dense) != ranking.DENSE_WEIGHT
    assert ranking.dense_weight_for(other, dense) == ranking.DENSE_WEIGHT, "another model's cosines: not fit"


def test_the_packaged_embedder_is_the_one_the_rule_was_fit_on(real_embedder):
    assert real_embedder.name == DEFAULT_EMBEDDING_MODEL
    vecs = real_embedder.embed(["How do I reset the router?", "How can the router be reset?",
                                "Best pizza toppings for a party"])  # fmt: skip
    near, far = float(vecs[0] @ vecs[1]), float(vecs[0] @ vecs[2])
    assert near > ranking.FUSION_KNEE > far, (near, far)
    assert ranking.fusion_weight([(1, near)]) == ranking.DENSE_WEIGHT > ranking.fusion_weight([(1, far)])


@pytest.mark.parametrize("name", [DEFAULT_EMBEDDING_MODEL, "fake-words"])
def test_search_fuses_with_the_rule_when_the_embedder_is_the_packaged_one(library_of, fake_embedder, monkeypatch,
                                                                          name):  # fmt: skip
    seen = []
    rule = ranking.fusion_weight
    monkeypatch.setattr(ranking, "fusion_weight", lambda dense, **kw: seen.append(dense) or rule(dense, **kw))
    monkeypatch.setattr(fake_embedder, "name", name, raising=False)
    lib = library_of({"a.md": "The warranty lasts five years.\n", "b.md": "Shipping takes two days.\n"})
    assert lib.deep_search("How long is the warranty?")
    assert bool(seen) == (name == DEFAULT_EMBEDDING_MODEL)


def test_the_fusion_bench_orders_a_record_as_the_product_does():
    import json
    from types import SimpleNamespace

    from bench.quality.fusion import fused_units, record_run, scored

    run = SimpleNamespace(qs=[("q", "doc-9", "t")], dense_l=[_dense(0.35)], lex_l=[[(9, 6.0), (1, 3.0), (2, 1.0),
                          (3, 1.0)]], chunk_doc={r: f"doc-{r}" for r in range(1, 10)})  # fmt: skip
    rec = json.loads(json.dumps(record_run(run, lambda tag: "reddit held out", "reddit")[0]))
    assert fused_units(rec, "lex")[0] == "doc-9" and fused_units(rec, "dense")[0] == "doc-1"
    assert fused_units(rec, "zsum", dense_weight=0.45)[0] == "doc-1"
    assert fused_units(rec, "adaptive", **ranking.fusion_constants())[0] == "doc-9"
    assert scored([rec], "adaptive", **ranking.fusion_constants())["R@1"] == 1.0
    assert scored([rec], "zsum", dense_weight=0.45)["MRR@10"] == 0.5
