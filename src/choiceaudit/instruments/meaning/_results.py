"""Typed, frozen results of the meaning analysis (what :func:`analyse_meaning` and
:func:`~choiceaudit.instruments.meaning.analyse_meaning_runs` return, and all the report reads).

Keyed results (per family, language, variant, cue) are ``Mapping`` fields in a fixed order: the
ladder's families in the paper's order (:data:`~choiceaudit.instruments.meaning.FAMILIES`), then
any others sorted; conditions and languages sorted. Every class is built once by the analysis and
never changed; the mappings are plain dicts, not to be mutated. ``None`` marks a value the rows
cannot give (a model without a confidence head, a variant without comparable pairs).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from choiceaudit.instruments.meaning._config import MeaningConfig
from choiceaudit.instruments.meaning._item_results import Descriptives, ItemValues
from choiceaudit.types import Manifest, Skipped

__all__ = [
    "Agreement",
    "ArmAnalysis",
    "ArmInfo",
    "Calibration",
    "ChoiceCheck",
    "CueFree",
    "CueStratum",
    "Decomposition",
    "ExampleRow",
    "HookSplit",
    "Interval",
    "LadderAnalysis",
    "LanguageAnalysis",
    "MeaningAnalysis",
    "ModelContrast",
    "O4Control",
    "OptionAblation",
    "OrderAudit",
    "OutcomeConfidence",
    "OutputDistribution",
    "PairedContrast",
    "PairingCheck",
    "PermutationTravel",
    "ReliabilityBins",
    "Retention",
    "RiskCoverage",
    "SubsetDrift",
    "SurfaceAgreement",
    "UnitIntegrity",
]


@dataclass(frozen=True)
class Interval:
    """A mean with its 95% item-clustered percentile bootstrap interval."""

    estimate: float
    low: float
    high: float
    n_rows: int
    n_items: int

    def to_columns(self, name: str, *, bounds: str | None = None) -> dict[str, float]:
        """The interval as report columns: ``name`` (the estimate), then ``{bounds}_low`` and
        ``{bounds}_high`` (``bounds`` defaults to ``name``)."""
        stem = name if bounds is None else bounds
        return {name: self.estimate, f"{stem}_low": self.low, f"{stem}_high": self.high}

    @classmethod
    def from_dict(cls, cell: Mapping[str, Any]) -> Interval:
        return cls(
            estimate=float(cell["estimate"]),
            low=float(cell["low"]),
            high=float(cell["high"]),
            n_rows=int(cell["n_rows"]),
            n_items=int(cell["n_items"]),
        )


@dataclass(frozen=True)
class PairedContrast:
    """``a − b`` on the items both cells share: exact McNemar on unique-argmax outcomes
    (``mcnemar_b``, ``mcnemar_c`` discordant counts) and a paired bootstrap interval."""

    n_items: int
    a: float
    b: float
    difference: float
    low: float
    high: float
    mcnemar_b: int
    mcnemar_c: int
    mcnemar_p: float
    n_tied_excluded: int
    #: the McNemar p-value times the number of contrasts tested together (capped at 1), and
    #: that number; ``n_tests`` 1 means the contrast was tested alone
    mcnemar_p_bonferroni: float | None = None
    n_tests: int = 1

    def reversed(self) -> PairedContrast:
        """The same contrast read as ``b − a``: sides, discordant counts and the difference's
        sign swapped, the interval's ends swapped and negated (the p-values are symmetric)."""
        return dataclasses.replace(
            self,
            a=self.b,
            b=self.a,
            difference=-self.difference,
            low=-self.high,
            high=-self.low,
            mcnemar_b=self.mcnemar_c,
            mcnemar_c=self.mcnemar_b,
        )

    def to_columns(self, name: str, *, bounds: str | None = None) -> dict[str, float]:
        """The difference as report columns: ``name``, then ``{bounds}_low`` and
        ``{bounds}_high`` (``bounds`` defaults to ``name``)."""
        stem = name if bounds is None else bounds
        return {name: self.difference, f"{stem}_low": self.low, f"{stem}_high": self.high}

    def adjusted(self, n_tests: int) -> PairedContrast:
        """This contrast with its Bonferroni-adjusted p-value for ``n_tests`` tests."""
        return dataclasses.replace(
            self, mcnemar_p_bonferroni=min(1.0, self.mcnemar_p * n_tests), n_tests=n_tests
        )

    @classmethod
    def from_dict(cls, c: Mapping[str, Any]) -> PairedContrast:
        return cls(
            n_items=int(c["n_items"]),
            a=float(c["a"]),
            b=float(c["b"]),
            difference=float(c["difference"]),
            low=float(c["low"]),
            high=float(c["high"]),
            mcnemar_b=int(c["mcnemar_b"]),
            mcnemar_c=int(c["mcnemar_c"]),
            mcnemar_p=float(c["mcnemar_p"]),
            n_tied_excluded=int(c["n_tied_excluded"]),
        )


