"""Audits read from intervention runs (the meaning paper, Appendices J, M, N, O, P, Q, R).

* :func:`surface_agreement` (E2, Appendix N) — per (canonical, alternative) pair, whether the
  canonical choice agrees, and the Jensen–Shannon divergence (bits) between the two vectors;
  pair-level and item-averaged; accuracy on each member and exact McNemar over the pairs (the
  figures Appendix N prints), and at the item level (each item's canonical form against its
  first alternative, alt1: the project's addition).
* :func:`unit_integrity` (E3, Appendix M) — accuracy per variant and agreement of each variant's
  canonical choice with the intact (``v0``) answer.
* :func:`signal_retention` (E6, Appendix P) — accuracy per option form and the signal retained,
  (acc − 1/k) / (acc_o0 − 1/k).
* :func:`order_audit` (E7, Appendix Q) — the Table 21 measures and the Table 22 permutation audit
  from ``choiceaudit.stats`` over items seen under all k! orderings (``_order_audit``, re-exported
  here).
* :func:`pairing_check` (Appendix R, "Pairing") — on rows two runs share, the share on which gold
  slot, literal slot, state and options agree (1.000 licenses paired tests).
* :func:`cue_strata` (§5.6, Appendix J) — LAR split by verbatim containment, Latin script,
  longest option and content-word hook.
* :func:`subset_drift` (Appendix O) — a model's accuracy on a subset against its own full set.

Agreement is computed on rows with a unique argmax; tied rows are excluded and counted. Every
function returns the frozen result type the analysis keeps (``_results``, ``_experiment_results``,
``_analysis_results``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from choiceaudit import stats
from choiceaudit.errors import AnalysisError
from choiceaudit.instruments.meaning._analysis import (
    BOOTSTRAP_SEED,
    N_RESAMPLES,
    accuracy_by,
    interval,
)
from choiceaudit.instruments.meaning._analysis_results import PairingCheck, SubsetDrift
from choiceaudit.instruments.meaning._contract import FAMILIES
from choiceaudit.instruments.meaning._experiment_results import SurfaceAgreement, UnitIntegrity
from choiceaudit.instruments.meaning._order_audit import order_audit
from choiceaudit.instruments.meaning._results import (
    Agreement,
    CueFree,
    CueStratum,
    Interval,
    Retention,
)
from choiceaudit.instruments.meaning._rows import MeaningRows
from choiceaudit.instruments.meaning._text import content_words, english_parenthetical
from choiceaudit.types import FloatArray

__all__ = [
    "CUES",
    "cue_flags",
    "cue_free",
    "cue_strata",
    "difference_interval",
    "order_audit",
    "pairing_check",
    "parenthetical_accuracy",
    "signal_retention",
    "split_by",
    "subset_drift",
    "surface_agreement",
    "unit_integrity",
]


def _index(rows: MeaningRows) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for i, key in enumerate(zip(rows.item_id.tolist(), rows.condition.tolist(), strict=True)):
        if key in out:
            raise AnalysisError(f"two rows for item {key[0]} condition {key[1]}; select one run")
        out[key] = i
    return out


@dataclass(frozen=True)
class _Pairs:
    """Agreement of the canonical choices over row pairs, and the untied pairs' values."""

    agreement: Agreement
    agree: FloatArray
    items: npt.NDArray[np.str_]


def _agreement(rows: MeaningRows, pairs: list[tuple[int, int]]) -> _Pairs:
    if not pairs:
        empty = Agreement(n_pairs=0, agreement=math.nan, n_tied_excluded=0)
        return _Pairs(empty, np.zeros(0), np.zeros(0, dtype=np.str_))
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    choice = rows.canonical_choice
    ok = (choice[a] >= 0) & (choice[b] >= 0)
    agree = (choice[a] == choice[b])[ok].astype(float)
    return _Pairs(
        Agreement(
            n_pairs=len(pairs),
            agreement=float(agree.mean()) if agree.size else math.nan,
            n_tied_excluded=int((~ok).sum()),
        ),
        agree,
        rows.item_id[a][ok],
    )


def _mcnemar_whole(ca: FloatArray, cb: FloatArray) -> stats.McNemarResult:
    """Exact McNemar on the pairs whose credit is whole (0 or 1) on both sides."""
    unique = ((ca == 0) | (ca == 1)) & ((cb == 0) | (cb == 1))
    return stats.mcnemar_exact(ca[unique] == 1, cb[unique] == 1)


