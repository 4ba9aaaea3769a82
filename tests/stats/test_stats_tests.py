"""mcnemar_exact against statsmodels' exact McNemar; bonferroni against multipletests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from choiceaudit.stats import bonferroni, mcnemar_exact


def _table(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array(
        [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]], dtype=float
    )


@pytest.mark.parametrize("seed", range(8))
def test_mcnemar_matches_statsmodels_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    a = rng.random(n) < rng.uniform(0.2, 0.8)
    b = rng.random(n) < rng.uniform(0.2, 0.8)
    ours = mcnemar_exact(a, b)
    ref = mcnemar(_table(a, b), exact=True)
    assert ours.b == int(np.sum(a & ~b)) and ours.c == int(np.sum(~a & b))
    assert ours.p == pytest.approx(ref.pvalue, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 0, 1.0),  # no discordant pairs
        (5, 5, 1.0),  # balanced: capped at 1
        (6, 0, 2 * 0.5**6),
        (0, 10, 2 * 0.5**10),
        (1, 9, 2 * 11 / 1024),
    ],
)
def test_mcnemar_edge_tables(b: int, c: int, p: float) -> None:
    a = np.array([1] * b + [0] * c + [1, 0])
    bb = np.array([0] * b + [1] * c + [1, 0])
    res = mcnemar_exact(a, bb)
    assert (res.b, res.c) == (b, c)
    assert res.p == pytest.approx(p, rel=1e-12)
    ref = mcnemar(_table(a.astype(bool), bb.astype(bool)), exact=True).pvalue
    assert res.p == pytest.approx(min(1.0, ref), rel=1e-12)


def test_mcnemar_is_antisymmetric_in_counts_and_symmetric_in_p() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.random(80) < 0.6, rng.random(80) < 0.4
    ab, ba = mcnemar_exact(a, b), mcnemar_exact(b, a)
    assert (ab.b, ab.c) == (ba.c, ba.b) and ab.p == ba.p


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ([1, 0, 1], [1, 0], "mismatched"),
        ([1, 0.5], [1, 0], "0/1"),
        ([1, np.nan], [1, 0], "NaN"),
        ([], [], "empty"),
    ],
)
def test_mcnemar_bad_input(a: list[Any], b: list[Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mcnemar_exact(a, b)


@pytest.mark.parametrize("seed", range(5))
def test_bonferroni_matches_multipletests(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = rng.random(int(rng.integers(1, 30))) ** 3
    ours = bonferroni(p)
    _, ref, _, _ = multipletests(p, method="bonferroni")
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-15)


def test_bonferroni_21_cells() -> None:
    # consistency-without-alignment counts across the 21 model×rule cells.
    adjusted = bonferroni([0.001, 0.01, 0.05] + [0.5] * 18)
    np.testing.assert_allclose(adjusted[:3], [0.021, 0.21, 1.0])
    assert np.all(adjusted[3:] == 1.0)


@pytest.mark.parametrize("p", [[0.1, 1.2], [-0.1], [np.nan], []])
def test_bonferroni_bad_input(p: list[Any]) -> None:
    with pytest.raises(ValueError):
        bonferroni(p)
