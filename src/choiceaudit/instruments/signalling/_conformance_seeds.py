"""Conformance as a distribution over item-set draws (what ``choiceaudit check signalling``
prints): one :func:`check_conformance` per seed, aggregated per quantity.

A single draw cannot say whether a gap is sampling or a systematic offset, and a tally at one
seed can flatter itself (a favourable draw). So every reference quantity is reported as the
mean and SD over ``N`` seeds beside the paper's value, and held to a tolerance stated as a
multiple of that measured sampling SE: ``TOLERANCE_SE`` (2) times the SD of one draw, the
spread a single draw such as the paper's has, on at least ``MIN_SEEDS`` (10) draws, since the SD
of fewer is too uncertain to hold a number to. A quantity that does not vary with the seed (the
data's rater ratios, the pool) has no sampling SE and is held to the paper's printed precision
(half a unit of its last printed digit). The share of draws within the tolerance is shown too.

Rows that hold by construction (the Bayes pole's post_norm is 1 by eq. 6; the salience chooser
never moves off ``o_fit``; the selection fixes the 125 size conflict items), rows fitted to the
paper (Fig. 1: the size bins were chosen to reproduce it), Appendix B's disputed readings, and a
quantity that is the complement of another (fit-axis separation = 1 − Bayes pole fit_norm) are
listed apart and never counted as agreements; the summary counts the independent rows only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from choiceaudit.instruments.signalling._conformance import ConformanceReport, ConformanceRow

__all__ = [
    "MIN_SEEDS",
    "ROW_KINDS",
    "TOLERANCE_SE",
    "SeedConformanceReport",
    "SeedRow",
    "conformance_over_seeds",
]

#: Tolerance in multiples of the measured SD of one draw across seeds.
TOLERANCE_SE = 2.0

#: Fewest draws the tolerance rule is made on. The rule holds a quantity to TOLERANCE_SE times
#: the SD as if that SD were known; from N draws it is an estimate whose 95 % chi-square bounds
#: are 0.45-31.9 times the true SD at N = 2 (a lucky large SD calls an outside row "within")
#: and 0.69-1.83 times it at N = 10 (0.76-1.46 at the default 20).
MIN_SEEDS = 10

#: Rows that are not independent agreements, with the reason (the rest are independent).
ROW_KINDS: dict[str, tuple[str, str]] = {
    "Bayes pole post_norm": ("by construction", "post_norm(o_bayes) = 1 by eq. 6"),
    "salience reference slope": ("by construction", "the salience chooser sends o_fit always"),
    "size conflict items": ("by construction", "the selection fixes 125 per tile x kind"),
    "Fig. 1 fit, football": ("fitted", "the size bin edges were chosen to reproduce Fig. 1"),
    "Fig. 1 fit, chicken egg": ("fitted", "the size bin edges were chosen to reproduce Fig. 1"),
    "Fig. 1 fit_cost": ("fitted", "the size bin edges were chosen to reproduce Fig. 1"),
    "fit-axis separation, lowest decile": (
        "complement",
        "1 - Bayes pole fit_norm, lowest fit_cost decile",
    ),
    "fit-axis separation, highest decile": (
        "complement",
        "1 - Bayes pole fit_norm, highest fit_cost decile",
    ),
}


@dataclass(frozen=True)
class SeedRow:
    """One quantity over the draws: the paper's value, mean and SD of the measured values, the
    tolerance (``TOLERANCE_SE`` x SD, or the paper's printed precision where the quantity does
    not vary), the share of draws within it, ``status`` (within / outside / measured /
    unavailable) and ``kind`` (independent, by construction, fitted, complement, reading)."""

    section: str
    quantity: str
    paper: float | None
    n_draws: int
    mean: float | None
    sd: float | None
    tolerance: float | None
    share_within: float | None
    status: str
    kind: str
    note: str = ""

    @property
    def offset_in_sd(self) -> float | None:
        """(mean - paper) / SD: how many single-draw SDs the paper's value sits from ours."""
        if self.paper is None or self.mean is None or not self.sd:
            return None
        return (self.mean - self.paper) / self.sd


