"""The analysis of plain scoring runs: typed, frozen results the report lays out.

* accuracy against the canonical ``gold`` of each row's meta, with a 95% percentile bootstrap
  over items (rows of one ``item_id`` resampled together), under each choice rule the rows
  store, labelled: the decision's ``probs`` (for a causal LM the softmax of the summed
  log-probability, lm-evaluation-harness's ``acc``) and every stored score (``pmi``, ``sum``,
  ``mean``, ``char_mean``: :data:`choiceaudit.metrics.RULE_TEXT`); a tied choice containing
  gold earns ``1/t`` (the toolkit's tie rule, :func:`choiceaudit.stats.tie_credit`);
* the share of choices by display slot, per menu size (ties split evenly);
* the order audit over permutation sweeps (:func:`choiceaudit.stats.permutation_sweeps`), per
  menu size ``k`` (an item shown with different option counts is refused by name): answer
  instability, distinct choices, selection spread, travel, and the gold probability
  range where every item has a gold option;
* calibration and selective prediction where rows carry a gold option (the meaning report's
  views, :mod:`choiceaudit.metrics`): ECE, Brier, AURC / AUGRC against
  the random gate under four confidence definitions, selective accuracy, reliability bins and
  risk–coverage curves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from choiceaudit.metrics import (
    N_RESAMPLES,
    SEED,
    AccuracyCell,
    ArmInfo,
    CalibrationCell,
    OrderAuditCell,
    ReliabilityCell,
    RiskCoverageCurve,
    SelectiveCell,
    SlotShareCell,
    accuracy_cells,
    calibration_cells,
    gold_rows,
    order_audit_cells,
    slot_share_cells,
)
from choiceaudit.types import Arm, Skipped

__all__ = ["ScoringAnalysis", "analyse_scoring_runs"]


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


def analyse_scoring_runs(
    arms: Sequence[Arm], *, n_resamples: int = N_RESAMPLES, seed: int = SEED
) -> ScoringAnalysis:
    """Accuracy, slot shares and the order audit of every arm (see the module docstring)."""
    accuracy, slots, order, skipped = [], [], [], []
    for arm in arms:
        accuracy.extend(accuracy_cells(arm, n_resamples=n_resamples, seed=seed))
        slots.extend(slot_share_cells(arm))
        cells, refused = order_audit_cells(arm)
        order.extend(cells)
        skipped.extend(refused)
    if not accuracy:
        skipped.insert(0, Skipped("accuracy", "no row carries a gold option in its meta"))
    infos = tuple(ArmInfo(a.label, a.source, a.manifest, len(a.columns())) for a in arms)
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
