"""Typed, frozen results of the signalling analysis battery (paper §I-H, §IV-A–§IV-D, §IV-G,
§IV-H4), one :class:`SignallingAnalysis` per frozen instrument. Every number a report or the
command line shows is a field here; nothing downstream computes a statistic.

Field names follow the columns the report writes (Table I, Fig. 2, Fig. 3, the §IV-C scatter),
so a record is :func:`dataclasses.asdict` of its object."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from choiceaudit.types import Skipped

__all__ = [
    "ArmSummary",
    "ConditionAgreement",
    "CoordinateCell",
    "CoordinatePoint",
    "DecayComparison",
    "ExcessCorrelation",
    "ExcessPoint",
    "FitCostBin",
    "FitCostSlope",
    "FormatLRecord",
    "ReferencePoint",
    "SignallingAnalysis",
]


@dataclass(frozen=True)
class CoordinateCell:
    """One Table I cell: a chooser x scoring rule on the frozen analysis set. ``delta_*`` is the
    paired item bootstrap of ``post_norm`` minus the random reference (95 %, and at the
    Bonferroni ``bonferroni_level`` across all the cells); ``excess`` / ``consistency`` are
    ``None`` when no item has an untied choice under both permutations."""

    chooser: str
    kind: str
    rule: str
    n_items: int
    post_norm_mean: float
    post_norm_median: float
    fit_norm_mean: float
    fit_norm_median: float
    delta_post_vs_random: float
    delta_low: float
    delta_high: float
    delta_excludes_zero: bool
    delta_excludes_zero_bonferroni: bool
    bonferroni_level: float
    excess: float | None
    consistency: float | None
    agree_o_fit: float
    agree_o_bayes: float
    random_post_norm: float
    random_post_norm_sd: float
    random_fit_norm: float
    random_fit_norm_sd: float
    salience_post_norm: float
    bayes_fit_norm: float
    n_tied_renderings: int
    n_uncovered_rows: int


@dataclass(frozen=True)
class ReferencePoint:
    """One of the three references (random, salience pole, Bayes pole), means over the items
    of the analysis set (§I-H1); only the random reference has an SD across items."""

    reference: str
    fit_norm: float
    fit_norm_sd: float | None
    post_norm: float
    post_norm_sd: float | None


@dataclass(frozen=True)
class CoordinatePoint:
    """One point of Fig. 2 in one rule facet: a pole (``kind`` "pole") or a chooser."""

    facet: str
    point: str
    kind: str
    fit_norm: float
    post_norm: float
    fit_norm_sd: float | None
    post_norm_sd: float | None
    n_items: int


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
    sig_exp: bool
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


@dataclass(frozen=True)
class FitCostSlope:
    """Least-squares slope of achieved ``fit_norm`` on ``fit_cost`` over items, with its 95 %
    item-bootstrap interval and the Bayes oracle's slope (§IV-D)."""

    chooser: str
    rule: str
    slope: float
    low: float
    high: float
    bayes_slope: float


@dataclass(frozen=True)
class ExcessPoint:
    """One chooser x rule cell of the §IV-C scatter: excess over the marginal null against the
    distance ``|post_norm − random|``."""

    chooser: str
    kind: str
    rule: str
    excess: float
    delta_post_vs_random: float
    distance_from_random: float


@dataclass(frozen=True)
class ExcessCorrelation:
    """Pearson r between excess and distance from random over the model cells (§IV-C).
    ``estimate`` is ``None`` below 3 cells; ``low``/``high`` (the bootstrap interval) are
    ``None`` below :data:`MIN_CELLS_CI` cells, where a bootstrap is degenerate."""

    n_cells: int
    estimate: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class ConditionAgreement:
    """Condition 4 vs 5 under format V (§IV-G) for one model x rule x tile (``tile`` "all":
    every item; ``tvd`` ``None`` when menus differ in size)."""

    chooser: str
    rule: str
    tile: str
    n_matched: int
    agreement: float
    tvd: float | None


@dataclass(frozen=True)
class FormatLRecord:
    """Format L (§IV-H4) for one model x rule x tile x label form: permutation consistency
    against its marginal null over ``n`` untied items (``tied`` left out), and the letter prior
    (``top_letter``'s share beside the canonical distribution's largest distance from uniform)."""

    chooser: str
    rule: str
    tile: str
    label_form: str
    n: int
    tied: int
    consistency: float | None
    null: float | None
    excess: float | None
    chance: float
    top_letter: str
    top_share: float
    canonical_dev: float


@dataclass(frozen=True)
class ArmSummary:
    """One analysed run: its directory (``source``), the chooser label and kind ("model": a
    cell per scoring rule; "reference": one choice, ``probs``), the rules analysed, the row
    count and status, and the manifest as stored."""

    source: str
    run: str
    chooser: str
    kind: str
    rules: tuple[str, ...]
    n_rows: int
    status: str | None
    items_hash: str
    manifest: Mapping[str, Any]


@dataclass(frozen=True)
class SignallingAnalysis:
    """The frozen battery on every run of one instrument (identical items): Table I
    (``cells``), the references, Fig. 2 (``coordinates``), both decay families, Fig. 3
    (``fit_cost``) and its ``slopes``, the §IV-C scatter (``excess``, ``excess_r``),
    condition 4 vs 5, format L, and every analysis skipped with its reason."""

    instrument_hash: str
    set_label: str
    n_items: int
    norms: str | None
    n_amendments: int
    arms: tuple[ArmSummary, ...]
    facets: tuple[str, ...]
    cells: tuple[CoordinateCell, ...]
    references: tuple[ReferencePoint, ...]
    coordinates: tuple[CoordinatePoint, ...]
    decay: tuple[DecayComparison, ...]
    fit_cost: tuple[FitCostBin, ...]
    slopes: tuple[FitCostSlope, ...]
    excess: tuple[ExcessPoint, ...]
    excess_r: ExcessCorrelation | None
    conditions: tuple[ConditionAgreement, ...]
    format_l: tuple[FormatLRecord, ...]
    skipped: tuple[Skipped, ...]
