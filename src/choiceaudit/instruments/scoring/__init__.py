"""Plain scoring runs (``choiceaudit score``): what any set of choices supports without an
instrument — accuracy where rows carry a canonical ``gold`` option in their meta, selection by
display slot, and the order audit where items were rendered under several orderings."""

from choiceaudit.instruments.scoring._analysis import (
    N_RESAMPLES,
    SEED,
    AccuracyCell,
    OrderAuditCell,
    ScoringAnalysis,
    SlotShareCell,
    analyse_scoring_runs,
)

__all__ = [
    "N_RESAMPLES",
    "SEED",
    "AccuracyCell",
    "OrderAuditCell",
    "ScoringAnalysis",
    "SlotShareCell",
    "analyse_scoring_runs",
]
