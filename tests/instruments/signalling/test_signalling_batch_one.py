"""§I-K: a batch-1 arm beside the batched one gives the flip rate per tile and rule."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TypedDict

import numpy as np
import pytest

from choiceaudit.audit import analyse_runs, run_signalling
from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling import SignallingAnalysis
from choiceaudit.store import RunStore
from choiceaudit.types import Decision


class _Args(TypedDict):
    norms: str
    n_items: int
    n_candidates: int
    seed: int


ARGS: _Args = {"norms": "lancaster", "n_items": 8, "n_candidates": 4000, "seed": 11}


def test_batch_one_needs_a_batched_causal_lm(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="max_batch_rows"):
        run_signalling(["fake"], [], out=tmp_path / "r", batch_one=True, **ARGS)


def test_the_flip_rate_counts_changed_choices_per_tile(tmp_path: Path) -> None:
    (batched,) = run_signalling(["fake"], [], out=tmp_path / "r", **ARGS)
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
    assert isinstance(analysis, SignallingAnalysis)
    flips = {(f.rule, f.tile): f for f in analysis.batch_flips}
    per_tile: dict[str, int] = {}
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
    assert isinstance(alone, SignallingAnalysis)
    assert alone.batch_flips == ()
    (skip,) = [s for s in alone.skipped if s.analysis.startswith("batch-1 flips")]
    assert "the batched run of fake is not among the runs analysed" in skip.reason


def test_the_batch_one_arm_is_never_a_model_cell(tmp_path: Path) -> None:
    # a batch-1 arm identical to its batched run: beside it (zero flips), not a second model
    # 16 items: an analysis set large enough for the cells' intervals against random
    args: _Args = {**ARGS, "n_items": 16}
    (batched,) = run_signalling(["fake"], ["uniform"], out=tmp_path / "r", **args)[:1]
    single = tmp_path / "r" / "fake-batch1"
    shutil.copytree(batched, single)
    manifest = RunStore(single).read_manifest()
    manifest["config"] = {**manifest["config"], "model": "fake (batch 1)", "batch_of": "fake"}
    RunStore(single).write_manifest(manifest)
    (analysis,) = analyse_runs([batched, tmp_path / "r" / "uniform", single])
    assert isinstance(analysis, SignallingAnalysis)
    assert {c.chooser for c in analysis.cells} == {"fake", "uniform"}
    models = [c for c in analysis.cells if c.kind == "model"]
    assert len(models) == 1 and models[0].bonferroni_level == pytest.approx(0.95)
    assert {rc.n_cells for rc in analysis.random_comparison} == {1}
    assert "fake (batch 1)" not in {e.chooser for e in analysis.excess}
    assert analysis.excess_r is not None and analysis.excess_r.n_cells == 1
    assert all(f.flipped == 0 and f.max_abs_score_change == 0.0 for f in analysis.batch_flips)
    arms = {a.chooser: a for a in analysis.arms}
    assert arms["fake (batch 1)"].batch_of == "fake" and arms["fake"].batch_of is None


def test_the_frozen_battery_records_the_bonferroni_family_the_code_uses(tmp_path: Path) -> None:
    from choiceaudit.audit import build_instrument

    frozen = build_instrument("lancaster", out=tmp_path / "items", n_items=8, n_candidates=4000)
    assert frozen.analysis["bonferroni"].startswith("across the model x rule cells")
