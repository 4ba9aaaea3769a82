"""pearson_r and ols_slope against scipy, and their bootstrap against a brute-force loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

import numpy as np
import pytest
from scipy import stats as sps

from choiceaudit.stats import ols_slope, pearson_r


@pytest.mark.parametrize("seed", range(4))
def test_point_estimates_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(loc=1e3, size=80)  # offset checks the one-pass moments are centred
    y = 0.3 * x + rng.normal(size=80)
    assert pearson_r(x, y, n_resamples=10, seed=0).estimate == pytest.approx(
        sps.pearsonr(x, y).statistic, abs=1e-10
    )
    assert ols_slope(x, y, n_resamples=10, seed=0).estimate == pytest.approx(
        sps.linregress(x, y).slope, rel=1e-9
    )


class _Resampling(TypedDict):
    n_resamples: int
    level: float
    seed: int


def _brute(
    x: np.ndarray,
    y: np.ndarray,
    clusters: np.ndarray,
    *,
    n_resamples: int,
    level: float,
    seed: int,
    stat: Callable[[np.ndarray, np.ndarray], float],
) -> np.ndarray:
    labels = np.unique(clusters)
    rows_of = [np.flatnonzero(clusters == lab) for lab in labels]
    idx = np.random.default_rng(seed).integers(0, len(labels), size=(n_resamples, len(labels)))
    dist: list[float] = []
    for row in idx:
        rows = np.concatenate([rows_of[j] for j in row])
        dist.append(stat(x[rows], y[rows]))
    alpha = (1 - level) / 2
    return np.quantile(dist, [alpha, 1 - alpha])


@pytest.mark.parametrize("clustered", [False, True])
def test_bootstrap_matches_brute_force(clustered: bool) -> None:
    rng = np.random.default_rng(11)
    n = 45
    clusters = np.repeat(np.arange(15), 3) if clustered else np.arange(n)
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    kw: _Resampling = {"n_resamples": 250, "level": 0.9, "seed": 3}
    r = pearson_r(x, y, clusters=clusters if clustered else None, **kw)
    s = ols_slope(x, y, clusters=clusters if clustered else None, **kw)
    r_ref = _brute(x, y, clusters, stat=lambda a, b: sps.pearsonr(a, b).statistic, **kw)
    s_ref = _brute(x, y, clusters, stat=lambda a, b: sps.linregress(a, b).slope, **kw)
    np.testing.assert_allclose([r.low, r.high], r_ref, atol=1e-10)
    np.testing.assert_allclose([s.low, s.high], s_ref, atol=1e-10)
    assert r.n_degenerate == 0 and r.n_clusters == (15 if clustered else n)


def test_degenerate_resamples_are_counted_not_hidden() -> None:
    # Three points, two sharing x: some resamples draw one x value only.
    res = ols_slope([0.0, 0.0, 1.0], [0.0, 1.0, 3.0], n_resamples=400, seed=0)
    assert res.estimate == pytest.approx(2.5)
    assert 0 < res.n_degenerate < 400
    assert res.n_resamples == 400


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0], "x is constant"),
        ([0.1, 0.1, 0.1], [1.0, 2.0, 3.0], "x is constant"),  # mean(x) != 0.1 in floating point
        ([1.0, 2.0], [1.0], "mismatched"),
        ([1.0, np.nan], [1.0, 2.0], "NaN"),
        ([], [], "empty"),
    ],
)
def test_bad_input_raises(x: list[float], y: list[float], message: str) -> None:
    for func in (pearson_r, ols_slope):
        with pytest.raises(ValueError, match=message):
            func(x, y, seed=0)
    with pytest.raises(ValueError, match="y is constant"):
        pearson_r([1.0, 2.0, 3.0], [2.0, 2.0, 2.0], seed=0)
