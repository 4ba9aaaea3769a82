"""Choice metrics over any arm, whatever instrument made it: accuracy against a gold option
with tie credit and its item-clustered interval, the share of choices by display slot, and the
order audit over permutation sweeps (answer instability, distinct choices, selection spread,
travel, and the gold probability range where every item has a gold option)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from choiceaudit import stats
from choiceaudit.types import Arm, BoolArray, FloatArray, IntArray, Manifest, Skipped

__all__ = [
    "N_RESAMPLES",
    "RETURNED_SUM_TOLERANCE",
    "RULE_TEXT",
    "SEED",
    "AccuracyCell",
    "ArmInfo",
    "OrderAuditCell",
    "SlotShareCell",
    "SweepAudit",
    "accuracy_cell",
    "accuracy_cells",
    "gold_credit",
    "order_audit_cells",
    "slot_share_cells",
    "sweep_audit",
]

#: The bootstrap's seed and resample count for plain scoring runs and the gate.
SEED = 20261129
N_RESAMPLES = 2000
#: The accepted |Σp − 1| of a vector read as returned in an order audit: four options rounded
#: to two decimals.
RETURNED_SUM_TOLERANCE = 0.02


@dataclass(frozen=True)
class AccuracyCell:
    """Accuracy of one arm against the gold option under one choice rule (``rule``: the
    decision's ``probs``, or a stored score, :data:`RULE_TEXT`), with its item-clustered
    interval."""

    model: str
    rows: int
    items: int
    accuracy: float
    ci_low: float
    ci_high: float
    rule: str = "probs"


#: What each choice rule an accuracy can be read under is: the decision's probabilities, or a
#: per-option score a backend stores (the argmax of each is the choice under that rule).
RULE_TEXT: dict[str, str] = {
    "probs": "the decision's probabilities: a decision model's returned vector; for a causal "
    "LM the softmax of the summed log-probability (lm-evaluation-harness's acc)",
    "prob": "the probability vector exactly as the model returned it, before renormalising",
    "sum": "the option's summed log-probability (a causal LM: the same argmax as probs)",
    "mean": "the option's mean log-probability per token",
    "pmi": "pointwise mutual information: log p(option | prompt) - log p(option | neutral "
    "prompt)",
    "char_mean": "the option's log-likelihood per character (lm-evaluation-harness's acc_norm)",
}


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
    """The order audit of one arm over its complete permutation sweeps of ``k``-option menus."""

    model: str
    k: int
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


@dataclass(frozen=True)
class SweepAudit:
    """The order audit of items each seen under the same number of orderings (the meaning
    paper, Appendix Q, Tables 21–22): the summary measures and, per item, the values they
    summarise. ``gold_prob_range`` is ``None`` when no gold was given."""

    n_items: int
    orderings: int
    answer_instability: float
    mean_distinct_choices: float
    selection_spread: float
    slot_shares: tuple[float, ...]
    travel: stats.PermutationAudit
    #: per item: distinct canonical options chosen, whether the choice moved, the largest
    #: |Σp − 1| read, and the range of p(gold)
    distinct_choices: IntArray
    unstable: BoolArray
    max_sum_deviation: FloatArray
    gold_prob_range: FloatArray | None

    @property
    def mean_gold_prob_range(self) -> float | None:
        rng = self.gold_prob_range
        return None if rng is None else float(np.mean(rng))


def sweep_audit(
    probs: FloatArray,
    perms: IntArray,
    gold: IntArray | None = None,
    *,
    threshold: float = 1e-4,
    tolerance: float = RETURNED_SUM_TOLERANCE,
) -> SweepAudit:
    """The order audit of ``probs`` and ``perms`` shaped (items, orderings, k), in display
    order, read as returned (Σp within ``tolerance`` of 1, never renormalised); ``gold`` the
    canonical gold index per item, where every item has one. A vector off by more than
    ``tolerance`` raises ``ValueError`` (the caller names its run)."""
    travel = stats.permutation_audit(probs, perms, threshold=threshold, tolerance=tolerance)
    ranges = (
        None if gold is None else stats.gold_prob_range(probs, perms, gold, tolerance=tolerance)
    )
    distinct = stats.n_distinct_choices(probs, perms)
    return SweepAudit(
        n_items=int(probs.shape[0]),
        orderings=int(probs.shape[1]),
        answer_instability=stats.answer_instability(probs, perms),
        mean_distinct_choices=float(np.mean(distinct)),
        selection_spread=stats.selection_spread(probs),
        slot_shares=tuple(stats.slot_shares(probs).tolist()),
        travel=travel,
        distinct_choices=distinct,
        unstable=stats.unstable_items(probs, perms),
        max_sum_deviation=np.abs(probs.sum(axis=-1) - 1.0).max(axis=1),
        gold_prob_range=ranges,
    )


_BIG = float(np.finfo(np.float64).max)


def gold_credit(probs: FloatArray, gold_slot: IntArray) -> FloatArray:
    """Per row, the tie credit of the gold slot: 1 when it is the unique maximum, ``1/t`` when
    it is among ``t`` exactly tied maxima, 0 otherwise (:func:`choiceaudit.stats.tie_credit`)."""
    credit = stats.tie_credit(probs)
    return np.asarray(credit[np.arange(credit.shape[0]), gold_slot], dtype=np.float64)


def accuracy_cells(arm: Arm, *, n_resamples: int, seed: int) -> list[AccuracyCell]:
    """:func:`accuracy_cell` under ``probs`` and then under every score rule each gold-bearing
    row stores (sorted by name), so a causal LM's accuracy is shown under PMI, the sum and the
    per-token mean beside its probabilities; empty when no row carries a gold option."""
    rules: set[str] | None = None
    for query, decision in arm.rows:
        if query.meta.get("gold") is not None:
            rules = set(decision.scores) if rules is None else rules & set(decision.scores)
    if rules is None:
        return []
    cells = [accuracy_cell(arm, n_resamples=n_resamples, seed=seed, rule=r)
             for r in ("probs", *sorted(rules))]  # fmt: skip
    return [c for c in cells if c is not None]


def accuracy_cell(
    arm: Arm, *, n_resamples: int, seed: int, rule: str = "probs"
) -> AccuracyCell | None:
    """Accuracy against each row's canonical ``gold`` with tie credit (``1/t`` when gold is
    among ``t`` tied maxima) of the choice under ``rule`` (``probs`` or a stored score), with
    its item-clustered percentile bootstrap interval; ``None`` when no row carries a gold
    option."""
    correct: list[float] = []
    clusters: list[str] = []
    for query, decision in arm.rows:
        gold = query.meta.get("gold")
        if gold is None:
            continue
        slot = query.perm.index(int(gold)) if query.perm is not None else int(gold)
        values = decision.probs if rule == "probs" else decision.scores[rule]
        # an infinite score (a log-probability of -inf) orders like the largest finite one:
        # the tied maxima, and so the choice, are the same
        values = np.nan_to_num(values, nan=np.nan, posinf=_BIG, neginf=-_BIG)
        correct.append(float(gold_credit(values[None, :], np.array([slot]))[0]))
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
        rule=rule,
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


def order_audit_cells(arm: Arm) -> tuple[list[OrderAuditCell], list[Skipped]]:
    """One audit per option count ``k`` over the arm's complete permutation sweeps (rows of one
    ``item_id`` under several ``perm``): orderings of a 3-option and a 4-option menu are not
    comparable (their probability vectors differ in length), so items are analysed with the
    other items of their own menu size. An item shown with different option counts under its
    orderings has no sweep and is refused by name, with the counts it was shown with; a
    ``Skipped`` also when no item was rendered under two orderings."""
    by_item: dict[str, list[int]] = {}
    for i, (q, _) in enumerate(arm.rows):
        if q.meta.get("item_id") is not None and q.perm is not None:
            by_item.setdefault(str(q.meta["item_id"]), []).append(i)
    by_k: dict[int, list[int]] = {}
    skipped: list[Skipped] = []
    for item, idx in by_item.items():
        counts = sorted({len(arm.rows[i][0].options) for i in idx})
        if len(counts) > 1:
            skipped.append(
                Skipped(
                    "order audit",
                    f"{arm.label}: item {item!r} is shown with {counts} options under its "
                    "orderings; orderings are compared only within one menu size, so it has "
                    "no order audit",
                )
            )
            continue
        by_k.setdefault(counts[0], []).extend(idx)
    cells: list[OrderAuditCell] = []
    for k, idx in sorted(by_k.items()):
        cell = _order_audit_k(arm, k, sorted(idx))
        if cell is not None:
            cells.append(cell)
    if not cells and not skipped:
        skipped.append(
            Skipped(
                "order audit",
                f"{arm.label}: no item rendered under more than one ordering; no order audit",
            )
        )
    return cells, skipped


def _order_audit_k(arm: Arm, k: int, idx: list[int]) -> OrderAuditCell | None:
    """The audit of the items of ``k``-option menus (``idx``: their rows in ``arm``)."""
    rows = [arm.rows[i] for i in idx]
    sweeps = stats.permutation_sweeps(
        [str(q.meta["item_id"]) for q, _ in rows], [q.perm for q, _ in rows], n_orderings="mode"
    )
    if sweeps is None:
        return None
    probs = np.array([[rows[j][1].probs for j in group] for group in sweeps.index])
    perms = np.array([[rows[j][0].perm for j in group] for group in sweeps.index])
    golds = [rows[group[0]][0].meta.get("gold") for group in sweeps.index]
    gold = np.array(golds, dtype=np.int64) if all(g is not None for g in golds) else None
    audit = sweep_audit(probs, perms, gold)
    return OrderAuditCell(
        model=arm.label,
        k=k,
        items=len(sweeps.items),
        orderings=audit.orderings,
        answer_instability=audit.answer_instability,
        mean_distinct_choices=audit.mean_distinct_choices,
        selection_spread=audit.selection_spread,
        median_travel=audit.travel.median,
        share_travel_le_1e_4=audit.travel.share_at_or_below,
        mean_gold_prob_range=audit.mean_gold_prob_range,
    )
