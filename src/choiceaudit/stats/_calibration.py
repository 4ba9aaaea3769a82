"""Calibration of reported distributions: top-label ECE (equal-width and equal-mass), multiclass
Brier, negative log-likelihood.

literal-attraction Appendix F ("Calibration without binning") reports the same distributions
under three metrics because each fails differently: ECE with 15 equal-width bins (the field
standard), its adaptive equal-mass variant (Nixon et al. 2019), and the Brier score, which needs no
bins and has a fixed reference — a uniform four-way distribution scores exactly 0.750.

Top-label convention: the prediction is the argmax of ``probs`` and the confidence its
probability. Exact ties in the argmax are a tied set, never broken by array order: a row whose
gold option is in a tied top set of size ``t`` gets correctness ``1/t`` (the expected accuracy of a
uniform tie-break), which keeps every metric independent of option order.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import numpy as np

from choiceaudit.stats._validate import (
    FloatArray,
    IntArray,
    as_choices,
    as_probs,
    check_same_length,
)

__all__ = ["ReliabilityBins", "brier", "ece", "nll", "reliability_bins", "top_label"]

BinStrategy = Literal["width", "mass"]


def _probs_labels(probs: Any, labels: Any) -> tuple[FloatArray, IntArray]:
    p = as_probs(probs, "probs")
    y = as_choices(labels, "labels", p.shape[1])
    check_same_length(probs=p, labels=y)
    return p, y


def top_label(probs: Any, labels: Any) -> tuple[FloatArray, FloatArray]:
    """Per row: top-label confidence ``max(p)`` and correctness (``1/t`` if gold is among ``t``
    exactly tied maxima, else 0 or 1)."""
    p, y = _probs_labels(probs, labels)
    confidence = p.max(axis=1)
    tied = p == confidence[:, None]
    n_tied = tied.sum(axis=1)
    gold_in_top = tied[np.arange(p.shape[0]), y]
    return confidence, np.where(gold_in_top, 1.0 / n_tied, 0.0)


class ReliabilityBins(NamedTuple):
    """Per non-empty bin: row count, mean confidence and accuracy (sorted by confidence)."""

    n_rows: IntArray
    confidence: FloatArray
    accuracy: FloatArray


def _bin_index(confidence: FloatArray, n_bins: int, strategy: BinStrategy) -> IntArray:
    if strategy == "width":
        # Bin i covers (i/n_bins, (i+1)/n_bins]; a confidence of exactly 0 joins the first bin.
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        idx = np.searchsorted(edges, confidence, side="left") - 1
        return np.clip(idx, 0, n_bins - 1).astype(np.int64)
    if strategy == "mass":
        # Equal-count chunks of the sorted confidences; each bin is bounded above by the largest
        # confidence of its chunk and a row joins the first bin whose bound it does not exceed.
        # Rows with equal confidence therefore always share a bin, so with ties the result does
        # not depend on input order (a tied block straddling a chunk boundary joins the lower bin).
        ordered = np.sort(confidence)
        n = ordered.size
        ends = np.array([len(c) for c in np.array_split(np.arange(n), n_bins)]).cumsum()
        uppers = ordered[ends[ends > 0] - 1]
        return np.searchsorted(uppers, confidence, side="left").astype(np.int64)
    raise ValueError(f"strategy must be 'width' or 'mass', got {strategy!r}")


def reliability_bins(
    probs: Any, labels: Any, *, n_bins: int = 15, strategy: BinStrategy = "width"
) -> ReliabilityBins:
    """Reliability diagram data for top-label confidence (numbers only; drawing is ``report``'s).

    ``strategy="width"``: ``n_bins`` equal-width bins on [0, 1]. ``strategy="mass"``: ``n_bins``
    equal-mass (adaptive) bins over the sorted confidences (Nixon et al. 2019).
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    confidence, correct = top_label(probs, labels)
    idx = _bin_index(confidence, int(n_bins), strategy)
    size = int(idx.max()) + 1
    count = np.bincount(idx, minlength=size)
    conf_sum = np.bincount(idx, weights=confidence, minlength=size)
    acc_sum = np.bincount(idx, weights=correct, minlength=size)
    keep = count > 0
    return ReliabilityBins(
        n_rows=count[keep].astype(np.int64),
        confidence=conf_sum[keep] / count[keep],
        accuracy=acc_sum[keep] / count[keep],
    )


def ece(probs: Any, labels: Any, *, n_bins: int = 15, strategy: BinStrategy = "width") -> float:
    """Top-label expected calibration error: ``Σ_b (n_b / n) · |acc_b − conf_b|``.

    ``strategy="width"`` is the standard 15 equal-width bins (Guo et al. 2017); ``"mass"`` is the
    adaptive equal-mass variant (ACE in Nixon et al. 2019); literal-attraction Appendix F reports
    both.

    >>> round(ece([[0.8, 0.2], [0.6, 0.4]], [0, 1]), 6)
    0.4
    """
    bins = reliability_bins(probs, labels, n_bins=n_bins, strategy=strategy)
    n = bins.n_rows.sum()
    return float(np.sum(bins.n_rows / n * np.abs(bins.accuracy - bins.confidence)))


def brier(probs: Any, labels: Any) -> float:
    """Multiclass Brier score: mean over items of ``Σ_o (p_o − onehot_o)²``.

    Ranges over [0, 2]; a uniform distribution over ``k`` options scores ``1 − 1/k`` (0.750 for
    k = 4, literal-attraction Appendix F). For k = 2 this is twice scikit-learn's binary
    ``brier_score_loss``, which scores only the positive class.

    >>> brier([[0.25, 0.25, 0.25, 0.25]], [2])
    0.75
    """
    p, y = _probs_labels(probs, labels)
    onehot = np.zeros_like(p)
    onehot[np.arange(p.shape[0]), y] = 1.0
    return float(np.mean(np.sum((p - onehot) ** 2, axis=1)))


def nll(probs: Any, labels: Any, *, eps: float = 0.0) -> float:
    """Negative log-likelihood (natural log) of the gold option, mean over items.

    ``eps`` clips the gold probability from below; with the default 0 a gold probability of
    exactly 0 gives ``inf``, which is the honest value of a proper score for a certain mistake.

    >>> round(nll([[0.5, 0.5], [0.25, 0.75]], [0, 1]), 6)
    0.490415
    """
    if not 0.0 <= eps < 1.0:
        raise ValueError(f"eps must lie in [0, 1), got {eps!r}")
    p, y = _probs_labels(probs, labels)
    gold = np.maximum(p[np.arange(p.shape[0]), y], eps)
    with np.errstate(divide="ignore"):
        return float(-np.mean(np.log(gold)))