@dataclass(frozen=True)
class Decomposition:
    """Gold / literal / other shares of the choices on literal-bearing rows (sum to 1, §5.1)."""

    gold: float
    literal: float
    other: float
    n_rows: int


@dataclass(frozen=True)
class OutcomeConfidence:
    """Mean confidence when the choice is correct, incorrect, or the literal gloss (NaN where
    no row has that outcome)."""

    correct: float
    incorrect: float
    captured: float

    def items(self) -> tuple[tuple[str, float], ...]:
        return (("correct", self.correct), ("incorrect", self.incorrect),
                ("captured", self.captured))  # fmt: skip


@dataclass(frozen=True)
class ReliabilityBins:
    """Non-empty equal-width reliability bins: rows, mean confidence and accuracy per bin."""

    n_rows: tuple[int, ...]
    confidence: tuple[float, ...]
    accuracy: tuple[float, ...]


@dataclass(frozen=True)
class Calibration:
    """Calibration and selective prediction of one cell, confidence = peak probability
    (Appendix F); the ``conf_head_*`` fields are ``None`` unless every row has a head."""

    n_rows: int
    accuracy: float
    ece: float
    ece_mass: float
    brier: float
    brier_uniform: float
    aurc: float
    aurc_random: float
    augrc: float
    augrc_random: float
    #: coverage formatted ``"0.05"`` … ``"1.00"`` → accuracy on that most confident share
    selective_accuracy: Mapping[str, float]
    confidence_by_outcome: OutcomeConfidence
    reliability: ReliabilityBins
    conf_head_rows: int
    conf_head_by_outcome: OutcomeConfidence | None = None
    conf_head_aurc: float | None = None
    conf_head_augrc: float | None = None

    @classmethod
    def from_dict(cls, c: Mapping[str, Any]) -> Calibration:
        def outcome(d: Mapping[str, float]) -> OutcomeConfidence:
            return OutcomeConfidence(d["correct"], d["incorrect"], d["captured"])

        rel = c["reliability"]
        head = c.get("conf_head_by_outcome")
        return cls(
            n_rows=int(c["n_rows"]),
            accuracy=c["accuracy"],
            ece=c["ece"],
            ece_mass=c["ece_mass"],
            brier=c["brier"],
            brier_uniform=c["brier_uniform"],
            aurc=c["aurc"],
            aurc_random=c["aurc_random"],
            augrc=c["augrc"],
            augrc_random=c["augrc_random"],
            selective_accuracy=dict(c["selective_accuracy"]),
            confidence_by_outcome=outcome(c["confidence_by_outcome"]),
            reliability=ReliabilityBins(
                tuple(rel["n_rows"]), tuple(rel["confidence"]), tuple(rel["accuracy"])
            ),
            conf_head_rows=int(c["conf_head_rows"]),
            conf_head_by_outcome=None if head is None else outcome(head),
            conf_head_aurc=c.get("conf_head_aurc"),
            conf_head_augrc=c.get("conf_head_augrc"),
        )