def surface_agreement(rows: MeaningRows) -> SurfaceAgreement:
    """E2: agreement and JS divergence between each item's canonical form and its alternatives
    (``items`` left ``None``: the per-pair values are :func:`._item_audits.surface_items`)."""
    index = _index(rows)
    pairs = [
        (index[(item, "canonical")], i)
        for (item, condition), i in index.items()
        if condition.startswith("alt") and (item, "canonical") in index
    ]
    found = _agreement(rows, pairs)
    base = SurfaceAgreement(
        n_pairs=found.agreement.n_pairs,
        agreement=found.agreement.agreement,
        n_tied_excluded=found.agreement.n_tied_excluded,
    )
    if not pairs:
        return base
    first, second = [p[0] for p in pairs], [p[1] for p in pairs]
    canon = rows.canonical_probs
    js = np.atleast_1d(stats.js_divergence(canon[first], canon[second]))
    item_mean = None
    if found.agree.size:
        per_item = [float(found.agree[found.items == it].mean()) for it in np.unique(found.items)]
        item_mean = float(np.mean(per_item))
    # accuracy on the two members of each pair, and exact McNemar on the pairs (Appendix N)
    correct = rows.correct
    ca, cb = correct[first], correct[second]
    test = _mcnemar_whole(ca, cb)
    both = int(((ca == 1) & (cb == 1)).sum())
    result = dataclasses.replace(
        base,
        n_items=len({rows.item_id[p] for p in first}),
        agreement_item_mean=item_mean,
        mean_js_divergence=float(js.mean()),
        accuracy_canonical=float(ca.mean()),
        accuracy_alternative=float(cb.mean()),
        mcnemar_b=test.b,
        mcnemar_c=test.c,
        mcnemar_p=test.p,
        both_correct=both,
    )
    # item level, beside the pair level the paper prints: one canonical row per item against
    # its first alternative form (alt1), so no canonical row is counted twice (the project's
    # addition, for readers who want each item weighted once)
    firsts = [p for p in pairs if str(rows.condition[p[1]]) == "alt1"]
    if not firsts:
        return result
    ia = correct[[p[0] for p in firsts]]
    ib = correct[[p[1] for p in firsts]]
    return dataclasses.replace(
        result,
        items_paired=len(firsts),
        accuracy_canonical_items=float(ia.mean()),
        accuracy_alternative_items=float(ib.mean()),
        mcnemar_p_items=_mcnemar_whole(ia, ib).p,
    )


