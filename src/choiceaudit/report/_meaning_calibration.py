"""Calibration tables of the meaning section (the meaning paper §5.2–§5.3, Appendix F, Figure 4):
calibration and selective prediction per cell, confidence by outcome, reliability bins and
risk–coverage curve points, all with the peak probability as confidence (and the separate
confidence head where the model has one)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from choiceaudit import stats
from choiceaudit.report._meaning_tables import CURVE_FAMILIES, MeaningResult, make_table
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


def calibration_cells(r: MeaningResult) -> list[tuple[str, dict[str, Any]]]:
    cells = [(f, c) for f, c in r.analysis.get("e1", {}).get("calibration", {}).items()]
    if "o4_calibration" in r.analysis.get("e6", {}):
        cells.append(("e6 o4", r.analysis["e6"]["o4_calibration"]))
    for lang, c in r.analysis.get("matrix", {}).get("calibration", {}).items():
        cells.append((f"matrix {lang}", c))
    return cells


def _cell_records(
    results: Sequence[MeaningResult], fields: Callable[[dict[str, Any]], dict[str, Any]]
) -> list[dict[str, Any]]:
    """One record per model and calibration cell: ``model``, ``cell``, then ``fields(cell)``."""
    return [
        {"model": r.label, "cell": cell_name, **fields(c)}
        for r in results
        for cell_name, c in calibration_cells(r)
    ]


def calibration_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    keys = ("n_rows", "accuracy", "ece", "ece_mass", "brier", "brier_uniform")
    records = _cell_records(results, lambda c: {k: c[k] for k in keys})
    return make_table(
        "meaning_calibration",
        "Calibration under the distractor shift",
        records,
        "§5.2, §5.3, Appendix F. Confidence = peak probability. ece: top-label ECE over 15 "
        "equal-width bins; ece_mass: over 15 equal-mass (adaptive) bins; multiclass Brier against "
        "its uniform reference 1 − 1/4 = 0.750 (above it: worse than saying nothing).",
    )


def gate_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    required = ("aurc", "aurc_random", "augrc", "augrc_random")
    optional = ("conf_head_aurc", "conf_head_augrc")  # only where the model has a confidence head
    records = _cell_records(
        results, lambda c: {**{k: c[k] for k in required}, **{k: c.get(k) for k in optional}}
    )
    return make_table(
        "meaning_selective_gates",
        "Selective prediction: AURC and AUGRC against the random gate",
        records,
        "§5.2, Appendix F. AURC / AUGRC of gating on the peak probability against a gate that "
        "ignores the item (AURC = error rate, AUGRC = half of it); above the gate, confidence "
        "ranks errors first. conf_head_*: the same with the model's separate confidence head.",
    )


def selective_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = _cell_records(
        results, lambda c: {f"at_{cov}": acc for cov, acc in c["selective_accuracy"].items()}
    )
    return make_table(
        "meaning_selective",
        "Selective accuracy: accuracy on the most confident fraction",
        records,
        "Appendix F (the selective-accuracy table): column at_c is the accuracy on the c most "
        "confident share of the cell; at_1.00 is plain accuracy. Ties in confidence are spread "
        "evenly.",
    )


def confidence_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = []
    for r in results:
        for cell_name, c in calibration_cells(r):
            for signal, key in (
                ("peak", "confidence_by_outcome"),
                ("conf_head", "conf_head_by_outcome"),
            ):
                for outcome, value in c.get(key, {}).items():
                    records.append(
                        {"model": r.label, "cell": cell_name, "signal": signal,
                         "outcome": outcome, "mean_confidence": value}
                    )  # fmt: skip
    return make_table(
        "meaning_confidence_by_outcome",
        "Mean confidence by outcome (correct, incorrect, captured by the literal gloss)",
        records,
        "§5.2 (confidence is anti-diagnostic when captured > correct), Appendix A (peak "
        "probability vs the separate confidence head).",
    )


def reliability_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = []
    for r in results:
        calibration = r.analysis.get("e1", {}).get("calibration", {})
        for family in CURVE_FAMILIES:
            bins = calibration.get(family, {}).get("reliability")
            if bins is None:
                continue
            for i, (n, conf, acc) in enumerate(
                zip(bins["n_rows"], bins["confidence"], bins["accuracy"], strict=True)
            ):
                records.append(
                    {"model": r.label, "family": family, "bin": i, "n_rows": n,
                     "confidence": conf, "accuracy": acc}
                )  # fmt: skip
    return make_table(
        "meaning_reliability",
        "Reliability bins (15 equal-width, non-empty bins) under d-rand and d-lit",
        records,
        "Figure 4, Appendix F.",
    )


def risk_coverage_table(
    results: Sequence[MeaningResult], *, max_points: int = 101
) -> ReportTable | None:
    """Selective risk at up to ``max_points`` coverages per curve, with the random gate."""
    records = []
    for r in results:
        ladder = r.rows.where(experiment="e1")
        for family in CURVE_FAMILIES:
            cell = ladder.where(family=family)
            if not len(cell):
                continue
            curve = stats.risk_coverage_curve(cell.peak, cell.correct)
            n = curve.coverage.size
            keep = np.unique(np.linspace(0, n - 1, min(n, max_points)).round().astype(int))
            gate = stats.random_gate_aurc(cell.correct)
            for i in keep:
                records.append(
                    {"model": r.label, "family": family, "coverage": float(curve.coverage[i]),
                     "selective_risk": float(curve.selective_risk[i]), "random_gate": gate}
                )  # fmt: skip
    return make_table(
        "meaning_risk_coverage",
        "Risk–coverage curves (confidence = peak probability)",
        records,
        "Appendix F: accept the most confident fraction; risk = error rate among accepted. A random "
        "gate's curve is flat at the overall error rate; AURC is the mean height of the curve.",
    )
