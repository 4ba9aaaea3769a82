"""build_signalling_items: the whole build, its recorded reports and its instrument hash."""

from __future__ import annotations

import json

import pytest
from sig_helpers import shared_data

from choiceaudit.instruments.signalling import (
    BayesOracleChooser,
    UniformChooser,
    build_signalling_items,
)
from choiceaudit.instruments.signalling._analysis import (
    cell_summary,
    coordinate_table,
)
from choiceaudit.instruments.signalling._build import (
    load_norms,
)
from choiceaudit.instruments.signalling._divergence import (
    fit_cost_deciles,
)
from choiceaudit.instruments.signalling._item_tables import (
    item_set_hash,
)
from choiceaudit.instruments.signalling._render import (
    render_queries,
)
from choiceaudit.instruments.signalling._tiles import (
    tiles_hash,
)


def test_things_build_records_every_report_and_is_reproducible() -> None:
    kw = {"data": shared_data(), "seed": 7, "n_candidates": 20_000, "n_items": 200}
    first = build_signalling_items("things", **kw)  # type: ignore[arg-type]
    cfg = first.items.config
    assert len(first.items) == 200
    assert cfg["pool"]["size"] == 1393 and cfg["pool"]["steps"][0] == [
        "concepts in the norms",
        1854,
    ]
    assert sorted(cfg["tile_screen"]["selected"]) == ["hold", "manmade", "moves", "size"]
    assert round(cfg["tile_screen"]["rater_disagreement_ratio"]["size"], 3) == 0.420
    assert cfg["tiles_sha256"] == tiles_hash("things")
    assert cfg["retention"]["available"] is True
    assert set(cfg["conflict_rates"]) == {"manmade", "size", "hold", "moves"}
    json.dumps(cfg, allow_nan=False)  # the config is plain, finite JSON
    assert first.instrument_hash == item_set_hash(first.items)
    again = build_signalling_items("things", **kw)  # type: ignore[arg-type]
    assert again.instrument_hash == first.instrument_hash
    other = build_signalling_items("things", **{**kw, "seed": 8})  # type: ignore[arg-type]
    assert other.instrument_hash != first.instrument_hash


def test_lancaster_build_reports_the_screen_as_unavailable() -> None:
    result = build_signalling_items("lancaster", seed=1, n_candidates=8_000, n_items=80)
    screen = result.items.config["tile_screen"]
    assert screen["selected"] == [] and "no rater SD" in screen["unavailable"]
    assert screen["rater_disagreement_ratio"]["haptic"] is None
    assert result.items.config["retention"]["available"] is False


def test_things_without_data_names_the_fetch_command() -> None:
    with pytest.raises(ValueError, match="data fetch things"):
        load_norms("things")


def test_full_build_reproduces_the_papers_references_on_size_conflict_items() -> None:
    # 200,000 candidates, 1,000 items: the paper's 125 size conflict items. Paper (its release):
    # random post_norm 0.459, fit_norm 0.3985; salience pole post_norm 0.691; Bayes slope ≈ −0.90.
    result = build_signalling_items("things", data=shared_data(), seed=20260901)
    items = [i for i in result.items if i.meta["tile"] == "size" and i.meta["conflict"]]
    assert len(items) == 125
    queries = render_queries(items)
    rows = coordinate_table(items, queries, UniformChooser().score(queries), rules=["probs"])
    s = cell_summary(rows, seed=0, n_resamples=200)
    assert s["random_post_norm"]["mean"] == pytest.approx(0.459, abs=0.02)
    assert s["random_fit_norm"]["mean"] == pytest.approx(0.3985, abs=0.02)
    assert s["salience_post_norm"]["mean"] == pytest.approx(0.691, abs=0.02)
    bayes = coordinate_table(
        items, queries, BayesOracleChooser(items).score(queries), rules=["probs"]
    )
    deciles = fit_cost_deciles(bayes, items, seed=0, n_resamples=200)
    assert deciles["bayes_slope"]["estimate"] == pytest.approx(-0.90, abs=0.1)
