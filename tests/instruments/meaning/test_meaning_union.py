"""The surface and semantic pools are the sorted union of posting lists, kept as bitsets where
lists are large so that a plan stays linear in the corpus: element by element and draw by draw,
the same sequence as the set-and-sort it replaces, so every plan is unchanged."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import choiceaudit.instruments.meaning._union as union
from choiceaudit.instruments.meaning import Corpus, plan_meaning
from choiceaudit.instruments.meaning._union import Postings, SortedUnion
from instruments.meaning.conftest import synthetic_corpus


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 300),
    st.lists(st.lists(st.integers(0, 299), max_size=120), min_size=1, max_size=6),
    st.integers(0, 299),
    st.sampled_from([0, 5, 10_000]),
)
def test_the_union_is_the_sorted_set_element_by_element(
    n: int, lists: list[list[int]], without: int, large: int
) -> None:
    lists = [sorted({v % n for v in values}) for values in lists]
    keys = {f"k{i}": values for i, values in enumerate(lists)}
    without %= n
    expected = sorted(set().union(*map(set, lists)) - {without})
    original = union.LARGE_POSTING
    union.LARGE_POSTING = large  # every list a bitset, some, or none
    try:
        got = Postings(keys, n).union(list(keys), without=without)
    finally:
        union.LARGE_POSTING = original
    assert len(got) == len(expected) and list(got) == expected
    assert [got[r] for r in range(len(got))] == expected
    assert got == expected
    if expected:
        assert got[-1] == expected[-1]
        with pytest.raises(IndexError):
            got[len(expected)]


def test_a_bitset_union_answers_draws_as_the_list_does() -> None:
    n = 5000
    keys = {"common": list(range(0, n, 2)), "rare": [1, 3, 7]}
    bits = Postings(keys, n).union(["common", "rare"], without=4)
    assert isinstance(bits, SortedUnion)
    listed = sorted((set(keys["common"]) | set(keys["rare"])) - {4})
    a, b = random.Random(3), random.Random(3)
    assert [bits[a.randrange(len(bits))] for _ in range(500)] == [
        listed[b.randrange(len(listed))] for _ in range(500)
    ]


@pytest.mark.parametrize("large", [0, 3])
def test_plans_are_the_same_whichever_lists_are_bitsets(
    large: int, monkeypatch: pytest.MonkeyPatch, idioms_en_corpus: Corpus
) -> None:
    for corpus, options in (
        (synthetic_corpus(200), {"n_items": 60, "n_order_items": 4}),
        (idioms_en_corpus, {"n_items": 40, "n_order_items": 2}),
    ):
        listed = [q.id for q in plan_meaning(corpus, **options).queries()]  # type: ignore[arg-type]
        monkeypatch.setattr(union, "LARGE_POSTING", large)
        bitsets = [q.id for q in plan_meaning(corpus, **options).queries()]  # type: ignore[arg-type]
        monkeypatch.setattr(union, "LARGE_POSTING", 1024)
        assert bitsets == listed
