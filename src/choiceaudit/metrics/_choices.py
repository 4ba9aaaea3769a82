"""Choice metrics over any arm, whatever instrument made it: accuracy against a gold option
with tie credit and its item-clustered interval, the share of choices by display slot, and the
order audit over permutation sweeps (answer instability, distinct choices, selection spread,
travel, and the gold probability range where every item has a gold option)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from choiceaudit import stats
from choiceaudit.types import Arm, Manifest, Skipped

__all__ = [
    "N_RESAMPLES",
    "SEED",
    "AccuracyCell",
    "ArmInfo",
    "OrderAuditCell",
    "SlotShareCell",
    "accuracy_cell",
    "order_audit_cell",
    "slot_share_cells",
]

#: The bootstrap's seed and resample count for plain scoring runs and the gate.
SEED = 20261129
N_RESAMPLES = 2000


@dataclass(frozen=True)
class AccuracyCell:
    """Accuracy of one arm against the gold option, with its item-clustered interval."""

    model: str
    rows: int
    items: int
    accuracy: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class SlotShareCell:
    """Share of one arm's choices landing in display ``slot`` of ``k``-option menus."""

    model: str
    k: int
    slot: int
    share: float
    uniform: float
    n: int


@dataclass(frozen=True)
class OrderAuditCell:
    """The order audit of one arm over its complete permutation sweeps."""

    model: str
    items: int
    orderings: int
    answer_instability: float
    mean_distinct_choices: float
    selection_spread: float
    median_travel: float
    share_travel_le_1e_4: float
    mean_gold_prob_range: float | None


@dataclass(frozen=True)
class ArmInfo:
    """Provenance of one arm for the report: where it came from and its manifest."""

    label: str
    source: str
    manifest: Manifest
    rows: int


def accuracy_cell(arm: Arm, *, n_resamples: int, seed: int) -> AccuracyCell | None:
    """Accuracy against each row's canonical ``gold`` with tie credit (``1/t`` when gold is
    among ``t`` tied maxima), with its item-clustered percentile bootstrap interval; ``None``
    when no row carries a gold option."""
    correct: list[float] = []
    clusters: list[str] = []
    for query, decision in arm.rows:
        gold = query.meta.get("gold")
        if gold is None:
            continue
        credit = stats.tie_credit(decision.probs[None, :])[0]
        slot = query.perm.index(int(gold)) if query.perm is not None else int(gold)
        correct.append(float(credit[slot]))
        clusters.append(str(query.meta.get("item_id") or query.id))
    if not correct:
        return None
    ci = stats.bootstrap_ci(
        np.array(correct), n_resamples=n_resamples, clusters=clusters, seed=seed
    )
    return AccuracyCell(
        model=arm.label,
        rows=len(correct),
        items=len(set(clusters)),
        accuracy=ci.estimate,
        ci_low=ci.low,
        ci_high=ci.high,
    )


def slot_share_cells(arm: Arm) -> list[SlotShareCell]:
    """The share of choices in each display slot, per menu size ``k >= 2`` (ties split)."""
    by_k: dict[int, list[np.ndarray]] = {}
    for _, decision in arm.rows:
        by_k.setdefault(decision.n_options, []).append(decision.probs)
    cells: list[SlotShareCell] = []
    for k, probs in sorted(by_k.items()):
        if k < 2:
            continue
        shares = stats.slot_shares(np.stack(probs))
        cells.extend(
            SlotShareCell(arm.label, k, slot, float(share), 1 / k, len(probs))
            for slot, share in enumerate(shares)
        )
    return cells


def order_audit_cell(arm: Arm) -> OrderAuditCell | Skipped:
    """The order audit over the arm's complete permutation sweeps (rows of one ``item_id``
    under several ``perm``); a ``Skipped`` when no item was rendered under two orderings."""
    keyed = [
        (str(q.meta["item_id"]), q.perm, i)
        for i, (q, _) in enumerate(arm.rows)
        if q.meta.get("item_id") is not None and q.perm is not None
    ]
    sweeps = stats.permutation_sweeps(
        [k[0] for k in keyed], [k[1] for k in keyed], n_orderings="mode"
    )
    if sweeps is None:
        return Skipped(
            "order audit",
            f"{arm.label}: no item rendered under more than one ordering; no order audit",
        )
    rows = [arm.rows[keyed[j][2]] for j in range(len(keyed))]
    probs = np.array([[rows[j][1].probs for j in group] for group in sweeps.index])
    perms = np.array([[rows[j][0].perm for j in group] for group in sweeps.index])
    golds = [rows[group[0]][0].meta.get("gold") for group in sweeps.index]
    audit = stats.permutation_audit(probs, perms)
    gold_range = None
    if all(g is not None for g in golds):
        gold = np.array(golds, dtype=np.int64)
        gold_range = float(np.mean(stats.gold_prob_range(probs, perms, gold)))
    return OrderAuditCell(
        model=arm.label,
        items=len(sweeps.items),
        orderings=int(probs.shape[1]),
        answer_instability=stats.answer_instability(probs, perms),
        mean_distinct_choices=float(np.mean(stats.n_distinct_choices(probs, perms))),
        selection_spread=stats.selection_spread(probs),
        median_travel=audit.median,
        share_travel_le_1e_4=audit.share_at_or_below,
        mean_gold_prob_range=gold_range,
    )
