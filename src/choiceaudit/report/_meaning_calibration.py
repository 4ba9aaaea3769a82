"""Calibration tables of the meaning section (the meaning paper §5.2–§5.3, Appendix F, Figure 4):
calibration and selective prediction per cell, confidence by outcome, reliability bins and
risk–coverage curve points, all with the peak probability as confidence (and the separate
confidence head where the model has one), laid out from the
:class:`~choiceaudit.instruments.meaning.Calibration` results of the analysis."""

from __future__ import annotations

from collections.abc import Callable

from choiceaudit.instruments.meaning import ArmAnalysis, Calibration, MeaningAnalysis
from choiceaudit.report._meaning_tables import CURVE_FAMILIES, TableRecord, arms, make_table
from choiceaudit.report._tables import ReportTable

__all__ = [
    "calibration_cells",
    "calibration_table",
    "confidence_table",
    "gate_table",
    "reliability_table",
    "risk_coverage_table",
    "selective_table",
]


def calibration_cells(a: ArmAnalysis) -> list[tuple[str, Calibration]]:
    """The calibrated cells of one arm: every ladder family, the o4 control, matrix languages."""
    cells = [] if a.e1 is None else list(a.e1.calibration.items())
    if a.e6 is not None and a.e6.o4 is not None:
        cells.append(("e6 o4", a.e6.o4.calibration))
    if a.matrix is not None:
        cells.extend((f"matrix {lang}", c) for lang, c in a.matrix.calibration.items())
    return cells


def _cell_records(
    analysis: MeaningAnalysis, fields: Callable[[Calibration], TableRecord]
) -> list[TableRecord]:
    """One record per model and calibration cell: ``model``, ``cell``, then ``fields(cell)``."""
    return [
        {"model": label, "cell": cell_name, **fields(c)}
        for label, a in arms(analysis)
        for cell_name, c in calibration_cells(a)
    ]


def calibration_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = _cell_records(
        analysis,
        lambda c: {
            "n_rows": c.n_rows,
            "accuracy": c.accuracy,
            "ece": c.ece,
            "ece_mass": c.ece_mass,
            "brier": c.brier,
            "brier_uniform": c.brier_uniform,
        },
    )
    return make_table(
        "meaning_calibration",
        "Calibration under the distractor shift",
        records,
        "§5.2, §5.3, Appendix F. Confidence = peak probability. ece: top-label ECE over 15 "
        "equal-width bins; ece_mass: over 15 equal-mass (adaptive) bins; multiclass Brier against "
        "its uniform reference 1 − 1/4 = 0.750 (above it: worse than saying nothing).",
    )


def gate_table(analysis: MeaningAnalysis) -> ReportTable | None:
    # conf_head_*: only where the model has a confidence head (empty otherwise)
    records = _cell_records(
        analysis,
        lambda c: {
            "aurc": c.aurc,
            "aurc_random": c.aurc_random,
            "augrc": c.augrc,
            "augrc_random": c.augrc_random,
            "conf_head_aurc": c.conf_head_aurc,
            "conf_head_augrc": c.conf_head_augrc,
        },
    )
    return make_table(
        "meaning_selective_gates",
        "Selective prediction: AURC and AUGRC against the random gate",
        records,
        "§5.2, Appendix F. AURC / AUGRC of gating on the peak probability against a gate that "
        "ignores the item (AURC = error rate, AUGRC = half of it); above the gate, confidence "
        "ranks errors first. conf_head_*: the same with the model's separate confidence head.",
    )


def selective_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = _cell_records(
        analysis, lambda c: {f"at_{cov}": acc for cov, acc in c.selective_accuracy.items()}
    )
    return make_table(
        "meaning_selective",
        "Selective accuracy: accuracy on the most confident fraction",
        records,
        "Appendix F (the selective-accuracy table): column at_c is the accuracy on the c most "
        "confident share of the cell; at_1.00 is plain accuracy. Ties in confidence are spread "
        "evenly.",
    )


def confidence_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = []
    for label, a in arms(analysis):
        for cell_name, c in calibration_cells(a):
            for signal, split in (
                ("peak", c.confidence_by_outcome),
                ("conf_head", c.conf_head_by_outcome),
            ):
                if split is None:
                    continue
                for outcome, value in split.items():
                    records.append(
                        {
                            "model": label,
                            "cell": cell_name,
                            "signal": signal,
                            "outcome": outcome,
                            "mean_confidence": value,
                        }
                    )
    return make_table(
        "meaning_confidence_by_outcome",
        "Mean confidence by outcome (correct, incorrect, captured by the literal gloss)",
        records,
        "§5.2 (confidence is anti-diagnostic when captured > correct), Appendix A (peak "
        "probability vs the separate confidence head).",
    )


def reliability_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = []
    for label, a in arms(analysis):
        calibration = {} if a.e1 is None else a.e1.calibration
        for family in CURVE_FAMILIES:
            cell = calibration.get(family)
            if cell is None:
                continue
            bins = cell.reliability
            for i, (n, conf, acc) in enumerate(
                zip(bins.n_rows, bins.confidence, bins.accuracy, strict=True)
            ):
                records.append(
                    {
                        "model": label,
                        "family": family,
                        "bin": i,
                        "n_rows": n,
                        "confidence": conf,
                        "accuracy": acc,
                    }
                )
    return make_table(
        "meaning_reliability",
        "Reliability bins (15 equal-width, non-empty bins) under d-rand and d-lit",
        records,
        "Figure 4, Appendix F.",
    )


def risk_coverage_table(analysis: MeaningAnalysis) -> ReportTable | None:
    """The analysis's risk–coverage points per curve (at most 101), with the random gate."""
    records = []
    for label, a in arms(analysis):
        curves = {} if a.e1 is None else a.e1.risk_coverage
        for family in CURVE_FAMILIES:
            curve = curves.get(family)
            if curve is None:
                continue
            for coverage, risk in zip(curve.coverage, curve.selective_risk, strict=True):
                records.append(
                    {
                        "model": label,
                        "family": family,
                        "coverage": coverage,
                        "selective_risk": risk,
                        "random_gate": curve.random_gate,
                    }
                )
    return make_table(
        "meaning_risk_coverage",
        "Risk–coverage curves (confidence = peak probability)",
        records,
        "Appendix F: accept the most confident fraction; risk = error rate among accepted. A random "
        "gate's curve is flat at the overall error rate; AURC is the mean height of the curve.",
    )
