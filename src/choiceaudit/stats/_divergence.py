"""Shape of a reported distribution and distance between two of them.

``normalized_entropy`` is literal-attraction Appendix H's entropy column (1 = uniform, 0 = one
option certain); ``js_divergence`` is the Jensen–Shannon divergence in bits used to compare the
distributions a model returns for two renderings of one item (Appendix N: agreement against
divergence). Both work row-wise on probabilities over options in the same (canonical) order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from choiceaudit.stats._validate import FloatArray, as_probs

__all__ = ["js_divergence", "normalized_entropy"]


def _entropy_bits(p: FloatArray) -> FloatArray:
    """Shannon entropy in bits along the last axis, with 0 · log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0.0, -p * np.log2(np.where(p > 0.0, p, 1.0)), 0.0)
    return np.asarray(terms.sum(axis=-1), dtype=np.float64)


def normalized_entropy(probs: Any) -> FloatArray | float:
    """``H(p) / log k`` per row (a float for a single 1-D distribution).

    >>> normalized_entropy([0.25, 0.25, 0.25, 0.25])
    1.0
    """
    p = as_probs(probs, "probs", ndim=(1, 2))
    h = _entropy_bits(p) / np.log2(p.shape[-1])
    return float(h) if p.ndim == 1 else h


def js_divergence(p: Any, q: Any) -> FloatArray | float:
    """Jensen–Shannon divergence in bits, row-wise: ``H(m) − (H(p) + H(q)) / 2`` with
    ``m = (p + q) / 2``; 0 for identical rows, 1 for disjoint supports. This is the *divergence*;
    ``scipy.spatial.distance.jensenshannon(base=2)`` returns its square root (the distance).

    >>> js_divergence([1.0, 0.0], [0.0, 1.0])
    1.0
    """
    a = as_probs(p, "p", ndim=(1, 2))
    b = as_probs(q, "q", ndim=(1, 2))
    if a.shape != b.shape:
        raise ValueError(f"mismatched shapes: p is {a.shape}, q is {b.shape}")
    js = _entropy_bits((a + b) / 2.0) - (_entropy_bits(a) + _entropy_bits(b)) / 2.0
    js = np.clip(js, 0.0, 1.0)  # rounding can leave -1e-17 for identical rows
    return float(js) if a.ndim == 1 else js
