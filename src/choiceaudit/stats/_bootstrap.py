"""Percentile bootstrap intervals, resampling items (clusters) rather than rows.

Both papers report 95% percentile bootstrap intervals with the item as the resampling unit
(consistency-without-alignment §I-H2: 4,000 resamples, "two permutations of the same item are not
independent observations, so the 125 items rather than the 250 renderings are the clusters";
literal-attraction §4.3 and Appendix R: 2,000 resamples over items, seed 0). A paired comparison
resamples the per-item difference as one array.

Resampling is vectorised: resample ``b`` draws ``n_clusters`` cluster indices uniformly with
replacement (one ``rng.integers(0, n_clusters, (n_resamples, n_clusters))`` draw, the same draw
``scipy.stats.bootstrap`` makes, consumed in row blocks), and the statistic is computed for a block
of resamples at once by gathering from an index matrix (or from a ``bincount`` count matrix for
weighted statistics), never with a Python loop per resample.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from choiceaudit.stats._validate import (
    FloatArray,
    IntArray,
    as_finite,
    check_level,
    check_same_length,
    make_rng,
)

__all__ = [
    "BootstrapResult",
    "bootstrap_ci",
    "check_n_resamples",
    "cluster_ids",
    "index_blocks",
    "paired_bootstrap_ci",
    "percentile_interval",
    "resample_counts",
]

#: A vectorised statistic in scipy's convention: ``statistic(sample, axis=-1)`` reduces the last
#: axis of a (n_resamples, n_rows) block to (n_resamples,).
Statistic = Literal["mean", "median"] | Callable[..., Any]

#: Upper bound on the elements of one block of resamples (keeps memory flat for large inputs).
_BLOCK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class BootstrapResult:
    """A point estimate with its percentile bootstrap interval.

    ``n_clusters`` is the number of resampling units (items when ``clusters`` was given, rows
    otherwise). ``n_degenerate`` counts resamples on which the statistic was undefined (NaN, e.g. a
    correlation of a constant resample); they are excluded from the quantiles and reported here so
    nothing is dropped silently.
    """

    estimate: float
    low: float
    high: float
    level: float
    n_resamples: int
    n_clusters: int
    standard_error: float
    n_degenerate: int = 0

    def excludes(self, value: float = 0.0) -> bool:
        """Whether ``value`` lies outside the closed interval [low, high]."""
        return bool(value < self.low or value > self.high)


def cluster_ids(clusters: Any, n_rows: int) -> tuple[IntArray, int]:
    """Map cluster labels to ``0 .. n_clusters - 1`` (sorted label order, so row order is moot)."""
    labels = np.asarray(clusters)
    if labels.ndim != 1:
        raise ValueError(f"clusters must be one-dimensional, got shape {labels.shape}")
    if labels.shape[0] != n_rows:
        raise ValueError(
            f"mismatched lengths: values has {n_rows} rows, clusters has {labels.shape[0]}"
        )
    if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
        raise ValueError("clusters contains NaN or infinite labels")
    if labels.dtype.kind == "O" and any(v is None for v in labels):
        raise ValueError("clusters contains None labels")
    _, inverse = np.unique(labels, return_inverse=True)
    ids = inverse.astype(np.int64).reshape(-1)
    return ids, int(ids.max()) + 1


def index_blocks(
    n_clusters: int, n_resamples: int, rng: np.random.Generator, *, row_width: int | None = None
) -> Iterator[npt.NDArray[np.int64]]:
    """Row blocks of ``rng.integers(0, n_clusters, (n_resamples, n_clusters))``.

    Consuming the draw in row blocks gives the same numbers as drawing it whole, so results do
    not depend on the block size; ``row_width`` sizes blocks by the rows a resample expands to.
    """
    block = max(1, _BLOCK_ELEMENTS // max(row_width or n_clusters, 1))
    for start in range(0, n_resamples, block):
        rows = min(block, n_resamples - start)
        yield rng.integers(0, n_clusters, size=(rows, n_clusters))


def resample_counts(
    n_clusters: int, n_resamples: int, rng: np.random.Generator
) -> Iterator[npt.NDArray[np.int64]]:
    """Blocks of a (n_resamples, n_clusters) matrix: how often each cluster is drawn per resample.

    Same draws as :func:`index_blocks`, turned into counts with one ``bincount`` per block.
    """
    for idx in index_blocks(n_clusters, n_resamples, rng):
        rows = idx.shape[0]
        flat = (np.arange(rows, dtype=np.int64)[:, None] * n_clusters + idx).ravel()
        yield np.bincount(flat, minlength=rows * n_clusters).reshape(rows, n_clusters)


def percentile_interval(
    distribution: FloatArray, estimate: float, *, level: float, n_clusters: int
) -> BootstrapResult:
    """Percentile interval of a bootstrap distribution (NaN resamples counted, then excluded)."""
    finite = distribution[np.isfinite(distribution)]
    n_degenerate = int(distribution.size - finite.size)
    if finite.size == 0:
        raise ValueError("the statistic is undefined on every bootstrap resample")
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(finite, [alpha, 1.0 - alpha])
    se = float(np.std(finite, ddof=1)) if finite.size > 1 else 0.0
    return BootstrapResult(
        estimate=float(estimate),
        low=float(low),
        high=float(high),
        level=level,
        n_resamples=int(distribution.size),
        n_clusters=n_clusters,
        standard_error=se,
        n_degenerate=n_degenerate,
    )


def check_n_resamples(n_resamples: int) -> int:
    """At least two resamples, as an integer."""
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer):
        raise ValueError(f"n_resamples must be an integer, got {n_resamples!r}")
    if n_resamples < 2:
        raise ValueError(f"n_resamples must be at least 2, got {n_resamples}")
    return int(n_resamples)


def _resolve_statistic(statistic: Statistic) -> Callable[..., Any] | None:
    """None for the built-in mean (weighted fast path), else a vectorised callable."""
    if isinstance(statistic, str):
        if statistic == "mean":
            return None
        if statistic == "median":
            return np.median
        raise ValueError(f"statistic must be 'mean', 'median' or a callable, got {statistic!r}")
    if not callable(statistic):
        raise ValueError(f"statistic must be 'mean', 'median' or a callable, got {statistic!r}")
    return statistic


def bootstrap_ci(
    values: Any,
    *,
    statistic: Statistic = "mean",
    n_resamples: int = 4000,
    level: float = 0.95,
    clusters: Any = None,
    seed: int | np.random.Generator,
) -> BootstrapResult:
    """Percentile bootstrap interval for ``statistic(values)``.

    Without ``clusters`` every row is a resampling unit (the unclustered percentile bootstrap of
    ``scipy.stats.bootstrap(..., method="percentile")``, with the same index draws for the same
    generator). With ``clusters`` (one label per row, e.g. the item id) whole clusters are drawn
    with replacement and every row of a drawn cluster enters the resample; the mean is then the
    mean over the rows of the resample (a ratio of cluster sums to cluster sizes).

    ``statistic`` is ``"mean"`` (any cluster sizes), ``"median"`` or a vectorised callable
    ``f(sample, axis=-1)``; the latter two need equal cluster sizes, because a resample must be a
    rectangular block. With unequal sizes, reduce to one value per item first and bootstrap those.

    >>> r = bootstrap_ci([0, 1, 1, 1], n_resamples=2000, seed=0)
    >>> r.estimate
    0.75
    """
    data = as_finite(values, "values")
    n_resamples = check_n_resamples(n_resamples)
    level = check_level(level)
    func = _resolve_statistic(statistic)
    rng = make_rng(seed)
    n_rows = data.shape[0]
    if clusters is None:
        ids, n_clusters = np.arange(n_rows, dtype=np.int64), n_rows
    else:
        ids, n_clusters = cluster_ids(clusters, n_rows)

    if func is None:
        sums = np.bincount(ids, weights=data, minlength=n_clusters)
        sizes = np.bincount(ids, minlength=n_clusters).astype(np.float64)
        equal = bool(np.all(sizes == sizes[0]))
        parts: list[FloatArray] = []
        for idx in index_blocks(n_clusters, n_resamples, rng):
            # Gathering cluster sums beats a count-matrix product here (no bincount pass).
            total = sums[idx].sum(axis=1)
            parts.append(
                total / (sizes[0] * n_clusters) if equal else total / sizes[idx].sum(axis=1)
            )
        return percentile_interval(
            np.concatenate(parts), float(data.mean()), level=level, n_clusters=n_clusters
        )

    sizes_int = np.bincount(ids, minlength=n_clusters)
    if np.any(sizes_int != sizes_int[0]):
        raise ValueError(
            "a non-mean statistic with clusters needs equal cluster sizes "
            f"(got sizes {int(sizes_int.min())}..{int(sizes_int.max())}); "
            "reduce to one value per cluster first and bootstrap those"
        )
    # rows_of[c] lists the rows of cluster c in input order (stable), so a resample is rectangular.
    rows_of = np.argsort(ids, kind="stable").reshape(n_clusters, int(sizes_int[0]))
    estimate = float(np.asarray(func(data, axis=-1)))
    parts_list: list[FloatArray] = []
    for idx in index_blocks(n_clusters, n_resamples, rng, row_width=n_rows):
        sample = data[rows_of[idx].reshape(idx.shape[0], -1)]
        parts_list.append(np.asarray(func(sample, axis=-1), dtype=np.float64).reshape(-1))
    return percentile_interval(
        np.concatenate(parts_list), estimate, level=level, n_clusters=n_clusters
    )


def paired_bootstrap_ci(
    values_a: Any,
    values_b: Any,
    *,
    statistic: Statistic = "mean",
    n_resamples: int = 4000,
    level: float = 0.95,
    clusters: Any = None,
    seed: int | np.random.Generator,
) -> BootstrapResult:
    """Interval for the paired difference ``a - b``: one array of per-item differences,
    resampled as a unit (consistency-without-alignment §I-H2)."""
    a = as_finite(values_a, "values_a")
    b = as_finite(values_b, "values_b")
    check_same_length(values_a=a, values_b=b)
    return bootstrap_ci(
        a - b,
        statistic=statistic,
        n_resamples=n_resamples,
        level=level,
        clusters=clusters,
        seed=seed,
    )
