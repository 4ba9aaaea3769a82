"""Tiles (§I-C), pool (§I-B) and the Appendix A retention report on the shared data."""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import pytest
from sig_helpers import shared_data

from choiceaudit.instruments.signalling._lancaster import load_lancaster
from choiceaudit.instruments.signalling._norms import (
    NormsBundle,
)
from choiceaudit.instruments.signalling._pool import (
    build_pool,
    retention_report,
)
from choiceaudit.instruments.signalling._things import load_things
from choiceaudit.instruments.signalling._tiles import (
    Tile,
    load_tiles,
    rater_disagreement_ratio,
    redundancy_clusters,
    select_tile_dimensions,
    tiles_hash,
)


@cache
def _things() -> NormsBundle:
    return load_things(shared_data())


def test_rater_disagreement_ratios_match_the_data_readme() -> None:
    b = _things()
    got = {
        d: round(rater_disagreement_ratio(b, d), 3) for d in ("manmade", "size", "hold", "moves")
    }
    assert got == {"manmade": 0.401, "size": 0.420, "hold": 0.661, "moves": 0.811}
    # the evaluative dimensions sort rater noise (§I-C): ratio above 1
    for d in ("arousing", "precious", "pleasant"):
        assert rater_disagreement_ratio(b, d) > 1.0


def test_redundancy_clusters_and_selection_give_the_papers_four_tiles() -> None:
    b = _things()
    clusters = redundancy_clusters(b)
    assert ("manmade", "lives", "natural") in clusters
    assert ("heavy", "size") in clusters
    assert ("grasp", "hold", "be.moved") in clusters
    ratios = {d: rater_disagreement_ratio(b, d) for d in b.dimensions}
    chosen = select_tile_dimensions(clusters, ratios)
    assert sorted(chosen["selected"]) == ["hold", "manmade", "moves", "size"]
    assert chosen["excluded"]["pleasant"].startswith("ratio 1.153")
    assert "redundant with size" in chosen["excluded"]["heavy"]


def test_lancaster_ratio_unavailable_and_screen_reports_why() -> None:
    b = load_lancaster()
    assert math.isnan(rater_disagreement_ratio(b, "auditory"))
    pool = build_pool(b)
    clusters = redundancy_clusters(b, concepts=pool.indices)
    assert ("gustatory", "olfactory") in clusters
    out = select_tile_dimensions(
        clusters, {d: rater_disagreement_ratio(b, d) for d in b.dimensions}
    )
    assert out["selected"] == [] and "unavailable" in out["unavailable"]


def test_shipped_tiles_load_with_equal_widths_on_the_instrument() -> None:
    tiles = {t.name: t for t in load_tiles("things", norms=_things())}
    assert [t.n_options for t in tiles.values()] == [3, 6, 4, 3]
    assert tiles["size"].width == 60.0
    assert tiles["size"].options[1] == "about the size of a chicken egg"
    assert tiles["size"].options[2] == "about the size of a football"
    assert tiles["hold"].edges == (1.0, 2.5, 4.0, 5.5, 7.0)
    lan = load_tiles("lancaster", norms=load_lancaster())
    assert all(t.edges[0] == 0.0 and t.edges[-1] == 5.0 for t in lan)
    assert len(tiles_hash("things")) == 64


def test_unequal_end_bin_is_rejected() -> None:
    with pytest.raises(ValueError, match="one width"):
        Tile("x", "manmade", "q?", (0.0, 2.0, 5.0, 7.0), ("a", "b", "c"))


def test_tile_file_errors_name_the_tile(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        '[[tile]]\nname="x"\ndimension="nope"\nquestion="q"\nedges=[1,4,7]\noptions=["a","b"]\n'
    )
    with pytest.raises(ValueError, match=r"bad\.toml, tile #1: dimension 'nope'"):
        load_tiles(path, norms=_things())
    path.write_text(
        '[[tile]]\nname="x"\ndimension="size"\nquestion="q"\nedges=[0,300,600]\noptions=["a","b"]\n'
    )
    with pytest.raises(ValueError, match="instrument range"):
        load_tiles(path, norms=_things())


def test_pool_steps_intersection_before_filters() -> None:
    pool = build_pool(_things())
    assert [n for _, n in pool.steps] == [1854, 1850, 1792, 1393]
    assert len(pool) == 1393
    words = set(pool.words)
    assert "aardvark" in words and "bat" not in words  # homograph excluded


def test_pool_rejects_unknown_source() -> None:
    with pytest.raises(KeyError, match="swow"):
        build_pool(_things(), sources=["swow"])


def test_retention_report_appendix_a() -> None:
    rep = retention_report(build_pool(_things()))
    assert rep["all"]["natural_kinds"] == 423 and rep["all"]["artifacts"] == 1431
    assert rep["all"]["natural_retention"] == pytest.approx(356 / 423)
    assert rep["all"]["gap_pp"] == pytest.approx(11.694, abs=1e-3)
    assert rep["single_word"]["gap_pp"] == pytest.approx(0.897, abs=1e-3)
    assert "rarest_frequency_quartile" in rep
    assert retention_report(build_pool(load_lancaster()))["available"] is False
