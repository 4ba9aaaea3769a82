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

These take one canonical choice per rendering. Where a rendering's choice is a tied set,
:func:`split_credit_excess` scores it as the expectation under indifference (each tied option
gets credit ``1/|T|``); on untied choices it gives exactly these functions' numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
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
    "SplitCreditExcess",
    "excess_consistency",
    "excess_consistency_ci",
    "marginal_null",
    "option_marginal",
    "permutation_consistency",
    "split_credit_excess",
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


@dataclass(frozen=True)
class SplitCreditExcess:
    """Excess over the marginal null when a rendering's choice may be a tied set: over
    ``n_items`` items, ``n_tied_items`` of which have a tied rendering."""

    n_items: int
    n_tied_items: int
    consistency: float
    marginal_null: float
    excess: float


def _tied_sets(sets: Sequence[Sequence[int]], name: str, n_options: int) -> list[frozenset[int]]:
    out = []
    for i, s in enumerate(sets):
        chosen = frozenset(int(o) for o in s)
        if not chosen or len(chosen) != len(s):
            raise ValueError(f"{name}[{i}]: a choice is a non-empty set of distinct options")
        if min(chosen) < 0 or max(chosen) >= n_options:
            raise ValueError(f"{name}[{i}]: options must lie in [0, {n_options}), got {sorted(s)}")
        out.append(chosen)
    return out


def split_credit_excess(
    sets_a: Sequence[Sequence[int]], sets_b: Sequence[Sequence[int]], n_options: int
) -> SplitCreditExcess:
    """Excess with ties scored as an expectation under indifference (§I-H's tie rule applied to
    §IV-A's statistic): a rendering whose choice is the tied set ``T`` gives each option of ``T``
    credit ``1/|T|`` (:func:`tie_credit`), the agreement of an item is ``Σ_o t_a(o) t_b(o)`` (the
    chance that two independent tie-breaks agree), consistency is its mean over items, the
    marginal ``p(o)`` is the credit pooled over both renderings and the null is ``Σ_o p(o)²``.

    With no tied set this is :func:`excess_consistency` and is computed by it, so the numbers
    are identical. With ties the sums are exact (rational arithmetic, rounded once), so a chooser
    indifferent between all options (every set the whole menu) has excess exactly 0.

    >>> split_credit_excess([[0], [1, 2]], [[0], [2]], 3).consistency
    0.75
    """
    a = _tied_sets(sets_a, "sets_a", n_options)
    b = _tied_sets(sets_b, "sets_b", n_options)
    if len(a) != len(b):
        raise ValueError(f"sets_a has {len(a)} items but sets_b has {len(b)}")
    if not a:
        raise ValueError("sets_a is empty")
    n = len(a)
    tied = sum(len(x) > 1 or len(y) > 1 for x, y in zip(a, b, strict=True))
    if not tied:
        ca = [next(iter(x)) for x in a]
        cb = [next(iter(y)) for y in b]
        return SplitCreditExcess(
            n,
            0,
            permutation_consistency(ca, cb, n_options),
            marginal_null(ca, cb, n_options),
            excess_consistency(ca, cb, n_options),
        )
    agree = sum(
        (Fraction(len(x & y), len(x) * len(y)) for x, y in zip(a, b, strict=True)), Fraction(0)
    )
    credit = [Fraction(0)] * n_options
    for s in (*a, *b):
        for o in s:
            credit[o] += Fraction(1, len(s))
    consistency = agree / n
    null = sum((c / (2 * n)) ** 2 for c in credit)
    return SplitCreditExcess(n, tied, float(consistency), float(null), float(consistency - null))
