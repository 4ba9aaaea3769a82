"""Rendering (§I-G, §I-I, §I-H): bare words, leak test, permutations, formats V/L, conditions
4/5 and the neutral prompt."""

from __future__ import annotations

import numpy as np
import pytest

from choiceaudit.instruments.signalling._render import (
    INSTRUCTION,
    SALIENCE_SENTENCE,
    render_queries,
    render_signalling_query,
)
from choiceaudit.instruments.signalling.choosers import CosineChooser
from choiceaudit.types import Item

OPTIONS = ("stays still", "moves a little", "moves")
MEANS = ["hammer", "rope", "kettle", "pillow", "scarf", "spoon", "brick", "drum", "lamp", "key"]
CLUES = ["tulip", "cloud", "pebble", "ribbon", "feather", "lemon", "sock", "coin", "shell", "cork"]


def _item(**changes: object) -> Item:
    meta: dict[str, object] = {
        "tile": "moves",
        "question": "Does the object move by itself?",
        "means": MEANS,
        "clues": CLUES,
        "target": [2, 5],
        "target_words": ["kettle", "lemon"],
        "perms": ["201", "120"],
    }
    meta.update(changes)
    return Item(id="sig-moves-000001", options=OPTIONS, meta=meta)


def test_format_v_prompt_continuations_and_permutation() -> None:
    q = render_signalling_query(_item(), perm_index=0)
    assert q.perm == (2, 0, 1)
    assert q.options == ("moves", "stays still", "moves a little")
    assert q.continuations() == (" moves", " stays still", " moves a little")
    assert q.answer_format == "text"
    prompt = q.prompt()
    assert prompt.startswith(INSTRUCTION + "\n\n")
    assert "Means: hammer, rope, kettle," in prompt
    assert "Clues: tulip, cloud," in prompt
    assert "Your pair: Means = kettle, Clue = lemon" in prompt
    assert "Options:\n- moves\n- stays still\n- moves a little\n\nAnswer:" in prompt
    assert SALIENCE_SENTENCE not in prompt
    assert dict(q.meta) == {
        "item_id": "sig-moves-000001",
        "experiment": "signalling",
        "condition": "4",
        "format": "V",
        "perm_index": 0,
        "tile": "moves",
    }


def test_neutral_prompt_strips_item_content_and_keeps_menu_order() -> None:
    q = render_signalling_query(_item(), perm_index=1)
    neutral = q.prompt(neutral=True)
    for word in MEANS + CLUES:
        assert word not in neutral
    assert "Means:" not in neutral and "Your pair" not in neutral
    assert "Options:\n- moves a little\n- moves\n- stays still\n\nAnswer:" in neutral
    assert neutral.startswith(INSTRUCTION)
    # the prompt is the neutral prompt with the item content inserted before the menu
    assert q.prompt().endswith(neutral[len(INSTRUCTION) + 2 :])


def test_condition_5_adds_exactly_one_sentence() -> None:
    q4 = render_signalling_query(_item(), perm_index=0, condition="4")
    q5 = render_signalling_query(_item(), perm_index=0, condition="5")
    assert q5.instruction == f"{q4.instruction} {SALIENCE_SENTENCE}"
    assert q5.state == q4.state and q5.options == q4.options
    assert q5.id != q4.id and q5.meta["condition"] == "5"


def test_format_l_bare_and_parenthesised_labels() -> None:
    bare = render_signalling_query(_item(), perm_index=0, fmt="L")
    assert bare.keys == ("A", "B", "C")
    assert bare.continuations() == (" A", " B", " C")
    assert "A. moves\nB. stays still\nC. moves a little" in bare.state
    paren = render_signalling_query(_item(), perm_index=0, fmt="L", label_form="paren")
    assert paren.continuations() == (" (A)", " (B)", " (C)")
    assert "(A) moves\n(B) stays still" in paren.state
    assert paren.meta["label_form"] == "paren" and paren.answer_format == "key"
    assert "(A) moves" in paren.prompt(neutral=True)


def test_render_queries_two_permutations_per_item_and_condition() -> None:
    qs = render_queries(
        [_item()], conditions=("4", "5"), formats=("V", "L"), label_forms=("bare", "paren")
    )
    assert len(qs) == 2 * (1 + 2) * 2
    assert len({q.id for q in qs}) == len(qs)
    v4 = [q for q in qs if q.meta["condition"] == "4" and q.meta["format"] == "V"]
    assert [q.perm for q in v4] == [(2, 0, 1), (1, 2, 0)]


