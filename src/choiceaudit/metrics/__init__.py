"""Metrics over gold-labelled and permuted choices that every instrument may use, below the
instruments (they read :class:`~choiceaudit.types.Arm` rows and call :mod:`choiceaudit.stats`):

* accuracy against a canonical ``gold`` option with the toolkit's tie credit, with its
  item-clustered bootstrap interval (:func:`accuracy_cell`);
* the share of choices by display slot (:func:`slot_share_cells`) and the order audit over
  permutation sweeps (:func:`order_audit_cells`);
* the gold-bearing rows as columns and the four confidence definitions (:func:`gold_rows`,
  :func:`confidence_values`);
* calibration (ECE, Brier), selective prediction (AURC, AUGRC against the random gate,
  selective accuracy) and risk–coverage curves (:func:`calibration_cells`).

The plain scoring analysis (``choiceaudit.instruments.scoring``) and the confidence gate
(``choiceaudit.gate``) are built on these.
"""

from choiceaudit.metrics._calibration import (
    CELL_FIELDS,
    COVERAGES,
    CalibrationCell,
    ReliabilityCell,
    RiskCoverageCurve,
    SelectiveCell,
    calibration_cells,
)
from choiceaudit.metrics._choices import (
    N_RESAMPLES,
    SEED,
    AccuracyCell,
    ArmInfo,
    OrderAuditCell,
    SlotShareCell,
    accuracy_cell,
    order_audit_cells,
    slot_share_cells,
)
from choiceaudit.metrics._gold import (
    CONFIDENCE_DEFINITIONS,
    DEFINITION_TEXT,
    GoldRows,
    confidence_values,
    gold_rows,
)

__all__ = [
    "CELL_FIELDS",
    "CONFIDENCE_DEFINITIONS",
    "COVERAGES",
    "DEFINITION_TEXT",
    "N_RESAMPLES",
    "SEED",
    "AccuracyCell",
    "ArmInfo",
    "CalibrationCell",
    "GoldRows",
    "OrderAuditCell",
    "ReliabilityCell",
    "RiskCoverageCurve",
    "SelectiveCell",
    "SlotShareCell",
    "accuracy_cell",
    "calibration_cells",
    "confidence_values",
    "gold_rows",
    "order_audit_cells",
    "slot_share_cells",
]
