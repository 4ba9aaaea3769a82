"""E7, the order audit (the meaning paper, §5.4 and Appendix Q, Tables 21–22, Figure 12).

:func:`order_audit` reads the items seen under every one of the k! orderings of their option
set and computes, on the vectors **as returned** (never renormalised; Σp must lie within
``tolerance`` of 1, default :data:`choiceaudit.RETURNED_SUM_TOLERANCE`, and the largest
|Σp − 1| read is reported):

* Table 21 — answer instability, distinct glosses chosen per item (their mean, and the
  distribution of Figure 12 left: how many items chose 1, 2, … k distinct glosses), the mean
  within-item range of p(gold), selection spread and slot shares;
* Table 22 — the permutation audit: how far one option's own probability travels;
* per item — every one of those values, so a reader can compare item by item.

The gold option's canonical index is read from each row (``perm[gold_slot]``), never assumed:
a run whose canonical order keeps gold at another index (a re-imported released file, say) gets
the right p(gold) range, and an item whose renderings disagree on it is refused, named.
:func:`order_items` freezes the per-item values; :func:`order_result` the whole audit.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from choiceaudit import stats
from choiceaudit.errors import AnalysisError
from choiceaudit.instruments.meaning._item_results import ItemValues
from choiceaudit.instruments.meaning._results import OrderAudit, PermutationTravel
from choiceaudit.instruments.meaning._rows import MeaningRows
from choiceaudit.types import IntArray

#: the order statistics' default sum tolerance (``choiceaudit.stats``: four options rounded
#: to two decimals)
RETURNED_SUM_TOLERANCE = 0.02

__all__ = ["ORDER_ITEM_COLUMNS", "order_audit", "order_result", "sweep_gold"]

#: the columns of the per-item order audit (one row per item)
ORDER_ITEM_COLUMNS = (
    "item_id",
    "gold_canonical",
    "distinct_choices",
    "unstable",
    "gold_prob_range",
    "travel",
    "max_sum_deviation",
)


def sweep_gold(rows: MeaningRows, index: IntArray, items: list[str]) -> IntArray:
    """Each swept item's gold canonical index, the same on every one of its renderings, or an
    :class:`AnalysisError` naming the first item whose renderings disagree."""
    gold = rows.gold_canonical[index]  # (n_items, n_perms)
    bad = np.flatnonzero((gold != gold[:, :1]).any(axis=1))
    if bad.size:
        item = items[int(bad[0])]
        found = sorted({int(g) for g in gold[bad[0]]})
        raise AnalysisError(
            f"order audit: item {item}: the gold option sits at canonical indices {found} across "
            "its orderings; every rendering of an item must share one canonical order (relabel "
            "the rows, e.g. with choiceaudit import decisions, which puts gold at 0)"
        )
    return np.asarray(gold[:, 0], dtype=np.int64)


def order_audit(
    rows: MeaningRows,
    *,
    threshold: float = 1e-4,
    tolerance: float = RETURNED_SUM_TOLERANCE,
) -> dict[str, Any]:
    """Tables 21 and 22 and the per-item values over the items seen under every ordering, on
    rows of one key binding (see the module docstring)."""
    k = rows.k
    n_perms = math.factorial(k)
    sweeps = stats.permutation_sweeps(
        rows.item_id.tolist(), [tuple(p) for p in rows.perm.tolist()], n_orderings=n_perms
    )
    if sweeps is None:
        incomplete = len(set(rows.item_id.tolist()))
        raise AnalysisError(f"no item has all {n_perms} orderings ({incomplete} incomplete)")
    items = [str(i) for i in sweeps.items]
    idx = np.array(sweeps.index)  # (n_items, n_perms), each item's renderings by permutation
    raw = rows.raw_probs[idx]
    perms = rows.perm[idx]
    gold = sweep_gold(rows, idx, items)
    try:
        summary = stats.order_sensitivity(raw, perms, gold, tolerance=tolerance)
        travel = stats.permutation_audit(raw, perms, threshold=threshold, tolerance=tolerance)
        ranges = stats.gold_prob_range(raw, perms, gold, tolerance=tolerance)
    except ValueError as exc:
        raise AnalysisError(f"order audit: {exc}") from None
    distinct = stats.n_distinct_choices(raw, perms)
    unstable = stats.unstable_items(raw, perms)
    deviation = np.abs(raw.sum(axis=-1) - 1.0).max(axis=1)
    return {
        "n_items": summary.n_items,
        "n_incomplete_items_excluded": sweeps.n_excluded,
        "answer_instability": summary.answer_instability,
        "mean_distinct_choices": summary.mean_distinct_choices,
        "distinct_choice_counts": [int((distinct == n).sum()) for n in range(1, k + 1)],
        "mean_gold_prob_range": summary.mean_gold_prob_range,
        "selection_spread": summary.selection_spread,
        "slot_shares": summary.slot_shares.tolist(),
        "sum_tolerance": float(tolerance),
        "max_sum_deviation": summary.max_sum_deviation,
        "permutation_audit": {
            "median_travel": travel.median,
            "mean_travel": travel.mean,
            "max_travel": travel.max,
            "threshold": travel.threshold,
            "share_at_or_below": travel.share_at_or_below,
            "share_identical": travel.share_identical,
        },
        "per_item": {
            "item_id": items,
            "gold_canonical": gold.tolist(),
            "distinct_choices": distinct.tolist(),
            "unstable": unstable.tolist(),
            "gold_prob_range": ranges.tolist(),
            "travel": travel.travel.tolist(),
            "max_sum_deviation": deviation.tolist(),
        },
    }


def order_items(per_item: dict[str, list[Any]]) -> ItemValues:
    """The per-item columns of :func:`order_audit` as one row per item."""
    columns = [per_item[name] for name in ORDER_ITEM_COLUMNS]
    return ItemValues(ORDER_ITEM_COLUMNS, tuple(zip(*columns, strict=True)))


def _binding(rows: MeaningRows, binding: str, tolerance: float) -> OrderAudit:
    audit = order_audit(rows, tolerance=tolerance)
    return OrderAudit(
        n_items=audit["n_items"],
        n_incomplete_items_excluded=audit["n_incomplete_items_excluded"],
        answer_instability=audit["answer_instability"],
        mean_distinct_choices=audit["mean_distinct_choices"],
        mean_gold_prob_range=audit["mean_gold_prob_range"],
        selection_spread=audit["selection_spread"],
        slot_shares=tuple(audit["slot_shares"]),
        permutation_audit=PermutationTravel(**audit["permutation_audit"]),
        key_binding=binding,
        language=str(rows.language[0]),
        block=str(rows.blocks[0]),
        distinct_choice_counts=tuple(audit["distinct_choice_counts"]),
        sum_tolerance=audit["sum_tolerance"],
        max_sum_deviation=audit["max_sum_deviation"],
        items=order_items(audit["per_item"]),
    )


def order_result(rows: MeaningRows, *, tolerance: float = RETURNED_SUM_TOLERANCE) -> OrderAudit:
    """The slot-bound audit (the paper's E7) with the travelling-key audit beside it; a run with
    only one binding gives that one."""
    travelling = np.char.startswith(rows.condition.astype(str), "t")
    slot_rows, travel_rows = rows.select(~travelling), rows.select(travelling)
    if not len(slot_rows):
        return _binding(travel_rows, "travelling", tolerance)
    audit = _binding(slot_rows, "slot", tolerance)
    if len(travel_rows):
        audit = dataclasses.replace(
            audit, travelling=_binding(travel_rows, "travelling", tolerance)
        )
    return audit
