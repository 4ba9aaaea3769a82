"""Freezing the instrument: the item directory, its content hash, the dated
append-only amendment log and the refusal of runs made with other items."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sig_helpers import shared_data

from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling import (
    InstrumentMismatchError,
    build_signalling_items,
    freeze_instrument,
    load_instrument,
)
from choiceaudit.instruments.signalling._freeze import (
    AMENDMENTS_FILE,
    ITEM_SET_FILE,
    check_run_hash,
)
from choiceaudit.instruments.signalling._item_tables import (
    item_set_hash,
)
from choiceaudit.instruments.signalling.frozen import (
    INSTRUMENT_FILE,
    amend_instrument,
    read_amendments,
)
from choiceaudit.types import ItemSet

NOW = dt.datetime(2026, 9, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def things_items() -> ItemSet:
    return build_signalling_items(
        "things", seed=7, data=shared_data(), n_candidates=4000, n_items=24
    ).items


def test_item_directory_holds_items_prompts_tiles_and_covariates(
    things_items: ItemSet, tmp_path: Path
) -> None:
    frozen = freeze_instrument(things_items, tmp_path / "items", now=NOW)
    root = frozen.path
    table = pq.read_table(root / "items.parquet").to_pylist()
    assert [r["item_id"] for r in table] == [i.id for i in things_items]
    first, item = table[0], things_items.items[0]
    assert (first["perm_0"], first["perm_1"]) == tuple(item.meta["perms"])
    assert first["conflict"] == item.meta["conflict"] and first["tile"] == item.meta["tile"]
    # both targets' concreteness and frequency (THINGS carries both, §I-E)
    assert first["target_means_frequency"] == item.meta["target_means_frequency"]
    assert first["target_clue_concreteness"] == item.meta["target_clue_concreteness"]
    assert frozen.record["covariates"] == {
        "available": ["concreteness", "frequency"],
        "unavailable": {},
    }
    # 2 conditions x (V + L bare + L paren) x 2 permutations = 12 prompts per item
    prompts = pq.read_table(root / "prompts.parquet").to_pylist()
    assert len(prompts) == 12 * len(things_items) == frozen.record["n_prompts"]
    assert {p["condition"] for p in prompts} == {"4", "5"}
    assert all(p["prompt"].endswith("Answer:") for p in prompts)
    assert (root / "tiles" / "things.toml").is_file()
    rec = json.loads((root / INSTRUMENT_FILE).read_text())
    assert rec["item_set_hash"] == item_set_hash(things_items)
    assert rec["fit_family"]["primary"] == "exponential"
    assert rec["analysis"]["analysis_set"]["tile"] == "size"  # the paper's primary tile
    assert rec["pool"]["size"] == things_items.config["pool"]["size"]
    assert set(rec["files"]) == {
        ITEM_SET_FILE,
        "items.parquet",
        "prompts.parquet",
        "tiles/things.toml",
    }


def test_hash_is_content_only_and_round_trips(things_items: ItemSet, tmp_path: Path) -> None:
    a = freeze_instrument(things_items, tmp_path / "a", now=NOW)
    b = freeze_instrument(things_items, tmp_path / "b", now=NOW + dt.timedelta(days=3))
    assert a.hash == b.hash  # the freeze time is not content
    loaded = load_instrument(tmp_path / "a")
    assert loaded.hash == a.hash
    assert loaded.items == things_items
    other = freeze_instrument(
        things_items, tmp_path / "c", rendering={"conditions": ["4"]}, now=NOW
    )
    assert other.hash != a.hash  # the rendering is part of the instrument
    with pytest.raises(InputError, match="amendments go to"):
        freeze_instrument(things_items, tmp_path / "a")


def test_lancaster_states_the_missing_frequency_covariate(tmp_path: Path) -> None:
    items = build_signalling_items("lancaster", seed=2, n_candidates=4000, n_items=16).items
    frozen = freeze_instrument(items, tmp_path / "lanc", now=NOW)
    cov = frozen.record["covariates"]
    assert cov["available"] == ["concreteness"]
    assert "no word-frequency column" in cov["unavailable"]["frequency"]
    row = pq.read_table(tmp_path / "lanc" / "items.parquet").to_pylist()[0]
    assert row["target_means_frequency"] is None and row["target_means_concreteness"] >= 4.5
    # four options on every tile: the analysis set is every conflict item (no primary tile)
    assert frozen.record["analysis"]["analysis_set"] == {
        "tile": None,
        "conflict": True,
        "condition": "4",
        "format": "V",
    }


def test_tampering_is_detected(things_items: ItemSet, tmp_path: Path) -> None:
    root = freeze_instrument(things_items, tmp_path / "items", now=NOW).path
    payload = json.loads((root / ITEM_SET_FILE).read_text())
    payload["items"][0]["meta"]["fit_cost"] += 0.01
    (root / ITEM_SET_FILE).write_text(json.dumps(payload))
    with pytest.raises(InstrumentMismatchError, match="edited after freezing"):
        load_instrument(root)


def test_changed_prompt_file_is_detected(things_items: ItemSet, tmp_path: Path) -> None:
    root = freeze_instrument(things_items, tmp_path / "items", now=NOW).path
    (root / "prompts.parquet").write_bytes(b"not the frozen prompts")
    with pytest.raises(InstrumentMismatchError, match=r"prompts\.parquet: changed"):
        load_instrument(root)
    assert load_instrument(root, verify_files=False).hash  # a run's copy has no parquet


def test_amendments_are_dated_appended_and_never_edited(
    things_items: ItemSet, tmp_path: Path
) -> None:
    frozen = freeze_instrument(things_items, tmp_path / "items", now=NOW)
    first = amend_instrument(frozen.path, "Gaussian decay reported beside exponential.", now=NOW)
    amend_instrument(frozen.path, "Format L retired as a measurement condition.", author="ch")
    log = read_amendments(frozen.path)
    assert [e["text"] for e in log] == [
        "Gaussian decay reported beside exponential.",
        "Format L retired as a measurement condition.",
    ]
    assert first["date"] == "2026-09-01T12:00:00+00:00"
    assert all(e["instrument_hash"] == frozen.hash for e in log)
    assert load_instrument(frozen.path).hash == frozen.hash  # amending never re-hashes
    path = frozen.path / AMENDMENTS_FILE
    original = path.read_text()
    path.write_text(original.replace("Format L retired", "Format L kept"))  # the last line
    with pytest.raises(InstrumentMismatchError, match=r"line 2 \(field entry_sha256\)"):
        read_amendments(frozen.path)
    lines = original.splitlines(keepends=True)
    path.write_text(lines[1] + lines[0])  # reordered
    with pytest.raises(InstrumentMismatchError, match=r"line 1 \(field previous_sha256\)"):
        read_amendments(frozen.path)


def test_run_with_other_items_is_refused(things_items: ItemSet, tmp_path: Path) -> None:
    frozen = freeze_instrument(things_items, tmp_path / "items", now=NOW)
    check_run_hash({"items_hash": frozen.hash}, frozen, run="r1")
    with pytest.raises(InstrumentMismatchError, match="run r2 records items hash"):
        check_run_hash({"items_hash": "0" * 64}, frozen, run="r2")
    with pytest.raises(InstrumentMismatchError, match="not in the frozen rendering"):
        freeze_instrument(
            things_items, tmp_path / "v", rendering={"formats": ["V"]}, now=NOW
        ).render(formats=["L"])
