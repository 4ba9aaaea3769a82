"""Item-sensitivity: permutation consistency and its excess over the chooser's marginal null.

consistency-without-alignment §IV-A: "excess: the probability that a model makes the same
canonical choice for an item under both stored permutations, minus what its own marginal option
preference would produce. A uniform null would be wrong here, because a model choosing one option
93 percent of the time scores 0.87 consistency while being entirely item-insensitive."

Definitions, for ``n`` items each rendered under two permutations, with canonical choices
``a_i`` and ``b_i`` (chosen slot mapped back through the permutation, never the slot letter):

- permutation consistency ``= (1/n) Σ_i [a_i = b_i]``;
- marginal null ``= Σ_o p(o)²``, where ``p`` is the chooser's marginal canonical option
  distribution. The paper does not spell out the estimator; we pool both renderings
  (``p(o) = (#{a_i = o} + #{b_i = o}) / 2n``), which is the chooser's own option preference on
  exactly the renderings being compared and is symmetric in the two permutations. Σp² is the
  agreement of two independent draws from that preference (0.93² + 0.07² ≈ 0.87 in the quote);
- excess ``= consistency − marginal null``. It is negative when choices move with the
  permutation more than independent sampling would produce (§IV-H3).

One canonical choice per rendering: exact ties are a tied set elsewhere in the toolkit, so a
caller must say how a tied rendering is represented (or exclude and count it) before calling.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from choiceaudit.stats._bootstrap import (
    BootstrapResult,
    check_n_resamples,
    index_blocks,
    percentile_interval,
)
from choiceaudit.stats._validate import (
    FloatArray,
    IntArray,
    as_choices,
    check_level,
    check_same_length,
    make_rng,
)

__all__ = [
    "excess_consistency",
    "excess_consistency_ci",
    "marginal_null",
    "option_marginal",
    "permutation_consistency",
]


def _pair(choice_a: Any, choice_b: Any, n_options: int) -> tuple[IntArray, IntArray]:
    a = as_choices(choice_a, "choice_a", n_options)
    b = as_choices(choice_b, "choice_b", n_options)
    check_same_length(choice_a=a, choice_b=b)
    return a, b


def option_marginal(choice_a: Any, choice_b: Any, n_options: int) -> FloatArray:
    """The chooser's marginal canonical option distribution, pooled over both renderings.

    >>> option_marginal([0, 0], [0, 1], 3).tolist()
    [0.75, 0.25, 0.0]
    """
    a, b = _pair(choice_a, choice_b, n_options)
    counts = np.bincount(np.concatenate([a, b]), minlength=n_options)
    return np.asarray(counts / (2.0 * a.size), dtype=np.float64)


def permutation_consistency(choice_a: Any, choice_b: Any, n_options: int) -> float:
    """Share of items with the same canonical choice under both permutations.

    >>> permutation_consistency([0, 1, 2], [0, 1, 0], 3)
    0.6666666666666666
    """
    a, b = _pair(choice_a, choice_b, n_options)
    return float(np.mean(a == b))


def marginal_null(choice_a: Any, choice_b: Any, n_options: int) -> float:
    """``Σ_o p(o)²``: consistency an item-insensitive chooser with this marginal would show.

    >>> marginal_null([0, 1], [1, 0], 2)
    0.5
    """
    p = option_marginal(choice_a, choice_b, n_options)
    return float(np.sum(p**2))


def excess_consistency(choice_a: Any, choice_b: Any, n_options: int) -> float:
    """Permutation consistency minus the marginal null (§IV-A).

    >>> excess_consistency([0, 1, 2, 3], [0, 1, 2, 3], 4)
    0.75
    """
    a, b = _pair(choice_a, choice_b, n_options)
    return permutation_consistency(a, b, n_options) - marginal_null(a, b, n_options)


def excess_consistency_ci(
    choice_a: Any,
    choice_b: Any,
    n_options: int,
    *,
    n_resamples: int = 4000,
    level: float = 0.95,
    seed: int | np.random.Generator,
) -> BootstrapResult:
    """Excess with a percentile bootstrap interval, items as the resampling unit.

    Both the agreement and the marginal are recomputed on every resample (the marginal is part of
    the statistic), for a block of resamples at once from the index matrix.
    """
    a, b = _pair(choice_a, choice_b, n_options)
    level = check_level(level)
    n_resamples = check_n_resamples(n_resamples)
    n, k = a.size, n_options
    pair = a * k + b  # each item as one cell of the k×k table of (choice_a, choice_b)
    parts: list[FloatArray] = []
    for idx in index_blocks(n, n_resamples, make_rng(seed)):
        rows = idx.shape[0]
        # One bincount per block gives every resample's k×k table: its trace is the agreement,
        # its row plus column sums the pooled option counts.
        offset = (np.arange(rows, dtype=np.int64) * (k * k))[:, None]
        table = np.bincount((pair[idx] + offset).ravel(), minlength=rows * k * k)
        table = table.reshape(rows, k, k)
        agree = np.trace(table, axis1=1, axis2=2) / n
        p = (table.sum(axis=2) + table.sum(axis=1)) / (2.0 * n)
        parts.append(agree - np.sum(p**2, axis=1))
    estimate = excess_consistency(a, b, n_options)
    return percentile_interval(np.concatenate(parts), estimate, level=level, n_clusters=n)
