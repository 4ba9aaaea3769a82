"""E7, the order audit (the meaning paper, §5.4 and Appendix Q, Tables 21–22, Figure 12).

:func:`order_audit` reads the items seen under every one of the k! orderings of their option
set and computes, on the vectors **as returned** (never renormalised; Σp must lie within
``tolerance`` of 1, default :data:`choiceaudit.metrics.RETURNED_SUM_TOLERANCE`, and the largest
|Σp − 1| read is reported):

* Table 21 — answer instability, distinct glosses chosen per item (their mean, and the
  distribution of Figure 12 left: how many items chose 1, 2, … k distinct glosses), the mean
  within-item range of p(gold), selection spread and slot shares;
* Table 22 — the permutation audit: how far one option's own probability travels;
* per item — every one of those values, so a reader can compare item by item.

The measures are the shared order audit of :func:`choiceaudit.metrics.sweep_audit`; what is the
meaning paper's own here is the sweep (every item under all k! orderings, Appendix Q, not the
most common count a plain scoring run accepts), the vectors as returned, and the two key
bindings.

The gold option's canonical index is read from each row (``perm[gold_slot]``), never assumed:
a run whose canonical order keeps gold at another index (a re-imported released file, say) gets
the right p(gold) range, and an item whose renderings disagree on it is refused, named.
:func:`order_audit` returns one binding's audit as an :class:`OrderAudit`; :func:`order_result` the
slot-bound audit with the travelling-key one beside it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from choiceaudit import metrics, stats
from choiceaudit.errors import AnalysisError
from choiceaudit.instruments.meaning._experiment_results import OrderAudit
from choiceaudit.instruments.meaning._item_results import ItemValues
from choiceaudit.instruments.meaning._results import PermutationTravel
from choiceaudit.instruments.meaning._rows import MeaningRows
from choiceaudit.metrics import RETURNED_SUM_TOLERANCE
from choiceaudit.types import IntArray

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
    binding: str = "slot",
) -> OrderAudit:
    """Tables 21 and 22 and the per-item values over the items seen under every ordering, on
    rows of one key binding (``binding`` names it in the result; see the module docstring)."""
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
    gold = sweep_gold(rows, idx, items)
    try:
        audit = metrics.sweep_audit(
            raw, rows.perm[idx], gold, threshold=threshold, tolerance=tolerance
        )
    except ValueError as exc:
        raise AnalysisError(f"order audit: {exc}") from None
    assert audit.gold_prob_range is not None  # a gold was given
    travel = audit.travel
    per_item = (
        items,
        gold.tolist(),
        audit.distinct_choices.tolist(),
        audit.unstable.tolist(),
        audit.gold_prob_range.tolist(),
        travel.travel.tolist(),
        audit.max_sum_deviation.tolist(),
    )
    return OrderAudit(
        n_items=audit.n_items,
        n_incomplete_items_excluded=sweeps.n_excluded,
        answer_instability=audit.answer_instability,
        mean_distinct_choices=audit.mean_distinct_choices,
        mean_gold_prob_range=float(np.mean(audit.gold_prob_range)),
        selection_spread=audit.selection_spread,
        slot_shares=audit.slot_shares,
        permutation_audit=PermutationTravel(
            median_travel=travel.median,
            p95_travel=travel.p95,
            mean_travel=travel.mean,
            max_travel=travel.max,
            threshold=travel.threshold,
            share_at_or_below=travel.share_at_or_below,
            share_identical=travel.share_identical,
        ),
        key_binding=binding,
        language=str(rows.language[0]),
        block=str(rows.blocks[0]),
        distinct_choice_counts=tuple(
            int((audit.distinct_choices == n).sum()) for n in range(1, k + 1)
        ),
        sum_tolerance=float(tolerance),
        max_sum_deviation=travel.max_sum_deviation,
        items=ItemValues(ORDER_ITEM_COLUMNS, tuple(zip(*per_item, strict=True))),
    )


def order_result(rows: MeaningRows, *, tolerance: float = RETURNED_SUM_TOLERANCE) -> OrderAudit:
    """The slot-bound audit (the paper's E7) with the travelling-key audit beside it; a run with
    only one binding gives that one."""
    travelling = np.char.startswith(rows.condition.astype(str), "t")
    slot_rows, travel_rows = rows.select(~travelling), rows.select(travelling)
    if not len(slot_rows):
        return order_audit(travel_rows, tolerance=tolerance, binding="travelling")
    audit = order_audit(slot_rows, tolerance=tolerance, binding="slot")
    if len(travel_rows):
        audit = dataclasses.replace(
            audit, travelling=order_audit(travel_rows, tolerance=tolerance, binding="travelling")
        )
    return audit
