"""Calibration and selective-prediction views of plain scoring runs: the numbers are the
toolkit's statistics on the run's rows, per model and per condition / task cell."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from choiceaudit import stats
from choiceaudit.instruments.scoring import COVERAGES, analyse_scoring_runs
from scoring_helpers import arm_of, correct_probs, query, shifted_queries


def test_cells_match_the_statistics(tmp_path: Path) -> None:
    qs = shifted_queries(40)
    qs = [
        type(q)(state=q.state, options=q.options, meta={**q.meta, "condition": q.meta["family"]})
        for q in qs
    ]
    analysis = analyse_scoring_runs([arm_of(tmp_path, qs)], n_resamples=100)
    cells = {c.cell: c for c in analysis.calibration}
    assert set(cells) == {"all", "condition=d-lit", "condition=d-rand"}
    probs = np.array([q.meta["probs"] for q in qs])
    gold = np.array([q.meta["gold"] for q in qs])
    assert cells["all"].ece == pytest.approx(stats.ece(probs, gold))
    assert cells["all"].ece_mass == pytest.approx(stats.ece(probs, gold, strategy="mass"))
    assert cells["all"].brier == pytest.approx(stats.brier(probs, gold))
    assert cells["all"].brier_uniform == pytest.approx(0.75)
    conf, correct = stats.top_label(probs, gold)
    sel = {(c.cell, c.definition): c for c in analysis.selective}
    assert {d for _, d in sel} == {"maxprob", "conf_head", "margin", "entropy"}
    top = sel[("all", "maxprob")]
    assert top.aurc == pytest.approx(stats.aurc(conf, correct))
    assert top.augrc == pytest.approx(stats.augrc(conf, correct))
    assert top.aurc_random == pytest.approx(1 - correct.mean())
    assert list(top.selective_accuracy) == [f"{c:.2f}" for c in COVERAGES]
    assert top.selective_accuracy["1.00"] == pytest.approx(correct.mean())
    # the shift: diagnostic on d-rand, inverted on d-lit
    assert (
        sel[("condition=d-rand", "maxprob")].advantage
        > 1
        > sel[("condition=d-lit", "maxprob")].advantage
    )
    lit = sel[("condition=d-lit", "maxprob")]
    assert lit.mean_confidence_incorrect > lit.mean_confidence_correct
    curves = [c for c in analysis.risk_coverage if c.cell == "all" and c.definition == "maxprob"]
    assert len(curves) == 1 and len(curves[0].coverage) == 80 and curves[0].coverage[-1] == 1.0
    assert analysis.reliability[0].n_rows and sum(analysis.reliability[0].n_rows) == 80


def test_no_gold_means_no_calibration(tmp_path: Path) -> None:
    qs = [q for q in shifted_queries(5)]
    bare = [type(q)(state=q.state, options=q.options, meta={"probs": q.meta["probs"]}) for q in qs]
    analysis = analyse_scoring_runs([arm_of(tmp_path, bare)], n_resamples=100)
    assert analysis.calibration == () and analysis.selective == ()


def test_mixed_menu_sizes_pad_exactly(tmp_path: Path) -> None:
    qs = [
        query("a", correct_probs(0.7, 0, True, k=3), 0),
        query("b", correct_probs(0.6, 1, False, k=4), 1),
    ]
    (cell,) = analyse_scoring_runs([arm_of(tmp_path, qs)], n_resamples=100).calibration
    assert cell.brier_uniform is None
    expected = np.mean(
        [(0.7 - 1) ** 2 + 2 * 0.15**2, (0.6 - 0) ** 2 + (0.4 / 3 - 1) ** 2 + 2 * (0.4 / 3) ** 2]
    )
    assert cell.brier == pytest.approx(expected)
