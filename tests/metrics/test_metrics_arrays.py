"""The shared metrics on plain arrays (what meaning and plain scoring both read), each on a case
small enough to work out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from choiceaudit.metrics import (
    MAX_CURVE_POINTS,
    calibration_scores,
    gold_credit,
    reliability,
    risk_coverage,
    selective_scores,
    sweep_audit,
)


def test_gold_credit_splits_a_tie_and_gives_nothing_off_the_maximum() -> None:
    probs = np.array([[0.4, 0.4, 0.2], [0.1, 0.7, 0.2], [0.2, 0.5, 0.3]])
    credit = gold_credit(probs, np.array([0, 0, 1]))
    assert credit.tolist() == [0.5, 0.0, 1.0]


def test_calibration_scores_and_reliability_by_hand() -> None:
    # two confident rows, one right and one wrong: a single bin at confidence 1, accuracy 1/2
    probs = np.array([[1.0, 0.0], [0.0, 1.0]])
    gold = np.array([0, 0])
    scores = calibration_scores(probs, gold)
    assert scores.ece == pytest.approx(0.5)
    assert scores.ece_mass == pytest.approx(0.5)
    assert scores.brier == pytest.approx(1.0)  # (0 + (1 + 1)) / 2
    bins = reliability(probs, gold)
    assert bins.n_rows == (2,) and bins.confidence == (1.0,) and bins.accuracy == (0.5,)


def test_selective_scores_by_hand() -> None:
    conf = np.array([0.9, 0.8, 0.7, 0.6])
    correct = np.array([1.0, 0.0, 1.0, 1.0])
    scores = selective_scores(conf, correct, coverages=(0.25, 0.5, 1.0))
    # accepted errors E_i = 0, 1, 1, 1 at sizes 1..4
    assert scores.aurc == pytest.approx((0 + 1 / 2 + 1 / 3 + 1 / 4) / 4)
    assert scores.aurc_random == pytest.approx(0.25)
    assert scores.augrc_random == pytest.approx(0.125)
    assert scores.mean_confidence_correct == pytest.approx((0.9 + 0.7 + 0.6) / 3)
    assert scores.mean_confidence_incorrect == pytest.approx(0.8)
    assert dict(scores.selective_accuracy) == {"0.25": 1.0, "0.50": 0.5, "1.00": 0.75}


def test_risk_coverage_keeps_at_most_the_stated_points_ends_included() -> None:
    rng = np.random.default_rng(3)
    conf = rng.random(1000)
    correct = (rng.random(1000) < 0.7).astype(float)
    curve = risk_coverage(conf, correct)
    assert len(curve.coverage) == MAX_CURVE_POINTS == len(curve.selective_risk)
    assert curve.coverage[0] == pytest.approx(0.001) and curve.coverage[-1] == 1.0
    assert curve.selective_risk[-1] == pytest.approx(1.0 - correct.mean())
    assert curve.random_gate == pytest.approx(1.0 - correct.mean())
    short = risk_coverage(conf[:5], correct[:5], max_points=101)
    assert len(short.coverage) == 5  # a short curve is kept whole


def test_sweep_audit_of_a_slot_bound_chooser() -> None:
    # one two-option item shown in both orders, slot 0 always at 0.9: the gold moves with it
    probs = np.array([[[0.9, 0.1], [0.9, 0.1]]])
    perms = np.array([[[0, 1], [1, 0]]])
    audit = sweep_audit(probs, perms, np.array([0]))
    assert (audit.n_items, audit.orderings) == (1, 2)
    assert audit.answer_instability == 1.0 and audit.distinct_choices.tolist() == [2]
    assert audit.unstable.tolist() == [True]
    assert audit.slot_shares == (1.0, 0.0) and audit.selection_spread == 1.0
    assert audit.travel.max == pytest.approx(0.8)
    assert audit.gold_prob_range is not None
    assert audit.gold_prob_range.tolist() == pytest.approx([0.8])
    assert audit.mean_gold_prob_range == pytest.approx(0.8)
    assert sweep_audit(probs, perms).gold_prob_range is None


def test_sweep_audit_reads_vectors_as_returned_within_the_tolerance() -> None:
    probs = np.array([[[0.89, 0.1], [0.1, 0.89]]])  # sums 0.99: within 0.02, kept as is
    perms = np.array([[[0, 1], [1, 0]]])
    audit = sweep_audit(probs, perms, np.array([0]))
    assert audit.answer_instability == 0.0 and audit.travel.max == 0.0
    assert audit.max_sum_deviation.tolist() == pytest.approx([0.01])
    with pytest.raises(ValueError):
        sweep_audit(probs, perms, np.array([0]), tolerance=1e-3)
