"""Items: contract constants, per-item order, the five distractor families, de-dup and top-up."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

from choiceaudit.instruments.meaning import FAMILIES, Corpus, IdiomEntry
from choiceaudit.instruments.meaning._contract import (
    INSTRUCTIONS,
    OPTION_KEYS,
    SEEDS_BN,
    SEEDS_EN,
    K,
    item_rng,
)
from choiceaudit.instruments.meaning._corpus import LoaderReport
from choiceaudit.instruments.meaning._items import build_ladder
from choiceaudit.instruments.meaning._pools import Pools, nearest_neighbours
from choiceaudit.instruments.meaning._text import content_words, option_key


def test_constants_are_the_task_contract_verbatim(task_contract: dict[str, Any]) -> None:
    assert INSTRUCTIONS["bn"] == task_contract["instructions_bn"]
    assert INSTRUCTIONS["en"] == task_contract["instructions_en"]
    assert task_contract["k"] == K and tuple(task_contract["option_keys"]) == OPTION_KEYS
    assert set(FAMILIES) == {f.lower() for f in task_contract["families"]}
    assert task_contract["seeds_bn"] == SEEDS_BN and task_contract["seeds_en"] == SEEDS_EN
    assert task_contract["per_item_rng"] == "random.Random(seed_base + int(id))"
    a, b = item_rng(1000, "17"), random.Random(1017)
    assert [a.random() for _ in range(3)] == [b.random() for _ in range(3)]


def by_item(queries: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for q in queries:
        out.setdefault(q.meta["item_id"], {})[q.meta["family"]] = q
    return out


def test_ladder_queries_follow_the_contract(synthetic: Corpus) -> None:
    build = build_ladder(synthetic)
    entries = {str(e.id): e for e in synthetic.entries}
    assert len(build.queries) == 40 * 5  # every item has tags and a distinct literal gloss
    grouped = by_item(build.queries)
    assert len(grouped) == 40
    for item_id, fams in grouped.items():
        entry = entries[item_id]
        expected = list(range(K))
        random.Random(1000 + int(item_id)).shuffle(expected)  # the contract rule, re-derived
        for family, q in fams.items():
            assert q.perm == tuple(expected)
            assert q.keys == OPTION_KEYS and q.answer_format == "key"
            assert q.state == entry.expression and q.instruction == INSTRUCTIONS["bn"]
            assert q.meta["gold_slot"] == expected.index(0)
            assert q.options[q.meta["gold_slot"]] == entry.gold
            assert len({option_key(o) for o in q.options}) == K
            if family in ("d-lit", "d-hard"):
                assert q.meta["literal"] == 1
                assert q.options[q.meta["literal_slot"]] == entry.literal
            else:
                assert q.meta["literal"] is None and entry.literal not in q.options
        # d-lit is d-rand with its first distractor replaced by the literal gloss
        rand, lit = fams["d-rand"], fams["d-lit"]
        differ = [s for s in range(K) if rand.options[s] != lit.options[s]]
        assert differ == [expected.index(1)]


def test_build_is_deterministic_and_per_item(synthetic: Corpus) -> None:
    full = build_ladder(synthetic)
    again = build_ladder(synthetic)
    assert [q.id for q in full.queries] == [q.id for q in again.queries]
    some = build_ladder(synthetic, item_ids=[311, 11])
    wanted = {q.id for q in full.queries if q.meta["item_id"] in ("311", "11")}
    assert {q.id for q in some.queries} == wanted
    other_seed = build_ladder(synthetic, seed_base=2000, experiment="e2")
    assert [q.perm for q in other_seed.queries] != [q.perm for q in full.queries]


def test_surface_and_semantic_families_use_their_pools(synthetic: Corpus) -> None:
    gold_of = {e.gold: e for e in synthetic.entries}
    for q in build_ladder(synthetic, families=("d-surf", "d-sem")).queries:
        entry = next(e for e in synthetic.entries if str(e.id) == q.meta["item_id"])
        distractors = [gold_of[o] for i, o in enumerate(q.options) if i != q.meta["gold_slot"]]
        assert q.meta["topped_up"] == 0
        for d in distractors:
            if q.meta["family"] == "d-surf":
                assert content_words(d.gold, "bn") & content_words(entry.gold, "bn")
            else:
                assert set(d.tags) & set(entry.tags)


def test_hard_family_mixes_literal_surface_and_semantic(synthetic: Corpus) -> None:
    gold_of = {e.gold: e for e in synthetic.entries}
    for q in build_ladder(synthetic, families=("d-hard",)).queries:
        entry = next(e for e in synthetic.entries if str(e.id) == q.meta["item_id"])
        assert q.perm is not None
        canonical = [q.options[q.perm.index(c)] for c in range(K)]
        assert canonical[:2] == [entry.gold, entry.literal]
        surf, sem = gold_of[canonical[2]], gold_of[canonical[3]]
        assert content_words(surf.gold, "bn") & content_words(entry.gold, "bn")
        assert set(sem.tags) & set(entry.tags)


def test_duplicates_are_removed_and_short_pools_topped_up() -> None:
    entries = [
        IdiomEntry(
            id=1,
            expression="e1",
            gold="lonely unique gloss",
            literal="lit one",
            language="bn",
            tags=("solo",),
        ),
        IdiomEntry(
            id=2,
            expression="e2",
            gold="Shared words here.",
            literal="lit two",
            language="bn",
            tags=("x",),
        ),
        IdiomEntry(
            id=3,
            expression="e3",
            gold="shared words here",
            literal="lit three",
            language="bn",
            tags=("x",),
        ),
        IdiomEntry(
            id=4, expression="e4", gold="lit one", literal="lit four", language="bn", tags=("x",)
        ),
    ] + [
        IdiomEntry(
            id=10 + i,
            expression=f"x{i}",
            gold=f"filler {i}",
            literal=f"fl {i}",
            language="bn",
            tags=("x",),
        )
        for i in range(6)
    ]
    corpus = Corpus("dups", "bn", tuple(entries), LoaderReport("dups"))
    build = build_ladder(corpus)
    for q in build.queries:
        keys = [option_key(o) for o in q.options]
        assert len(set(keys)) == K  # "Shared words here." and "shared words here" never together
    item1 = by_item(build.queries)["1"]
    # entry 1 has no surface neighbour and no tag neighbour: both families fully topped up
    assert item1["d-surf"].meta["topped_up"] == 3 and item1["d-sem"].meta["topped_up"] == 3
    assert "lit one" not in item1["d-rand"].options  # another idiom's gloss equal to our literal
    assert build.report["families"]["d-surf"]["topped_up_items"] >= 1


def test_literal_equal_to_gold_is_skipped_and_counted() -> None:
    entries = [
        IdiomEntry(id=i, expression=f"e{i}", gold=f"gloss {i}", literal=f"lit {i}", language="en")
        for i in range(1, 8)
    ]
    entries[0] = IdiomEntry(
        id=1, expression="e1", gold="same thing", literal="Same thing.", language="en"
    )
    corpus = Corpus("eq", "en", tuple(entries), LoaderReport("eq"))
    build = build_ladder(corpus, families=("d-rand", "d-lit"))
    assert build.report["skipped"] == {"d-lit": {"no distinct literal gloss": 1}}
    assert build.report["families"]["d-lit"]["items"] == 6


def test_untagged_corpus_needs_an_embedder(idioms_en_corpus: Corpus, embed: Any) -> None:
    with pytest.raises(ValueError, match="no semantic tags and no embedder"):
        build_ladder(idioms_en_corpus, families=("d-sem",))
    pools = Pools(idioms_en_corpus, embed=embed, sem_neighbours=10)
    neighbours = nearest_neighbours(embed([e.gold for e in idioms_en_corpus.entries]), 10)
    build = build_ladder(pools, families=("d-sem",), item_ids=[0, 394, 10151])
    assert build.report["sem_source"] == "embedding"
    index_of_gold = {e.gold: i for i, e in enumerate(idioms_en_corpus.entries)}
    for q in build.queries:
        i = pools.index_of[int(q.meta["item_id"])]
        others = [index_of_gold[o] for s, o in enumerate(q.options) if s != q.meta["gold_slot"]]
        assert set(others) <= set(neighbours[i].tolist())


def test_nearest_neighbours_match_brute_force() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 8))
    got = nearest_neighbours(x, 5, block=7)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -np.inf)
    np.testing.assert_array_equal(got, np.argsort(-sims, axis=1, kind="stable")[:, :5])


def test_gold_position_is_uniform_on_idioms_en(idioms_en_corpus: Corpus) -> None:
    build = build_ladder(idioms_en_corpus, families=("d-rand",))
    slots = Counter(q.meta["gold_slot"] for q in build.queries)
    n = len(build.queries)
    assert n == 983
    # uniform by construction; a chi-square against 1/4 each stays far from rejection
    chi2 = sum((slots[s] - n / K) ** 2 / (n / K) for s in range(K))
    assert chi2 < 11.34  # the 0.99 quantile of chi-square with 3 degrees of freedom


@pytest.mark.slow
@pytest.mark.models
def test_minilm_neighbours_make_d_sem_semantically_closer(idioms_en_corpus: Corpus) -> None:
    """With the real MiniLM embedder (about 15 s on 2 cores), d-sem distractors sit closer to the
    gold gloss than d-rand's do, on every one of 60 items' averages taken together."""
    from choiceaudit.scorers import CosineScorer

    embed = CosineScorer.load().embed
    pools = Pools(idioms_en_corpus, embed=embed)
    ids = [e.id for e in idioms_en_corpus.entries[:60]]
    build = build_ladder(pools, families=("d-rand", "d-sem"), item_ids=ids)

    def mean_cos(family: str) -> float:
        sims = []
        for q in build.queries:
            if q.meta["family"] != family:
                continue
            vectors = embed(list(q.options))
            gold = vectors[q.meta["gold_slot"]]
            sims += [float(v @ gold) for s, v in enumerate(vectors) if s != q.meta["gold_slot"]]
        return float(np.mean(sims))

    assert mean_cos("d-sem") > mean_cos("d-rand") + 0.1
