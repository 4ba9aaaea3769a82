"""AURC, AUGRC and selective accuracy against brute-force definitions, ties included."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest

from choiceaudit.stats import (
    augrc,
    aurc,
    confidence_by_outcome,
    random_gate_augrc,
    random_gate_aurc,
    risk_coverage_curve,
    selective_accuracy,
)


def _curves_for_order(correct_in_order: np.ndarray) -> tuple[float, float]:
    """Brute force for one total order (most confident first): loop over accepted-set sizes."""
    n = len(correct_in_order)
    aurc_sum, gr = 0.0, [0.0]
    for i in range(1, n + 1):
        errors = sum(1 - c for c in correct_in_order[:i])
        aurc_sum += errors / i
        gr.append(errors / n)
    augrc_val = sum((gr[j] + gr[j + 1]) / 2 * (1 / n) for j in range(n))
    return aurc_sum / n, augrc_val


def _brute_force(conf: np.ndarray, correct: np.ndarray) -> tuple[float, float]:
    """Average over every ordering of each tied confidence block (the tie convention)."""
    values = sorted(set(conf.tolist()), reverse=True)
    blocks = [[i for i in range(len(conf)) if conf[i] == v] for v in values]
    results = []
    for orders in itertools.product(*(itertools.permutations(b) for b in blocks)):
        seq = np.array([correct[i] for block in orders for i in block], dtype=float)
        results.append(_curves_for_order(seq))
    arr = np.array(results)
    return float(arr[:, 0].mean()), float(arr[:, 1].mean())


@pytest.mark.parametrize("seed", range(10))
def test_aurc_augrc_match_brute_force_distinct_confidence(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    conf = rng.random(n)
    correct = (rng.random(n) < 0.6).astype(float)
    ref_aurc, ref_augrc = _brute_force(conf, correct)
    assert aurc(conf, correct) == pytest.approx(ref_aurc, abs=1e-12)
    assert augrc(conf, correct) == pytest.approx(ref_augrc, abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_ties_equal_average_over_all_tie_orderings(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    conf = rng.integers(0, 3, size=n) / 2.0  # at most three distinct values: many ties
    correct = (rng.random(n) < 0.5).astype(float)
    ref_aurc, ref_augrc = _brute_force(conf, correct)
    assert aurc(conf, correct) == pytest.approx(ref_aurc, abs=1e-12)
    assert augrc(conf, correct) == pytest.approx(ref_augrc, abs=1e-12)


def test_ties_do_not_depend_on_input_order() -> None:
    conf = np.array([0.9, 0.5, 0.5, 0.5, 0.5, 0.1])
    a = np.array([1, 1, 1, 0, 0, 0.0])
    b = np.array([1, 0, 0, 1, 1, 0.0])  # same multiset inside the tied block
    assert aurc(conf, a) == aurc(conf, b)
    assert augrc(conf, a) == augrc(conf, b)


@pytest.mark.parametrize("error_rate", [0.0, 0.25, 0.6, 1.0])
def test_random_gate_baselines_are_exact(error_rate: float) -> None:
    n = 40
    correct = np.array([0.0] * round(error_rate * n) + [1.0] * (n - round(error_rate * n)))
    conf = np.full(n, 0.3)  # a gate that ignores the item: one tied block
    assert aurc(conf, correct) == pytest.approx(error_rate, abs=1e-12)
    assert augrc(conf, correct) == pytest.approx(error_rate / 2, abs=1e-12)
    assert random_gate_aurc(correct) == pytest.approx(error_rate)
    assert random_gate_augrc(correct) == pytest.approx(error_rate / 2)


def test_random_confidence_approaches_baseline_on_average() -> None:
    rng = np.random.default_rng(0)
    correct = (rng.random(2000) < 0.7).astype(float)
    vals = [augrc(rng.random(2000), correct) for _ in range(20)]
    assert np.mean(vals) == pytest.approx(random_gate_augrc(correct), abs=0.005)


def test_perfect_and_inverted_rankings() -> None:
    correct = np.array([1, 1, 1, 0, 0.0])
    good = np.array([5, 4, 3, 2, 1.0])
    assert aurc(good, correct) == pytest.approx((0 + 0 + 0 + 1 / 4 + 2 / 5) / 5)
    assert aurc(-good, correct) > random_gate_aurc(correct) > aurc(good, correct)
    assert augrc(-good, correct) > random_gate_augrc(correct) > augrc(good, correct)


def test_risk_coverage_curve_values() -> None:
    curve = risk_coverage_curve([0.9, 0.8, 0.8, 0.1], [0, 1, 0, 1])
    np.testing.assert_allclose(curve.coverage, [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(curve.selective_risk, [1.0, 1.5 / 2, 2 / 3, 2 / 4])
    np.testing.assert_allclose(curve.generalized_risk, [0.25, 1.5 / 4, 0.5, 0.5])


def _selective_brute(conf: np.ndarray, correct: np.ndarray, coverage: float) -> float:
    n = len(conf)
    m = max(1, math.ceil(round(coverage * n, 9)))
    values = sorted(set(conf.tolist()), reverse=True)
    blocks = [[i for i in range(n) if conf[i] == v] for v in values]
    accs: list[float] = []
    for orders in itertools.product(*(itertools.permutations(b) for b in blocks)):
        seq = [correct[i] for block in orders for i in block]
        accs.append(np.mean(seq[:m]))
    return float(np.mean(accs))


@pytest.mark.parametrize("seed", range(8))
def test_selective_accuracy_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    conf = rng.integers(0, 4, size=n) / 3.0
    correct = (rng.random(n) < 0.5).astype(float)
    coverages = [0.05, 0.2, 0.35, 0.5, 0.9, 1.0]
    ours = selective_accuracy(conf, correct, coverages)
    ref = [_selective_brute(conf, correct, c) for c in coverages]
    np.testing.assert_allclose(ours, ref, atol=1e-12)


def test_selective_accuracy_paper_rounding() -> None:
    # Lod-lille's most confident 35% of 888 items is 311 items (literal-attraction Appendix F).
    conf = np.linspace(1, 0, 888)
    correct = np.r_[np.zeros(311), np.ones(888 - 311)]
    acc = selective_accuracy(conf, correct, [0.35, 1.0])
    assert acc[0] == 0.0
    assert acc[1] == pytest.approx(577 / 888)
    assert selective_accuracy(conf, correct, 0.35).shape == ()


def test_confidence_by_outcome() -> None:
    res = confidence_by_outcome([0.9, 0.8, 0.4, 0.2], [0, 0, 1, 1])
    assert res.mean_correct == pytest.approx(0.3)
    assert res.mean_incorrect == pytest.approx(0.85)
    assert (res.weight_correct, res.weight_incorrect) == (2.0, 2.0)
    allright = confidence_by_outcome([0.9], [1])
    assert math.isnan(allright.mean_incorrect) and allright.weight_incorrect == 0.0


@pytest.mark.parametrize("func", [aurc, augrc, risk_coverage_curve, confidence_by_outcome])
@pytest.mark.parametrize(
    ("conf", "correct", "message"),
    [
        ([0.5, np.nan], [1, 0], "NaN"),
        ([], [], "empty"),
        ([0.5, 0.4], [1], "mismatched"),
        ([0.5], [2], r"\[0, 1\]"),
    ],
)
def test_bad_input_raises(
    func: Callable[[list[float], list[int]], object],
    conf: list[float],
    correct: list[int],
    message: str,
) -> None:
    with pytest.raises(ValueError, match=message):
        func(conf, correct)


@pytest.mark.parametrize("coverages", [[0.0], [1.5], [np.nan], []])
def test_selective_accuracy_bad_coverage(coverages: list[float]) -> None:
    with pytest.raises(ValueError):
        selective_accuracy([0.5, 0.4], [1, 0], coverages)


def _augrc_threshold_trapezoid(conf: np.ndarray, correct: np.ndarray) -> float:
    """AUGRC as Traub et al.'s reference code builds it: one curve point per distinct
    confidence threshold (coverage = share accepted, GR = accepted errors / n), the origin
    added, trapezoid rule over coverage."""
    n = len(conf)
    points = [(0.0, 0.0)]
    for t in sorted(set(conf.tolist()), reverse=True):
        accepted = conf >= t
        points.append((accepted.mean(), np.sum(1 - correct[accepted]) / n))
    cov, gr = np.array(points).T
    return float(np.trapezoid(gr, cov))


@pytest.mark.parametrize("seed", range(8))
def test_augrc_equals_distinct_threshold_trapezoid(seed: int) -> None:
    # Ties as one threshold block and ties as the average over orderings agree for AUGRC.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 500))
    conf = np.round(rng.random(n), int(rng.integers(1, 3)))
    correct = (rng.random(n) < 0.5).astype(float)
    assert augrc(conf, correct) == pytest.approx(
        _augrc_threshold_trapezoid(conf, correct), abs=1e-12
    )
