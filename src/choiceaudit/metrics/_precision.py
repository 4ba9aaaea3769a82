"""How far one set of scores moved from another on the same queries: the per-option distance of
each rule's score and the share of queries whose chosen option set changed. The precision gate
reads it twice — a reduced precision against float32 (the noise floor), and float32 against a
float64 reference (which must collapse to rounding)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from choiceaudit.types import FloatArray, tied_argmax

__all__ = ["RuleShift", "rule_shifts"]


@dataclass(frozen=True)
class RuleShift:
    """One rule's movement between two scorings of the same queries: |Δ score| per option
    (median, 95th percentile, largest) and the queries whose chosen (tied) set differs."""

    rule: str
    n_queries: int
    n_options: int
    median_abs: float
    p95_abs: float
    max_abs: float
    flips: int

    @property
    def flip_rate(self) -> float:
        return self.flips / self.n_queries if self.n_queries else float("nan")


def rule_shifts(
    a: Sequence[Mapping[str, FloatArray]], b: Sequence[Mapping[str, FloatArray]]
) -> tuple[RuleShift, ...]:
    """Per rule both sides hold for every query (in ``a``'s order of rules): the distances
    between ``a`` and ``b`` (one mapping of rule → per-option scores per query, in the same
    query order) and the flips of the argmax set. A rule's scores that are not finite on either
    side count as a flip when only one side is finite, and are left out of the distances."""
    if len(a) != len(b):
        raise ValueError(f"rule_shifts: {len(a)} queries against {len(b)}")
    if not a:
        return ()
    rules = [r for r in a[0] if all(r in x for x in a) and all(r in y for y in b)]
    shifts = []
    for rule in rules:
        deltas: list[FloatArray] = []
        flips = 0
        for x, y in zip(a, b, strict=True):
            u = np.asarray(x[rule], dtype=np.float64)
            v = np.asarray(y[rule], dtype=np.float64)
            if u.shape != v.shape:
                raise ValueError(f"rule_shifts: rule {rule}: {u.shape} options against {v.shape}")
            both = np.isfinite(u) & np.isfinite(v)
            deltas.append(np.abs(u[both] - v[both]))
            flips += tied_argmax(u) != tied_argmax(v)
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
            )
        )
    return tuple(shifts)
