"""Plain scoring runs (``choiceaudit score``, imported harness results): what any set of choices
supports without an instrument — accuracy where rows carry a canonical ``gold`` option in their
meta, selection by display slot, the order audit where items were rendered under several
orderings, calibration and selective prediction under four confidence definitions, and the
confidence gate chosen on one slice and read on every other (:func:`analyse_gate`). The choices
behind each number are documented in this package's README.md."""

from choiceaudit.instruments.scoring._analysis import (
    N_RESAMPLES,
    SEED,
    AccuracyCell,
    ArmInfo,
    OrderAuditCell,
    ScoringAnalysis,
    SlotShareCell,
    analyse_scoring_runs,
)
from choiceaudit.instruments.scoring._calibration import (
    COVERAGES,
    CalibrationCell,
    ReliabilityCell,
    RiskCoverageCurve,
    SelectiveCell,
)
from choiceaudit.instruments.scoring._config import ScoreConfig
from choiceaudit.instruments.scoring._declaration import INSTRUMENT
from choiceaudit.instruments.scoring._gate import (
    GATE_SCHEMA,
    CurvePoints,
    DefinitionGate,
    GateAnalysis,
    GateSpec,
    Interval,
    Objective,
    OutOfSample,
    SliceResult,
    analyse_gate,
    thresholds_document,
)
from choiceaudit.instruments.scoring._rows import (
    CONFIDENCE_DEFINITIONS,
    DEFINITION_TEXT,
    confidence_values,
)

__all__ = [
    "CONFIDENCE_DEFINITIONS",
    "COVERAGES",
    "DEFINITION_TEXT",
    "GATE_SCHEMA",
    "INSTRUMENT",
    "N_RESAMPLES",
    "SEED",
    "AccuracyCell",
    "ArmInfo",
    "CalibrationCell",
    "CurvePoints",
    "DefinitionGate",
    "GateAnalysis",
    "GateSpec",
    "Interval",
    "Objective",
    "OrderAuditCell",
    "OutOfSample",
    "ReliabilityCell",
    "RiskCoverageCurve",
    "ScoreConfig",
    "ScoringAnalysis",
    "SelectiveCell",
    "SliceResult",
    "SlotShareCell",
    "analyse_gate",
    "analyse_scoring_runs",
    "confidence_values",
    "thresholds_document",
]
