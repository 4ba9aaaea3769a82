from __future__ import annotations

import hashlib
import itertools
from typing import Any

import numpy as np
import pytest

from choiceaudit import Decision, Item, ItemSet, Query
from choiceaudit.types import format_perm, parse_perm, tied_argmax


def make_query(**kw: Any) -> Query:
    base: dict[str, Any] = {
        "state": "What is the capital of France?",
        "options": ("Paris", "London", "Berlin"),
    }
    base.update(kw)
    return Query(**base)


def test_query_id_is_a_stable_content_hash() -> None:
    # The definition, written out: sha256 of canonical JSON (sorted keys, no spaces, UTF-8).
    canonical = (
        '{"answer_format":"text","instruction":"","keys":["A","B","C"],"meta":{},'
        '"neutral_state":null,"options":["Paris","London","Berlin"],"perm":null,'
        '"state":"What is the capital of France?","template":"{instruction}\\n\\n{state}\\n\\nAnswer:"}'
    )
    assert make_query().id == hashlib.sha256(canonical.encode()).hexdigest()[:24]
    assert make_query().id == "dc153959c71d3c35acd74d71"  # pinned: same on any machine
    assert make_query().id == make_query().id
    assert make_query(options=("London", "Paris", "Berlin")).id != make_query().id
    assert make_query(meta={"item_id": "a"}).id != make_query(meta={"item_id": "b"}).id
    assert make_query(neutral_state="x").id != make_query().id


def test_query_id_given_must_match_content() -> None:
    q = make_query()
    assert Query(state=q.state, options=q.options, id=q.id).id == q.id
    with pytest.raises(ValueError, match="content hash"):
        Query(state=q.state, options=q.options, id="deadbeef")


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"options": ()}, "empty"),
        ({"options": ("Paris", " ")}, r"options\[1\] is empty"),
        ({"options": ("Paris", "Paris")}, "distinct"),
        ({"keys": ("A", "B")}, "3 options"),
        ({"keys": ("A", "A", "B")}, "unique"),
        ({"keys": ("A", "", "B")}, r"keys\[1\]"),
        ({"perm": (0, 0, 1)}, "not a permutation"),
        ({"perm": (0, 1)}, "not a permutation"),
        ({"template": "no state here"}, "state"),
        ({"template": "{state} {other}"}, "only"),
        ({"answer_format": "letter"}, "answer_format"),
        ({"meta": {"x": object()}}, "JSON"),
    ],
)
def test_query_rejects_bad_input(kw: dict[str, Any], match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        make_query(**kw)


def test_default_keys_prompt_and_continuations() -> None:
    q = make_query(
        instruction="Pick one.", neutral_state="What is the capital?", answer_format="text"
    )
    assert q.keys == ("A", "B", "C")
    assert q.prompt() == "Pick one.\n\nWhat is the capital of France?\n\nAnswer:"
    assert q.prompt(neutral=True) == "Pick one.\n\nWhat is the capital?\n\nAnswer:"
    assert q.continuations() == (" Paris", " London", " Berlin")
    assert make_query(answer_format="key").continuations() == (" A", " B", " C")
    with pytest.raises(ValueError, match="neutral_state"):
        make_query().prompt(neutral=True)


def test_perm_roundtrip_and_canonical_mapping() -> None:
    for perm in itertools.permutations(range(4)):
        assert parse_perm(format_perm(perm)) == perm
    long = tuple(reversed(range(12)))
    assert format_perm(long) == "11,10,9,8,7,6,5,4,3,2,1,0"
    assert parse_perm(format_perm(long)) == long
    q = make_query(perm=(2, 0, 1))
    assert [q.canonical(s) for s in range(3)] == [2, 0, 1]
    with pytest.raises(ValueError):
        parse_perm("012x")
    with pytest.raises(ValueError):
        parse_perm("0113")


def test_decision_validates_probabilities() -> None:
    Decision("q", probs=np.array([0.5, 0.5 + 5e-7]))  # within 1e-6
    with pytest.raises(ValueError, match="sums to"):
        Decision("q", probs=np.array([0.5, 0.5 + 2e-6]))
    with pytest.raises(ValueError, match="not finite"):
        Decision("q", probs=np.array([np.nan, 1.0]))
    with pytest.raises(ValueError, match="negative"):
        Decision("q", probs=np.array([-0.1, 1.1]))
    with pytest.raises(ValueError, match="shape"):
        Decision("q", probs=np.array([0.5, 0.5]), scores={"sum": np.array([1.0, 2.0, 3.0])})
    with pytest.raises(ValueError, match="NaN"):
        Decision("q", probs=np.array([0.5, 0.5]), scores={"sum": np.array([np.nan, 1.0])})
    with pytest.raises(ValueError, match="n_tokens"):
        Decision("q", probs=np.array([0.5, 0.5]), n_tokens=(1,))


def test_decision_choice_keeps_exact_ties_as_a_set() -> None:
    d = Decision("q", probs=np.array([0.4, 0.4, 0.2]), scores={"sum": np.array([-1.0, -3.0, -1.0])})
    assert d.choice() == (0, 1)
    assert d.choice("sum") == (0, 2)
    assert tied_argmax([3.0]) == (0,)
    with pytest.raises(ValueError):
        tied_argmax([])


def test_decision_check_against_query() -> None:
    q = make_query()
    Decision(q.id, probs=np.full(3, 1 / 3)).check_against(q)
    with pytest.raises(ValueError, match="returned for query"):
        Decision("other", probs=np.full(3, 1 / 3)).check_against(q)
    with pytest.raises(ValueError, match="2 probabilities for 3"):
        Decision(q.id, probs=np.array([0.5, 0.5])).check_against(q)


def test_items_and_itemsets() -> None:
    a = Item("a", options=("x", "y"), gold=1)
    with pytest.raises(ValueError, match="gold"):
        Item("b", options=("x", "y"), gold=2)
    with pytest.raises(ValueError, match="distinct"):
        Item("b", options=("x", "x"))
    s = ItemSet("set", items=(a, Item("b", options=("u", "v"))))
    assert len(s) == 2 and s.by_id("b").options == ("u", "v")
    with pytest.raises(ValueError, match="duplicate item id"):
        ItemSet("set", items=(a, a))
