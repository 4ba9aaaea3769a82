"""Plain scoring runs (``choiceaudit score``, imported harness results): what any set of choices
supports without an instrument — accuracy where rows carry a canonical ``gold`` option in their
meta, selection by display slot, the order audit where items were rendered under several
orderings, and calibration and selective prediction under four confidence definitions. The
metrics themselves live in :mod:`choiceaudit.metrics` (every instrument may use them); the
confidence gate chosen on one slice and read on every other is :mod:`choiceaudit.gate`. The
choices behind each number are documented in docs/instruments/scoring.md."""

from choiceaudit.instruments.scoring._analysis import ScoringAnalysis, analyse_scoring_runs
from choiceaudit.instruments.scoring._config import ScoreConfig
from choiceaudit.instruments.scoring._declaration import INSTRUMENT
from choiceaudit.metrics import (
    CONFIDENCE_DEFINITIONS,
    COVERAGES,
    DEFINITION_TEXT,
    N_RESAMPLES,
    RULE_TEXT,
    SEED,
    AccuracyCell,
    ArmInfo,
    CalibrationCell,
    OrderAuditCell,
    ReliabilityCell,
    RiskCoverageCurve,
    SelectiveCell,
    SlotShareCell,
    confidence_values,
)

__all__ = [
    "CONFIDENCE_DEFINITIONS",
    "COVERAGES",
    "DEFINITION_TEXT",
    "INSTRUMENT",
    "N_RESAMPLES",
    "RULE_TEXT",
    "SEED",
    "AccuracyCell",
    "ArmInfo",
    "CalibrationCell",
    "OrderAuditCell",
    "ReliabilityCell",
    "RiskCoverageCurve",
    "ScoreConfig",
    "ScoringAnalysis",
    "SelectiveCell",
    "SlotShareCell",
    "analyse_scoring_runs",
    "confidence_values",
]
