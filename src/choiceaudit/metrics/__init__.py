"""Metrics over gold-labelled and permuted choices that every instrument may use, below the
instruments (they read :class:`~choiceaudit.types.Arm` rows and call :mod:`choiceaudit.stats`):

* accuracy against a canonical ``gold`` option with the toolkit's tie credit, with its
  item-clustered bootstrap interval (:func:`accuracy_cell`);
* the share of choices by display slot (:func:`slot_share_cells`) and the order audit over
  permutation sweeps (:func:`order_audit_cells`);
* the gold-bearing rows as columns and the four confidence definitions (:func:`gold_rows`,
  :func:`confidence_values`);
* calibration (ECE, Brier), selective prediction (AURC, AUGRC against the random gate,
  selective accuracy) and risk–coverage curves (:func:`calibration_cells`), and the same
  per cell on plain arrays under a confidence the caller chooses (:func:`calibration_scores`,
  :func:`reliability`, :func:`selective_scores`, :func:`risk_coverage`);
* the order audit of complete permutation sweeps on plain arrays (:func:`sweep_audit`) and the
  gold option's tie credit (:func:`gold_credit`);
* how far scores move between two scorings of the same queries, per rule, and the choices that
  flip (:func:`rule_shifts`: the precision gate's noise floor and float64 diagnostic).

The plain scoring analysis (``choiceaudit.instruments.scoring``), the meaning instrument
(``choiceaudit.instruments.meaning``) and the confidence gate (``choiceaudit.gate``) are built on
these.
"""

from choiceaudit.metrics._calibration import (
    CELL_FIELDS,
    COVERAGES,
    MAX_CURVE_POINTS,
    CalibrationCell,
    CalibrationScores,
    Reliability,
    ReliabilityCell,
    RiskCoverageCurve,
    RiskCoveragePoints,
    SelectiveCell,
    SelectiveScores,
    calibration_cells,
    calibration_scores,
    reliability,
    risk_coverage,
    selective_scores,
)
from choiceaudit.metrics._choices import (
    N_RESAMPLES,
    RETURNED_SUM_TOLERANCE,
    RULE_TEXT,
    SEED,
    AccuracyCell,
    ArmInfo,
    OrderAuditCell,
    SlotShareCell,
    SweepAudit,
    accuracy_cell,
    accuracy_cells,
    gold_credit,
    order_audit_cells,
    slot_share_cells,
    sweep_audit,
)
from choiceaudit.metrics._gold import (
    CONFIDENCE_DEFINITIONS,
    DEFINITION_TEXT,
    GoldRows,
    confidence_values,
    gold_rows,
)
from choiceaudit.metrics._precision import RuleShift, floor_shown, rule_shifts

__all__ = [
    "CELL_FIELDS",
    "CONFIDENCE_DEFINITIONS",
    "COVERAGES",
    "DEFINITION_TEXT",
    "MAX_CURVE_POINTS",
    "N_RESAMPLES",
    "RETURNED_SUM_TOLERANCE",
    "RULE_TEXT",
    "SEED",
    "AccuracyCell",
    "ArmInfo",
    "CalibrationCell",
    "CalibrationScores",
    "GoldRows",
    "OrderAuditCell",
    "Reliability",
    "ReliabilityCell",
    "RiskCoverageCurve",
    "RiskCoveragePoints",
    "RuleShift",
    "SelectiveCell",
    "SelectiveScores",
    "SlotShareCell",
    "SweepAudit",
    "accuracy_cell",
    "accuracy_cells",
    "calibration_cells",
    "calibration_scores",
    "confidence_values",
    "floor_shown",
    "gold_credit",
    "gold_rows",
    "order_audit_cells",
    "reliability",
    "risk_coverage",
    "rule_shifts",
    "selective_scores",
    "slot_share_cells",
    "sweep_audit",
]
