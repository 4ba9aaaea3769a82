"""excess_consistency and permutation consistency (consistency-without-alignment §IV-A)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from choiceaudit.stats import (
    excess_consistency,
    excess_consistency_ci,
    marginal_null,
    option_marginal,
    permutation_consistency,
)


def test_paper_example_item_insensitive_chooser_has_zero_excess() -> None:
    # "a model choosing one option 93 percent of the time scores 0.87 consistency while being
    # entirely item-insensitive": with the expected counts, consistency = Σp² and excess = 0.
    # 100 items; option 0 on 93% of renderings in both permutations, independently of the item.
    a = np.array([0] * 93 + [1] * 7)
    b = np.array([0] * 86 + [1] * 7 + [0] * 7)  # 86 (0,0), 7 (0,1), 7 (1,0) -> 0.93 marginal
    assert option_marginal(a, b, 2).tolist() == pytest.approx([0.93, 0.07])
    assert marginal_null(a, b, 2) == pytest.approx(0.93**2 + 0.07**2)
    assert permutation_consistency(a, b, 2) == pytest.approx(0.86)
    assert round(marginal_null(a, b, 2), 2) == 0.87
    assert excess_consistency(a, b, 2) == pytest.approx(0.86 - 0.8698)


def test_perfectly_item_sensitive_chooser() -> None:
    # Same canonical choice under both permutations, uniform marginal over 4 options.
    a = np.arange(400) % 4
    assert excess_consistency(a, a, 4) == pytest.approx(1 - 0.25)
    # Constant chooser: fully consistent but zero excess.
    z = np.zeros(50, dtype=int)
    assert permutation_consistency(z, z, 4) == 1.0
    assert excess_consistency(z, z, 4) == 0.0


def test_marginal_is_pooled_over_both_permutations_by_brute_force() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 5, 300), rng.integers(0, 5, 300)
    pooled = list(a) + list(b)
    p = np.array([pooled.count(o) / 600 for o in range(5)])
    agree = sum(int(x == y) for x, y in zip(a, b, strict=True)) / 300
    assert excess_consistency(a, b, 5) == pytest.approx(agree - np.sum(p**2), abs=1e-15)
    # symmetric in the two permutations
    assert excess_consistency(a, b, 5) == excess_consistency(b, a, 5)


def test_independent_sampling_gives_excess_near_zero() -> None:
    rng = np.random.default_rng(1)
    pref = np.array([0.6, 0.25, 0.1, 0.05])
    a = rng.choice(4, size=20000, p=pref)
    b = rng.choice(4, size=20000, p=pref)
    assert abs(excess_consistency(a, b, 4)) < 0.01


def test_anti_consistent_chooser_is_negative() -> None:
    # Choice moves with the permutation more than independent sampling would (§IV-H3).
    a = np.array([0, 1] * 50)
    assert excess_consistency(a, 1 - a, 2) == pytest.approx(-0.5)


def test_excess_ci_matches_brute_force_loop() -> None:
    rng = np.random.default_rng(2)
    a = rng.integers(0, 3, 60)
    b = np.where(rng.random(60) < 0.5, a, rng.integers(0, 3, 60))
    res = excess_consistency_ci(a, b, 3, n_resamples=300, level=0.9, seed=5)
    idx = np.random.default_rng(5).integers(0, 60, size=(300, 60))
    dist = np.array([excess_consistency(a[row], b[row], 3) for row in idx])
    low, high = np.quantile(dist, [0.05, 0.95])
    assert res.estimate == pytest.approx(excess_consistency(a, b, 3))
    assert res.low == pytest.approx(low, abs=1e-12)
    assert res.high == pytest.approx(high, abs=1e-12)
    assert res.n_clusters == 60


@pytest.mark.parametrize("func", [excess_consistency, permutation_consistency, marginal_null])
@pytest.mark.parametrize(
    ("a", "b", "n_options", "message"),
    [
        ([0, 1], [0], 2, "mismatched"),
        ([0, 2], [0, 1], 2, "outside"),
        ([0, -1], [0, 1], 2, "outside"),
        ([0.5, 1], [0, 1], 2, "integer"),
        ([0, np.nan], [0, 1], 2, "NaN"),
        ([], [], 2, "empty"),
        ([0, 1], [0, 1], 0, "n_options"),
    ],
)
def test_bad_input_raises(func: Any, a: Any, b: Any, n_options: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        func(a, b, n_options)
