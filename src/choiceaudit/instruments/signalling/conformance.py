"""The model-free conformance check against the paper, for ``choiceaudit check signalling``:
one item-set draw (``check_conformance``, a ``ConformanceReport``) and the distribution over
many draws (``conformance_over_seeds``, a ``SeedConformanceReport`` of ``SeedRow``), with
tolerances in multiples (``TOLERANCE_SE``) of the measured sampling SE."""

from choiceaudit.instruments.signalling._conformance import ConformanceReport, check_conformance
from choiceaudit.instruments.signalling._conformance_seeds import (
    MIN_SEEDS,
    ROW_KINDS,
    TOLERANCE_SE,
    SeedConformanceReport,
    SeedRow,
    conformance_over_seeds,
)

__all__ = [
    "MIN_SEEDS",
    "ROW_KINDS",
    "TOLERANCE_SE",
    "ConformanceReport",
    "SeedConformanceReport",
    "SeedRow",
    "check_conformance",
    "conformance_over_seeds",
]
