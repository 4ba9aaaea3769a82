"""Norms loaders: THINGS, THINGSplus (both column conventions), SPoSE, lancaster."""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from sig_helpers import shared_data

from choiceaudit.instruments.signalling._lancaster import load_lancaster
from choiceaudit.instruments.signalling._norms import (
    NormsBundle,
    NormsFormatError,
)
from choiceaudit.instruments.signalling._things import (
    load_things,
    read_property_ratings,
    read_size_ratings,
    read_things_concepts,
)


@cache
def _things() -> NormsBundle:
    return load_things(shared_data())


@cache
def _lancaster() -> NormsBundle:
    return load_lancaster()


def test_things_concepts_crlf_parsed_without_stray_carriage_returns() -> None:
    concepts = read_things_concepts(shared_data() / "things" / "things_concepts.tsv")
    assert len(concepts.unique_ids) == 1854
    assert concepts.unique_ids[0] == "aardvark"
    assert not any("\r" in w for w in concepts.words)
    i = concepts.unique_ids.index("abacus")
    assert concepts.concreteness[i] == pytest.approx(4.52)
    assert concepts.frequency[i] == 12
    assert concepts.part_of_speech[i] == "Noun"


def test_things_concepts_crlf_fixture_matches_lf(tmp_path: Path) -> None:
    header = "Word\tuniqueID\tConcreteness (M)\tSUBTLEX freq\tDominant Part of Speech"
    rows = [header, "bat\tbat1\t4.8\t100\tNoun", "bat\tbat2\t4.9\t\t#N/A"]
    crlf, lf = tmp_path / "crlf.tsv", tmp_path / "lf.tsv"
    crlf.write_bytes("\r\n".join(rows).encode() + b"\r\n")
    lf.write_text("\n".join(rows) + "\n")
    a, b = read_things_concepts(crlf), read_things_concepts(lf)
    assert a.part_of_speech == b.part_of_speech == ("Noun", None)
    assert a.words == ("bat", "bat")
    assert math.isnan(a.frequency[1])


def test_bad_number_names_file_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "c.tsv"
    path.write_text(
        "Word\tuniqueID\tConcreteness (M)\tSUBTLEX freq\tDominant Part of Speech\n"
        "cat\tcat\t4.9\t10\tNoun\n"
        "dog\tdog\tvery\t10\tNoun\n"
    )
    with pytest.raises(NormsFormatError, match=r"c\.tsv, row 3, field 'Concreteness \(M\)'"):
        read_things_concepts(path)


def test_property_ratings_early_release_columns() -> None:
    ratings = read_property_ratings(shared_data() / "thingsplus" / "property_ratings_animacy.csv")
    i = ratings.unique_ids.index("abacus")
    assert ratings.means["manmade"][i] == pytest.approx(6.8718)
    assert ratings.sds["manmade"][i] == pytest.approx(0.4091)
    assert ratings.means["be.moved"][i] == pytest.approx(5.6667)


def test_property_ratings_final_release_naming(tmp_path: Path) -> None:
    path = tmp_path / "final.csv"
    path.write_text(
        "unique_id,Manmade_mean,Manmade_SD,Be_moved (mean),Be_moved (SD)\n"
        "abacus,6.87,0.41,5.67,1.15\n"
        "aardvark,1.26,1.00,3.32,1.38\n"
    )
    ratings = read_property_ratings(path, dimensions=("manmade", "be.moved"))
    assert ratings.unique_ids == ("abacus", "aardvark")
    np.testing.assert_allclose(ratings.means["manmade"], [6.87, 1.26])
    np.testing.assert_allclose(ratings.sds["be.moved"], [1.15, 1.38])


def test_property_ratings_missing_dimension_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("uniqueID,manmade_mean\nabacus,6.8\n")
    with pytest.raises(NormsFormatError, match="manmade"):
        read_property_ratings(path, dimensions=("manmade",))


def test_size_ratings_semicolon_and_id_normalisation() -> None:
    size = read_size_ratings(shared_data() / "thingsplus" / "size_ratings_size_fixed.csv")
    i = size.unique_ids.index("station_wagon")
    assert size.means[i] == pytest.approx(361.9148936170213)
    assert size.sds[i] == pytest.approx(22.17576015778023)


def test_load_things_bundle() -> None:
    b = _things()
    assert len(b) == 1854
    assert set(b.dimensions) >= {"manmade", "size", "hold", "moves", "be.moved"}
    assert b.dimensions["size"].scale == (0.0, 520.0)
    assert b.dimensions["manmade"].scale == (1.0, 7.0)
    assert int(b.coverage["spose"].sum()) == 1854
    assert b.homograph is not None and int(b.homograph.sum()) == 58
    assert b.noun is not None and int(b.noun.sum()) == 1451
    i = b.index("station_wagon")
    assert b.dimensions["size"].means[i] == pytest.approx(361.9148936170213)
    assert b.skipped["size rating rows for concepts not in THINGS"] == 0


def test_lancaster_bundle_has_no_rater_sd_and_uses_0_5() -> None:
    b = _lancaster()
    assert set(b.dimensions) == {
        "visual",
        "auditory",
        "haptic",
        "interoceptive",
        "gustatory",
        "olfactory",
    }
    for dim in b.dimensions.values():
        assert dim.sds is None
        assert dim.scale == (0.0, 5.0)
        assert float(dim.means.min()) >= 0.0 and float(dim.means.max()) <= 5.0
    assert b.noun is not None
    i = b.index("apple")
    assert b.noun[i]
    assert b.dimensions["gustatory"].means[i] > 3.0
    assert "frequency" not in b.covariates
    # "a cappella" is a multiword expression: never a pool word
    assert not b.noun[b.index("a cappella")]
