"""Per-item values of the E2, E3 and E6 audits (the E7 ones are in ``_order_audit``).

Each function returns an :class:`~choiceaudit.instruments.meaning._item_results.ItemValues`
whose rows are the units the audit aggregates, so a re-analysis can be compared with a published
per-item file row by row:

* :func:`surface_items` (E2, Appendix N) — one row per (canonical, alternative) pair: both
  canonical choices (-1 for a tied row), agreement (NaN where either is tied), the
  Jensen–Shannon divergence in bits and the correctness credit of both members;
* :func:`unit_items` (E3, Appendix M) — one row per item and variant: the intact and the
  variant's canonical choice, agreement, and the variant's correctness credit;
* :func:`ablation_items` (E6, Appendix P) — one row per item and option form: correctness
  credit, peak probability as returned and the confidence head (NaN without one).
"""

from __future__ import annotations

import math

import numpy as np

from choiceaudit import stats
from choiceaudit.instruments.meaning._item_results import ItemValues
from choiceaudit.instruments.meaning._rows import MeaningRows

__all__ = ["ablation_items", "surface_items", "unit_items"]


def _keyed(rows: MeaningRows) -> dict[tuple[str, str], int]:
    keys = zip(rows.item_id.tolist(), rows.condition.tolist(), strict=True)
    return {key: i for i, key in enumerate(keys)}


def _agree(a: int, b: int) -> float:
    return math.nan if a < 0 or b < 0 else float(a == b)


def surface_items(rows: MeaningRows) -> ItemValues:
    """E2 per pair (see the module docstring)."""
    index = _keyed(rows)
    pairs = [
        (index[(item, "canonical")], i)
        for (item, condition), i in index.items()
        if condition.startswith("alt") and (item, "canonical") in index
    ]
    choice, correct = rows.canonical_choice, rows.correct
    js: list[float] = []
    if pairs:
        canon = rows.canonical_probs
        js = np.atleast_1d(
            stats.js_divergence(canon[[p[0] for p in pairs]], canon[[p[1] for p in pairs]])
        ).tolist()
    out = []
    for (a, b), divergence in zip(pairs, js, strict=True):
        ca, cb = int(choice[a]), int(choice[b])
        out.append(
            (
                str(rows.item_id[a]),
                str(rows.condition[b]),
                ca,
                cb,
                _agree(ca, cb),
                float(divergence),
                float(correct[a]),
                float(correct[b]),
            )
        )
    columns = (
        "item_id",
        "alternative",
        "choice_canonical",
        "choice_alternative",
        "agree",
        "js_divergence_bits",
        "correct_canonical",
        "correct_alternative",
    )
    return ItemValues(columns, tuple(out))


def unit_items(rows: MeaningRows) -> ItemValues:
    """E3 per item and variant against the intact (v0) row (see the module docstring)."""
    index = _keyed(rows)
    choice, correct = rows.canonical_choice, rows.correct
    out = []
    for (item, variant), i in index.items():
        if variant == "v0" or (item, "v0") not in index:
            continue
        j = index[(item, "v0")]
        out.append(
            (
                item,
                variant,
                int(choice[j]),
                int(choice[i]),
                _agree(int(choice[j]), int(choice[i])),
                float(correct[i]),
            )
        )
    out.sort(key=lambda r: (r[1], r[0]))
    columns = ("item_id", "variant", "choice_intact", "choice_variant", "agree", "correct")
    return ItemValues(columns, tuple(out))


def ablation_items(rows: MeaningRows) -> ItemValues:
    """E6 per item and option form (see the module docstring)."""
    correct, peak = rows.correct, rows.peak
    out = [
        (
            str(rows.item_id[i]),
            str(rows.condition[i]),
            float(correct[i]),
            float(peak[i]),
            float(rows.conf_head[i]),
        )
        for i in range(len(rows))
    ]
    out.sort(key=lambda r: (r[1], r[0]))
    return ItemValues(("item_id", "form", "correct", "peak", "conf_head"), tuple(out))
