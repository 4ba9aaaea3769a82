"""normalized_entropy and js_divergence against scipy; agreement and Jaccard by definition."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy
from stats_helpers import random_probs

from choiceaudit.stats import agreement_rate, jaccard_similarity, js_divergence, normalized_entropy


@pytest.mark.parametrize("seed", range(4))
def test_js_divergence_is_square_of_scipy_distance(seed: int) -> None:
    # scipy returns the Jensen–Shannon *distance*, the square root of the divergence.
    rng = np.random.default_rng(seed)
    p, q = random_probs(rng, 50, 4, grid=8), random_probs(rng, 50, 4)
    ours = js_divergence(p, q)
    ref = np.array([jensenshannon(a, b, base=2) ** 2 for a, b in zip(p, q, strict=True)])
    np.testing.assert_allclose(ours, ref, atol=1e-12)


def test_js_divergence_bounds() -> None:
    assert js_divergence([0.5, 0.5, 0.0], [0.5, 0.5, 0.0]) == 0.0
    assert js_divergence([1.0, 0.0, 0.0], [0.0, 0.5, 0.5]) == pytest.approx(1.0)
    assert js_divergence([1.0, 0.0], [0.5, 0.5]) == pytest.approx(
        jensenshannon([1.0, 0.0], [0.5, 0.5], base=2) ** 2
    )
    # symmetric
    p, q = [0.7, 0.2, 0.1], [0.1, 0.3, 0.6]
    assert js_divergence(p, q) == pytest.approx(js_divergence(q, p), abs=1e-15)


@pytest.mark.parametrize("k", [2, 3, 4, 7])
def test_normalized_entropy_matches_scipy(k: int) -> None:
    rng = np.random.default_rng(k)
    p = random_probs(rng, 30, k, grid=6)
    ref = entropy(p, axis=1) / np.log(k)
    np.testing.assert_allclose(normalized_entropy(p), ref, atol=1e-12)
    assert normalized_entropy(np.full(k, 1 / k)) == pytest.approx(1.0)
    assert normalized_entropy(np.eye(k)[0]) == 0.0


@pytest.mark.parametrize(
    ("p", "q", "message"),
    [
        ([0.5, 0.5], [0.3, 0.3, 0.4], "mismatched shapes"),
        ([0.5, 0.6], [0.5, 0.5], "sum to 1"),
        ([np.nan, 1.0], [0.5, 0.5], "NaN"),
        ([], [], "empty"),
    ],
)
def test_js_bad_input(p: Any, q: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        js_divergence(p, q)


@pytest.mark.parametrize("p", [[0.2, 0.2], [[0.5, 0.5], [0.9, 0.2]], [1.0], [np.inf, 0]])
def test_entropy_bad_input(p: Any) -> None:
    with pytest.raises(ValueError):
        normalized_entropy(p)


def test_agreement_rate() -> None:
    assert agreement_rate(["A", "B", "C", "D"], ["A", "B", "D", "C"]) == 0.5
    assert agreement_rate(np.arange(5), np.arange(5)) == 1.0
    with pytest.raises(ValueError, match="mismatched"):
        agreement_rate([0, 1], [0])
    with pytest.raises(ValueError, match="NaN"):
        agreement_rate([0.0, np.nan], [0.0, 1.0])
    with pytest.raises(ValueError, match="empty"):
        agreement_rate([], [])


def test_jaccard_similarity() -> None:
    assert jaccard_similarity(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)
    assert jaccard_similarity(["a", "a", "b"], ["b", "a"]) == 1.0
    assert jaccard_similarity(["a"], []) == 0.0
    # literal-attraction Appendix J: the distinctness cut keeps pairs with Jaccard < 0.34.
    gold, literal = ["to", "be", "very", "angry"], ["to", "boil", "blood"]
    assert jaccard_similarity(gold, literal) == pytest.approx(1 / 6)
    with pytest.raises(ValueError, match="empty"):
        jaccard_similarity([], [])
    with pytest.raises(ValueError, match="token collections"):
        jaccard_similarity("abc", ["a"])
