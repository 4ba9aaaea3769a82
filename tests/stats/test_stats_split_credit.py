"""split_credit_excess: §IV-A's excess with ties scored as §I-H scores every tie (split credit)."""

from __future__ import annotations

import numpy as np
import pytest

from choiceaudit.stats import (
    excess_consistency,
    marginal_null,
    permutation_consistency,
    split_credit_excess,
)


def test_equals_excess_consistency_when_nothing_ties() -> None:
    rng = np.random.default_rng(3)
    for k in (3, 4, 6):
        a, b = rng.integers(0, k, 137), rng.integers(0, k, 137)
        b[:60] = a[:60]
        res = split_credit_excess([[int(x)] for x in a], [[int(x)] for x in b], k)
        # identical numbers, not merely close: the untied path is today's estimator
        assert res.excess == excess_consistency(a, b, k)
        assert res.consistency == permutation_consistency(a, b, k)
        assert res.marginal_null == marginal_null(a, b, k)
        assert (res.n_items, res.n_tied_items) == (137, 0)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 7, 8])
def test_a_chooser_indifferent_between_all_options_has_excess_exactly_zero(k: int) -> None:
    menu = list(range(k))
    res = split_credit_excess([menu] * 41, [menu] * 41, k)
    assert res.excess == 0.0
    assert res.consistency == pytest.approx(1 / k) and res.n_tied_items == 41


def test_a_chooser_that_always_hedges_between_two_options_gets_the_monte_carlo_value() -> None:
    # Each item's choice is a tie between two canonical options under both permutations; a
    # chooser breaking such ties at random agrees with itself half the time. The split-credit
    # excess must be that chooser's expected excess: the agreement's expectation exactly, and
    # the marginal's expectation (Σ E[p]², so the Monte-Carlo mean of Σ p̂² is above it only by
    # the tie-break variance, under 1/(2n)).
    rng = np.random.default_rng(11)
    n, k = 400, 4
    first = rng.integers(0, k, n)
    second = (first + rng.integers(1, k, n)) % k
    sets = [[int(x), int(y)] for x, y in zip(first, second, strict=True)]
    res = split_credit_excess(sets, sets, k)
    assert res.n_tied_items == n
    draws = 4000
    pick_a = np.where(rng.random((draws, n)) < 0.5, first, second)
    pick_b = np.where(rng.random((draws, n)) < 0.5, first, second)
    agree = (pick_a == pick_b).mean(axis=1)
    counts = np.stack(
        [
            np.bincount(np.concatenate([x, y]), minlength=k)
            for x, y in zip(pick_a, pick_b, strict=True)
        ]
    )
    p_mean = (counts / (2 * n)).mean(axis=0)
    se = agree.std(ddof=1) / np.sqrt(draws)
    assert res.consistency == pytest.approx(0.5)  # exact: Σ_o t_a t_b = 2 · ¼
    assert abs(agree.mean() - res.consistency) < 4 * se
    assert res.marginal_null == pytest.approx(float(np.sum(p_mean**2)), abs=1e-3)
    mc_excess = agree - np.sum((counts / (2 * n)) ** 2, axis=1)
    assert 0 <= res.excess - mc_excess.mean() < 1 / (2 * n)
    # leaving tied items out would have scored nothing at all here
    assert res.excess == pytest.approx(0.5 - res.marginal_null)


def test_mixed_ties_by_brute_force() -> None:
    sets_a = [[0], [1, 2], [0, 1, 2], [2]]
    sets_b = [[0], [2], [1], [1, 2]]
    res = split_credit_excess(sets_a, sets_b, 3)
    agree = (1 + 1 / 2 + 1 / 3 + 1 / 2) / 4
    credit = np.zeros(3)
    for s in sets_a + sets_b:
        credit[s] += 1 / len(s)
    p = credit / 8
    assert res.consistency == pytest.approx(agree, abs=1e-15)
    assert res.excess == pytest.approx(agree - np.sum(p**2), abs=1e-15)
    assert (res.n_items, res.n_tied_items) == (4, 3)


@pytest.mark.parametrize(
    ("sets_a", "sets_b", "match"),
    [
        ([[0]], [[0], [1]], "sets_a has 1 items but sets_b has 2"),
        ([[]], [[0]], r"sets_a\[0\]: a choice is a non-empty set"),
        ([[0, 0]], [[0]], "distinct options"),
        ([[3]], [[0]], r"options must lie in \[0, 3\)"),
        ([], [], "sets_a is empty"),
    ],
)
def test_bad_input_raises(sets_a: list[list[int]], sets_b: list[list[int]], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        split_credit_excess(sets_a, sets_b, 3)
