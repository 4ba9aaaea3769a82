"""Confidence gates chosen on one slice and read on every other (the meaning paper, §5.2–5.3).

A deployer auto-accepts a decision when its confidence is at or above a cut-point and escalates
the rest. :func:`analyse_gate` chooses that cut-point on one slice of the rows (a family, a
language, an experiment cell, any meta field ``key=value``), for each confidence definition
(:data:`~choiceaudit.metrics.CONFIDENCE_DEFINITIONS`), and reports what it delivers
on every other value of the same field. The choices, all documented in ``docs/instruments/scoring.md`` ("The gate"):

* **Rule.** Accept iff ``confidence >= cut_point``. A cut-point accepts whole tie blocks (a
  service cannot accept part of a tie), and the cut-point is the lowest accepted confidence.
* **Objective.** ``target_accuracy A``: the largest coverage whose accepted rows have accuracy
  ``>= A`` (``max_risk R`` is ``A = 1 − R``); none feasible means *accept nothing*.
  ``cost_ratio C``: an accepted error costs ``C``, an escalation 1, an accepted correct answer 0;
  the cut-point minimises the mean cost per row (accept-nothing included; ties go to the
  higher cut-point). Its accuracy target is the break-even ``1 − 1/C``: below it, the accepted
  rows cost more than escalating them.
* **Interval.** 95% percentile bootstrap over items (rows of one ``item_id`` resampled together,
  2,000 resamples as in the paper's §4.3): the cut-point re-chosen on every resample. Resamples
  on which no cut-point meets the target are counted (``n_undefined``) and left out.
* **Out-of-sample estimate.** Split-by-item cross-fitting: the fit slice's items are split into
  5 folds, the cut-point chosen on four and applied to the fifth, the held-out rows pooled over
  folds; the mean over 10 random fold assignments (with their range). The in-sample accuracy at
  a cut-point chosen to just meet a target is biased upwards; this is the number to quote.
* **Every slice.** With the cut-point fixed: coverage, accuracy on the accepted rows and mean
  cost, each with an item-bootstrap interval; ``missed`` where the accuracy is below the target,
  ``missed (interval below target)`` where the whole interval is. Beside them AURC, AUGRC and
  their random-gate baselines (the paper's §5.2 definitions, ``stats.aurc`` … ) and the
  advantage ``aurc_random / aurc`` (the paper's "advantage over a random gate", >1 = useful).

A product feature, not an instrument: it reads any runs whose rows carry a gold option
(``choiceaudit gate``, :func:`choiceaudit.audit.gate_runs`) on the shared metrics of
:mod:`choiceaudit.metrics`.
"""

from choiceaudit.gate._document import ThresholdsDocument, thresholds_document
from choiceaudit.gate._fit import analyse_gate, resolve_slice
from choiceaudit.gate._types import (
    GATE_SCHEMA,
    SLICE_KEYS,
    CurvePoints,
    DefinitionGate,
    GateAnalysis,
    GateSpec,
    Interval,
    Objective,
    OutOfSample,
    SliceResult,
)

__all__ = [
    "GATE_SCHEMA",
    "SLICE_KEYS",
    "CurvePoints",
    "DefinitionGate",
    "GateAnalysis",
    "GateSpec",
    "Interval",
    "Objective",
    "OutOfSample",
    "SliceResult",
    "ThresholdsDocument",
    "analyse_gate",
    "resolve_slice",
    "thresholds_document",
]