@dataclass(frozen=True)
class RiskCoverage:
    """Points of one risk–coverage curve (at most ``max_points`` of them, evenly spaced over the
    full curve) and the random gate's flat risk."""

    coverage: tuple[float, ...]
    selective_risk: tuple[float, ...]
    random_gate: float


@dataclass(frozen=True)
class OutputDistribution:
    """Shape of the returned vectors (Appendix H, Table 12)."""

    mean_peak: float
    share_peak_over_0_95: float
    mean_normalized_entropy: float


@dataclass(frozen=True)
class CueStratum:
    """LAR on d-lit with and without one construction cue (§5.6); a side with no row has
    ``lar`` NaN, ``n`` 0 and no interval."""

    lar_with: float
    n_with: int
    lar_without: float
    n_without: int
    difference: float
    with_interval: Interval | None = None
    without_interval: Interval | None = None
    #: 95% bootstrap interval of ``difference`` (items resampled within each side)
    difference_low: float = math.nan
    difference_high: float = math.nan


@dataclass(frozen=True)
class ChoiceCheck:
    """The returned ``choice`` against the argmax of the returned vector, per
    cell: rows with a returned choice, rows whose choice is not in the argmax, and accuracy / LAR
    read from ``choice`` beside the argmax reading (LAR NaN where the cell has no literal)."""

    n_rows_with_choice: int
    n_choice_not_argmax: int
    accuracy_argmax: float
    accuracy_choice: float
    lar_argmax: float
    lar_choice: float


@dataclass(frozen=True)
class CueFree:
    """Table 3's last block: LAR and accuracy on d-lit items with neither lexical cue (multi-word,
    literal gloss not containing the idiom, no English parenthetical), with the length split."""

    lar: Interval
    accuracy: Interval
    mean_literal_chars: float
    mean_other_chars: float
    longest: CueStratum | None


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
    risk_coverage: Mapping[str, RiskCoverage]
    lar_by_length_d_lit: Mapping[str, Interval] = field(default_factory=dict)
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
    mcnemar_b: int | None = None
    mcnemar_c: int | None = None
    mcnemar_p: float | None = None
    #: item level (the project's addition; the paper prints the pair level above): each item's
    #: canonical row against its first alternative (alt1)
    items_paired: int | None = None
    accuracy_canonical_items: float | None = None
    accuracy_alternative_items: float | None = None
    mcnemar_p_items: float | None = None
    #: per pair: both canonical choices, agreement, JS divergence, both correctness credits
    items: ItemValues | None = None


@dataclass(frozen=True)
class Agreement:
    """Agreement of a variant's chosen gloss with the intact one, on untied pairs."""

    n_pairs: int
    agreement: float
    n_tied_excluded: int
    interval: Interval | None = None


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
class Retention:
    """E6: accuracy of one option form and the signal it retains, (acc − 1/k) / (acc_o0 − 1/k)
    (NaN without o0 or when o0 sits at chance)."""

    accuracy: Interval
    signal_retained: float


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
class PermutationTravel:
    """Table 22: how far one option's own probability travels across the orderings."""

    median_travel: float
    mean_travel: float
    max_travel: float
    threshold: float
    share_at_or_below: float
    share_identical: float


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
class SubsetDrift:
    """Appendix O: one arm's accuracy per family on a subset (another arm's items) against its
    own full set."""

    arm: str
    subset_of: str
    family: str
    full: Interval
    subset: Interval
    drift: float
    outside_full_interval: bool


@dataclass(frozen=True)
class ExampleRow:
    """One item exactly as a model received it (Tables 6, 11, 13): state, keyed options with
    each option's role, the returned probabilities and the chosen key."""

    model: str
    experiment: str
    condition: str
    item_id: str
    language: str
    state: str
    instruction_language: str
    options: tuple[tuple[str, str, str, float], ...]
    choice: str


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