@dataclass(frozen=True)
class SeedConformanceReport:
    """Every model-free number over ``seeds`` item-set draws."""

    norms: str
    seeds: tuple[int, ...]
    n_candidates: int
    n_items: int
    swow: bool
    rows: tuple[SeedRow, ...]

    def by_quantity(self, quantity: str) -> SeedRow:
        for row in self.rows:
            if row.quantity == quantity:
                return row
        raise KeyError(quantity)

    def counts(self) -> dict[str, int]:
        """Independent rows within / outside, and the rows listed apart by kind."""
        indep = [r for r in self.rows if r.kind == "independent"]
        out = {s: sum(r.status == s for r in indep) for s in ("within", "outside", "unavailable")}
        for kind in ("by construction", "fitted", "complement", "reading"):
            out[kind] = sum(r.kind == kind for r in self.rows)
        return out

    @property
    def outside(self) -> tuple[SeedRow, ...]:
        return tuple(r for r in self.rows if r.kind == "independent" and r.status == "outside")


def _precision(value: float) -> float:
    text = f"{value:.10g}"
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0**-decimals


def _kind(quantity: str) -> tuple[str, str]:
    if quantity.startswith("geometric share of ties"):
        return "reading", "Appendix B does not say which ties or which range; see the readings"
    return ROW_KINDS.get(quantity, ("independent", ""))


def _aggregate(typed: Sequence[ConformanceRow], quantity: str) -> SeedRow:
    first = typed[0]
    kind, why = _kind(quantity)
    values = np.array([r.measured for r in typed if r.measured is not None], dtype=np.float64)
    if values.size == 0:
        return SeedRow(
            first.section,
            quantity,
            first.paper,
            0,
            None,
            None,
            None,
            None,
            "unavailable",
            kind,
            first.note,
        )
    mean = float(values.mean())
    sd = float(values.std(ddof=1)) if values.size > 1 else float("nan")
    if first.paper is None:
        return SeedRow(
            first.section,
            quantity,
            None,
            int(values.size),
            mean,
            sd,
            None,
            None,
            "measured",
            kind,
            why or first.note,
        )
    paper = float(first.paper)
    varies = bool(np.ptp(values) > 1e-12 * max(1.0, abs(mean)))
    if varies:
        tol = TOLERANCE_SE * sd
        basis = f"{TOLERANCE_SE:g} x SD of one draw over {values.size} draws"
    else:
        sd = 0.0  # not rounding noise: the draws are equal
        tol = _precision(paper)
        basis = "does not vary with the seed: the paper's printed precision"
    share = float(np.mean(np.abs(values - paper) <= tol + 1e-12))
    status = "within" if abs(mean - paper) <= tol + 1e-12 else "outside"
    note = "; ".join(x for x in (why, basis) if x)
    return SeedRow(
        first.section,
        quantity,
        paper,
        int(values.size),
        mean,
        sd,
        tol,
        share,
        status,
        kind,
        note,
    )


def conformance_over_seeds(reports: Sequence[ConformanceReport]) -> SeedConformanceReport:
    """Aggregate per-seed reports (see module docstring); needs at least :data:`MIN_SEEDS`
    draws, since the tolerance is a multiple of the SD they measure."""
    if len(reports) < MIN_SEEDS:
        raise ValueError(
            f"the tolerance rule needs at least {MIN_SEEDS} seeds (the SD of fewer draws is "
            f"too uncertain to hold a number to), got {len(reports)}"
        )
    order = [r.quantity for r in reports[0].rows]
    by_quantity: dict[str, list[ConformanceRow]] = {q: [] for q in order}
    for report in reports:
        for row in report.rows:
            by_quantity.setdefault(row.quantity, []).append(row)
    first = reports[0]
    return SeedConformanceReport(
        norms=first.norms,
        seeds=tuple(r.seed for r in reports),
        n_candidates=first.n_candidates,
        n_items=first.n_items,
        swow=first.swow,
        rows=tuple(_aggregate(rows, q) for q, rows in by_quantity.items()),
    )
