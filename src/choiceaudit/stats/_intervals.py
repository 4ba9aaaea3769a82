"""Typed intervals and paired contrasts: what a caller keeps of a bootstrap, as frozen values.

:func:`mean_interval` is a mean with its percentile bootstrap interval (clusters resampled
whole) and the row and cluster counts a table prints beside it; :func:`paired_contrast` is the
comparison of two aligned per-unit credit arrays both papers report: exact McNemar on the units
whose credit is whole (0 or 1) on both sides, and a paired bootstrap interval on the difference
of the credits. Both return frozen dataclasses that carry their own flattening into report
columns (``to_columns``), so no caller assembles a dict of their fields.

Units with fractional credit (a tie that shares the credited option) have no binary outcome for
McNemar's test; they are left out of the test only, and counted in ``n_tied_excluded``, while the
bootstrap interval keeps them with their fractional credit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from choiceaudit.stats._bootstrap import BootstrapResult, bootstrap_ci, paired_bootstrap_ci
from choiceaudit.stats._paired_tests import McNemarResult, mcnemar_exact
from choiceaudit.stats._validate import as_finite, check_same_length

__all__ = ["Interval", "PairedContrast", "mean_interval", "paired_contrast"]


def _columns(
    name: str, bounds: str | None, value: float, low: float, high: float
) -> dict[str, float]:
    stem = name if bounds is None else bounds
    return {name: value, f"{stem}_low": low, f"{stem}_high": high}


@dataclass(frozen=True)
class Interval:
    """A mean with its percentile bootstrap interval: ``n_rows`` rows in ``n_items`` resampling
    units (items when rows were clustered, else rows)."""

    estimate: float
    low: float
    high: float
    n_rows: int
    n_items: int

    def to_columns(self, name: str, *, bounds: str | None = None) -> dict[str, float]:
        """The interval as report columns: ``name`` (the estimate), then ``{bounds}_low`` and
        ``{bounds}_high`` (``bounds`` defaults to ``name``)."""
        return _columns(name, bounds, self.estimate, self.low, self.high)

    @classmethod
    def of(cls, result: BootstrapResult, *, n_rows: int) -> Interval:
        """The interval of a bootstrap over ``n_rows`` rows (its clusters are the items)."""
        return cls(
            estimate=float(result.estimate),
            low=float(result.low),
            high=float(result.high),
            n_rows=int(n_rows),
            n_items=int(result.n_clusters),
        )

    def excludes(self, value: float = 0.0) -> bool:
        """Whether ``value`` lies outside the closed interval [low, high]."""
        return bool(value < self.low or value > self.high)


@dataclass(frozen=True)
class PairedContrast:
    """``a − b`` over ``n_items`` aligned units: the two mean credits, the paired bootstrap
    interval of the difference, and exact McNemar on the whole-credit units (``mcnemar_b``: a
    right and b wrong, ``mcnemar_c``: the reverse; ``n_tied_excluded`` units had fractional
    credit on a side)."""

    n_items: int
    a: float
    b: float
    difference: float
    low: float
    high: float
    mcnemar_b: int
    mcnemar_c: int
    mcnemar_p: float
    n_tied_excluded: int
    #: the McNemar p-value times the number of contrasts tested together (capped at 1), and
    #: that number; ``n_tests`` 1 means the contrast was tested alone
    mcnemar_p_bonferroni: float | None = None
    n_tests: int = 1

    def reversed(self) -> PairedContrast:
        """The same contrast read as ``b − a``: sides, discordant counts and the difference's
        sign swapped, the interval's ends swapped and negated (the p-values are symmetric)."""
        return dataclasses.replace(
            self,
            a=self.b,
            b=self.a,
            difference=-self.difference,
            low=-self.high,
            high=-self.low,
            mcnemar_b=self.mcnemar_c,
            mcnemar_c=self.mcnemar_b,
        )

    def adjusted(self, n_tests: int) -> PairedContrast:
        """This contrast with its Bonferroni-adjusted p-value for ``n_tests`` tests."""
        if isinstance(n_tests, bool) or not isinstance(n_tests, int | np.integer) or n_tests < 1:
            raise ValueError(f"n_tests must be a positive integer, got {n_tests!r}")
        return dataclasses.replace(
            self, mcnemar_p_bonferroni=min(1.0, self.mcnemar_p * n_tests), n_tests=int(n_tests)
        )

    def to_columns(self, name: str, *, bounds: str | None = None) -> dict[str, float]:
        """The difference as report columns: ``name``, then ``{bounds}_low`` and
        ``{bounds}_high`` (``bounds`` defaults to ``name``)."""
        return _columns(name, bounds, self.difference, self.low, self.high)


def mean_interval(
    values: Any,
    *,
    clusters: Any = None,
    n_resamples: int = 4000,
    level: float = 0.95,
    seed: int | np.random.Generator,
) -> Interval:
    """The mean of ``values`` with its percentile bootstrap interval (:func:`bootstrap_ci` with
    ``statistic="mean"``; with ``clusters``, whole clusters are resampled)."""
    data = as_finite(values, "values")
    result = bootstrap_ci(data, n_resamples=n_resamples, level=level, clusters=clusters, seed=seed)
    return Interval(
        estimate=result.estimate,
        low=result.low,
        high=result.high,
        n_rows=int(data.shape[0]),
        n_items=result.n_clusters,
    )


def paired_contrast(
    values_a: Any,
    values_b: Any,
    *,
    clusters: Any = None,
    n_resamples: int = 4000,
    level: float = 0.95,
    seed: int | np.random.Generator,
) -> PairedContrast:
    """``a − b`` on aligned per-unit credits in [0, 1] (entry ``i`` of both arrays is the same
    unit): McNemar on the units whole on both sides, the paired bootstrap on all of them
    (``clusters`` as in :func:`bootstrap_ci`, for units that are not independent). With no
    whole unit the test has no discordant pair and reports ``p = 1``, as :func:`mcnemar_exact`
    does for none."""
    a = as_finite(values_a, "values_a")
    b = as_finite(values_b, "values_b")
    check_same_length(values_a=a, values_b=b)
    for name, v in (("values_a", a), ("values_b", b)):
        bad = np.flatnonzero((v < 0) | (v > 1))
        if bad.size:
            raise ValueError(
                f"{name}[{int(bad[0])}] = {float(v[bad[0]])!r} is not a credit in [0, 1]"
            )
    whole = ((a == 0) | (a == 1)) & ((b == 0) | (b == 1))
    # No whole unit means no discordant pair: the exact test's own convention, p = 1.
    test = mcnemar_exact(a[whole] == 1, b[whole] == 1) if whole.any() else McNemarResult(0, 0, 1.0)
    diff = paired_bootstrap_ci(
        a, b, n_resamples=n_resamples, level=level, clusters=clusters, seed=seed
    )
    return PairedContrast(
        n_items=int(a.shape[0]),
        a=float(a.mean()),
        b=float(b.mean()),
        difference=diff.estimate,
        low=diff.low,
        high=diff.high,
        mcnemar_b=test.b,
        mcnemar_c=test.c,
        mcnemar_p=test.p,
        n_tied_excluded=int((~whole).sum()),
    )
