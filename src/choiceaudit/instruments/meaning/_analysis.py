"""The ladder, literal attraction, calibration and paired contrasts (the meaning paper, §4.2–§5.3,
Appendices E, F, H).

Every interval is a 95% percentile bootstrap over items, 2,000 resamples, seed 0 (§4.3, Appendix
R, "Statistics"): rows of one item are resampled together (``clusters=item_id``). Outcomes use
tied-set credit (:func:`~choiceaudit.instruments.meaning._rows.choice_credit`). The calibration
and selective-prediction measures are the shared ones of :mod:`choiceaudit.metrics`, read with
the maximum of the vector as returned as the confidence (Appendix A). Every function returns the
frozen result type the analysis keeps (:mod:`._results`).

* accuracy — credit on the gold option; chance is 1/k = 0.250.
* ``literal_attraction_rate`` (LAR, §4.2) — credit on the expression's own literal gloss, over
  rows whose list carries it. It is not 1 − accuracy: it isolates literal errors.
* decomposition — gold / literal / other shares under a literal-bearing family (§5.1).
* calibration (§5.2, Appendix F) — ECE over 15 equal-width bins and the equal-mass variant,
  multiclass Brier against its uniform reference 1 − 1/k (0.750), AURC and AUGRC against their
  random gates (the error rate and half of it), selective accuracy at fixed coverages, confidence
  by outcome (correct / incorrect / captured) and reliability-diagram bins, with the maximum
  probability as confidence and, where the model has one, the separate head ``conf_head``
  alongside (its outcome split, AURC and AUGRC).
* LAR by stratum (Appendix G, J) — per item-level label, e.g. frequency or idiom length.
* output distributions (Appendix H) — mean peak probability, share of peaks above 0.95, mean
  normalised entropy.
* paired contrasts — exact McNemar on items both conditions share (a row counts as correct only
  when the gold is the unique argmax; tied rows are counted) and a paired bootstrap interval on
  the per-item difference of credit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from choiceaudit import metrics, stats
from choiceaudit.errors import AnalysisError
from choiceaudit.instruments.meaning._contract import FAMILIES
from choiceaudit.instruments.meaning._results import (
    Calibration,
    Decomposition,
    Interval,
    OutcomeConfidence,
    OutputDistribution,
    PairedContrast,
)
from choiceaudit.instruments.meaning._rows import MeaningRows

# The coverages of the selective-accuracy table (Appendix F quotes 5%, 10% and 35%) are the
# shared metrics' own, so the meaning and plain-scoring tables read at the same points.
from choiceaudit.metrics import COVERAGES
from choiceaudit.types import FloatArray

__all__ = [
    "BOOTSTRAP_SEED",
    "COVERAGES",
    "N_RESAMPLES",
    "accuracy_by",
    "calibration",
    "decomposition",
    "interval",
    "lar_by_stratum",
    "length_strata",
    "literal_attraction_rate",
    "output_distribution",
    "overconfidence_gap",
    "paired_contrast",
]

N_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def interval(
    values: FloatArray,
    clusters: npt.ArrayLike,
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Interval:
    """Mean of ``values`` with its item-clustered percentile bootstrap interval."""
    result = stats.bootstrap_ci(
        values, statistic="mean", n_resamples=n_resamples, clusters=clusters, seed=seed
    )
    return Interval.of(result, n_rows=len(values))


def _order(values: Sequence[str]) -> list[str]:
    known = [f for f in FAMILIES if f in values]
    return known + sorted(v for v in set(values) if v not in FAMILIES)


def accuracy_by(
    rows: MeaningRows,
    column: str = "family",
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, Interval]:
    """Accuracy with its interval for each value of ``column`` (the ladder: ``family``)."""
    values = getattr(rows, column)
    out = {}
    for value in _order([str(v) for v in np.unique(values)]):
        sub = rows.select(values == value)
        out[value] = interval(sub.correct, sub.item_id, n_resamples=n_resamples, seed=seed)
    return out


def _literal_rows(rows: MeaningRows) -> MeaningRows:
    sub = rows.select(rows.literal_slot >= 0)
    if len(sub) == 0:
        raise AnalysisError("no row carries a literal gloss: LAR is defined on d-lit / d-hard only")
    return sub


def literal_attraction_rate(
    rows: MeaningRows, *, n_resamples: int = N_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> Interval:
    """LAR = (1/N) Σ 1[argmax_o p_i(o) = ℓ_i] over rows carrying the literal gloss (§4.2)."""
    sub = _literal_rows(rows)
    return interval(sub.captured, sub.item_id, n_resamples=n_resamples, seed=seed)


def decomposition(rows: MeaningRows) -> Decomposition:
    """Gold / literal / other shares of the choices on literal-bearing rows (sum to 1)."""
    sub = _literal_rows(rows)
    gold = float(sub.correct.mean())
    literal = float(sub.captured.mean())
    return Decomposition(gold=gold, literal=literal, other=1.0 - gold - literal, n_rows=len(sub))


def _by_outcome(
    split: metrics.SelectiveScores, confidence: FloatArray, rows: MeaningRows
) -> OutcomeConfidence:
    """The shared correct / incorrect split, with the mean confidence on literal choices beside
    it (§5.2, Table 2: the literal capture is the meaning paper's third outcome)."""
    captured = rows.captured
    weight = float(captured.sum())
    return OutcomeConfidence(
        correct=split.mean_confidence_correct,
        incorrect=split.mean_confidence_incorrect,
        captured=float((confidence * captured).sum() / weight) if weight > 0 else math.nan,
    )


def calibration(
    rows: MeaningRows, *, n_bins: int = 15, coverages: Sequence[float] = COVERAGES
) -> Calibration:
    """Calibration and selective prediction of one cell (Appendix F; see the module docstring)."""
    correct = rows.correct
    peak = rows.peak
    scores = metrics.calibration_scores(rows.probs, rows.gold_slot, n_bins=n_bins)
    selective = metrics.selective_scores(peak, correct, coverages=coverages)
    has_head = ~np.isnan(rows.conf_head)
    head = (
        metrics.selective_scores(rows.conf_head, correct, coverages=coverages)
        if has_head.all()
        else None
    )
    return Calibration(
        n_rows=len(rows),
        accuracy=float(correct.mean()),
        ece=scores.ece,
        ece_mass=scores.ece_mass,
        brier=scores.brier,
        brier_uniform=1.0 - 1.0 / rows.k,
        aurc=selective.aurc,
        aurc_random=selective.aurc_random,
        augrc=selective.augrc,
        augrc_random=selective.augrc_random,
        selective_accuracy=selective.selective_accuracy,
        confidence_by_outcome=_by_outcome(selective, peak, rows),
        reliability=metrics.reliability(rows.probs, rows.gold_slot, n_bins=n_bins),
        conf_head_rows=int(has_head.sum()),
        conf_head_by_outcome=None if head is None else _by_outcome(head, rows.conf_head, rows),
        conf_head_aurc=None if head is None else head.aurc,
        conf_head_augrc=None if head is None else head.augrc,
    )


def lar_by_stratum(
    rows: MeaningRows,
    strata: Mapping[str, str],
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, Interval]:
    """LAR per item-level stratum (Appendix G: the corpus's frequency label; Appendix J: idiom
    length), ``strata`` mapping item id to its label; items without a label are counted under
    ``"(none)"``."""
    sub = _literal_rows(rows)
    labels = np.array([strata.get(str(i), "(none)") for i in sub.item_id.tolist()])
    out = {}
    for label in sorted(set(labels.tolist())):
        part = sub.select(labels == label)
        out[label] = interval(part.captured, part.item_id, n_resamples=n_resamples, seed=seed)
    return out


def length_strata(rows: MeaningRows, *, top: int = 4) -> dict[str, str]:
    """Item id → whitespace word count of its state, ``"4+"`` from ``top`` words (Appendix J)."""
    out: dict[str, str] = {}
    for item, state in zip(rows.item_id.tolist(), rows.state.tolist(), strict=True):
        n = len(str(state).split())
        out[str(item)] = f"{top}+" if n >= top else str(n)
    return out


def output_distribution(rows: MeaningRows) -> OutputDistribution:
    """Shape of the returned vectors (Appendix H, Table 12)."""
    entropy = np.atleast_1d(stats.normalized_entropy(rows.probs))
    return OutputDistribution(
        mean_peak=float(rows.peak.mean()),
        share_peak_over_0_95=float((rows.peak > 0.95).mean()),
        mean_normalized_entropy=float(np.mean(entropy)),
    )


def overconfidence_gap(
    rows: MeaningRows, *, n_resamples: int = N_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> Interval:
    """Mean peak probability minus accuracy (§5.3, the o4 control): a lower bound on ECE."""
    return interval(rows.peak - rows.correct, rows.item_id, n_resamples=n_resamples, seed=seed)


def paired_contrast(
    rows_a: MeaningRows,
    rows_b: MeaningRows,
    *,
    outcome: str = "correct",
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> PairedContrast:
    """``a − b`` on the items both share (one row per item each): exact McNemar on the items
    whose outcome is whole on both sides (credit 0 or 1; a tie that shares the credited option
    is left out and counted in ``n_tied_excluded``) and a paired bootstrap interval on the
    per-item credit difference.

    ``outcome`` is ``"correct"`` (accuracy) or ``"captured"`` (LAR)."""
    index_a = _one_row_per_item(rows_a, "a")
    index_b = _one_row_per_item(rows_b, "b")
    shared = sorted(set(index_a) & set(index_b))
    if not shared:
        raise AnalysisError("the two cells share no item")
    ia = np.array([index_a[i] for i in shared])
    ib = np.array([index_b[i] for i in shared])
    va = getattr(rows_a, outcome)[ia]
    vb = getattr(rows_b, outcome)[ib]
    unique = (va == 0) | (va == 1)
    unique &= (vb == 0) | (vb == 1)
    test = stats.mcnemar_exact(va[unique] == 1, vb[unique] == 1)
    diff = stats.paired_bootstrap_ci(va, vb, n_resamples=n_resamples, seed=seed)
    return PairedContrast(
        n_items=len(shared),
        a=float(va.mean()),
        b=float(vb.mean()),
        difference=float(diff.estimate),
        low=float(diff.low),
        high=float(diff.high),
        mcnemar_b=int(test.b),
        mcnemar_c=int(test.c),
        mcnemar_p=float(test.p),
        n_tied_excluded=int((~unique).sum()),
    )


def _one_row_per_item(rows: MeaningRows, name: str) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, item in enumerate(rows.item_id.tolist()):
        if item in index:
            raise AnalysisError(
                f"cell {name} has more than one row for item {item}; select one cell"
            )
        index[item] = i
    return index