@dataclass(frozen=True)
class ArmInfo:
    """One arm as given: its label (``display`` disambiguates equal labels with the run
    directory's name), where it came from, its manifest, its row count, and its analysis
    (``None`` for an arm with no rows yet)."""

    label: str
    display: str
    source: str
    manifest: Manifest
    n_rows: int
    analysis: ArmAnalysis | None
    #: the language of this arm's single-language experiments (E1, E2, E3, E6, E7) and, where one
    #: run holds several ladders in a language, the block of the ladder this part carries
    language: str = ""
    block: str = ""
    #: rows whose returned ``choice`` is not the argmax of the returned vector
    n_choice_not_argmax: int = 0

    @property
    def config(self) -> MeaningConfig:
        return MeaningConfig.from_json(self.manifest.config)

    def ladder_accuracy(self) -> dict[str, float]:
        """Plain accuracy (no interval) per ladder family, in the ladder's order."""
        e1 = None if self.analysis is None else self.analysis.e1
        return {} if e1 is None else {f: cell.estimate for f, cell in e1.accuracy.items()}

    def lar_d_lit(self) -> float:
        """LAR on d-lit (NaN without d-lit)."""
        e1 = None if self.analysis is None else self.analysis.e1
        cell = None if e1 is None else e1.lar.get("d-lit")
        return math.nan if cell is None else cell.estimate


@dataclass(frozen=True)
class ModelContrast:
    """Two arms on one ladder family: accuracy (``measure="accuracy"``) or LAR (``"lar"``) of
    ``model_a − model_b`` on the items both answered."""

    model_a: str
    model_b: str
    family: str
    measure: str
    contrast: PairedContrast


@dataclass(frozen=True)
class PairingCheck:
    """On the rows two arms share (by experiment, condition, item), the share with identical gold
    slot, literal slot, state and options; the shares are ``None`` when no row is shared."""

    model_a: str
    model_b: str
    n_shared: int
    gold_slot: float | None = None
    literal_slot: float | None = None
    state: float | None = None
    options: float | None = None


@dataclass(frozen=True)
class MeaningAnalysis:
    """The meaning analysis of several arms answering one plan: every arm (in the order given),
    the paired model contrasts and pairing checks between every pair of analysed arms, the
    ladder's families over all arms in the paper's order, and every analysis skipped, with the
    reason."""

    arms: tuple[ArmInfo, ...]
    model_contrasts: tuple[ModelContrast, ...]
    pairing: tuple[PairingCheck, ...]
    families: tuple[str, ...]
    skipped: tuple[Skipped, ...]
    subset_drift: tuple[SubsetDrift, ...] = ()
    examples: tuple[ExampleRow, ...] = ()

    @property
    def analysed(self) -> tuple[ArmInfo, ...]:
        """The arms with rows (and so an analysis)."""
        return tuple(a for a in self.arms if a.analysis is not None)

    def summary(self) -> list[dict[str, Any]]:
        """Per analysed arm (its display label names the language): ``model``, ``rows``, plain
        accuracy per ladder family and ``"LAR d-lit"`` (NaN without d-lit), and
        ``"choice≠argmax"`` where the server's choice disagreed with its vector, with the
        accuracy per family and LAR read from the returned choice (``"<family> (choice)"``,
        ``"LAR d-lit (choice)"``): what ``choiceaudit run meaning`` prints."""
        out = []
        for a in self.analysed:
            record: dict[str, Any] = {"model": a.display, "rows": a.n_rows, **a.ladder_accuracy(),
                                      "LAR d-lit": a.lar_d_lit()}  # fmt: skip
            checks = (
                {} if a.analysis is None or a.analysis.e1 is None else a.analysis.e1.choice_check
            )
            if a.n_choice_not_argmax:
                record["choice≠argmax"] = a.n_choice_not_argmax
                # the headline read from the returned choice, beside the argmax reading above
                for family, check in checks.items():
                    record[f"{family} (choice)"] = check.accuracy_choice
                if "d-lit" in checks:
                    record["LAR d-lit (choice)"] = checks["d-lit"].lar_choice
            out.append(record)
        return out
