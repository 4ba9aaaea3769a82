"""Order audit over a permutation sweep (literal-attraction §5.4 and Appendix Q).

Each item is one fixed set of ``k`` options presented under several orderings (all ``k!`` in the
paper). Inputs are plain arrays so any instrument can call them:

- ``probs``  — (n_items, n_perms, k) probabilities in **display** order;
- ``scores`` — (n_items, n_perms, k) any finite per-slot scores whose argmax is the choice
  (``probs`` by default; pass a rule's raw scores to audit that rule, or ``np.eye(k)[slot]`` to
  audit a vendor's own reported choice);
- ``perms``  — (n_items, n_perms, k) integers: ``perms[i, j, s]`` is the canonical option shown in
  slot ``s`` of rendering ``j`` of item ``i``;
- ``gold``   — (n_items,) canonical index of the gold option.

The chosen gloss is recovered as ``perm[slot(ŷ)]``; the slot letter is never the unit of an
answer, because a letter necessarily changes whenever the same gloss moves (Appendix Q,
"Recovering option identity"). Exact ties in the argmax are a tied set: a rendering's answer is the
set of canonical options at the maximum, and slot shares split a tied selection evenly.
Arrays are rectangular: every item carries the same number of orderings (the full ``k!`` sweep
in the paper, though any set of orderings is accepted).

Probabilities are read **as returned**: a vector whose sum differs from 1 by at most
``tolerance`` (default :data:`RETURNED_SUM_TOLERANCE`, 0.02: four options rounded to two
decimals) is accepted unchanged, never renormalised, and the results that summarise a sweep
record the tolerance and the largest |Σp − 1| they read (``max_sum_deviation``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from choiceaudit.stats._validate import (
    RETURNED_SUM_TOLERANCE,
    BoolArray,
    FloatArray,
    IntArray,
    as_choices,
    as_finite,
    as_perms,
    as_returned,
)

__all__ = [
    "OrderSensitivity",
    "PermutationAudit",
    "answer_instability",
    "canonical_probs",
    "gold_prob_range",
    "n_distinct_choices",
    "order_sensitivity",
    "permutation_audit",
    "selection_spread",
    "slot_shares",
    "unstable_items",
]


def _sweep(
    values: Any, perms: Any, name: str, *, probs: bool, tolerance: float = RETURNED_SUM_TOLERANCE
) -> tuple[FloatArray, IntArray, float]:
    """The sweep's arrays and, for probabilities, the largest |Σp − 1| (0.0 for scores)."""
    deviation = 0.0
    if probs:
        arr, deviation = as_returned(values, name, ndim=3, tolerance=tolerance)
    else:
        arr = as_finite(values, name, ndim=3)
    p = as_perms(perms, "perms")
    if arr.shape != p.shape:
        raise ValueError(f"mismatched shapes: {name} is {arr.shape}, perms is {p.shape}")
    return arr, p, deviation


def _to_canonical(values: Any, perms: IntArray) -> Any:
    """Reorder the last axis from display slots to canonical options."""
    out = np.empty_like(values)
    np.put_along_axis(out, perms, values, axis=-1)
    return out


def _chosen(scores: FloatArray) -> BoolArray:
    """Tied-argmax mask over the last axis (display order)."""
    return np.asarray(scores == scores.max(axis=-1, keepdims=True), dtype=np.bool_)


def canonical_probs(
    probs: Any, perms: Any, *, tolerance: float = RETURNED_SUM_TOLERANCE
) -> FloatArray:
    """``probs`` mapped from display slots to canonical options: ``out[..., perm[s]] = p[..., s]``
    (vectors as returned, Σp within ``tolerance`` of 1)."""
    p, perm, _ = _sweep(probs, perms, "probs", probs=True, tolerance=tolerance)
    return np.asarray(_to_canonical(p, perm), dtype=np.float64)


def _canonical_choice_sets(scores: Any, perms: Any) -> BoolArray:
    s, perm, _ = _sweep(scores, perms, "scores", probs=False)
    return np.asarray(_to_canonical(_chosen(s), perm), dtype=np.bool_)


def n_distinct_choices(scores: Any, perms: Any) -> IntArray:
    """Per item, how many distinct canonical options are ever chosen across its orderings
    (1 = perfectly stable; Appendix Q, Figure 12 left)."""
    sets = _canonical_choice_sets(scores, perms)
    return np.asarray(sets.any(axis=1).sum(axis=-1), dtype=np.int64)


def unstable_items(scores: Any, perms: Any) -> BoolArray:
    """Per item, whether its chosen gloss (mapped identity, a tied set counted as the set) is
    not the same under every ordering; :func:`answer_instability` is their share."""
    sets = _canonical_choice_sets(scores, perms)
    return np.asarray(np.any(sets != sets[:, :1, :], axis=(1, 2)), dtype=np.bool_)


def answer_instability(scores: Any, perms: Any) -> float:
    """Share of items whose chosen gloss (mapped identity) is not the same under every ordering.

    >>> import numpy as np
    >>> perms = np.array([[[0, 1], [1, 0]]])
    >>> answer_instability(np.array([[[0.9, 0.1], [0.9, 0.1]]]), perms)  # slot 0 both times
    1.0
    """
    return float(np.mean(unstable_items(scores, perms)))


