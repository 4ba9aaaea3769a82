"""Typed, frozen cells of the meaning analysis: the values every experiment's result is made
of (an interval, a paired contrast, a calibration, a cue split, …), each built once, directly, by
the computation that defines it (``_analysis``, ``_audits``, ``_order_audit``).

``None`` marks a value the rows cannot give (a model without a confidence head, a variant without
comparable pairs). Keyed results elsewhere are ``Mapping`` fields in a fixed order; the mappings
are plain dicts, not to be mutated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from choiceaudit import metrics, stats

__all__ = [
    "Agreement",
    "Calibration",
    "ChoiceCheck",
    "CueFree",
    "CueStratum",
    "Decomposition",
    "Interval",
    "OutcomeConfidence",
    "OutputDistribution",
    "PairedContrast",
    "PermutationTravel",
    "Retention",
]


# The experiments' intervals and paired contrasts are the shared statistics' own types: one
# definition of the columns, the sign flip and the Bonferroni adjustment.
Interval = stats.Interval
PairedContrast = stats.PairedContrast


@dataclass(frozen=True)
class Decomposition:
    """Gold / literal / other shares of the choices on literal-bearing rows (sum to 1, §5.1)."""

    gold: float
    literal: float
    other: float
    n_rows: int


@dataclass(frozen=True)
class OutcomeConfidence:
    """Mean confidence when the choice is correct, incorrect, or the literal gloss (NaN where
    no row has that outcome)."""

    correct: float
    incorrect: float
    captured: float

    def items(self) -> tuple[tuple[str, float], ...]:
        return (
            ("correct", self.correct),
            ("incorrect", self.incorrect),
            ("captured", self.captured),
        )


@dataclass(frozen=True)
class Calibration:
    """Calibration and selective prediction of one cell, confidence = peak probability
    (Appendix F); the ``conf_head_*`` fields are ``None`` unless every row has a head."""

    n_rows: int
    accuracy: float
    ece: float
    ece_mass: float
    brier: float
    brier_uniform: float
    aurc: float
    aurc_random: float
    augrc: float
    augrc_random: float
    #: coverage formatted ``"0.05"`` … ``"1.00"`` → accuracy on that most confident share
    selective_accuracy: Mapping[str, float]
    confidence_by_outcome: OutcomeConfidence
    reliability: metrics.Reliability
    conf_head_rows: int
    conf_head_by_outcome: OutcomeConfidence | None = None
    conf_head_aurc: float | None = None
    conf_head_augrc: float | None = None


@dataclass(frozen=True)
class OutputDistribution:
    """Shape of the returned vectors (Appendix H, Table 12)."""

    mean_peak: float
    share_peak_over_0_95: float
    mean_normalized_entropy: float


@dataclass(frozen=True)
class CueStratum:
    """LAR on d-lit with and without one construction cue (§5.6); a side with no row has
    ``lar`` NaN, ``n`` 0 and no interval."""

    lar_with: float
    n_with: int
    lar_without: float
    n_without: int
    difference: float
    with_interval: Interval | None = None
    without_interval: Interval | None = None
    #: 95% bootstrap interval of ``difference`` (items resampled within each side)
    difference_low: float = math.nan
    difference_high: float = math.nan


@dataclass(frozen=True)
class ChoiceCheck:
    """The returned ``choice`` against the argmax of the returned vector, per
    cell: rows with a returned choice, rows whose choice is not in the argmax, and accuracy / LAR
    read from ``choice`` beside the argmax reading (LAR NaN where the cell has no literal)."""

    n_rows_with_choice: int
    n_choice_not_argmax: int
    accuracy_argmax: float
    accuracy_choice: float
    lar_argmax: float
    lar_choice: float


@dataclass(frozen=True)
class CueFree:
    """Table 3's last block: LAR and accuracy on d-lit items with neither lexical cue (multi-word,
    literal gloss not containing the idiom, no English parenthetical), with the length split."""

    lar: Interval
    accuracy: Interval
    mean_literal_chars: float
    mean_other_chars: float
    longest: CueStratum | None


@dataclass(frozen=True)
class Agreement:
    """Agreement of a variant's chosen gloss with the intact one, on untied pairs."""

    n_pairs: int
    agreement: float
    n_tied_excluded: int
    interval: Interval | None = None


@dataclass(frozen=True)
class Retention:
    """E6: accuracy of one option form and the signal it retains, (acc − 1/k) / (acc_o0 − 1/k)
    (NaN without o0 or when o0 sits at chance)."""

    accuracy: Interval
    signal_retained: float


@dataclass(frozen=True)
class PermutationTravel:
    """Table 22: how far one option's own probability travels across the orderings."""

    median_travel: float
    mean_travel: float
    max_travel: float
    threshold: float
    share_at_or_below: float
    share_identical: float
    #: the 95th percentile of the items' travel (linear interpolation between order statistics)
    p95_travel: float = float("nan")