def test_leak_and_overlap_are_refused() -> None:
    with pytest.raises(ValueError, match="leak"):
        render_signalling_query(_item(means=[*MEANS[:-1], "move"]), perm_index=0)
    with pytest.raises(ValueError, match="share"):
        render_signalling_query(_item(clues=[*CLUES[:-1], "rope"]), perm_index=0)
    with pytest.raises(ValueError, match="stored permutations"):
        render_signalling_query(_item(), perm_index=2)
    with pytest.raises(ValueError, match="condition"):
        render_signalling_query(_item(), perm_index=0, condition="6")  # type: ignore[arg-type]


def test_cosine_chooser_uses_the_pair_minimum_and_caches_embeddings() -> None:
    vectors = {
        "stays still": [1.0, 0.0, 0.0],
        "moves a little": [0.6, 0.8, 0.0],
        "moves": [0.0, 1.0, 0.0],
        "kettle": [1.0, 0.0, 0.0],
        "lemon": [0.0, 1.0, 0.0],
    }
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        # listed concepts other than the targets (for the hypothesis matrix) share one vector
        return [vectors.get(t, [0.0, 0.0, 1.0]) for t in texts]

    item = _item(target_words=["kettle", "lemon"])
    chooser = CosineChooser([item], embed, model="fake", word_level=False)  # type: ignore[arg-type]
    queries = render_queries([item])
    decisions = chooser.score(queries)
    # min(cos(o, kettle), cos(o, lemon)): stays still 0, moves a little 0.6, moves 0
    q = queries[0]
    assert q.options == ("moves", "stays still", "moves a little")
    assert decisions[0].scores["cosine"].tolist() == pytest.approx([0.0, 0.0, 0.6])
    assert decisions[0].choice() == (2,)
    embedded = [t for c in calls for t in c]
    assert len(embedded) == len(set(embedded)) and set(vectors) <= set(embedded)  # once each
    assert chooser.describe()["model"] == "fake"


def test_cosine_chooser_word_level_matches_conditions_2_and_3_and_counts_negative_entries() -> None:
    # word level (the default): the option's best content word, the tile frame stripped, as in
    # the SWOW and ConceptNet choosers (§I-K); "moves" is not shared by all three options
    vectors = {
        "stays": [1.0, 0.0, 0.0],
        "still": [0.0, 0.0, 1.0],
        "moves": [0.0, 1.0, 0.0],
        "little": [0.6, 0.8, 0.0],
        "kettle": [1.0, 0.0, 0.0],
        "lemon": [0.0, 1.0, 0.0],
        "rope": [-1.0, 0.0, 0.0],
        "cloud": [0.0, -1.0, 0.0],
    }
    item = _item(means=["kettle", "rope"], clues=["lemon", "cloud"], target=[0, 0])
    chooser = CosineChooser([item], lambda texts: np.array([vectors[t] for t in texts]))
    q = render_queries([item])[0]
    assert q.options == ("moves", "stays still", "moves a little")
    d = chooser.score([q])[0]
    # moves: min(0, 1) = 0; stays still: min(max(1, 0), max(0, 0)) = 0; moves a little:
    # min(max(0, 0.6), max(1, 0.8)) = 0.6
    assert d.scores["cosine"].tolist() == pytest.approx([0.0, 0.0, 0.6])
    # hypothesis matrix: 3 options x (kettle, rope) x (lemon, cloud), pair minimum; the
    # negative entries are the ones with rope or cloud whose best word is not opposite
    sims: dict[str, dict[str, float]] = {
        "moves": {"kettle": 0, "rope": 0, "lemon": 1, "cloud": -1},
        "stays still": {"kettle": 1, "rope": 0, "lemon": 0, "cloud": 0},
        "moves a little": {"kettle": 0.6, "rope": 0, "lemon": 1, "cloud": -0.8},
    }
    expected = np.mean(
        [
            min(sims[o][m], sims[o][c]) < 0
            for o in q.options
            for m in ("kettle", "rope")
            for c in ("lemon", "cloud")
        ]
    )
    assert d.aux["negative_hypothesis_share"] == pytest.approx(expected)
    assert 0 < expected < 1
