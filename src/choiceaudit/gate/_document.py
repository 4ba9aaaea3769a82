"""The thresholds file a service loads: for every model and definition the slice the cut-point
was fit on, the cut-point, the confidence definition's text and what it delivers per slice."""

from __future__ import annotations

import math

from typing_extensions import TypedDict

from choiceaudit.gate._types import (
    GATE_SCHEMA,
    GateAnalysis,
    Interval,
    Objective,
    SliceResult,
)
from choiceaudit.metrics import (
    DEFINITION_TEXT,
)

__all__ = [
    "CutPointIntervalJSON",
    "EvidenceJSON",
    "GateJSON",
    "IntervalJSON",
    "ObjectiveJSON",
    "OutOfSampleJSON",
    "SliceJSON",
    "ThresholdsDocument",
    "thresholds_document",
]

# -- the thresholds file ------------------------------------------------------------------------


class IntervalJSON(TypedDict):
    """An interval as the thresholds file writes it (a non-finite end as ``null``)."""

    estimate: float | None
    low: float | None
    high: float | None
    n_resamples: int
    n_undefined: int


class SliceJSON(TypedDict):
    """What the cut-point delivers on one slice, as the thresholds file writes it."""

    slice: str
    fit: bool
    n_rows: int
    n_items: int
    accuracy_all: float | None
    coverage: IntervalJSON | None
    accuracy: IntervalJSON | None
    cost: IntervalJSON | None
    coverage_shift: float | None
    status: str
    aurc: float | None
    aurc_random: float | None
    augrc: float | None
    augrc_random: float | None
    advantage: float | None


class CutPointIntervalJSON(TypedDict):
    """The bootstrap interval of a cut-point (re-chosen per resample)."""

    low: float | None
    high: float | None
    level: float
    n_resamples: int
    n_infeasible: int
    method: str


class OutOfSampleJSON(TypedDict):
    """What the cut-point delivers out of sample on the fit slice (cross-fitted)."""

    method: str
    accuracy: float | None
    accuracy_range: list[float | None]
    coverage: float | None
    cost: float | None
    target_met: bool


class EvidenceJSON(TypedDict):
    fit: SliceJSON
    out_of_sample: OutOfSampleJSON | None
    slices: list[SliceJSON]
    slices_missed: list[str]


class GateJSON(TypedDict):
    """One model's gate under one confidence definition."""

    model: str
    definition: str
    slice: str
    cut_point: float | None
    accept: str
    interval: CutPointIntervalJSON | None
    evidence: EvidenceJSON


class ObjectiveJSON(TypedDict):
    kind: Objective
    value: float
    required_accuracy: float
    description: str


class FitSliceJSON(TypedDict):
    key: str
    value: str


class RunJSON(TypedDict):
    model: str
    run: str
    rows: int


class ThresholdsDocument(TypedDict):
    """The thresholds file (format :data:`~._types.GATE_SCHEMA`)."""

    schema: str
    rule: str
    objective: ObjectiveJSON
    fit_slice: FitSliceJSON
    where: list[str]
    definitions: dict[str, str]
    runs: list[RunJSON]
    excluded_rows: dict[str, dict[str, int]]
    skipped: list[str]
    gates: list[GateJSON]


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _interval_dict(i: Interval | None) -> IntervalJSON | None:
    if i is None:
        return None
    return {
        "estimate": _num(i.estimate),
        "low": _num(i.low),
        "high": _num(i.high),
        "n_resamples": i.n_resamples,
        "n_undefined": i.n_undefined,
    }


def _slice_dict(s: SliceResult) -> SliceJSON:
    return {
        "slice": f"{s.key}={s.value}",
        "fit": s.is_fit,
        "n_rows": s.n_rows,
        "n_items": s.n_items,
        "accuracy_all": _num(s.accuracy_all),
        "coverage": _interval_dict(s.coverage),
        "accuracy": _interval_dict(s.accuracy),
        "cost": _interval_dict(s.cost),
        "coverage_shift": _num(s.coverage_shift),
        "status": s.status,
        "aurc": _num(s.aurc),
        "aurc_random": _num(s.aurc_random),
        "augrc": _num(s.augrc),
        "augrc_random": _num(s.augrc_random),
        "advantage": _num(s.advantage),
    }


def thresholds_document(analysis: GateAnalysis) -> ThresholdsDocument:
    """The thresholds file as JSON data: for every model and definition the slice it was fit
    on, the cut-point (``null`` = accept nothing), its interval and the evidence."""
    spec = analysis.spec
    gates: list[GateJSON] = []
    for g in analysis.gates:
        oos = g.out_of_sample
        gates.append(
            {
                "model": g.model,
                "definition": g.definition,
                "slice": f"{analysis.fit_key}={analysis.fit_value}",
                "cut_point": _num(g.cut_point),
                "accept": "none" if g.cut_point is None else "confidence >= cut_point",
                "interval": None
                if g.cut_point_interval is None
                else {
                    "low": _num(g.cut_point_interval.low),
                    "high": _num(g.cut_point_interval.high),
                    "level": spec.level,
                    "n_resamples": g.cut_point_interval.n_resamples,
                    "n_infeasible": g.cut_point_interval.n_undefined,
                    "method": "percentile bootstrap over items, cut-point re-chosen per resample",
                },
                "evidence": {
                    "fit": _slice_dict(g.fit),
                    "out_of_sample": None
                    if oos is None
                    else {
                        "method": oos.method,
                        "accuracy": _num(oos.accuracy),
                        "accuracy_range": [_num(oos.accuracy_min), _num(oos.accuracy_max)],
                        "coverage": _num(oos.coverage),
                        "cost": _num(oos.cost),
                        "target_met": oos.target_met,
                    },
                    "slices": [_slice_dict(s) for s in g.slices if not s.is_fit],
                    "slices_missed": [
                        f"{s.key}={s.value}" for s in g.slices if s.missed and not s.is_fit
                    ],
                },
            }
        )
    return {
        "schema": GATE_SCHEMA,
        "rule": "accept when confidence >= cut_point, escalate otherwise; cut_point null: "
        "escalate everything",
        "objective": {
            "kind": spec.objective,
            "value": spec.value,
            "required_accuracy": spec.required_accuracy,
            "description": spec.describe(),
        },
        "fit_slice": {"key": analysis.fit_key, "value": analysis.fit_value},
        "where": [f"{k}={v}" for k, v in spec.where],
        "definitions": {d: DEFINITION_TEXT[d] for d in spec.definitions},
        "runs": [{"model": a.label, "run": a.source, "rows": a.rows} for a in analysis.arms],
        "excluded_rows": {m: dict(v) for m, v in analysis.excluded.items()},
        "skipped": [str(s) for s in analysis.skipped],
        "gates": gates,
    }
