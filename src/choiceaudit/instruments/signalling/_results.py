"""Typed, frozen results of the signalling analysis battery (paper §I-H, §IV-A–§IV-D, §IV-G,
§IV-H4), one :class:`SignallingAnalysis` per frozen instrument. Every number a report or the
command line shows is a field here; nothing downstream computes a statistic.

Field names follow the columns the report writes (Table I, Fig. 2, Fig. 3, the §IV-C scatter),
so a record is :func:`dataclasses.asdict` of its object."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from choiceaudit.instruments.signalling._figure_results import (
    DecayComparison,
    ExcessCorrelation,
    ExcessPoint,
    FitCostBin,
    FitCostSlope,
)
from choiceaudit.types import BoolArray, FloatArray, Manifest, Skipped

__all__ = [
    "ArmSummary",
    "BatchFlip",
    "CellSummary",
    "ConditionAgreement",
    "ConditionMatch",
    "CoordinateCell",
    "CoordinatePoint",
    "CosineSign",
    "DecayComparison",
    "ExcessCorrelation",
    "ExcessPoint",
    "FitCostBin",
    "FitCostSlope",
    "FormatLRecord",
    "InertParameter",
    "ItemReferences",
    "LabelFormAgreement",
    "MeanMedianSD",
    "PairedExcess",
    "RandomComparison",
    "RandomDifference",
    "ReferencePoint",
    "RuleAgreement",
    "SignallingAnalysis",
    "TileExcess",
]


@dataclass(frozen=True)
class CoordinateCell:
    """One Table I cell: a chooser x scoring rule on the frozen analysis set. ``delta_*`` is the
    paired item bootstrap of ``post_norm`` minus the random reference (95 %, and at the
    Bonferroni ``bonferroni_level`` across all the cells); ``excess`` / ``consistency`` are
    over the ``excess_n_items`` items holding both stored permutations, a tied rendering scored
    by split credit (§I-H; ``excess_tied_items`` of them had one), ``None`` when no item holds
    both; ``excess_excluded_unpaired`` items lacked one of the two renderings.
    ``n_uncovered_rows`` counts the analysis-set renderings the chooser could not score (its
    source lacks the words), ``n_covered_items`` the items it scored of the
    ``n_analysis_items`` it was given, and ``partial_coverage`` says its run was allowed to
    score a subset (``--allow-partial-coverage``; §I-B otherwise refuses it)."""

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
    #: ``None``: not tested (fewer than ``MIN_ITEMS_CI`` items; the interval is NaN)
    delta_excludes_zero: bool | None
    delta_excludes_zero_bonferroni: bool | None
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
    condition: str = "4"
    delta_fit_vs_random: float = float("nan")
    delta_fit_low: float = float("nan")
    delta_fit_high: float = float("nan")
    delta_fit_excludes_zero: bool | None = False
    delta_fit_excludes_zero_bonferroni: bool | None = False
    random_to_salience: float = float("nan")
    salience_to_bayes: float = float("nan")
    share_o_fit_both: float | None = None
    n_covered_items: int = 0
    excess_n_items: int = 0
    excess_tied_items: int = 0
    excess_excluded_unpaired: int = 0
    n_analysis_items: int = 0
    partial_coverage: bool = False


@dataclass(frozen=True)
class PairedExcess:
    """Excess consistency over the marginal null from an item's two stored renderings
    (§IV-A), ties by split credit: ``n_items`` items hold both renderings (``tied_items`` of them
    with a tied one), ``excluded_unpaired`` miss one. Unavailable (no value, ``reason`` says
    why) when no item holds both or the menus differ in size."""

    available: bool
    n_items: int
    tied_items: int
    excluded_unpaired: int
    consistency: float | None = None
    marginal_null: float | None = None
    excess: float | None = None
    reason: str | None = None


@dataclass(frozen=True)
class ConditionMatch:
    """Two conditions' choices over the renderings they share (§IV-G): ``n_matched``
    renderings matched, ``unmatched`` in either set alone, the mean agreement of the chosen
    (tied) sets, the total-variation distance of the canonical choice distributions per menu
    size, and overall (``tvd``) only when every matched rendering has one menu size."""

    n_matched: int
    unmatched: int
    agreement: float
    tvd_by_menu_size: Mapping[int, float]
    tvd: float | None = None


@dataclass(frozen=True)
class ItemReferences:
    """One item's canonical per-option ``fit_norm`` / ``post_norm`` (eq. 5, 6), its ``o_fit``
    set and ``o_bayes``, and the coordinates of its three references: random (the mean over the
    option set, §I-H1), the salience pole (``o_fit``, a tie averaged) and the Bayes pole."""

    fit_norm: FloatArray
    post_norm: FloatArray
    fit_set: BoolArray
    o_bayes: int
    random_fit_norm: float
    random_post_norm: float
    salience_fit_norm: float
    salience_post_norm: float
    bayes_fit_norm: float
    bayes_post_norm: float


@dataclass(frozen=True)
class MeanMedianSD:
    """A per-item quantity over a cell's items: mean, median and SD (ddof 1; NaN for one)."""

    mean: float
    median: float
    sd: float


@dataclass(frozen=True)
class RandomDifference:
    """The paired, item-clustered bootstrap of a coordinate minus the random reference
    (§I-H2) at ``level``, and whether the interval excludes zero."""

    estimate: float
    low: float
    high: float
    level: float
    excludes_zero: bool


