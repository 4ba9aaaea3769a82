"""Interventions E2, E3, E4, E6, E7 and the capture matrix: what varies and what is held fixed."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import pytest

from choiceaudit.instruments.meaning import Corpus, IdiomEntry
from choiceaudit.instruments.meaning._contract import INSTRUCTIONS
from choiceaudit.instruments.meaning._corpus import LoaderReport
from choiceaudit.instruments.meaning._interventions import build_e2, build_e3, build_e4, build_e7
from choiceaudit.instruments.meaning._items import build_ladder
from choiceaudit.instruments.meaning._matrix import build_matrix, capture_pool, subset10
from choiceaudit.instruments.meaning._options import build_e6, scramble_words, truncate_words
from choiceaudit.types import Query

from .conftest import synthetic_corpus


def grouped(queries: tuple[Query, ...]) -> dict[str, dict[str, Query]]:
    out: dict[str, dict[str, Query]] = defaultdict(dict)
    for q in queries:
        out[q.meta["item_id"]][q.meta["condition"]] = q
    return out


def entry_of(corpus: Corpus, item_id: str) -> IdiomEntry:
    return corpus.by_id()[int(item_id)]


def perm_of(q: Query) -> tuple[int, ...]:
    assert q.perm is not None
    return q.perm


def canonical(q: Query) -> list[str]:
    perm = perm_of(q)
    return [q.options[perm.index(c)] for c in range(len(q.options))]


def test_e2_presents_every_surface_form_with_one_option_list(synthetic: Corpus) -> None:
    build = build_e2(synthetic)
    assert build.report["skipped"] == {"d-hard": {"no alternative surface form": 20}}
    items = grouped(build.queries)
    assert len(items) == 20
    for item_id, cells in items.items():
        entry = entry_of(synthetic, item_id)
        assert cells["canonical"].state == entry.expression
        assert [cells[f"alt{i + 1}"].state for i in range(len(entry.alternatives))] == list(
            entry.alternatives
        )
        assert len({(q.options, q.perm) for q in cells.values()}) == 1
        assert all(q.meta["family"] == "d-hard" and q.meta["literal"] == 1 for q in cells.values())


def test_e2_on_idioms_en_uses_the_annotated_alternatives(
    idioms_en_corpus: Corpus, embed: Any
) -> None:
    build = build_e2(idioms_en_corpus, embed=embed, item_ids=[0, 10151])
    cells = grouped(build.queries)
    assert [q.state for q in cells["0"].values()] == [
        "able to breathe easily again",
        "able to breathe freely again",
        "able to breathe again",
        "can breathe again",
        "can breathe freely again",
    ]
    assert "10151" not in cells and build.report["skipped"]["d-hard"] == {
        "no alternative surface form": 1
    }


def test_e3_perturbs_only_the_state(synthetic: Corpus) -> None:
    build = build_e3(synthetic)
    items = grouped(build.queries)
    long_items = [e for e in synthetic.entries if len(e.expression.split()) >= 3]
    assert len(items) == len(long_items) == 26
    all_words = {w for e in synthetic.entries for w in e.expression.split()}
    for item_id, cells in items.items():
        entry = entry_of(synthetic, item_id)
        toks = entry.expression.split()
        assert set(cells) == {"v0", "v1", "v2", "v3", "v4", "v5"}
        assert len({(q.options, q.perm, q.instruction) for q in cells.values()}) == 1
        assert cells["v0"].state == entry.expression
        assert sorted(cells["v1"].state.split()) == sorted(toks)
        assert cells["v2"].state.split() == toks[::-1]
        v3 = cells["v3"].state.split()
        assert len(v3) == len(toks) - 1 and any(
            v3 == toks[:i] + toks[i + 1 :] for i in range(len(toks))
        )
        v4 = cells["v4"].state.split()
        changed = [i for i in range(len(toks)) if v4[i] != toks[i]]
        assert len(v4) == len(toks) and len(changed) == 1 and v4[changed[0]] in all_words
        assert cells["v5"].state == entry.carriers[0]
        assert (
            cells["v2"].meta["state_changed"] is True and cells["v0"].meta["state_changed"] is False
        )
        assert cells["v0"].meta["family"] == "d-lit"


def test_e4_pairs_two_languages_on_one_draw(synthetic: Corpus) -> None:
    build = build_e4(synthetic)
    gold_en = {e.gold: e.gold_other for e in synthetic.entries}
    items = grouped(build.queries)
    assert len(items) == 33  # rows with an English equivalent idiom
    perms_equal = 0
    for item_id, cells in items.items():
        entry = entry_of(synthetic, item_id)
        bn, en = cells["bn"], cells["en"]
        assert (bn.state, bn.instruction) == (entry.expression, INSTRUCTIONS["bn"])
        assert (en.state, en.instruction) == (entry.equivalents_other[0], INSTRUCTIONS["en"])
        assert [gold_en[t] for t in canonical(bn)] == canonical(en)  # same draw, other language
        assert en.options[en.meta["gold_slot"]] == entry.gold_other
        perms_equal += bn.perm == en.perm
    assert perms_equal < len(items) / 2  # shuffled independently


def test_e6_option_forms(synthetic: Corpus) -> None:
    build = build_e6(synthetic)
    ladder = {
        q.meta["item_id"]: q
        for q in build_ladder(synthetic, families=("d-rand",), seed_base=6000).queries
    }
    gold_en = {e.gold: e.gold_other for e in synthetic.entries}
    for item_id, cells in grouped(build.queries).items():
        o0 = cells["o0"]
        assert (o0.options, o0.perm) == (ladder[item_id].options, ladder[item_id].perm)
        assert len({(q.state, q.perm, q.instruction) for q in cells.values()}) == 1
        for a, b in zip(o0.options, cells["o2"].options, strict=True):
            assert sorted(a.split()) == sorted(b.split())
        assert list(cells["o3"].options) == [gold_en[t] for t in o0.options]
        assert cells["o4"].options == ("অর্থ 1", "অর্থ 2", "অর্থ 3", "অর্থ 4")
        assert cells["o4"].meta["gold_slot"] == o0.meta["gold_slot"]


def test_e6_transforms_reproduce_table_11() -> None:
    full = "খুব চালাক লোক; সুচতুর ব্যক্তি; যার মনোভাব বোঝা যায় না"
    assert truncate_words(full) == "খুব চালাক লোক সুচতুর ব্যক্তি যার"
    assert truncate_words("to faint; to pass out") == "to faint; to pass out"  # ≤ 6 words
    import random

    scrambled = scramble_words(full, random.Random(0))
    assert sorted(scrambled.split()) == sorted(
        ["খুব", "চালাক", "লোক", "সুচতুর", "ব্যক্তি", "যার", "মনোভাব", "বোঝা", "যায়", "না"]
    )


def test_e6_english_labels_and_collisions(idioms_en_corpus: Corpus) -> None:
    build = build_e6(idioms_en_corpus, item_ids=[0, 394])
    cells = grouped(build.queries)["0"]
    assert cells["o4"].options == ("meaning 1", "meaning 2", "meaning 3", "meaning 4")
    assert "o3" not in cells and build.report["skipped"]["d-rand"] == {
        "o3: corpus has one language": 2
    }
    entries = [
        IdiomEntry(
            id=i, expression=f"e{i}", gold=f"a b c d e f {i}", literal=f"l{i}", language="en"
        )
        for i in range(1, 6)
    ]
    corpus = Corpus("trunc", "en", tuple(entries), LoaderReport("trunc"))
    build = build_e6(corpus, variants=("o0", "o1"))
    assert build.report["variants"] == {"o0": 5, "o1": 0}  # all cut to "a b c d e f"
    assert build.report["skipped"]["d-rand"] == {"o1: options collide or vanish": 5}


def test_e7_runs_all_24_orderings(synthetic: Corpus) -> None:
    build = build_e7(synthetic, item_ids=[11, 21], key_bindings=("slot",))
    items = grouped(build.queries)
    assert len(build.queries) == 48
    for cells in items.values():
        assert sorted(perm_of(q) for q in cells.values()) == list(itertools.permutations(range(4)))
        reference = canonical(next(iter(cells.values())))
        for condition, q in cells.items():
            assert condition == "p" + "".join(map(str, perm_of(q)))
            assert canonical(q) == reference
            assert q.options[q.meta["gold_slot"]] == reference[0]


def test_capture_pool_and_matrix_cells(synthetic: Corpus) -> None:
    ids, counts = capture_pool(synthetic)
    assert counts == {
        "usable": 40,
        "with_en_parenthetical": 32,
        "with_equivalent": 27,
        "distinct": 27,
    }
    build = build_matrix(synthetic)
    gold_en = {e.gold: e.gold_other for e in synthetic.entries}
    items = grouped(build.queries)
    assert sorted(int(i) for i in items) == ids
    for item_id, cells in items.items():
        entry = entry_of(synthetic, item_id)
        bn, en = cells["bn"], cells["en"]
        cb, ce = canonical(bn), canonical(en)
        assert cb[:2] == [entry.gold, entry.literal] and ce[:2] == [
            entry.gold_other,
            entry.literal_other,
        ]
        assert [gold_en[t] for t in cb[2:]] == ce[2:]  # one distractor draw for both cells
        assert en.state == entry.equivalents_other[0] and bn.meta["experiment"] == "matrix"
        assert bn.options[bn.meta["literal_slot"]] == entry.literal


def test_matrix_jaccard_cut() -> None:
    base = synthetic_corpus(12).entries
    close = IdiomEntry(
        id=999,
        expression="x",
        gold="g",
        literal="l (to go home)",
        language="bn",
        gold_other="to go home now",
        literal_other="to go home",
        equivalents_other=("eq",),
    )
    corpus = Corpus("j", "bn", (*base, close), LoaderReport("j"), other_language="en")
    ids, counts = capture_pool(corpus)
    assert 999 not in ids and counts["with_equivalent"] - counts["distinct"] == 1


def test_subset10_matches_pandas_sample() -> None:
    pd = pytest.importorskip("pandas")
    entries = tuple(
        IdiomEntry(id=3 * i + 1, expression=f"e{i}", gold=f"g{i}", literal=f"l{i}", language="bn")
        for i in range(8876)
    )
    corpus = Corpus("big", "bn", entries, LoaderReport("big"))
    frame = pd.DataFrame({"id": [e.id for e in entries]})
    expected = frame.sample(frac=0.10, random_state=909)["id"].tolist()
    got = subset10(corpus)
    assert len(got) == 888 and got == expected
