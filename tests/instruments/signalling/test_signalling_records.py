"""The signalling instrument's typed records on an item set built here (no shared data): the
freeze record reads back as written, a rendering override names only rendering fields, an
amendment is read back as the entry written, and a coordinate row carries its rendering."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling import freeze_instrument, load_instrument
from choiceaudit.instruments.signalling._analysis import coordinate_table
from choiceaudit.instruments.signalling._render import render_queries
from choiceaudit.instruments.signalling.choosers import UniformChooser
from choiceaudit.instruments.signalling.frozen import amend_instrument, read_amendments
from choiceaudit.types import Item, ItemSet

NOW = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def _items() -> ItemSet:
    item = Item(
        id="sig-moves-000001",
        options=("stays still", "moves a little", "moves"),
        meta={
            "tile": "moves",
            "question": "Do the two objects move by themselves?",
            "means": ["kettle", "rope"],
            "clues": ["lemon", "cloud"],
            "target_words": ["kettle", "lemon"],
            "perms": ["201", "120"],
            "fit": [1.0, 0.5, 0.2],
            "posterior": [0.2, 0.5, 0.3],
            "o_fit": 0,
            "o_bayes": 1,
            "fit_cost": 0.5,
            "competition_ratio": 0.4,
            "conflict": True,
        },
    )
    return ItemSet(name="t", items=(item,), config={"norms": "things", "seed": 3})


def test_the_freeze_record_reads_back_as_written(tmp_path: Path) -> None:
    frozen = freeze_instrument(_items(), tmp_path / "f", now=NOW)
    again = load_instrument(tmp_path / "f")
    assert again.record == frozen.record
    on_disk = json.loads((tmp_path / "f" / "instrument.json").read_text(encoding="utf-8"))
    assert on_disk == frozen.record and on_disk["frozen_at"] == "2026-01-02T03:04:05+00:00"
    # one tile, one menu size: the analysis set is every conflict item (tile None)
    assert again.analysis["analysis_set"] == {
        "tile": None,
        "conflict": True,
        "condition": "4",
        "format": "V",
    }
    assert again.rendering["label_forms"] == ["bare", "paren"]
    assert (again.record["candidates"], again.record["pool"], again.record["seed"]) == (
        None,
        None,
        3,
    )
    assert again.record["n_prompts"] == 12  # 2 conditions x (V + L bare + L paren) x 2 perms


def test_a_rendering_override_keeps_the_other_defaults(tmp_path: Path) -> None:
    frozen = freeze_instrument(_items(), tmp_path / "f", rendering={"formats": ["V"]}, now=NOW)
    assert frozen.rendering["formats"] == ["V"]
    assert frozen.rendering["conditions"] == ["4", "5"]
    assert frozen.record["n_prompts"] == 4


def test_a_rendering_override_naming_no_rendering_field_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown fields \\['condition'\\]"):
        freeze_instrument(
            _items(),
            tmp_path / "f",
            rendering={"condition": ["4"]},  # type: ignore[typeddict-unknown-key, arg-type]
            now=NOW,
        )
    assert not (tmp_path / "f" / "instrument.json").exists()


def test_an_amendment_reads_back_as_the_entry_written(tmp_path: Path) -> None:
    frozen = freeze_instrument(_items(), tmp_path / "f", now=NOW)
    entry = amend_instrument(tmp_path / "f", "a note", author="me", now=NOW)
    assert entry["instrument_hash"] == frozen.hash and entry["author"] == "me"
    assert read_amendments(tmp_path / "f") == [entry]


def test_a_coordinate_row_carries_its_rendering() -> None:
    items = _items()
    queries = render_queries(items, formats=("V", "L"), label_forms=("bare", "paren"))
    rows = coordinate_table(items, queries, UniformChooser().score(queries), rules=["probs"])
    forms = {(r.format, r.label_form) for r in rows}
    assert forms == {("V", None), ("L", "bare"), ("L", "paren")}
    row = rows[0]
    # the uniform chooser ties every slot: its canonical options in display order (perm "201")
    assert row.field("tile") == "moves" and row.chosen == (2, 0, 1) and row.n_tied == 3
    assert row.agree_bayes == pytest.approx(1 / 3)
    with pytest.raises(KeyError, match="no field 'tiles'"):
        row.field("tiles")
