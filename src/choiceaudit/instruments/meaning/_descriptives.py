"""Appendix H and J descriptives of one part's rows (:class:`Descriptives`).

Each is computed on the rows that carry what it needs and left ``None`` (or empty) otherwise:

* items at p = 1.000 on the literal and p = 0.000 on the gold, to three decimals (the returned
  vector rounded half-even to three places, as a printed table would), per literal-bearing
  ladder family (Appendix H);
* the E2 mean peak as the paper aggregates it: the canonical form's returned peak, once per
  (canonical, alternative) pair, averaged over the pairs (Appendix N, "Reading agreement
  against divergence": 0.737 on Lod-lille's released rows); beside it, under its own name, the
  mean over every distinct row of the pairs, canonical and alternatives each once (0.647 there);
* Appendix J's item construction on the d-lit rows (one row per item);
* the capture matrix's asymmetries per language cell: mean gold–literal Jaccard (the
  instrument's word sets, :func:`~._text.jaccard`), the share of items whose literal gloss
  shares a content word with the state (the hook, ``hook_stopwords``), and the literal option's
  mean characters.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from choiceaudit.instruments.meaning._item_results import (
    Construction,
    Descriptives,
    MatrixAsymmetries,
)
from choiceaudit.instruments.meaning._rows import MeaningRows
from choiceaudit.instruments.meaning._text import content_words, jaccard

__all__ = ["descriptives", "literal_certain"]


def literal_certain(rows: MeaningRows) -> int:
    """Rows whose returned vector reads 1.000 on the literal and 0.000 on the gold."""
    has = rows.literal_slot >= 0
    if not has.any():
        return 0
    lit = np.round(rows.p_literal[has], 3)
    gold = np.round(rows.p_gold[has], 3)
    return int(((lit == 1.0) & (gold == 0.0)).sum())


def _construction(rows: MeaningRows) -> Construction | None:
    d_lit = rows.where(experiment="e1", family="d-lit")
    if not len(d_lit):
        return None
    single, verbatim, longer, longest = [], [], [], []
    literal_chars: list[int] = []
    gold_chars: list[int] = []
    other_chars: list[int] = []
    for i in range(len(d_lit)):
        options, state = d_lit.options[i], str(d_lit.state[i])
        lit, gold = options[int(d_lit.literal_slot[i])], options[int(d_lit.gold_slot[i])]
        rest = [o for s, o in enumerate(options) if s != int(d_lit.literal_slot[i])]
        single.append(len(state.split()) == 1)
        verbatim.append(state in lit)
        longer.append(len(lit) > len(gold))
        longest.append(all(len(lit) > len(o) for o in rest))
        literal_chars.append(len(lit))
        gold_chars.append(len(gold))
        other_chars.extend(len(o) for o in rest)
    return Construction(
        n_items=len(set(d_lit.item_id.tolist())),
        share_single_word=float(np.mean(single)),
        share_verbatim=float(np.mean(verbatim)),
        share_literal_longer_than_gold=float(np.mean(longer)),
        share_literal_longest=float(np.mean(longest)),
        mean_literal_chars=float(np.mean(literal_chars)),
        mean_gold_chars=float(np.mean(gold_chars)),
        mean_other_chars=float(np.mean(other_chars)),
    )


def _matrix(
    rows: MeaningRows, hook_stopwords: Mapping[str, frozenset[str]] | None
) -> MatrixAsymmetries | None:
    matrix = rows.where(experiment="matrix")
    matrix = matrix.select(matrix.literal_slot >= 0)
    if not len(matrix):
        return None
    jac: dict[str, float] = {}
    hook: dict[str, float] = {}
    chars: dict[str, float] = {}
    for language in sorted(set(matrix.condition.tolist())):
        cell = matrix.where(condition=language)
        j, h, c = [], [], []
        for i in range(len(cell)):
            options = cell.options[i]
            literal = options[int(cell.literal_slot[i])]
            gold = options[int(cell.gold_slot[i])]
            lang = str(cell.language[i])
            j.append(jaccard(gold, literal))
            h.append(
                bool(
                    content_words(literal, lang, hook_stopwords)
                    & content_words(str(cell.state[i]), lang, hook_stopwords)
                )
            )
            c.append(len(literal))
        jac[language], hook[language] = float(np.mean(j)), float(np.mean(h))
        chars[language] = float(np.mean(c))
    return MatrixAsymmetries(
        n_items=len(set(matrix.item_id.tolist())),
        jaccard_gold_literal=jac,
        hook_share=hook,
        mean_literal_chars=chars,
    )


def _e2_peaks(rows: MeaningRows) -> tuple[float | None, float | None]:
    """E2's mean peak as the paper aggregates it — the canonical row's returned peak, once per
    (canonical, alternative) pair, averaged over the pairs — and the mean over every distinct
    row of the pairs (canonical and alternatives, each once); ``None`` without a pair."""
    e2 = rows.where(experiment="e2")
    if not len(e2):
        return None, None
    # one part's rows: (item, condition) names one row, as for E2's agreement
    index = {
        (str(item), str(c)): i
        for i, (item, c) in enumerate(zip(e2.item_id.tolist(), e2.condition.tolist(), strict=True))
    }
    pairs = [
        (index[(item, "canonical")], i)
        for (item, condition), i in index.items()
        if condition.startswith("alt") and (item, "canonical") in index
    ]
    if not pairs:
        return None, None
    canonical = [c for c, _ in pairs]
    distinct = sorted({c for c, _ in pairs} | {a for _, a in pairs})
    return float(e2.peak[canonical].mean()), float(e2.peak[distinct].mean())


def descriptives(
    rows: MeaningRows, *, hook_stopwords: Mapping[str, frozenset[str]] | None = None
) -> Descriptives:
    """The descriptives of one part (see the module docstring)."""
    ladder = rows.where(experiment="e1")
    certain = {
        str(family): literal_certain(ladder.where(family=str(family)))
        for family in dict.fromkeys(ladder.family[ladder.literal_slot >= 0].tolist())
    }
    e2_mean_peak, e2_mean_peak_rows = _e2_peaks(rows)
    return Descriptives(
        n_literal_certain=certain,
        e2_mean_peak=e2_mean_peak,
        e2_mean_peak_rows=e2_mean_peak_rows,
        construction=_construction(rows),
        matrix=_matrix(rows, hook_stopwords),
    )
