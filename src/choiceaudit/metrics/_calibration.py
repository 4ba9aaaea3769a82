"""Calibration and selective prediction of plain scoring runs: the meaning report's views
(the meaning paper §5.2, Appendix F) for any labelled query file.

Cells are per model: ``all`` rows, then each value of the meta field ``condition`` and of
``task`` when the field takes at least two values. Per cell:

* top-label ECE over 15 equal-width bins and over 15 equal-mass bins, the multiclass Brier score
  and, where every row has the same ``k``, its uniform reference ``1 − 1/k`` (Appendix F);
* for each confidence definition (``maxprob``, ``conf_head`` where every row has one, ``margin``,
  ``entropy``): AURC and AUGRC against the random gate (AURC = the error rate, AUGRC = half of
  it), mean confidence on correct and on incorrect rows (§5.2: anti-diagnostic when higher on
  errors), selective accuracy at the coverages of Appendix F's table, and the risk–coverage
  curve (at most 101 points);
* the reliability bins of the top-label probability.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from choiceaudit import stats
from choiceaudit.metrics._gold import CONFIDENCE_DEFINITIONS, GoldRows
from choiceaudit.types import FloatArray, IntArray

__all__ = [
    "CELL_FIELDS",
    "COVERAGES",
    "MAX_CURVE_POINTS",
    "CalibrationCell",
    "CalibrationScores",
    "Reliability",
    "ReliabilityCell",
    "RiskCoverageCurve",
    "RiskCoveragePoints",
    "SelectiveCell",
    "SelectiveScores",
    "calibration_cells",
    "calibration_scores",
    "reliability",
    "risk_coverage",
    "selective_scores",
]

#: Coverages of the selective-accuracy table (the meaning paper, Appendix F, Table 9).
COVERAGES: tuple[float, ...] = (0.05, 0.10, 0.20, 0.35, 0.50, 0.75, 1.00)
#: Meta fields split into cells when they take at least two values.
CELL_FIELDS = ("condition", "task")
#: Risk–coverage points kept per curve (evenly spaced indices over the full curve).
MAX_CURVE_POINTS = 101


@dataclass(frozen=True)
class CalibrationScores:
    """Top-label ECE over equal-width and over equal-mass bins, and the multiclass Brier score,
    of one set of distributions against its gold slots (Appendix F)."""

    ece: float
    ece_mass: float
    brier: float


@dataclass(frozen=True)
class SelectiveScores:
    """Selective prediction under one confidence: AURC and AUGRC with their random gates (the
    error rate and half of it), mean confidence on correct and on incorrect rows, and selective
    accuracy at fixed coverages."""

    aurc: float
    aurc_random: float
    augrc: float
    augrc_random: float
    mean_confidence_correct: float
    mean_confidence_incorrect: float
    #: coverage formatted ``"0.05"`` … ``"1.00"`` → accuracy on that most confident share
    selective_accuracy: Mapping[str, float]


@dataclass(frozen=True)
class Reliability:
    """Non-empty equal-width reliability bins: rows, mean confidence and accuracy per bin."""

    n_rows: tuple[int, ...]
    confidence: tuple[float, ...]
    accuracy: tuple[float, ...]


@dataclass(frozen=True)
class RiskCoveragePoints:
    """Points of one risk–coverage curve (at most ``max_points`` of them, evenly spaced over the
    full curve) and the random gate's flat risk."""

    coverage: tuple[float, ...]
    selective_risk: tuple[float, ...]
    random_gate: float


def calibration_scores(
    probs: FloatArray, gold_slot: IntArray, *, n_bins: int = 15
) -> CalibrationScores:
    """ECE (equal-width and equal-mass bins) and Brier of ``probs`` (rows summing to 1)."""
    return CalibrationScores(
        ece=stats.ece(probs, gold_slot, n_bins=n_bins, strategy="width"),
        ece_mass=stats.ece(probs, gold_slot, n_bins=n_bins, strategy="mass"),
        brier=stats.brier(probs, gold_slot),
    )


def reliability(probs: FloatArray, gold_slot: IntArray, *, n_bins: int = 15) -> Reliability:
    """The non-empty equal-width reliability bins of the top-label probability."""
    bins = stats.reliability_bins(probs, gold_slot, n_bins=n_bins, strategy="width")
    return Reliability(
        tuple(int(v) for v in bins.n_rows),
        tuple(float(v) for v in bins.confidence),
        tuple(float(v) for v in bins.accuracy),
    )


def selective_scores(
    confidence: FloatArray, correct: FloatArray, *, coverages: Sequence[float] = COVERAGES
) -> SelectiveScores:
    """Selective prediction of rows with per-row ``confidence`` and tie-credit ``correct``;
    the caller chooses the confidence (a definition of :func:`confidence_values`, or the
    maximum of a vector as returned)."""
    split = stats.confidence_by_outcome(confidence, correct)
    accs = stats.selective_accuracy(confidence, correct, list(coverages))
    return SelectiveScores(
        aurc=stats.aurc(confidence, correct),
        aurc_random=stats.random_gate_aurc(correct),
        augrc=stats.augrc(confidence, correct),
        augrc_random=stats.random_gate_augrc(correct),
        mean_confidence_correct=split.mean_correct,
        mean_confidence_incorrect=split.mean_incorrect,
        selective_accuracy=dict(zip([f"{c:.2f}" for c in coverages], accs.tolist(), strict=True)),
    )


