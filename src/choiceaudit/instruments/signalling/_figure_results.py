"""Typed, frozen results of the signalling battery's figure-level analyses: the decay-family
comparison (§I-A), achieved fit against ``fit_cost`` (§IV-D, Fig. 3; §IV-E) and the excess
against distance-from-random scatter (§IV-C). Kept apart from the per-cell results so each file
stays one subject; :mod:`choiceaudit.instruments.signalling` re-exports them from ``_results``."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DecayComparison",
    "ExcessCorrelation",
    "ExcessPoint",
    "FitCostBin",
    "FitCostSlope",
]


@dataclass(frozen=True)
class DecayComparison:
    """A Table I cell under the exponential (primary) and Gaussian decay families (§I-A); the
    Gaussian fields are ``None`` when that family has no such cell."""

    chooser: str
    rule: str
    post_exp: float
    post_gauss: float | None
    fit_exp: float
    fit_gauss: float | None
    delta_exp: float
    delta_gauss: float | None
    sig_exp: bool | None  # None: too few items for an interval
    sig_gauss: bool | None


@dataclass(frozen=True)
class FitCostBin:
    """Achieved fit in one ``fit_cost`` bin of a chooser x facet (§IV-D, Fig. 3), with the
    references per bin and the chooser's item-level slope of achieved fit on ``fit_cost``."""

    facet: str
    chooser: str
    kind: str
    bin: int
    fit_cost: float
    achieved_fit_norm: float
    salience_fit_norm: float
    bayes_fit_norm: float
    random_fit_norm: float
    random_fit_norm_sd: float
    slope: float
    slope_low: float
    slope_high: float
    bayes_slope: float
    fit_separation: float = float("nan")
    achieved_post_norm: float = float("nan")
    salience_post_norm: float = float("nan")
    bayes_post_norm: float = 1.0
    post_separation: float = float("nan")
    random_post_norm: float = float("nan")
    random_post_norm_sd: float = float("nan")
    departure_from_o_fit: float = float("nan")


@dataclass(frozen=True)
class FitCostSlope:
    """Least-squares slope of achieved ``fit_norm`` on ``fit_cost`` over items, with its
    item-bootstrap interval (``n_resamples`` of the frozen battery) and the Bayes oracle's slope
    (§IV-D); and §IV-E: the slope of the mean coordinate ``post_norm`` on ``fit_cost``, its
    predicted change over the observed ``fit_cost`` range against the pre-registered smallest
    effect of interest ``sesoi`` (0.05)."""

    chooser: str
    rule: str
    slope: float
    low: float
    high: float
    bayes_slope: float
    excludes_zero: bool = False
    post_slope: float = float("nan")
    post_low: float = float("nan")
    post_high: float = float("nan")
    post_excludes_zero: bool = False
    predicted_change: float = float("nan")
    predicted_low: float = float("nan")
    predicted_high: float = float("nan")
    sesoi: float = 0.05
    n_resamples: int = 0


@dataclass(frozen=True)
class ExcessPoint:
    """One chooser x rule cell of the §IV-C scatter: excess over the marginal null against the
    distance ``|post_norm − random|``; ``n_items`` is the excess's item count."""

    chooser: str
    kind: str
    rule: str
    excess: float
    delta_post_vs_random: float
    distance_from_random: float
    n_items: int = 0


@dataclass(frozen=True)
class ExcessCorrelation:
    """Pearson r between excess and distance from random over the model cells (§IV-C).
    ``estimate`` is ``None`` below 3 cells; ``low``/``high`` (the bootstrap interval) are
    ``None`` below :data:`MIN_CELLS_CI` cells, where a bootstrap is degenerate."""

    n_cells: int
    estimate: float | None
    low: float | None
    high: float | None
