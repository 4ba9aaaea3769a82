"""Choice metrics over any arm, whatever instrument made it: accuracy against a gold option
with tie credit and its item-clustered interval, the share of choices by display slot, and the
order audit over permutation sweeps (answer instability, distinct choices, selection spread,
travel, and the gold probability range where every item has a gold option)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from choiceaudit import stats
from choiceaudit.types import (
    Arm,
    BoolArray,
    ChoiceColumns,
    FloatArray,
    IntArray,
    Manifest,
    Skipped,
)

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
    "pmi": "pointwise mutual information: log p(option | prompt) - log p(option | neutral prompt)",
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
    columns = arm.columns()
    golds = np.array([g is not None for g in columns.meta.values("gold")], dtype=bool)
    if not golds.any():
        return []
    rules = {r for r, has in columns.has_score.items() if has[golds].all()}
    cells = [
        accuracy_cell(arm, n_resamples=n_resamples, seed=seed, rule=r)
        for r in ("probs", *sorted(rules))
    ]
    return [c for c in cells if c is not None]


def _display_slots(columns: ChoiceColumns, rows: IntArray, canonical: IntArray) -> IntArray:
    """The display slot of canonical option ``canonical[j]`` in row ``rows[j]`` (itself where the
    row has no permutation); a canonical index the row does not show is an error."""
    slots = canonical.copy()
    permuted = columns.has_perm[rows]
    if permuted.any():
        shown = columns.perm[rows[permuted]] == canonical[permuted][:, None]
        found = shown.any(axis=1)
        if not found.all():
            missing = int(canonical[permuted][~found][0])
            raise ValueError(f"gold {missing} is not among the row's canonical options")
        slots[permuted] = shown.argmax(axis=1)
    return slots


def _credit(values: FloatArray, n_options: IntArray, slots: IntArray) -> FloatArray:
    """Per row, the tie credit of ``slots`` in ``values[:, :k]`` (rows grouped by their ``k``
    options; each row's credit depends on its own values only)."""
    out = np.empty(values.shape[0], dtype=np.float64)
    for k in np.unique(n_options):
        at = np.flatnonzero(n_options == k)
        out[at] = gold_credit(values[at, : int(k)], slots[at])
    return out


def accuracy_cell(
    arm: Arm, *, n_resamples: int, seed: int, rule: str = "probs"
) -> AccuracyCell | None:
    """Accuracy against each row's canonical ``gold`` with tie credit (``1/t`` when gold is
    among ``t`` tied maxima) of the choice under ``rule`` (``probs`` or a stored score), with
    its item-clustered percentile bootstrap interval; ``None`` when no row carries a gold
    option."""
    columns = arm.columns()
    golds, items = columns.meta.values("gold"), columns.meta.values("item_id")
    rows = np.array([i for i, g in enumerate(golds) if g is not None], dtype=np.int64)
    if not rows.size:
        return None
    canonical = np.array([int(golds[i]) for i in rows], dtype=np.int64)
    values = columns.probs if rule == "probs" else columns.scores[rule]
    # an infinite score (a log-probability of -inf) orders like the largest finite one:
    # the tied maxima, and so the choice, are the same
    values = np.nan_to_num(values[rows], nan=np.nan, posinf=_BIG, neginf=-_BIG)
    slots = _display_slots(columns, rows, canonical)
    correct = _credit(values, columns.n_options[rows], slots)
    clusters = [str(items[i] or columns.query_id[i]) for i in rows]
    ci = stats.bootstrap_ci(correct, n_resamples=n_resamples, clusters=clusters, seed=seed)
    return AccuracyCell(
        model=arm.label,
        rows=int(rows.size),
        items=len(set(clusters)),
        accuracy=ci.estimate,
        ci_low=ci.low,
        ci_high=ci.high,
        rule=rule,
    )


def slot_share_cells(arm: Arm) -> list[SlotShareCell]:
    """The share of choices in each display slot, per menu size ``k >= 2`` (ties split)."""
    columns = arm.columns()
    cells: list[SlotShareCell] = []
    for k in sorted(int(k) for k in np.unique(columns.n_options)):
        if k < 2:
            continue
        probs = columns.probs[columns.rows_with(k), :k]
        shares = stats.slot_shares(probs)
        cells.extend(
            SlotShareCell(arm.label, k, slot, float(share), 1 / k, int(probs.shape[0]))
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
    columns = arm.columns()
    by_item: dict[str, list[int]] = {}
    for i, item_id in enumerate(columns.meta.values("item_id")):
        if item_id is not None and columns.has_perm[i]:
            by_item.setdefault(str(item_id), []).append(i)
    by_k: dict[int, list[int]] = {}
    skipped: list[Skipped] = []
    for item, idx in by_item.items():
        counts = sorted({int(columns.n_options[i]) for i in idx})
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
    columns = arm.columns()
    items, golds = columns.meta.values("item_id"), columns.meta.values("gold")
    perms_of = [columns.row_perm(i) for i in idx]
    sweeps = stats.permutation_sweeps([str(items[i]) for i in idx], perms_of, n_orderings="mode")
    if sweeps is None:
        return None
    probs = np.array([[columns.row_probs(idx[j]) for j in group] for group in sweeps.index])
    perms = np.array([[perms_of[j] for j in group] for group in sweeps.index])
    first = [golds[idx[group[0]]] for group in sweeps.index]
    gold = np.array(first, dtype=np.int64) if all(g is not None for g in first) else None
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