def risk_coverage(
    confidence: FloatArray, correct: FloatArray, *, max_points: int = MAX_CURVE_POINTS
) -> RiskCoveragePoints:
    """The risk–coverage curve thinned to at most ``max_points`` evenly spaced points (a
    figure needs no more), with the random gate's level."""
    curve = stats.risk_coverage_curve(confidence, correct)
    n = curve.coverage.size
    keep = np.unique(np.linspace(0, n - 1, min(n, max_points)).round().astype(int))
    return RiskCoveragePoints(
        coverage=tuple(float(curve.coverage[i]) for i in keep),
        selective_risk=tuple(float(curve.selective_risk[i]) for i in keep),
        random_gate=stats.random_gate_aurc(correct),
    )


@dataclass(frozen=True)
class CalibrationCell:
    """Calibration of the reported distributions of one cell."""

    model: str
    cell: str
    n_rows: int
    accuracy: float
    ece: float
    ece_mass: float
    brier: float
    brier_uniform: float | None


@dataclass(frozen=True)
class SelectiveCell:
    """Selective prediction of one cell under one confidence definition."""

    model: str
    cell: str
    definition: str
    n_rows: int
    aurc: float
    aurc_random: float
    augrc: float
    augrc_random: float
    mean_confidence_correct: float
    mean_confidence_incorrect: float
    #: coverage formatted ``"0.05"`` … ``"1.00"`` → accuracy on that most confident share
    selective_accuracy: Mapping[str, float]

    @property
    def advantage(self) -> float:
        """``aurc_random / aurc`` (>1: the gate beats a random one; <1: inverted)."""
        return self.aurc_random / self.aurc if self.aurc > 0 else float("inf")


@dataclass(frozen=True)
class ReliabilityCell:
    """Non-empty equal-width reliability bins of the top-label probability of one cell."""

    model: str
    cell: str
    n_rows: tuple[int, ...]
    confidence: tuple[float, ...]
    accuracy: tuple[float, ...]


@dataclass(frozen=True)
class RiskCoverageCurve:
    """Risk–coverage points of one cell under one definition, with the random gate's level."""

    model: str
    cell: str
    definition: str
    coverage: tuple[float, ...]
    selective_risk: tuple[float, ...]
    random_gate: float


def _cells(rows: GoldRows) -> list[tuple[str, GoldRows]]:
    cells = [("all", rows)]
    for key in CELL_FIELDS:
        labels = rows.field(key)
        values = sorted({v for v in labels if v is not None})
        if len(values) < 2:
            continue
        lab = np.array([v if v is not None else "\0" for v in labels], dtype=object)
        cells.extend((f"{key}={v}", rows.select(lab == v)) for v in values)
    return cells


def calibration_cells(
    models: Sequence[GoldRows], *, n_bins: int = 15
) -> tuple[
    tuple[CalibrationCell, ...],
    tuple[SelectiveCell, ...],
    tuple[ReliabilityCell, ...],
    tuple[RiskCoverageCurve, ...],
]:
    """Calibration, selective prediction, reliability bins and risk–coverage curves of every
    cell of every model (see the module docstring); models without gold rows are left out."""
    calibration: list[CalibrationCell] = []
    selective: list[SelectiveCell] = []
    bins: list[ReliabilityCell] = []
    curves: list[RiskCoverageCurve] = []
    for model in models:
        if len(model) == 0:
            continue
        for name, rows in _cells(model):
            probs = rows.padded_probs()
            ks = set(rows.n_options.tolist())
            scores = calibration_scores(probs, rows.gold_slot, n_bins=n_bins)
            calibration.append(
                CalibrationCell(
                    model=rows.model,
                    cell=name,
                    n_rows=len(rows),
                    accuracy=float(rows.correct.mean()),
                    ece=scores.ece,
                    ece_mass=scores.ece_mass,
                    brier=scores.brier,
                    brier_uniform=1.0 - 1.0 / ks.pop() if len(ks) == 1 else None,
                )
            )
            diagram = reliability(probs, rows.gold_slot, n_bins=n_bins)
            bins.append(
                ReliabilityCell(
                    rows.model, name, diagram.n_rows, diagram.confidence, diagram.accuracy
                )
            )
            for definition in CONFIDENCE_DEFINITIONS:
                conf = rows.confidence(definition)
                if conf is None:
                    continue
                sel = selective_scores(conf, rows.correct)
                selective.append(
                    SelectiveCell(
                        model=rows.model,
                        cell=name,
                        definition=definition,
                        n_rows=len(rows),
                        aurc=sel.aurc,
                        aurc_random=sel.aurc_random,
                        augrc=sel.augrc,
                        augrc_random=sel.augrc_random,
                        mean_confidence_correct=sel.mean_confidence_correct,
                        mean_confidence_incorrect=sel.mean_confidence_incorrect,
                        selective_accuracy=sel.selective_accuracy,
                    )
                )
                curve = risk_coverage(conf, rows.correct)
                curves.append(
                    RiskCoverageCurve(
                        rows.model,
                        name,
                        definition,
                        curve.coverage,
                        curve.selective_risk,
                        curve.random_gate,
                    )
                )
    return tuple(calibration), tuple(selective), tuple(bins), tuple(curves)