def gold_prob_range(
    probs: Any, perms: Any, gold: Any, *, tolerance: float = RETURNED_SUM_TOLERANCE
) -> FloatArray:
    """Per item, ``max − min`` over orderings of the gold option's probability as returned
    (Σp within ``tolerance`` of 1; ``gold`` the canonical index of each item's gold option)."""
    canon = canonical_probs(probs, perms, tolerance=tolerance)
    g = as_choices(gold, "gold", canon.shape[-1])
    if g.shape[0] != canon.shape[0]:
        raise ValueError(
            f"mismatched lengths: gold has {g.shape[0]} items, probs has {canon.shape[0]}"
        )
    p_gold = canon[np.arange(canon.shape[0]), :, g]
    return np.asarray(p_gold.max(axis=1) - p_gold.min(axis=1), dtype=np.float64)


def slot_shares(scores: Any) -> FloatArray:
    """Share of selections falling on each display slot, pooled over all leading axes.

    A tied selection over ``t`` slots credits each ``1/t``. With gold placed uniformly at random
    the no-bias expectation is ``1/k`` per slot (Appendix Q, "Position bias").
    """
    s = as_finite(scores, "scores", ndim=(2, 3))
    if s.shape[-1] < 2:
        raise ValueError(f"scores needs at least 2 options on its last axis, got {s.shape}")
    chosen = _chosen(s).reshape(-1, s.shape[-1]).astype(np.float64)
    credit = chosen / chosen.sum(axis=1, keepdims=True)
    return np.asarray(credit.mean(axis=0), dtype=np.float64)


def selection_spread(scores: Any) -> float:
    """Gap between the most and least chosen slot, pooled over orderings (0 = no preference)."""
    shares = slot_shares(scores)
    return float(shares.max() - shares.min())


@dataclass(frozen=True)
class PermutationAudit:
    """How far one option's own probability travels as the option moves around the list.

    ``travel[i]`` is, for item ``i``, the largest over options of (max − min over orderings) of
    that option's probability after mapping every slot back to the option it displayed.
    ``share_at_or_below`` is the share of items with ``travel ≤ threshold`` (Table 22 uses 1e-4);
    ``share_identical`` the share with exactly identical canonical distributions (identical *as
    returned*). ``tolerance`` is the accepted |Σp − 1| and ``max_sum_deviation`` the largest one
    read.
    """

    travel: FloatArray
    median: float
    mean: float
    max: float
    threshold: float
    #: the 95th percentile of ``travel`` (numpy's default linear interpolation between order
    #: statistics), beside the median as the paper's cross-arm table reports it
    p95: float
    share_at_or_below: float
    share_identical: float
    tolerance: float = RETURNED_SUM_TOLERANCE
    max_sum_deviation: float = 0.0


def permutation_audit(
    probs: Any, perms: Any, *, threshold: float = 1e-4, tolerance: float = RETURNED_SUM_TOLERANCE
) -> PermutationAudit:
    """The permutation audit of Appendix Q (Table 22), on the vectors as returned (Σp within
    ``tolerance`` of 1)."""
    if not np.isfinite(threshold) or threshold < 0:
        raise ValueError(f"threshold must be a non-negative number, got {threshold!r}")
    p, perm, deviation = _sweep(probs, perms, "probs", probs=True, tolerance=tolerance)
    canon = _to_canonical(p, perm)
    travel = np.asarray((canon.max(axis=1) - canon.min(axis=1)).max(axis=-1), dtype=np.float64)
    return PermutationAudit(
        travel=travel,
        median=float(np.median(travel)),
        mean=float(np.mean(travel)),
        max=float(np.max(travel)),
        threshold=float(threshold),
        p95=float(np.percentile(travel, 95)),
        share_at_or_below=float(np.mean(travel <= threshold)),
        share_identical=float(np.mean(travel == 0.0)),
        tolerance=float(tolerance),
        max_sum_deviation=deviation,
    )


@dataclass(frozen=True)
class OrderSensitivity:
    """The order-sensitivity summary of Table 21, one model over one item sample; ``tolerance``
    is the accepted |Σp − 1| and ``max_sum_deviation`` the largest one read."""

    n_items: int
    n_perms: int
    answer_instability: float
    mean_distinct_choices: float
    mean_gold_prob_range: float
    selection_spread: float
    slot_shares: FloatArray
    tolerance: float = RETURNED_SUM_TOLERANCE
    max_sum_deviation: float = 0.0


def order_sensitivity(
    probs: Any,
    perms: Any,
    gold: Any,
    *,
    scores: Any = None,
    tolerance: float = RETURNED_SUM_TOLERANCE,
) -> OrderSensitivity:
    """All Table 21 measures at once; choices come from ``scores`` (default: ``probs``), the
    probabilities are read as returned (Σp within ``tolerance`` of 1)."""
    p, perm, deviation = _sweep(probs, perms, "probs", probs=True, tolerance=tolerance)
    s = p if scores is None else scores
    ranges = gold_prob_range(p, perm, gold, tolerance=tolerance)
    return OrderSensitivity(
        n_items=int(p.shape[0]),
        n_perms=int(p.shape[1]),
        answer_instability=answer_instability(s, perm),
        mean_distinct_choices=float(np.mean(n_distinct_choices(s, perm))),
        mean_gold_prob_range=float(np.mean(ranges)),
        selection_spread=selection_spread(s),
        slot_shares=slot_shares(s),
        tolerance=float(tolerance),
        max_sum_deviation=deviation,
    )
