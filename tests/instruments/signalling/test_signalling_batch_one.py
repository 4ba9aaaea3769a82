"""§I-K: a batch-1 arm beside the batched one gives the flip rate per tile and rule."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from choiceaudit.audit import analyse_runs, run_signalling
from choiceaudit.errors import InputError
from choiceaudit.store import RunStore
from choiceaudit.types import Decision

ARGS = {"norms": "lancaster", "n_items": 8, "n_candidates": 4000, "seed": 11}


def test_batch_one_needs_a_batched_causal_lm(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="max_batch_rows"):
        run_signalling(["fake"], [], tmp_path / "r", batch_one=True, **ARGS)  # type: ignore[arg-type]


def test_the_flip_rate_counts_changed_choices_per_tile(tmp_path: Path) -> None:
    (batched,) = run_signalling(["fake"], [], tmp_path / "r", **ARGS)  # type: ignore[arg-type]
    single = tmp_path / "r" / "fake-batch1"
    shutil.copytree(batched / "instrument", single / "instrument")
    manifest = RunStore(batched).read_manifest()
    manifest["config"] = {**manifest["config"], "model": "fake (batch 1)", "batch_of": "fake"}
    store = RunStore(single)
    store.write_manifest(manifest)
    rows = RunStore(batched).load().rows
    flipped_tile = str(rows[0].query.meta["tile"])
    changed = []
    for row in rows:
        decision = row.decision
        if row is rows[0]:  # move all mass to another slot: a flip
            other = (int(np.argmax(decision.probs)) + 1) % decision.n_options
            probs = np.zeros(decision.n_options)
            probs[other] = 1.0
            decision = Decision(query_id=row.query.id, probs=probs, scores=decision.scores)
        changed.append((row.index, row.query, decision))
    store.write_part(changed)
    (analysis,) = analyse_runs([batched, single])
    flips = {(f.rule, f.tile): f for f in analysis.batch_flips}
    per_tile = {}
    for row in rows:
        per_tile[str(row.query.meta["tile"])] = per_tile.get(str(row.query.meta["tile"]), 0) + 1
    for (rule, tile), flip in flips.items():
        assert flip.model == "fake" and flip.n == per_tile[tile]
        expected = 1 if (rule == "probs" and tile == flipped_tile) else 0
        assert flip.flipped == expected
        assert flip.flip_rate == pytest.approx(expected / per_tile[tile])
    assert ("probs", flipped_tile) in flips
    assert json.dumps([f.flip_rate for f in analysis.batch_flips])  # plain numbers
    assert not [s for s in analysis.skipped if s.analysis.startswith("batch-1 flips")]
    # the batch-1 run alone: no flip rate can be computed, and the analysis says why
    (alone,) = analyse_runs([single])
    assert alone.batch_flips == ()
    (skip,) = [s for s in alone.skipped if s.analysis.startswith("batch-1 flips")]
    assert "the batched run of fake is not among the runs analysed" in skip.reason
