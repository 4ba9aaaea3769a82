"""Typed, frozen results of one arm's meaning analysis, one class per experiment (E1 the
ladder, E2 surface forms, E3 unit integrity, E4 and the capture matrix by language, E6 option
ablation, E7 the order audit) and :class:`ArmAnalysis`, which holds them: what
:func:`~choiceaudit.instruments.meaning.analyse_meaning` returns.

Keyed results (per family, language, variant, cue) are ``Mapping`` fields in a fixed order: the
ladder's families in the paper's order (:data:`~choiceaudit.instruments.meaning.FAMILIES`), then
any others sorted; conditions and languages sorted. Every class is built once by the analysis and
never changed; the mappings are plain dicts, not to be mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from choiceaudit import metrics
from choiceaudit.instruments.meaning._item_results import Descriptives, ItemValues
from choiceaudit.instruments.meaning._results import (
    Agreement,
    Calibration,
    ChoiceCheck,
    CueFree,
    CueStratum,
    Decomposition,
    Interval,
    OutputDistribution,
    PairedContrast,
    PermutationTravel,
    Retention,
)

__all__ = [
    "ArmAnalysis",
    "HookSplit",
    "LadderAnalysis",
    "LanguageAnalysis",
    "O4Control",
    "OptionAblation",
    "OrderAudit",
    "SurfaceAgreement",
    "UnitIntegrity",
]


@dataclass(frozen=True)
class LadderAnalysis:
    """E1: the distractor ladder (§4.2, §5.1–§5.3, Appendices E, F, H, J, Q)."""

    accuracy: Mapping[str, Interval]
    #: LAR per literal-bearing family (d-lit, d-hard)
    lar: Mapping[str, Interval]
    #: gold / literal / other per literal-bearing family
    decomposition: Mapping[str, Decomposition]
    calibration: Mapping[str, Calibration]
    output_distribution: Mapping[str, OutputDistribution]
    #: d-rand − family, for every other family (empty without d-rand)
    contrast_vs_d_rand: Mapping[str, PairedContrast]
    #: share of selections per display slot, pooled over the ladder (ties split)
    slot_shares: tuple[float, ...]
    #: risk–coverage curves of the two families Figure 4 compares (d-rand, d-lit), where present
    risk_coverage: Mapping[str, metrics.RiskCoveragePoints]
    lar_by_length_d_lit: Mapping[str, Interval] = field(default_factory=dict)
    #: families with no d-rand − family contrast, and why (no item shared with d-rand); the
    #: Bonferroni count is over the contrasts made
    not_contrasted: Mapping[str, str] = field(default_factory=dict)
    cue_strata_d_lit: Mapping[str, CueStratum] = field(default_factory=dict)
    #: Table 1: mean returned p(gold) per family and mean p(literal) per literal-bearing family
    mean_p_gold: Mapping[str, float] = field(default_factory=dict)
    mean_p_literal: Mapping[str, float] = field(default_factory=dict)
    #: Table 2: calibration of d-lit and d-hard pooled (confidence by outcome, peak and head)
    literal_pooled: Calibration | None = None
    #: Appendix G: LAR on d-lit by the corpus's frequency label
    lar_by_frequency_d_lit: Mapping[str, Interval] = field(default_factory=dict)
    #: §5.6 / Table 3: the cue-free subset of d-lit
    cue_free_d_lit: CueFree | None = None
    #: Table 17 lower block: accuracy with and without an English parenthetical in the literal
    #: gloss, on the families with no literal option
    parenthetical_accuracy: Mapping[str, CueStratum] = field(default_factory=dict)
    #: returned choice vs argmax per family (empty when no row carries a returned choice)
    choice_check: Mapping[str, ChoiceCheck] = field(default_factory=dict)
    language: str = ""
    block: str = ""


@dataclass(frozen=True)
class SurfaceAgreement:
    """E2 (Appendix N): canonical vs alternative surface form; the optional fields are ``None``
    when no pair exists (``n_pairs`` 0)."""

    n_pairs: int
    agreement: float
    n_tied_excluded: int
    n_items: int | None = None
    agreement_item_mean: float | None = None
    mean_js_divergence: float | None = None
    accuracy_canonical: float | None = None
    accuracy_alternative: float | None = None
    #: pairs whose canonical form is right and alternative wrong (b), the reverse (c), and
    #: right on both, among the pairs whose credit is whole on both members (a tie's split
    #: credit is neither right nor wrong)
    mcnemar_b: int | None = None
    mcnemar_c: int | None = None
    mcnemar_p: float | None = None
    both_correct: int | None = None
    #: item level (the project's addition; the paper prints the pair level above): each item's
    #: canonical row against its first alternative (alt1)
    items_paired: int | None = None
    accuracy_canonical_items: float | None = None
    accuracy_alternative_items: float | None = None
    mcnemar_p_items: float | None = None
    #: per pair: both canonical choices, agreement, JS divergence, both correctness credits
    items: ItemValues | None = None


@dataclass(frozen=True)
class UnitIntegrity:
    """E3 (Appendix M): accuracy per variant and agreement with the intact (v0) answer."""

    accuracy: Mapping[str, Interval]
    agreement_with_intact: Mapping[str, Agreement]
    #: v_k − v0 on accuracy, exact McNemar, Bonferroni over the variants contrasted
    contrast_vs_intact: Mapping[str, PairedContrast] = field(default_factory=dict)
    #: rows whose perturbation returned the intact string, per variant (excluded above)
    n_identity_excluded: Mapping[str, int] = field(default_factory=dict)
    #: variants with no v0 contrast, and why (no item shared with the intact rows: an
    #: interrupted run); the arm's analysis lists each as skipped
    not_contrasted: Mapping[str, str] = field(default_factory=dict)
    #: per item and variant: intact and variant choice, agreement, correctness
    items: ItemValues | None = None


@dataclass(frozen=True)
class HookSplit:
    """Table 16 on the capture matrix: LAR of each language cell on items whose Bengali literal
    gloss shares a content word with the idiom (hook) and on the rest, and the language gap
    (first − second language) on all items and on hook-absent items."""

    lar_hook: Mapping[str, float]
    lar_no_hook: Mapping[str, float]
    n_hook: int
    n_no_hook: int
    gap_all: PairedContrast | None
    gap_no_hook: PairedContrast | None


@dataclass(frozen=True)
class LanguageAnalysis:
    """E4 and the capture matrix: accuracy (and, for the matrix, LAR) and calibration per
    language, and the paired contrast ``a − b`` when there are exactly two languages (on
    accuracy for E4, on LAR for the matrix)."""

    accuracy: Mapping[str, Interval]
    lar: Mapping[str, Interval]
    calibration: Mapping[str, Calibration]
    contrast_languages: tuple[str, str] | None = None
    contrast: PairedContrast | None = None
    #: why there is no contrast though there are two languages (no item asked in both)
    not_contrasted: str | None = None
    hook: HookSplit | None = None
    #: for an E4 read from two ladder blocks (the commercial arm's Bengali control and English
    #: ceiling, d-rand on shared items): the two blocks; empty for an E4 asked as its own block
    built_from: tuple[str, ...] = ()

    @property
    def contrast_label(self) -> str | None:
        """``"<a>_minus_<b>"`` for the contrast, ``None`` without one."""
        if self.contrast_languages is None:
            return None
        return f"{self.contrast_languages[0]}_minus_{self.contrast_languages[1]}"


@dataclass(frozen=True)
class O4Control:
    """The semantics-free control o4 (§5.3): its calibration and the overconfidence gap,
    mean peak probability − accuracy, with its interval."""

    calibration: Calibration
    overconfidence_gap: Interval

    @property
    def accuracy(self) -> float:
        return self.calibration.accuracy

    @property
    def mean_confidence(self) -> float:
        return self.calibration.accuracy + self.overconfidence_gap.estimate


@dataclass(frozen=True)
class OptionAblation:
    """E6 (Appendix P): signal retention per option form, and the o4 control where present."""

    signal_retention: Mapping[str, Retention]
    o4: O4Control | None = None
    #: mean confidence head per option form (§5.3: the presence field, o4 against o0)
    mean_conf_head: Mapping[str, float] = field(default_factory=dict)
    #: o2 rows none of whose options has another word order (excluded above)
    n_identity_excluded: Mapping[str, int] = field(default_factory=dict)
    language: str = ""
    block: str = ""
    #: per item and option form: correctness, peak probability, confidence head
    items: ItemValues | None = None


@dataclass(frozen=True)
class OrderAudit:
    """E7 (Appendix Q, Tables 21–22) over the items seen under all k! orderings."""

    n_items: int
    n_incomplete_items_excluded: int
    answer_instability: float
    mean_distinct_choices: float
    mean_gold_prob_range: float
    selection_spread: float
    slot_shares: tuple[float, ...]
    permutation_audit: PermutationTravel
    #: ``slot`` (A–D bound to display slots, the paper's E7) or ``travelling`` (keys move with
    #: their options: position only)
    key_binding: str = "slot"
    #: the same items with travelling keys, beside the slot-bound audit (None if not run)
    travelling: OrderAudit | None = None
    language: str = ""
    block: str = ""
    #: Figure 12 left: items that chose 1, 2, … k distinct glosses across their orderings
    distinct_choice_counts: tuple[int, ...] = ()
    #: the accepted |Σp − 1| of the vectors as returned, and the largest one read
    sum_tolerance: float = 0.02
    max_sum_deviation: float = 0.0
    #: per item: gold canonical index, distinct choices, unstable, p(gold) range, travel
    items: ItemValues | None = None


@dataclass(frozen=True)
class ArmAnalysis:
    """Every analysis one arm's rows support; ``None`` for an experiment the rows lack (or, for
    E7, one without a complete item: see :attr:`MeaningAnalysis.skipped`)."""

    n_rows: int
    k: int
    language: str = ""
    e1: LadderAnalysis | None = None
    e2: SurfaceAgreement | None = None
    e3: UnitIntegrity | None = None
    e4: LanguageAnalysis | None = None
    e6: OptionAblation | None = None
    e7: OrderAudit | None = None
    matrix: LanguageAnalysis | None = None
    #: Appendix H / J descriptives of the part's rows
    descriptives: Descriptives | None = None

    @property
    def chance(self) -> float:
        """1/k: the no-information accuracy and the no-bias slot share."""
        return 1.0 / self.k

    def experiments(self) -> tuple[str, ...]:
        """The experiments analysed, in the order e1, e2, e3, e4, e6, e7, matrix."""
        names = ("e1", "e2", "e3", "e4", "e6", "e7", "matrix")
        return tuple(name for name in names if getattr(self, name) is not None)
