"""Paired significance tests and multiple-comparison correction.

Paired comparisons of two choosers on identical questions use McNemar's exact test via the
binomial distribution on the discordant pairs (literal-attraction §4.3 and Appendix R); counts
across the 21 model×rule cells are also stated under a Bonferroni correction
(consistency-without-alignment §I-H2, §IV-B).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy import stats as _sps

from choiceaudit.stats._validate import FloatArray, as_finite, check_same_length

__all__ = ["McNemarResult", "bonferroni", "mcnemar_exact"]


class McNemarResult(NamedTuple):
    """Discordant counts and the exact two-sided p-value.

    ``b``: items ``a`` gets right and ``b`` gets wrong; ``c``: the reverse.
    """

    b: int
    c: int
    p: float


def _as_binary(x: Any, name: str) -> FloatArray:
    arr = as_finite(x, name)
    if not np.all((arr == 0.0) | (arr == 1.0)):
        raise ValueError(f"{name} must hold booleans or 0/1 per item")
    return arr


def mcnemar_exact(correct_a: Any, correct_b: Any) -> McNemarResult:
    """Exact two-sided McNemar test on paired per-item correctness.

    Under the null each discordant pair is equally likely to favour either arm, so
    ``b ~ Binomial(b + c, 1/2)`` and ``p = min(1, 2 · P(X ≤ min(b, c)))``; with no discordant
    pairs ``p = 1``. This is the convention of statsmodels' ``mcnemar(exact=True)``.

    >>> mcnemar_exact([1, 1, 1, 0], [0, 0, 0, 0])
    McNemarResult(b=3, c=0, p=0.25)
    """
    a = _as_binary(correct_a, "correct_a")
    b = _as_binary(correct_b, "correct_b")
    check_same_length(correct_a=a, correct_b=b)
    n_b = int(np.sum((a == 1.0) & (b == 0.0)))
    n_c = int(np.sum((a == 0.0) & (b == 1.0)))
    n = n_b + n_c
    if n == 0:
        return McNemarResult(n_b, n_c, 1.0)
    p = min(1.0, 2.0 * float(_sps.binom.cdf(min(n_b, n_c), n, 0.5)))
    return McNemarResult(n_b, n_c, p)


def bonferroni(p_values: Any) -> FloatArray:
    """Bonferroni-adjusted p-values: ``min(1, m · p)`` for ``m`` tests, in input order.

    >>> bonferroni([0.01, 0.2, 0.5]).tolist()
    [0.03, 0.6000000000000001, 1.0]
    """
    p = as_finite(p_values, "p_values")
    if np.any((p < 0.0) | (p > 1.0)):
        raise ValueError("p_values must lie in [0, 1]")
    return np.minimum(1.0, p * p.size)