def unit_integrity(
    rows: MeaningRows, *, n_resamples: int = N_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> UnitIntegrity:
    """E3: accuracy per variant and agreement with the intact (v0) answer (the contrasts and
    per-item values are added by the experiment's analysis)."""
    index = _index(rows)
    agreement: dict[str, Agreement] = {}
    for variant in sorted({c for _, c in index if c != "v0"}):
        pairs = [
            (index[(item, "v0")], i)
            for (item, c), i in index.items()
            if c == variant and (item, "v0") in index
        ]
        found = _agreement(rows, pairs)
        cell = found.agreement
        if found.agree.size:
            cell = dataclasses.replace(
                cell,
                interval=interval(found.agree, found.items, n_resamples=n_resamples, seed=seed),
            )
        agreement[variant] = cell
    return UnitIntegrity(
        accuracy=accuracy_by(rows, "condition", n_resamples=n_resamples, seed=seed),
        agreement_with_intact=agreement,
    )


def signal_retention(
    rows: MeaningRows, *, n_resamples: int = N_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> dict[str, Retention]:
    """E6: accuracy per option form and signal retained relative to ``o0``."""
    acc = accuracy_by(rows, "condition", n_resamples=n_resamples, seed=seed)
    chance = 1.0 / rows.k
    base = acc["o0"].estimate if "o0" in acc else None
    out: dict[str, Retention] = {}
    for variant, cell in acc.items():
        retained = math.nan
        if base is not None and base != chance:
            retained = (cell.estimate - chance) / (base - chance)
        out[variant] = Retention(cell, retained)
    return out


def pairing_check(
    rows_a: MeaningRows, rows_b: MeaningRows, *, model_a: str = "a", model_b: str = "b"
) -> PairingCheck:
    """Agreement of the question itself on the rows two runs share (by experiment, block,
    language, condition and item: rows that claim to be the same question): gold slot, literal
    slot, state string and option list."""

    def keyed(rows: MeaningRows) -> dict[tuple[str, ...], int]:
        keys = zip(
            rows.experiment.tolist(),
            rows.blocks.tolist(),
            rows.language.tolist(),
            rows.condition.tolist(),
            rows.item_id.tolist(),
            strict=True,
        )
        return {key: i for i, key in enumerate(keys)}

    ka, kb = keyed(rows_a), keyed(rows_b)
    shared = sorted(set(ka) & set(kb))
    if not shared:
        return PairingCheck(model_a=model_a, model_b=model_b, n_shared=0)
    a = np.array([ka[s] for s in shared])
    b = np.array([kb[s] for s in shared])
    return PairingCheck(
        model_a=model_a,
        model_b=model_b,
        n_shared=len(shared),
        gold_slot=float((rows_a.gold_slot[a] == rows_b.gold_slot[b]).mean()),
        literal_slot=float((rows_a.literal_slot[a] == rows_b.literal_slot[b]).mean()),
        state=float((rows_a.state[a] == rows_b.state[b]).mean()),
        options=float(
            np.mean([rows_a.options[i] == rows_b.options[j] for i, j in zip(a, b, strict=True)])
        ),
    )


#: §5.6 / Appendix J: the four construction cues of a literal-bearing row.
CUES: tuple[str, ...] = ("verbatim", "latin", "longest", "hook")


def cue_flags(
    rows: MeaningRows, *, hook_stopwords: Mapping[str, frozenset[str]] | None = None
) -> dict[str, npt.NDArray[np.bool_]]:
    """Per literal-bearing row, the construction cues of §5.6 / Appendix J:

    * ``verbatim`` — the state (the idiom) occurs inside the literal gloss;
    * ``latin`` — the literal gloss carries an English parenthetical (the Appendix J rule of
      :func:`~choiceaudit.instruments.meaning._text.english_parenthetical`), which is how the
      paper splits the Latin-script cue ("items are split by whether the idiom's literal gloss
      carries an English parenthetical");
    * ``longest`` — the literal option is strictly longer (characters) than every other option;
    * ``hook`` — the literal gloss shares a content word with the state; content words are
      :func:`~choiceaudit.instruments.meaning._text.content_words` with ``hook_stopwords``
      (default :data:`~choiceaudit.instruments.meaning._text.STOPWORDS`).
    """
    flags: dict[str, list[bool]] = {cue: [] for cue in CUES}
    for i in range(len(rows)):
        options = rows.options[i]
        literal = options[int(rows.literal_slot[i])]
        state = str(rows.state[i])
        others = [o for j, o in enumerate(options) if j != rows.literal_slot[i]]
        flags["verbatim"].append(state in literal)
        flags["latin"].append(english_parenthetical(literal) is not None)
        flags["longest"].append(all(len(literal) > len(o) for o in others))
        lang = str(rows.language[i])
        flags["hook"].append(
            bool(
                content_words(literal, lang, hook_stopwords)
                & content_words(state, lang, hook_stopwords)
            )
        )
    return {name: np.array(values, dtype=bool) for name, values in flags.items()}


def difference_interval(
    with_values: npt.NDArray[np.float64],
    with_items: npt.NDArray[np.str_],
    without_values: npt.NDArray[np.float64],
    without_items: npt.NDArray[np.str_],
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """95% percentile bootstrap interval of mean(with) − mean(without) for two disjoint item
    groups: items (each the mean of its rows) are resampled with replacement within each
    group, ``n_resamples`` times from ``numpy.random.default_rng(seed)``."""
    a = _item_means(with_values, with_items)
    b = _item_means(without_values, without_items)
    if a.size == 0 or b.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    da = a[rng.integers(0, a.size, size=(n_resamples, a.size))].mean(axis=1)
    db = b[rng.integers(0, b.size, size=(n_resamples, b.size))].mean(axis=1)
    low, high = np.percentile(da - db, [2.5, 97.5])
    return float(low), float(high)


def _item_means(values: npt.NDArray[np.float64], items: npt.NDArray[np.str_]) -> FloatArray:
    if values.size == 0:
        return np.zeros(0)
    _, inverse = np.unique(items, return_inverse=True)
    sums = np.bincount(inverse, weights=values)
    counts = np.bincount(inverse)
    return np.asarray(sums / counts, dtype=np.float64)


def split_by(
    rows: MeaningRows,
    mask: npt.NDArray[np.bool_],
    outcome: str,
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> CueStratum:
    """``outcome`` (``captured`` or ``correct``) on the rows with and without ``mask``, the
    difference (with − without) and its interval (:func:`difference_interval`); a side with
    no row has the estimate NaN and no interval."""
    parts = {"with": rows.select(mask), "without": rows.select(~mask)}
    sides: dict[str, Interval | None] = {
        label: interval(getattr(part, outcome), part.item_id, n_resamples=n_resamples, seed=seed)
        if len(part)
        else None
        for label, part in parts.items()
    }
    with_side, without_side = sides["with"], sides["without"]
    estimate_with = math.nan if with_side is None else with_side.estimate
    estimate_without = math.nan if without_side is None else without_side.estimate
    low, high = difference_interval(
        getattr(parts["with"], outcome),
        parts["with"].item_id,
        getattr(parts["without"], outcome),
        parts["without"].item_id,
        n_resamples=n_resamples,
        seed=seed,
    )
    return CueStratum(
        lar_with=estimate_with,
        n_with=len(parts["with"]),
        lar_without=estimate_without,
        n_without=len(parts["without"]),
        difference=estimate_with - estimate_without,
        with_interval=with_side,
        without_interval=without_side,
        difference_low=low,
        difference_high=high,
    )


def cue_strata(
    rows: MeaningRows,
    *,
    cues: Sequence[str] = CUES,
    hook_stopwords: Mapping[str, frozenset[str]] | None = None,
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, CueStratum]:
    """LAR with and without each cue, the difference (with − without) and its interval."""
    sub = rows.select(rows.literal_slot >= 0)
    flags = cue_flags(sub, hook_stopwords=hook_stopwords)
    return {
        cue: split_by(sub, flags[cue], "captured", n_resamples=n_resamples, seed=seed)
        for cue in cues
    }


def cue_free(
    rows: MeaningRows,
    *,
    hook_stopwords: Mapping[str, frozenset[str]] | None = None,
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> CueFree | None:
    """§5.6, Table 3 last block: d-lit rows whose idiom is multi-word (two or more whitespace
    words), whose literal gloss does not contain it and carries no English parenthetical; LAR,
    accuracy, mean characters of the literal against the other options, and the split on
    whether the literal is the longest option. ``None`` when no row qualifies."""
    sub = rows.select(rows.literal_slot >= 0)
    if not len(sub):
        return None
    flags = cue_flags(sub, hook_stopwords=hook_stopwords)
    multi = np.array([len(str(s).split()) >= 2 for s in sub.state.tolist()], dtype=bool)
    keep = multi & ~flags["verbatim"] & ~flags["latin"]
    free = sub.select(keep)
    if not len(free):
        return None
    literal_chars = [len(free.options[i][int(free.literal_slot[i])]) for i in range(len(free))]
    other_chars = [
        len(o)
        for i in range(len(free))
        for j, o in enumerate(free.options[i])
        if j != free.literal_slot[i]
    ]
    longest = flags["longest"][keep]
    return CueFree(
        lar=interval(free.captured, free.item_id, n_resamples=n_resamples, seed=seed),
        accuracy=interval(free.correct, free.item_id, n_resamples=n_resamples, seed=seed),
        mean_literal_chars=float(np.mean(literal_chars)),
        mean_other_chars=float(np.mean(other_chars)),
        longest=split_by(free, longest, "captured", n_resamples=n_resamples, seed=seed),
    )


def parenthetical_accuracy(
    rows: MeaningRows, *, n_resamples: int = N_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> dict[str, CueStratum]:
    """Table 17 lower block: on each ladder family without a literal option, accuracy on items
    whose literal gloss (read from the item's literal-bearing rows) carries an English
    parenthetical against the rest, with the difference and its interval."""
    literal_rows = rows.select(rows.literal_slot >= 0)
    has_paren: dict[str, bool] = {}
    for i in range(len(literal_rows)):
        text = literal_rows.options[i][int(literal_rows.literal_slot[i])]
        has_paren[str(literal_rows.item_id[i])] = english_parenthetical(text) is not None
    out: dict[str, CueStratum] = {}
    for family in [f for f in FAMILIES if f not in ("d-lit", "d-hard")]:
        cell = rows.where(family=family)
        known = np.array([str(i) in has_paren for i in cell.item_id.tolist()], dtype=bool)
        cell = cell.select(known)
        if not len(cell):
            continue
        mask = np.array([has_paren[str(i)] for i in cell.item_id.tolist()], dtype=bool)
        out[family] = split_by(cell, mask, "correct", n_resamples=n_resamples, seed=seed)
    return out


def subset_drift(
    rows: MeaningRows,
    subset_items: Sequence[str | int],
    *,
    column: str = "family",
    arm: str = "",
    subset_of: str = "",
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, SubsetDrift]:
    """Appendix O: per ``column`` value, accuracy on the subset minus accuracy on the full set,
    with both intervals and whether the subset estimate leaves the full-set interval (``arm``
    and ``subset_of`` name the two arms in the result)."""
    wanted = {str(i) for i in subset_items}
    full = accuracy_by(rows, column, n_resamples=n_resamples, seed=seed)
    part = accuracy_by(
        rows.select(np.isin(rows.item_id, list(wanted))), column, n_resamples=n_resamples, seed=seed
    )
    out: dict[str, SubsetDrift] = {}
    for value, cell in full.items():
        if value not in part:
            continue
        sub = part[value]
        out[value] = SubsetDrift(
            arm=arm,
            subset_of=subset_of,
            family=value,
            full=cell,
            subset=sub,
            drift=sub.estimate - cell.estimate,
            outside_full_interval=bool(not (cell.low <= sub.estimate <= cell.high)),
        )
    return out
