"""Typed intervals and paired contrasts: the values ``mean_interval`` and ``paired_contrast``
keep of a bootstrap, their counts, and their flattening into report columns."""

from __future__ import annotations

import numpy as np
import pytest

from choiceaudit import stats


def test_mean_interval_is_the_clustered_bootstrap_with_its_counts() -> None:
    values = [0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
    clusters = ["a", "a", "b", "b", "c", "c"]
    got = stats.mean_interval(values, clusters=clusters, n_resamples=300, seed=4)
    raw = stats.bootstrap_ci(values, clusters=clusters, n_resamples=300, seed=4)
    assert got.estimate == pytest.approx(4 / 6)
    assert (got.low, got.high, got.n_rows, got.n_items) == (raw.low, raw.high, 6, 3)
    assert (got.low, got.high) == (raw.low, raw.high)


def test_mean_interval_without_clusters_counts_rows_as_units() -> None:
    got = stats.mean_interval([0.25, 0.75, 0.5], n_resamples=50, seed=0)
    assert (got.n_rows, got.n_items, got.estimate) == (3, 3, 0.5)


def test_interval_columns_use_the_bounds_stem() -> None:
    cell = stats.Interval(estimate=0.5, low=0.25, high=0.75, n_rows=8, n_items=4)
    assert cell.to_columns("accuracy", bounds="ci") == {
        "accuracy": 0.5,
        "ci_low": 0.25,
        "ci_high": 0.75,
    }
    assert cell.to_columns("lar") == {"lar": 0.5, "lar_low": 0.25, "lar_high": 0.75}
    assert cell.excludes(0.0) and not cell.excludes(0.5)


def test_paired_contrast_tests_whole_units_and_intervals_all() -> None:
    a = [1.0, 0.0, 1.0, 0.5, 1.0]
    b = [0.0, 0.0, 1.0, 1.0, 0.0]
    got = stats.paired_contrast(a, b, n_resamples=400, seed=3)
    raw = stats.paired_bootstrap_ci(a, b, n_resamples=400, seed=3)
    # unit 3 has a fractional credit: out of McNemar, in the interval
    assert (got.mcnemar_b, got.mcnemar_c, got.n_tied_excluded) == (2, 0, 1)
    assert got.mcnemar_p == pytest.approx(0.5)  # exact two-sided, 2 discordant pairs all one way
    assert got.n_items == 5 and got.a == pytest.approx(0.7) and got.b == pytest.approx(0.4)
    assert got.difference == pytest.approx(0.3)
    assert (got.low, got.high) == (raw.low, raw.high)
    assert got.mcnemar_p_bonferroni is None and got.n_tests == 1


def test_paired_contrast_reversed_and_adjusted() -> None:
    c = stats.paired_contrast([1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0], n_resamples=200, seed=1)
    r = c.reversed()
    assert (r.a, r.b, r.difference) == (c.b, c.a, -c.difference)
    assert (r.low, r.high) == (-c.high, -c.low)
    assert (r.mcnemar_b, r.mcnemar_c) == (c.mcnemar_c, c.mcnemar_b)
    assert r.reversed() == c
    adj = c.adjusted(3)
    assert adj.n_tests == 3
    assert adj.mcnemar_p_bonferroni == pytest.approx(min(1.0, 3 * c.mcnemar_p))
    # a numpy integer (a count from an array) is accepted at run time, though typed as int
    assert c.adjusted(np.int64(2)).n_tests == 2  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_tests"):
        c.adjusted(0)
    assert c.to_columns("gap", bounds="ci") == {
        "gap": c.difference,
        "ci_low": c.low,
        "ci_high": c.high,
    }


def test_paired_contrast_refuses_a_credit_outside_the_unit_interval() -> None:
    with pytest.raises(ValueError, match=r"values_b\[1\] = 1.5"):
        stats.paired_contrast([0.0, 1.0], [0.0, 1.5], seed=0)
    with pytest.raises(ValueError, match="mismatched"):
        stats.paired_contrast([0.0, 1.0], [0.0], seed=0)


def test_paired_contrast_with_no_whole_unit_reports_no_discordant_pair() -> None:
    got = stats.paired_contrast([0.5, 0.5], [1.0, 0.5], n_resamples=50, seed=0)
    assert (got.mcnemar_b, got.mcnemar_c, got.mcnemar_p, got.n_tied_excluded) == (0, 0, 1.0, 2)
