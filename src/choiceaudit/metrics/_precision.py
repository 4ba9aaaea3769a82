"""How far one set of scores moved from another on the same queries: the per-option distance of
each rule's score and the share of queries whose chosen option set changed. The precision gate
reads it twice — a reduced precision against float32 (the noise floor), and float32 against a
float64 reference (which must collapse to rounding)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from choiceaudit.types import FloatArray, tied_argmax

__all__ = ["RuleShift", "floor_shown", "rule_shifts"]


@dataclass(frozen=True)
class RuleShift:
    """One rule's movement between two scorings of the same queries: |Δ score| per option
    (median, 95th percentile, largest) over the options finite on both sides, the queries whose
    chosen (tied) set differs, and the options not finite on either side (``n_not_finite``:
    an overflow to NaN or infinity in a reduced precision is a finding, never dropped)."""

    rule: str
    n_queries: int
    n_options: int
    median_abs: float
    p95_abs: float
    max_abs: float
    flips: int
    n_not_finite: int = 0

    @property
    def flip_rate(self) -> float:
        return self.flips / self.n_queries if self.n_queries else float("nan")


def _chosen(scores: FloatArray) -> tuple[int, ...]:
    """The tied argmax set, a non-finite score ranking below every finite one (all tied when
    none is finite)."""
    finite = np.isfinite(scores)
    if not finite.any():
        return tuple(range(scores.size))
    return tuple(int(i) for i in np.flatnonzero(finite)[list(tied_argmax(scores[finite]))])


def rule_shifts(
    a: Sequence[Mapping[str, FloatArray]], b: Sequence[Mapping[str, FloatArray]]
) -> tuple[RuleShift, ...]:
    """Per rule both sides hold for every query (in ``a``'s order of rules): the distances
    between ``a`` and ``b`` (one mapping of rule → per-option scores per query, in the same
    query order) and the flips of the argmax set. An option not finite on either side is left
    out of the distances and counted; in a choice it ranks below every finite score (a NaN as
    an impossible option), so a query whose scores overflowed still has a chosen set."""
    if len(a) != len(b):
        raise ValueError(f"rule_shifts: {len(a)} queries against {len(b)}")
    if not a:
        return ()
    rules = [r for r in a[0] if all(r in x for x in a) and all(r in y for y in b)]
    shifts = []
    for rule in rules:
        deltas: list[FloatArray] = []
        flips = not_finite = 0
        for x, y in zip(a, b, strict=True):
            u = np.asarray(x[rule], dtype=np.float64)
            v = np.asarray(y[rule], dtype=np.float64)
            if u.shape != v.shape:
                raise ValueError(f"rule_shifts: rule {rule}: {u.shape} options against {v.shape}")
            both = np.isfinite(u) & np.isfinite(v)
            deltas.append(np.abs(u[both] - v[both]))
            not_finite += int((~both).sum())
            flips += _chosen(u) != _chosen(v)
        flat = np.concatenate(deltas) if deltas else np.zeros(0)
        shifts.append(
            RuleShift(
                rule=rule,
                n_queries=len(a),
                n_options=int(flat.size),
                median_abs=float(np.median(flat)) if flat.size else float("nan"),
                p95_abs=float(np.percentile(flat, 95)) if flat.size else float("nan"),
                max_abs=float(flat.max()) if flat.size else float("nan"),
                flips=int(flips),
                n_not_finite=not_finite,
            )
        )
    return tuple(shifts)


def floor_shown(floor: Sequence[Mapping[str, object]]) -> Mapping[str, object]:
    """Of a gate's stored shifts (one mapping per rule, as a manifest holds them), the one a
    reader is shown as the noise floor: the summed log-probability where the run has it (the
    paper's floor), else the first rule measured (``probs`` of a model that returns a
    distribution over keys); empty when none was measured."""
    return next((r for r in floor if r.get("rule") == "sum"), floor[0] if floor else {})
