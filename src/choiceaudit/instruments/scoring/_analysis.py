"""The analysis of plain scoring runs: typed, frozen results the report lays out.

* accuracy against the canonical ``gold`` of each row's meta, with a 95% percentile bootstrap
  over items (rows of one ``item_id`` resampled together); a tied choice containing gold earns
  ``1/t`` (the toolkit's tie rule, :func:`choiceaudit.stats.tie_credit`);
* the share of choices by display slot, per menu size (ties split evenly);
* the order audit over permutation sweeps (:func:`choiceaudit.stats.permutation_sweeps`), per
  menu size ``k`` (an item shown with different option counts is refused by name): answer
  instability, distinct choices, selection spread, travel, and the gold probability
  range where every item has a gold option;
* calibration and selective prediction where rows carry a gold option (the meaning report's
  views, :mod:`choiceaudit.instruments.scoring._calibration`): ECE, Brier, AURC / AUGRC against
  the random gate under four confidence definitions, selective accuracy, reliability bins and
  risk–coverage curves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from choiceaudit import stats
from choiceaudit.instruments.scoring._calibration import (
    CalibrationCell,
    ReliabilityCell,
    RiskCoverageCurve,
    SelectiveCell,
    calibration_cells,
)
from choiceaudit.instruments.scoring._rows import gold_rows
from choiceaudit.types import Arm, Skipped

__all__ = [
    "N_RESAMPLES",
    "SEED",
    "AccuracyCell",
    "ArmInfo",
    "OrderAuditCell",
    "ScoringAnalysis",
    "SlotShareCell",
    "analyse_scoring_runs",
]

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
    manifest: dict[str, object]
    rows: int


@dataclass(frozen=True)
class ScoringAnalysis:
    """Everything the scoring section shows, and what it could not compute."""

    arms: tuple[ArmInfo, ...]
    accuracy: tuple[AccuracyCell, ...]
    slot_shares: tuple[SlotShareCell, ...]
    order_audit: tuple[OrderAuditCell, ...]
    skipped: tuple[Skipped, ...]
    n_resamples: int = N_RESAMPLES
    seed: int = SEED
    calibration: tuple[CalibrationCell, ...] = ()
    selective: tuple[SelectiveCell, ...] = ()
    reliability: tuple[ReliabilityCell, ...] = ()
    risk_coverage: tuple[RiskCoverageCurve, ...] = ()


def _accuracy(arm: Arm, *, n_resamples: int, seed: int) -> AccuracyCell | None:
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


def _slot_shares(arm: Arm) -> list[SlotShareCell]:
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


def _order_audit(arm: Arm) -> tuple[list[OrderAuditCell], list[Skipped]]:
    """One audit per option count ``k``: orderings of a 3-option and a 4-option menu are not
    comparable (their probability vectors differ in length), so items are analysed with the
    other items of their own menu size. An item shown with different option counts under its
    orderings has no sweep and is refused by name, with the counts it was shown with."""
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


def _order_audit_k(arm: Arm, k: int, idx: Sequence[int]) -> OrderAuditCell | None:
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
    audit = stats.permutation_audit(probs, perms)
    gold_range = None
    if all(g is not None for g in golds):
        gold = np.array(golds, dtype=np.int64)
        gold_range = float(np.mean(stats.gold_prob_range(probs, perms, gold)))
    return OrderAuditCell(
        model=arm.label,
        k=k,
        items=len(sweeps.items),
        orderings=int(probs.shape[1]),
        answer_instability=stats.answer_instability(probs, perms),
        mean_distinct_choices=float(np.mean(stats.n_distinct_choices(probs, perms))),
        selection_spread=stats.selection_spread(probs),
        median_travel=audit.median,
        share_travel_le_1e_4=audit.share_at_or_below,
        mean_gold_prob_range=gold_range,
    )


def analyse_scoring_runs(
    arms: Sequence[Arm], *, n_resamples: int = N_RESAMPLES, seed: int = SEED
) -> ScoringAnalysis:
    """Accuracy, slot shares and the order audit of every arm (see the module docstring)."""
    accuracy, slots, order, skipped = [], [], [], []
    for arm in arms:
        cell = _accuracy(arm, n_resamples=n_resamples, seed=seed)
        if cell is not None:
            accuracy.append(cell)
        slots.extend(_slot_shares(arm))
        cells, refused = _order_audit(arm)
        order.extend(cells)
        skipped.extend(refused)
    if not accuracy:
        skipped.insert(0, Skipped("accuracy", "no row carries a gold option in its meta"))
    infos = tuple(ArmInfo(a.label, a.source, dict(a.manifest), len(a.rows)) for a in arms)
    # Calibration is per arm (one run, one label), as accuracy is; the gate pools by label.
    calibration, selective, reliability, curves = calibration_cells(
        [r for arm in arms for r in gold_rows([arm])]
    )
    return ScoringAnalysis(
        arms=infos,
        accuracy=tuple(accuracy),
        slot_shares=tuple(slots),
        order_audit=tuple(order),
        skipped=tuple(skipped),
        n_resamples=n_resamples,
        seed=seed,
        calibration=calibration,
        selective=selective,
        reliability=reliability,
        risk_coverage=curves,
    )
