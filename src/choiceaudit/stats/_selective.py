"""Selective prediction: risk–coverage areas, their random-gate baselines, selective accuracy.

A caller answers only the items a model is most confident about (literal-attraction Appendix F).
Rank rows by confidence, descending; accepting the top ``i`` of ``n`` rows gives coverage ``i/n``,
``E_i`` accepted errors, selective risk ``E_i / i`` and generalized risk ``E_i / n`` (the joint
probability of error and acceptance, Traub et al. 2024, which does not condition on the accepted
set and so does not over-weight high-confidence failures).

- ``aurc`` = (1/n) Σ_i E_i / i, the mean selective risk over the n accepted-set sizes.
- ``augrc`` = ∫₀¹ GR(c) dc by the trapezoid rule on the grid 0, 1/n, …, 1 with GR(0) = 0.

Ties in confidence are one threshold block: within a block of ``m`` tied rows holding ``s``
errors, ``E`` rises linearly by ``s/m`` per accepted row. This is exactly the expectation over
every ordering of the tied rows (each curve point is linear in ``E``), so results never depend on
input order. A random gate (all confidences tied) therefore scores exactly the error rate on
AURC and exactly half the error rate on AUGRC, the analytic baselines of Appendix F.

``correct`` may be fractional (credit ``1/t`` for a gold option inside a tied top set).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from choiceaudit.stats._validate import FloatArray, as_correct, as_finite, check_same_length

__all__ = [
    "ConfidenceByOutcome",
    "RiskCoverage",
    "augrc",
    "aurc",
    "confidence_by_outcome",
    "random_gate_augrc",
    "random_gate_aurc",
    "risk_coverage_curve",
    "selective_accuracy",
]


class RiskCoverage(NamedTuple):
    """The curve at accepted-set sizes 1..n (expected values over tie orderings)."""

    coverage: FloatArray
    selective_risk: FloatArray
    generalized_risk: FloatArray


def _inputs(confidence: Any, correct: Any) -> tuple[FloatArray, FloatArray]:
    conf = as_finite(confidence, "confidence")
    corr = as_correct(correct, "correct")
    check_same_length(confidence=conf, correct=corr)
    return conf, corr


def _cumulative_errors(conf: FloatArray, err: FloatArray) -> FloatArray:
    """``E_i`` for i = 1..n with tied confidences spread linearly over their block."""
    n = conf.size
    order = np.argsort(-conf, kind="stable")
    c, e = conf[order], err[order]
    new_block = np.empty(n, dtype=bool)
    new_block[0] = True
    new_block[1:] = c[1:] != c[:-1]
    block = np.cumsum(new_block) - 1
    starts = np.flatnonzero(new_block)
    sizes = np.diff(np.append(starts, n))
    sums = np.add.reduceat(e, starts)
    before = np.concatenate(([0.0], np.cumsum(sums)[:-1]))
    taken = np.arange(1, n + 1) - starts[block]
    return np.asarray(before[block] + taken * (sums[block] / sizes[block]), dtype=np.float64)


def risk_coverage_curve(confidence: Any, correct: Any) -> RiskCoverage:
    """Coverage, selective risk and generalized risk at every accepted-set size."""
    conf, corr = _inputs(confidence, correct)
    cum_err = _cumulative_errors(conf, 1.0 - corr)
    n = conf.size
    sizes = np.arange(1, n + 1, dtype=np.float64)
    return RiskCoverage(sizes / n, cum_err / sizes, cum_err / n)


def aurc(confidence: Any, correct: Any) -> float:
    """Area under the risk–coverage curve: mean selective risk over accepted-set sizes 1..n.

    >>> aurc([0.9, 0.8, 0.7, 0.6], [1, 1, 0, 0])
    0.20833333333333331
    """
    curve = risk_coverage_curve(confidence, correct)
    return float(np.mean(curve.selective_risk))


def augrc(confidence: Any, correct: Any) -> float:
    """Area under the generalized risk–coverage curve (Traub et al. 2024), trapezoid from 0.

    >>> augrc([0.5, 0.5, 0.5, 0.5], [1, 1, 0, 0])
    0.25
    """
    curve = risk_coverage_curve(confidence, correct)
    gr = np.concatenate(([0.0], curve.generalized_risk))
    return float(np.sum((gr[1:] + gr[:-1]) / 2.0) / curve.coverage.size)


def random_gate_aurc(correct: Any) -> float:
    """AURC of a gate that ignores the item: the error rate."""
    return float(1.0 - np.mean(as_correct(correct, "correct")))


def random_gate_augrc(correct: Any) -> float:
    """AUGRC of a gate that ignores the item: half the error rate."""
    return 0.5 * random_gate_aurc(correct)


def selective_accuracy(confidence: Any, correct: Any, coverages: Any) -> FloatArray:
    """Accuracy on the most confident ``ceil(coverage · n)`` rows, for each coverage in (0, 1].

    A tied confidence block straddling the cut contributes its mean accuracy per admitted row.

    >>> selective_accuracy([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0], [0.25, 0.5, 1.0]).tolist()
    [1.0, 0.5, 0.5]
    """
    conf, corr = _inputs(confidence, correct)
    cov = as_finite(coverages, "coverages", ndim=(0, 1))
    if np.any((cov <= 0.0) | (cov > 1.0)):
        raise ValueError(f"coverages must lie in (0, 1], got {cov.tolist()}")
    n = conf.size
    cum_err = _cumulative_errors(conf, 1.0 - corr)
    # The tiny slack keeps e.g. 0.35 · 888 = 310.8 from becoming 312 through rounding noise.
    kept = np.array([max(1, math.ceil(c * n - 1e-9)) for c in np.atleast_1d(cov)])
    acc = 1.0 - cum_err[kept - 1] / kept
    return np.asarray(acc.reshape(cov.shape), dtype=np.float64)


class ConfidenceByOutcome(NamedTuple):
    """Mean confidence on correct and on incorrect rows (weighted by fractional credit).

    A mean is NaN when its group has zero weight; the weights say so.
    """

    mean_correct: float
    mean_incorrect: float
    weight_correct: float
    weight_incorrect: float


def confidence_by_outcome(confidence: Any, correct: Any) -> ConfidenceByOutcome:
    """Mean confidence split by outcome (literal-attraction §5.2: confidence is anti-diagnostic
    when it is higher on errors than on correct answers).

    >>> confidence_by_outcome([0.9, 0.7, 0.4], [0, 1, 1]).mean_correct
    0.55
    """
    conf, corr = _inputs(confidence, correct)
    w_c, w_i = float(corr.sum()), float((1.0 - corr).sum())
    mean_c = float(np.dot(conf, corr) / w_c) if w_c > 0 else math.nan
    mean_i = float(np.dot(conf, 1.0 - corr) / w_i) if w_i > 0 else math.nan
    return ConfidenceByOutcome(mean_c, mean_i, w_c, w_i)
