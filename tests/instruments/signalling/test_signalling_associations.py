"""SWOW-EN strengths and ConceptNet assertions loaders (small fixtures in published formats)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from sig_helpers import shared_data

from choiceaudit.instruments.signalling._associations import (
    conceptnet_coverage,
    read_conceptnet_assertions,
    read_swow_strengths,
    swow_coverage,
    with_coverage,
)
from choiceaudit.instruments.signalling._norms import (
    NormsFormatError,
)
from choiceaudit.instruments.signalling._pool import build_pool
from choiceaudit.instruments.signalling._things import load_things

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SWOW = FIXTURES / "swow_strength_R123_sample.tsv"
CONCEPTNET = FIXTURES / "conceptnet_assertions_sample.csv"


def test_swow_strengths_detects_response_set_and_reads_rows() -> None:
    swow = read_swow_strengths(SWOW)
    assert swow.response_set == "R123"
    assert swow.strength["aardvark"] == {"anteater": 0.4, "animal": 0.35, "Africa": 0.25}
    assert swow.strength["abacus"]["counting"] == 0.75
    assert "station wagon" in swow.cues and len(swow) == 5


def test_swow_rows_without_a_response_are_counted(tmp_path: Path) -> None:
    table = tmp_path / "s.tsv"
    table.write_text(
        "cue\tresponse\tR1\tN\tR1.Strength\n"
        "cat\tdog\t3\t10\t0.3\ncat\tNA\t2\t10\t0.2\ncat\t\t1\t10\t0.1\n"
    )
    swow = read_swow_strengths(table)
    assert swow.strength == {"cat": {"dog": 0.3}}
    assert swow.n_missing_responses == 2
    assert read_swow_strengths(SWOW).n_missing_responses == 0


def test_swow_inconsistent_strength_names_the_row(tmp_path: Path) -> None:
    bad = tmp_path / "s.tsv"
    bad.write_text("cue\tresponse\tR1\tN\tR1.Strength\ncat\tdog\t3\t10\t0.9\n")
    with pytest.raises(NormsFormatError, match=r"row 2, field 'R1\.Strength'"):
        read_swow_strengths(bad)


def test_swow_coverage_is_exact_case_and_feeds_the_pool() -> None:
    norms = load_things(shared_data())
    mask = swow_coverage(norms, read_swow_strengths(SWOW))
    covered = {norms.words[i] for i in np.flatnonzero(mask)}
    # "Accordion" is not "accordion": no case folding; "bat" matches both homograph rows
    assert covered == {"aardvark", "abacus", "station wagon", "bat"}
    pool = build_pool(with_coverage(norms, "swow", mask, origin=str(SWOW)))
    assert pool.steps[1][1] == 5  # bat1, bat2 and three more: intersection before filters
    assert set(pool.words) == {"aardvark", "abacus"}  # bat: homograph; station wagon: not a noun


def test_conceptnet_assertions_keep_language_edges(tmp_path: Path) -> None:
    edges = read_conceptnet_assertions(CONCEPTNET)
    assert len(edges) == 3
    assert edges.start == ["hammer", "hammer", "ice cream"]
    assert edges.end == ["tool", "hit nail", "cold"]
    assert edges.relation[0] == "/r/IsA" and edges.weight == [2.0, 1.0, 0.5]
    assert edges.skipped == {"other language": 1}
    norms = load_things(shared_data())
    covered = {norms.words[i] for i in np.flatnonzero(conceptnet_coverage(norms, edges))}
    assert covered == {"hammer", "ice cream", "tool"}
    gz = tmp_path / "a.csv.gz"
    gz.write_bytes(gzip.compress(CONCEPTNET.read_bytes()))
    assert read_conceptnet_assertions(gz).start == edges.start


def test_conceptnet_malformed_rows_are_errors(tmp_path: Path) -> None:
    bad = tmp_path / "c.csv"
    bad.write_text("/a/x\t/r/IsA\t/c/en/a\t/c/en/b\n")
    with pytest.raises(NormsFormatError, match="row 1"):
        read_conceptnet_assertions(bad)
    bad.write_text('/a/x\t/r/IsA\t/c/en/a\t/c/en/b\t{"dataset": 1}\n')
    with pytest.raises(NormsFormatError, match="weight"):
        read_conceptnet_assertions(bad)
