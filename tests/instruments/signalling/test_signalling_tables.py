"""Item-set hash and the flat item / prompt tables."""

from __future__ import annotations

import dataclasses

import pytest

from choiceaudit.instruments.signalling._item_tables import (
    item_rows,
    item_set_hash,
    prompt_rows,
)
from choiceaudit.instruments.signalling._render import (
    render_queries,
)
from choiceaudit.types import Item, ItemSet


def _item(item_id: str = "sig-moves-000001", fit_cost: float = 0.2) -> Item:
    return Item(
        id=item_id,
        options=("stays still", "moves a little", "moves"),
        meta={
            "tile": "moves",
            "question": "Does the object move by itself?",
            "means": ["hammer", "rope"],
            "clues": ["tulip", "cloud"],
            "target": [1, 0],
            "target_words": ["rope", "tulip"],
            "perms": ["201", "120"],
            "conflict": True,
            "o_fit": 0,
            "o_bayes": 2,
            "fit_cost": fit_cost,
            "competition_ratio": 1.5,
        },
    )


def test_hash_is_stable_and_sensitive_to_any_change() -> None:
    a = ItemSet("s", (_item(),), config={"seed": 1})
    assert item_set_hash(a) == item_set_hash(ItemSet("s", (_item(),), config={"seed": 1}))
    assert len(item_set_hash(a)) == 64
    assert item_set_hash(a) != item_set_hash(ItemSet("s", (_item(fit_cost=0.21),), {"seed": 1}))
    assert item_set_hash(a) != item_set_hash(ItemSet("s", (_item(),), config={"seed": 2}))
    with pytest.raises(ValueError, match="NaN"):
        item_set_hash(ItemSet("s", (_item(fit_cost=float("nan")),)))


def test_item_rows_and_prompt_rows() -> None:
    items = ItemSet("s", (_item(),))
    (row,) = item_rows(items)
    assert row["perm_0"] == "201" and row["perm_1"] == "120"
    assert row["target_means"] == "rope" and row["conflict"] is True
    queries = render_queries(items, formats=("V", "L"))
    rows = prompt_rows(queries)
    assert len(rows) == 4
    assert rows[0]["perm"] == "201" and rows[0]["continuations"] == [
        " moves",
        " stays still",
        " moves a little",
    ]
    assert rows[0]["prompt"] == queries[0].prompt()
    assert "rope" not in rows[0]["neutral_prompt"]
    assert rows[2]["format"] == "L" and rows[2]["continuations"] == [" A", " B", " C"]
    assert dataclasses.asdict(items.items[0])["id"] == row["item_id"]