@dataclass(frozen=True)
class CellSummary:
    """One cell (one rule over the rows given; the caller's grouping): counts, each per-item
    quantity over items, the differences from random (also at the Bonferroni level when a cell
    count is given), the excess consistency and §IV-B's share of items at ``o_fit`` under both
    permutations. Table I's :class:`CoordinateCell` is built from it."""

    rule: str
    n_items: int
    n_renderings: int
    n_flat_rows: int
    n_uncovered_rows: int
    n_tied_renderings: int
    fit_norm: MeanMedianSD
    post_norm: MeanMedianSD
    agree_fit: MeanMedianSD
    agree_bayes: MeanMedianSD
    random_fit_norm: MeanMedianSD
    random_post_norm: MeanMedianSD
    random_agree_fit: MeanMedianSD
    random_agree_bayes: MeanMedianSD
    salience_post_norm: MeanMedianSD
    bayes_fit_norm: MeanMedianSD
    post_norm_minus_random: RandomDifference
    fit_norm_minus_random: RandomDifference
    excess_consistency: PairedExcess
    share_o_fit_both: float | None
    post_norm_minus_random_bonferroni: RandomDifference | None = None
    fit_norm_minus_random_bonferroni: RandomDifference | None = None


@dataclass(frozen=True)
class RandomComparison:
    """§IV-B counts over the model x rule cells only (reference choosers and conditions 1-3,
    6, 7 are not tested cells): how many are indistinguishable from random (95 % interval of
    the paired difference includes 0) and how many worse than random (interval entirely below
    0), on each axis, at 95 % and under Bonferroni across the ``n_cells`` model cells."""

    axis: str
    n_cells: int
    bonferroni_level: float
    indistinguishable: int
    indistinguishable_bonferroni: int
    worse: int
    worse_bonferroni: int
    below_random_mean: int


@dataclass(frozen=True)
class RuleAgreement:
    """§I-H: agreement between two scoring rules on the chosen option, one model, over the
    renderings of the analysis set (tied choices count as |A ∩ B| / (|A| |B|))."""

    chooser: str
    rule_a: str
    rule_b: str
    n_renderings: int
    agreement: float


@dataclass(frozen=True)
class TileExcess:
    """§IV-H3: excess over the marginal null per tile (conflict and control items, condition
    4, format V) for one chooser x rule, over the ``n_items`` items holding both permutations
    (``tied`` of them with a tied rendering, scored by split credit)."""

    chooser: str
    rule: str
    tile: str
    n_items: int
    consistency: float | None
    null: float | None
    excess: float | None
    tied: int = 0


@dataclass(frozen=True)
class LabelFormAgreement:
    """§IV-H4: agreement between the two label forms of format L, ``(A)`` and bare ``A``, on
    the canonical choice, per model x rule x tile."""

    chooser: str
    rule: str
    tile: str
    n_renderings: int
    agreement: float


@dataclass(frozen=True)
class InertParameter:
    """§IV-H5: a parameter swept over ``values`` whose argmax cannot move: the share of
    (rendering) cells whose chosen option is identical across the sweep."""

    chooser: str
    parameter: str
    values: tuple[float, ...]
    n_cells: int
    identical_share: float


@dataclass(frozen=True)
class CosineSign:
    """§IV-H1: the share of negative entries in condition 1's cosine hypothesis matrix
    (option x (Means, Clue) pair, pair minimum), over the renderings scored; the paper: 12.1 %."""

    chooser: str
    n_renderings: int
    negative_share: float


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
class BatchFlip:
    """Batch-1 against batched scoring of one model (§I-K: the size tile is scored at batch
    size 1): over the ``n`` renderings of ``tile`` both runs hold, the share whose chosen
    canonical option set under ``rule`` differs, and the largest change of a raw score."""

    model: str
    rule: str
    tile: str
    n: int
    flipped: int
    flip_rate: float
    max_abs_score_change: float


@dataclass(frozen=True)
class FormatLRecord:
    """Format L (§IV-H4) for one model x rule x tile x label form: permutation consistency
    against its marginal null over the ``n`` items holding both permutations (``tied`` of them
    with a tied rendering, scored by split credit), and the letter prior
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
    count and status, and the manifest as stored. ``batch_of`` names the batched model of a
    batch-1 arm, which is read beside that model (flip rate) and is never a cell."""

    source: str
    run: str
    chooser: str
    kind: str
    rules: tuple[str, ...]
    n_rows: int
    status: str | None
    items_hash: str
    manifest: Manifest
    condition: str = "4"
    batch_of: str | None = None
    #: analysis-set items the run was given, and those it could score (an association source
    #: without the words scores fewer; one that scores none has no Table I cell)
    n_analysis_items: int = 0
    n_covered_items: int = 0


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
    random_comparison: tuple[RandomComparison, ...] = ()
    rule_agreement: tuple[RuleAgreement, ...] = ()
    tile_excess: tuple[TileExcess, ...] = ()
    label_forms: tuple[LabelFormAgreement, ...] = ()
    inert: tuple[InertParameter, ...] = ()
    cosine_sign: tuple[CosineSign, ...] = ()
    fit_cost_gaussian: tuple[FitCostBin, ...] = ()
    slopes_gaussian: tuple[FitCostSlope, ...] = ()
    batch_flips: tuple[BatchFlip, ...] = ()
