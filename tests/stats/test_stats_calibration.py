"""ECE (both strategies) against brute-force definitions; Brier and NLL against scikit-learn."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, log_loss
from stats_helpers import random_probs

from choiceaudit.stats import brier, ece, nll, reliability_bins, top_label


def _ece_width_brute(probs: np.ndarray, labels: np.ndarray, n_bins: int) -> float:
    """Guo et al. (2017) written out: bins (lo, hi], a loop over bins and rows."""
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(float)
    edges = np.linspace(0, 1, n_bins + 1)
    total = 0.0
    for lo, hi in itertools.pairwise(edges):
        members = [
            i for i in range(len(conf)) if (lo < conf[i] <= hi) or (lo == 0 and conf[i] == 0)
        ]
        if members:
            total += (
                len(members) / len(conf) * abs(np.mean(correct[members]) - np.mean(conf[members]))
            )
    return total


def _ece_mass_brute(probs: np.ndarray, labels: np.ndarray, n_bins: int) -> float:
    """Nixon et al. (2019) adaptive ECE: sort by confidence, split into equal-count chunks."""
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(float)
    order = np.argsort(conf)
    total = 0.0
    for chunk in np.array_split(order, n_bins):
        if len(chunk):
            total += len(chunk) / len(conf) * abs(correct[chunk].mean() - conf[chunk].mean())
    return total


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_bins", [1, 10, 15])
def test_ece_width_matches_brute_force(seed: int, n_bins: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 300)), int(rng.integers(2, 6))
    probs = random_probs(rng, n, k)
    labels = rng.integers(0, k, size=n)
    assert ece(probs, labels, n_bins=n_bins) == pytest.approx(
        _ece_width_brute(probs, labels, n_bins), abs=1e-12
    )


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_bins", [1, 7, 15, 400])
def test_ece_mass_matches_brute_force_without_ties(seed: int, n_bins: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 300)), 4
    probs = random_probs(rng, n, k)
    labels = rng.integers(0, k, size=n)
    assert len(np.unique(probs.max(axis=1))) == n
    assert ece(probs, labels, n_bins=n_bins, strategy="mass") == pytest.approx(
        _ece_mass_brute(probs, labels, n_bins), abs=1e-12
    )


def test_ece_bin_edges_are_right_closed() -> None:
    # 0.6 sits exactly on an edge of 15 equal-width bins (9/15) and belongs to the lower bin.
    probs = np.array([[0.6, 0.4], [0.6 + 1e-9, 0.4 - 1e-9]])
    bins = reliability_bins(probs, [0, 1], n_bins=15)
    assert bins.n_rows.tolist() == [1, 1]
    assert ece(probs, [0, 1], n_bins=15) == pytest.approx(
        _ece_width_brute(probs, np.array([0, 1]), 15)
    )


def test_ece_known_value_and_perfect_calibration() -> None:
    # Four rows at 0.75 confidence, three correct: perfectly calibrated.
    probs = np.array([[0.75, 0.25]] * 4)
    assert ece(probs, [0, 0, 0, 1]) == pytest.approx(0.0, abs=1e-15)
    assert ece(probs, [1, 1, 1, 1]) == pytest.approx(0.75)


def test_ece_mass_tied_confidences_share_a_bin() -> None:
    # 6 rows, 3 bins: confidences tie across the chunk boundary; all 0.7s stay together.
    probs = np.array([[c, 1 - c] for c in [0.6, 0.7, 0.7, 0.7, 0.9, 0.95]])
    labels = np.array([0, 0, 1, 1, 0, 0])
    bins = reliability_bins(probs, labels, n_bins=3, strategy="mass")
    assert bins.n_rows.tolist() == [4, 2]
    expected = 4 / 6 * abs(0.5 - 0.675) + 2 / 6 * abs(1.0 - 0.925)
    assert ece(probs, labels, n_bins=3, strategy="mass") == pytest.approx(expected)


def test_top_label_tied_argmax_gives_fractional_credit() -> None:
    probs = np.array([[0.4, 0.4, 0.2], [0.4, 0.4, 0.2], [0.5, 0.25, 0.25]])
    conf, correct = top_label(probs, [1, 2, 0])
    assert conf.tolist() == [0.4, 0.4, 0.5]
    assert correct.tolist() == [0.5, 0.0, 1.0]


def test_brier_uniform_four_way_is_0_750() -> None:
    probs = np.full((10, 4), 0.25)
    assert brier(probs, np.arange(10) % 4) == pytest.approx(0.75, abs=1e-15)
    assert brier([[1.0, 0, 0, 0]], [0]) == 0.0
    assert brier([[1.0, 0, 0, 0]], [1]) == 2.0


@pytest.mark.parametrize("seed", range(5))
def test_brier_multiclass_matches_sklearn(seed: int) -> None:
    # sklearn >= 1.7 scores multiclass as the mean over rows of the sum over classes, as we do.
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 7))
    probs = random_probs(rng, 200, k)
    labels = rng.integers(0, k, size=200)
    ref = brier_score_loss(labels, probs, labels=list(range(k)))
    assert brier(probs, labels) == pytest.approx(ref, abs=1e-12)


def test_brier_binary_is_twice_sklearn_convention() -> None:
    # Convention difference: for two classes sklearn scores only the positive class,
    # (p1 - y)^2, which is half the sum over both options.
    rng = np.random.default_rng(0)
    probs = random_probs(rng, 100, 2)
    labels = rng.integers(0, 2, size=100)
    ref = brier_score_loss(labels, probs[:, 1])
    assert brier(probs, labels) == pytest.approx(2 * ref, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_nll_matches_sklearn_log_loss(seed: int) -> None:
    rng = np.random.default_rng(seed)
    probs = random_probs(rng, 150, 4)
    labels = rng.integers(0, 4, size=150)
    ref = log_loss(labels, probs, labels=[0, 1, 2, 3])
    assert nll(probs, labels) == pytest.approx(ref, rel=1e-12)


def test_nll_certain_mistake_is_infinite_unless_clipped() -> None:
    assert nll([[1.0, 0.0]], [1]) == np.inf
    assert nll([[1.0, 0.0]], [1], eps=1e-12) == pytest.approx(-np.log(1e-12))
    assert nll([[0.25] * 4], [3]) == pytest.approx(np.log(4))


@pytest.mark.parametrize("func", [ece, brier, nll])
@pytest.mark.parametrize(
    ("probs", "labels", "message"),
    [
        ([[0.5, 0.6]], [0], "sum to 1"),
        ([[0.5, np.nan]], [0], "NaN"),
        ([[0.5, 0.5]], [2], "outside"),
        ([[0.5, 0.5], [0.5, 0.5]], [0], "mismatched"),
        (np.zeros((0, 3)), [], "empty"),
        ([[1.2, -0.2]], [0], r"outside \[0, 1\]"),
        ([0.5, 0.5], [0], "dimension"),
    ],
)
def test_bad_input_raises(func: Any, probs: Any, labels: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        func(probs, labels)


def test_ece_bad_options() -> None:
    with pytest.raises(ValueError, match="strategy"):
        ece([[0.5, 0.5]], [0], strategy="quantile")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_bins"):
        ece([[0.5, 0.5]], [0], n_bins=0)
