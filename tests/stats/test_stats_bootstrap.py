"""bootstrap_ci against scipy.stats.bootstrap (same draws) and a brute-force cluster loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from choiceaudit.stats import BootstrapResult, bootstrap_ci, paired_bootstrap_ci


def _scipy(
    x: np.ndarray,
    statistic: Callable[..., np.ndarray],
    *,
    n_resamples: int,
    level: float,
    seed: int,
) -> Any:
    return sps.bootstrap(
        (x,),
        statistic,
        n_resamples=n_resamples,
        confidence_level=level,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("n", [2, 13, 250])
def test_unclustered_mean_matches_scipy_percentile(seed: int, n: int) -> None:
    x = np.random.default_rng(100 + seed).normal(size=n)
    ours = bootstrap_ci(x, n_resamples=999, level=0.9, seed=seed)
    ref = _scipy(x, np.mean, n_resamples=999, level=0.9, seed=seed)
    # Same index draws; only the summation order of the mean differs.
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert ours.standard_error == pytest.approx(ref.standard_error, rel=1e-9)
    assert ours.estimate == pytest.approx(x.mean(), abs=1e-15)
    assert (ours.n_resamples, ours.n_clusters, ours.n_degenerate) == (999, n, 0)


def test_unclustered_median_equals_scipy_exactly() -> None:
    x = np.random.default_rng(3).exponential(size=40)
    ours = bootstrap_ci(x, statistic="median", n_resamples=500, level=0.95, seed=11)
    ref = _scipy(x, np.median, n_resamples=500, level=0.95, seed=11)
    assert ours.low == ref.confidence_interval.low
    assert ours.high == ref.confidence_interval.high
    assert ours.estimate == np.median(x)


def test_independent_seed_agrees_with_scipy_within_monte_carlo_error() -> None:
    x = np.random.default_rng(5).binomial(1, 0.3, size=300).astype(float)
    ours = bootstrap_ci(x, n_resamples=4000, level=0.95, seed=1)
    ref = _scipy(x, np.mean, n_resamples=4000, level=0.95, seed=2)
    # Endpoints of a 4,000-resample percentile interval move by well under 0.01 here.
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.01)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.01)


def _brute_force_clustered(
    values: np.ndarray,
    clusters: np.ndarray,
    *,
    n_resamples: int,
    level: float,
    seed: int,
    statistic: Callable[[np.ndarray], float] = np.mean,
) -> tuple[np.ndarray, np.ndarray]:
    labels = np.unique(clusters)
    rows_of = [np.flatnonzero(clusters == lab) for lab in labels]
    idx = np.random.default_rng(seed).integers(0, len(labels), size=(n_resamples, len(labels)))
    dist = np.empty(n_resamples)
    for b in range(n_resamples):
        sample = np.concatenate([values[rows_of[j]] for j in idx[b]])
        dist[b] = statistic(sample)
    alpha = (1 - level) / 2
    return np.quantile(dist, [alpha, 1 - alpha]), dist


@pytest.mark.parametrize("seed", [0, 3])
def test_clustered_mean_matches_brute_force_with_unequal_clusters(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, size=30)
    clusters = np.repeat(np.array([f"item{i:02d}" for i in range(30)]), sizes)
    values = rng.normal(size=clusters.size) + np.repeat(rng.normal(size=30), sizes)
    order = rng.permutation(clusters.size)  # rows need not be grouped by cluster
    values, clusters = values[order], clusters[order]
    ours = bootstrap_ci(values, n_resamples=300, level=0.9, clusters=clusters, seed=seed)
    (low, high), dist = _brute_force_clustered(
        values, clusters, n_resamples=300, level=0.9, seed=seed
    )
    assert ours.low == pytest.approx(low, abs=1e-12)
    assert ours.high == pytest.approx(high, abs=1e-12)
    assert ours.standard_error == pytest.approx(np.std(dist, ddof=1), rel=1e-9)
    assert ours.n_clusters == 30


def test_clustered_callable_with_equal_clusters_matches_brute_force() -> None:
    rng = np.random.default_rng(9)
    clusters = np.repeat(np.arange(25), 2)  # two permutations per item
    values = rng.normal(size=50)

    def trimmed(sample: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(sps.trim_mean(sample, 0.1, axis=axis))

    ours = bootstrap_ci(
        values, statistic=trimmed, n_resamples=200, level=0.8, clusters=clusters, seed=4
    )
    (low, high), _ = _brute_force_clustered(
        values,
        clusters,
        n_resamples=200,
        level=0.8,
        seed=4,
        statistic=lambda s: sps.trim_mean(s, 0.1),
    )
    assert ours.low == pytest.approx(low, abs=1e-12)
    assert ours.high == pytest.approx(high, abs=1e-12)


def test_equal_clusters_mean_equals_unclustered_bootstrap_of_cluster_means() -> None:
    # With equal sizes the pooled row mean of a resample is the mean of its cluster means, and
    # both calls draw the same (n_resamples, n_clusters) index matrix.
    rng = np.random.default_rng(2)
    values = rng.normal(size=(40, 3))
    clustered = bootstrap_ci(
        values.ravel(), n_resamples=400, clusters=np.repeat(np.arange(40), 3), seed=8
    )
    per_item = bootstrap_ci(values.mean(axis=1), n_resamples=400, seed=8)
    assert clustered.low == pytest.approx(per_item.low, abs=1e-12)
    assert clustered.high == pytest.approx(per_item.high, abs=1e-12)


def test_clustering_widens_interval_for_duplicated_renderings() -> None:
    # Two identical renderings per item are one observation, not two: the clustered interval
    # must match the per-item one and be wider than the naive per-row interval.
    rng = np.random.default_rng(4)
    per_item = rng.binomial(1, 0.5, size=125).astype(float)
    rows = np.repeat(per_item, 2)
    clustered = bootstrap_ci(rows, clusters=np.repeat(np.arange(125), 2), n_resamples=4000, seed=0)
    naive = bootstrap_ci(rows, n_resamples=4000, seed=0)
    assert (clustered.high - clustered.low) > 1.3 * (naive.high - naive.low)


def test_paired_difference_is_bootstrap_of_differences() -> None:
    rng = np.random.default_rng(6)
    a, b = rng.normal(size=60), rng.normal(size=60)
    paired = paired_bootstrap_ci(a, b, n_resamples=500, seed=3)
    direct = bootstrap_ci(a - b, n_resamples=500, seed=3)
    assert paired == direct
    assert paired.estimate == pytest.approx(float(np.mean(a - b)))


def test_constant_values_give_degenerate_interval_and_excludes() -> None:
    r = bootstrap_ci([0.25] * 10, n_resamples=100, seed=0)
    assert (r.estimate, r.low, r.high) == (0.25, 0.25, 0.25)
    assert r.excludes(0.0) and not r.excludes(0.25)
    assert isinstance(r, BootstrapResult)


def test_same_seed_same_result_and_generator_accepted() -> None:
    x = np.arange(20.0)
    assert bootstrap_ci(x, n_resamples=50, seed=1) == bootstrap_ci(x, n_resamples=50, seed=1)
    gen = bootstrap_ci(x, n_resamples=50, seed=np.random.default_rng(1))
    assert gen == bootstrap_ci(x, n_resamples=50, seed=1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"values": [1.0, np.nan]}, "NaN"),
        ({"values": []}, "empty"),
        ({"values": [1.0, 2.0], "clusters": [0]}, "mismatched"),
        ({"values": [1.0, 2.0], "level": 1.0}, "level"),
        ({"values": [1.0, 2.0], "n_resamples": 1}, "n_resamples"),
        ({"values": [1.0, 2.0], "statistic": "mode"}, "statistic"),
        (
            {"values": [1.0, 2.0, 3.0], "statistic": "median", "clusters": [0, 0, 1]},
            "equal cluster sizes",
        ),
        ({"values": [[1.0, 2.0]]}, "dimension"),
    ],
)
def test_bad_input_raises(kwargs: dict[str, Any], message: str) -> None:
    values = kwargs.pop("values")
    with pytest.raises(ValueError, match=message):
        bootstrap_ci(values, seed=0, **{"n_resamples": 10, **kwargs})


def test_paired_mismatched_lengths_raise() -> None:
    with pytest.raises(ValueError, match="mismatched lengths"):
        paired_bootstrap_ci([1.0, 2.0], [1.0], seed=0)
