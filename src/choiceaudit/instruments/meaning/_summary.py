"""Every meaning analysis one arm's rows support, as a typed :class:`ArmAnalysis`.

:func:`analyse_meaning` reads the rows of one model's run and computes, per experiment present:

* ``e1`` — the ladder (accuracy per family), LAR and the gold / literal / other decomposition on
  d-lit and d-hard, LAR by idiom length and cue strata on d-lit (§5.6, Appendix J), calibration
  and output distributions per family, the paired contrast (McNemar and bootstrap) of d-rand
  against every other family, slot shares pooled over the ladder (Appendix Q, Figure 11) and the
  risk–coverage curves of d-rand and d-lit (Figure 4, at most 101 points each);
* ``e2`` — surface agreement and divergence; ``e3`` — unit integrity; ``e4`` — accuracy per
  language and the paired language contrast; ``e6`` — signal retention, and calibration and the
  overconfidence gap of the semantics-free control o4; ``e7`` — the order audit
  (``_order_audit``); E2, E3, E6 and E7 each carry their per-item values (``items``);
* ``matrix`` — accuracy, LAR and calibration per language, and the paired language contrast on
  LAR (Appendix I, Table 15).

The computations live in ``_analysis``, ``_audits`` and ``_order_audit`` (each returning the
frozen result type it defines, tested one by one); this module runs them per experiment and
puts them together into the experiment's result (``_experiment_results``). An order
audit without a complete item raises :class:`~choiceaudit.errors.AnalysisError`; the caller
(:func:`~choiceaudit.instruments.meaning.analyse_meaning_runs`) turns it into a skip.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from choiceaudit import metrics, stats
from choiceaudit.errors import AnalysisError
from choiceaudit.instruments.meaning._analysis import (
    BOOTSTRAP_SEED,
    N_RESAMPLES,
    accuracy_by,
    calibration,
    decomposition,
    lar_by_stratum,
    length_strata,
    literal_attraction_rate,
    output_distribution,
    overconfidence_gap,
    paired_contrast,
)
from choiceaudit.instruments.meaning._audits import (
    cue_flags,
    cue_free,
    cue_strata,
    parenthetical_accuracy,
    signal_retention,
    surface_agreement,
    unit_integrity,
)
from choiceaudit.instruments.meaning._descriptives import descriptives
from choiceaudit.instruments.meaning._experiment_results import (
    ArmAnalysis,
    HookSplit,
    LadderAnalysis,
    LanguageAnalysis,
    O4Control,
    OptionAblation,
    SurfaceAgreement,
    UnitIntegrity,
)
from choiceaudit.instruments.meaning._item_audits import (
    ablation_items,
    surface_items,
    unit_items,
)
from choiceaudit.instruments.meaning._order_audit import order_result
from choiceaudit.instruments.meaning._results import (
    ChoiceCheck,
    CueFree,
    CueStratum,
    Interval,
    PairedContrast,
)
from choiceaudit.instruments.meaning._rows import MeaningRows

__all__ = ["CURVE_FAMILIES", "MAX_CURVE_POINTS", "analyse_meaning", "language_analysis"]

#: the two families the reliability and risk–coverage figures compare (Figure 4)
CURVE_FAMILIES = ("d-rand", "d-lit")
#: risk–coverage points kept per curve (evenly spaced indices over the full curve)
MAX_CURVE_POINTS = metrics.MAX_CURVE_POINTS


@dataclass(frozen=True)
class _Opts:
    n_resamples: int
    seed: int
    hook_stopwords: Mapping[str, frozenset[str]] | None = None
    #: the run's corpus language, which orients the language contrasts (None: read it off
    #: the rows, whose corpus-language cell the plan writes first)
    corpus_language: str | None = None


def analyse_meaning(
    rows: MeaningRows,
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    hook_stopwords: Mapping[str, frozenset[str]] | None = None,
    corpus_language: str | None = None,
) -> ArmAnalysis:
    """All analyses for the experiments present in ``rows`` (see the module docstring);
    ``corpus_language`` (the run's, where known) orients E4 and the matrix. The
    rows of E1, E2, E3, E6 and E7 must be in one language and one block each (the caller,
    :func:`~choiceaudit.instruments.meaning.analyse_meaning_runs`, splits a run that holds
    several); E4 and the matrix carry their languages as conditions."""
    opts = _Opts(n_resamples, seed, hook_stopwords, corpus_language)
    experiments = set(rows.experiment.tolist())
    for name in ("e1", "e2", "e3", "e6", "e7"):
        if name in experiments:
            part_rows = rows.where(experiment=name)
            cells = sorted(
                set(zip(part_rows.language.tolist(), part_rows.blocks.tolist(), strict=True))
            )
            if len(cells) > 1:
                raise AnalysisError(
                    f"{name} rows come from several (language, block) cells {cells}; analyse "
                    "each on its own (analyse_meaning_runs splits them)"
                )

    def part(name: str) -> MeaningRows | None:
        return rows.where(experiment=name) if name in experiments else None

    e1, e2, e3, e4 = part("e1"), part("e2"), part("e3"), part("e4")
    e6, e7, matrix = part("e6"), part("e7"), part("matrix")
    single = [r for r in (e1, e2, e3, e6, e7) if r is not None]
    language = str(single[0].language[0]) if single else ""
    return ArmAnalysis(
        n_rows=len(rows),
        k=rows.k,
        language=language,
        e1=None if e1 is None else _ladder(e1, opts),
        e2=None if e2 is None else _surface(e2),
        e3=None if e3 is None else _unit(e3, opts),
        e4=None if e4 is None else _languages(e4, opts, outcome="correct"),
        e6=None if e6 is None else _ablation(e6, opts),
        e7=None if e7 is None else order_result(e7),
        matrix=None if matrix is None else _languages(matrix, opts, outcome="captured"),
        descriptives=descriptives(rows, hook_stopwords=hook_stopwords),
    )


def _bonferroni(contrasts: Mapping[str, PairedContrast]) -> dict[str, PairedContrast]:
    """Each contrast with its p-value adjusted for the number tested together."""
    return {key: c.adjusted(len(contrasts)) for key, c in contrasts.items()}


def _choice_check(rows: MeaningRows) -> ChoiceCheck:
    has = rows.has_reported_choice
    literal = (rows.literal_slot >= 0).any()
    return ChoiceCheck(
        n_rows_with_choice=int(has.sum()),
        n_choice_not_argmax=int((~rows.choice_is_argmax).sum()),
        accuracy_argmax=float(rows.correct.mean()),
        accuracy_choice=float(rows.correct_on_choice.mean()),
        lar_argmax=float(rows.captured.mean()) if literal else float("nan"),
        lar_choice=float(rows.captured_on_choice.mean()) if literal else float("nan"),
    )


def _d_lit_strata(
    rows: MeaningRows, opts: _Opts
) -> tuple[dict[str, Interval], dict[str, Interval], dict[str, CueStratum], CueFree | None]:
    """The d-lit strata of E1: LAR by idiom length and by frequency label, the cue strata and
    the cue-free subset (§5.6, Appendices G, J); all empty without d-lit."""
    if "d-lit" not in set(rows.family.tolist()):
        return {}, {}, {}, None
    d_lit = rows.where(family="d-lit")
    n, seed = opts.n_resamples, opts.seed
    labels = {
        str(i): str(f)
        for i, f in zip(d_lit.item_id.tolist(), d_lit.frequencies.tolist(), strict=True)
        if f
    }
    return (
        lar_by_stratum(d_lit, length_strata(d_lit), n_resamples=n, seed=seed),
        lar_by_stratum(d_lit, labels, n_resamples=n, seed=seed) if labels else {},
        cue_strata(d_lit, hook_stopwords=opts.hook_stopwords, n_resamples=n, seed=seed),
        cue_free(d_lit, hook_stopwords=opts.hook_stopwords, n_resamples=n, seed=seed),
    )


def _ladder(rows: MeaningRows, opts: _Opts) -> LadderAnalysis:
    n, seed = opts.n_resamples, opts.seed
    accuracy = accuracy_by(rows, n_resamples=n, seed=seed)
    families = list(accuracy)
    literal = [f for f in families if (rows.where(family=f).literal_slot >= 0).any()]
    pooled_rows = rows.select(np.isin(rows.family, ["d-lit", "d-hard"]))
    has_choice = bool(rows.has_reported_choice.any())
    contrasts: dict[str, PairedContrast] = {}
    not_contrasted: dict[str, str] = {}
    if "d-rand" in families:
        base = rows.where(family="d-rand")
        for f in families:
            if f == "d-rand":
                continue
            try:
                contrasts[f] = paired_contrast(base, rows.where(family=f), n_resamples=n, seed=seed)
            except AnalysisError as exc:  # e.g. no item shared: runs of different plans
                not_contrasted[f] = str(exc)
        contrasts = _bonferroni(contrasts)
    by_length, by_frequency, cues, free = _d_lit_strata(rows, opts)
    return LadderAnalysis(
        accuracy=accuracy,
        lar={
            f: literal_attraction_rate(rows.where(family=f), n_resamples=n, seed=seed)
            for f in literal
        },
        decomposition={f: decomposition(rows.where(family=f)) for f in literal},
        calibration={f: calibration(rows.where(family=f)) for f in families},
        output_distribution={f: output_distribution(rows.where(family=f)) for f in families},
        contrast_vs_d_rand=contrasts,
        not_contrasted=not_contrasted,
        slot_shares=tuple(stats.slot_shares(rows.probs).tolist()),
        risk_coverage={
            f: metrics.risk_coverage(part.peak, part.correct, max_points=MAX_CURVE_POINTS)
            for f in CURVE_FAMILIES
            if f in families
            for part in [rows.where(family=f)]
        },
        lar_by_length_d_lit=by_length,
        cue_strata_d_lit=cues,
        mean_p_gold={f: float(rows.where(family=f).p_gold.mean()) for f in families},
        mean_p_literal={f: float(np.nanmean(rows.where(family=f).p_literal)) for f in literal},
        literal_pooled=calibration(pooled_rows) if len(pooled_rows) else None,
        lar_by_frequency_d_lit=by_frequency,
        cue_free_d_lit=free,
        parenthetical_accuracy=parenthetical_accuracy(rows, n_resamples=n, seed=seed),
        choice_check={f: _choice_check(rows.where(family=f)) for f in families}
        if has_choice
        else {},
        language=str(rows.language[0]),
        block=str(rows.blocks[0]),
    )


def _surface(rows: MeaningRows) -> SurfaceAgreement:
    return dataclasses.replace(surface_agreement(rows), items=surface_items(rows))


def _unit(rows: MeaningRows, opts: _Opts) -> UnitIntegrity:
    identity = rows.identity_rows
    excluded = {
        str(v): int(((rows.condition == v) & identity).sum())
        for v in sorted(set(rows.condition[identity].tolist()))
    }
    rows = rows.select(~identity)
    result = unit_integrity(rows, n_resamples=opts.n_resamples, seed=opts.seed)
    contrasts: dict[str, PairedContrast] = {}
    not_contrasted: dict[str, str] = {}
    if "v0" in set(rows.condition.tolist()):
        intact = rows.where(condition="v0")
        for variant in sorted(set(rows.condition.tolist()) - {"v0"}):
            try:
                contrasts[variant] = paired_contrast(
                    rows.where(condition=variant),
                    intact,
                    n_resamples=opts.n_resamples,
                    seed=opts.seed,
                )
            except AnalysisError as exc:
                not_contrasted[variant] = str(exc)
    elif len(rows):
        not_contrasted = {
            str(v): "no intact (v0) rows to contrast with"
            for v in sorted(set(rows.condition.tolist()))
        }
    return dataclasses.replace(
        result,
        contrast_vs_intact=_bonferroni(contrasts),
        n_identity_excluded=excluded,
        not_contrasted=not_contrasted,
        items=unit_items(rows),
    )


def _ablation(rows: MeaningRows, opts: _Opts) -> OptionAblation:
    identity = rows.identity_rows
    excluded = {
        str(v): int(((rows.condition == v) & identity).sum())
        for v in sorted(set(rows.condition[identity].tolist()))
    }
    language, block = str(rows.language[0]), str(rows.blocks[0])
    rows = rows.select(~identity)
    head: dict[str, float] = {}
    for variant in sorted(set(rows.condition.tolist())):
        values = rows.where(condition=variant).conf_head
        if len(values) and not np.isnan(values).any():
            head[variant] = float(values.mean())
    o4 = rows.where(condition="o4")
    control = None
    if len(o4):
        control = O4Control(
            calibration=calibration(o4),
            overconfidence_gap=overconfidence_gap(o4, n_resamples=opts.n_resamples, seed=opts.seed),
        )
    return OptionAblation(
        signal_retention=signal_retention(rows, n_resamples=opts.n_resamples, seed=opts.seed),
        o4=control,
        mean_conf_head=head,
        n_identity_excluded=excluded,
        language=language,
        block=block,
        items=ablation_items(rows),
    )


def _hook_split(rows: MeaningRows, languages: list[str], opts: _Opts) -> HookSplit | None:
    """Table 16: the hook is read on the corpus-language cell (the Bengali literal gloss against
    the idiom) and applied to both cells of the item."""
    first, second = languages
    home = _home_language(rows, opts)
    cell = rows.where(condition=home)
    if not len(cell) or not (cell.literal_slot >= 0).all():
        return None
    flags = cue_flags(cell, hook_stopwords=opts.hook_stopwords)["hook"]
    hooked = {str(i) for i, f in zip(cell.item_id.tolist(), flags.tolist(), strict=True) if f}
    lar_hook: dict[str, float] = {}
    lar_no_hook: dict[str, float] = {}
    for lang in languages:
        part = rows.where(condition=lang)
        mask = np.isin(part.item_id, list(hooked))
        lar_hook[lang] = float(part.captured[mask].mean()) if mask.any() else float("nan")
        lar_no_hook[lang] = float(part.captured[~mask].mean()) if (~mask).any() else float("nan")

    def gap(keep: set[str] | None) -> PairedContrast | None:
        a, b = rows.where(condition=first), rows.where(condition=second)
        if keep is not None:
            a = a.select(np.isin(a.item_id, list(keep)))
            b = b.select(np.isin(b.item_id, list(keep)))
        try:
            return paired_contrast(
                a, b, outcome="captured", n_resamples=opts.n_resamples, seed=opts.seed
            )
        except AnalysisError:
            return None

    absent = set(cell.item_id.tolist()) - hooked
    return HookSplit(
        lar_hook=lar_hook,
        lar_no_hook=lar_no_hook,
        n_hook=len(hooked),
        n_no_hook=len(absent),
        gap_all=gap(None),
        gap_no_hook=gap(absent) if absent else None,
    )


def _home_language(rows: MeaningRows, opts: _Opts) -> str:
    """The corpus language of a two-language experiment: the run's where it is known and among
    the rows' cells (an imported file may list the other language first); else the first
    row's, since the plan writes each item's corpus-language cell first
    (``_matrix.language_cells``)."""
    if opts.corpus_language is not None and opts.corpus_language in set(rows.condition.tolist()):
        return opts.corpus_language
    return str(rows.language[0])


def language_analysis(
    rows: MeaningRows,
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    corpus_language: str | None = None,
) -> LanguageAnalysis:
    """E4's analysis (accuracy per language, the paired language contrast) of rows that carry
    their language as the condition; ``corpus_language`` orients the contrast."""
    opts = _Opts(n_resamples, seed, corpus_language=corpus_language)
    return _languages(rows, opts, outcome="correct")


def _languages(rows: MeaningRows, opts: _Opts, *, outcome: str) -> LanguageAnalysis:
    languages = sorted(set(rows.condition.tolist()))
    accuracy = accuracy_by(rows, "condition", n_resamples=opts.n_resamples, seed=opts.seed)
    lar: dict[str, Interval] = {}
    if outcome == "captured":
        lar = {
            lang: literal_attraction_rate(
                rows.where(condition=lang), n_resamples=opts.n_resamples, seed=opts.seed
            )
            for lang in languages
        }
    pair: tuple[str, str] | None = None
    contrast = None
    not_contrasted: str | None = None
    if len(languages) == 2:
        # the paper's signs: E4 is the gain from asking in the other language (§5.7, English
        # minus Bengali: +0.246, +0.380, +0.230), the matrix the capture the corpus language
        # adds (Bengali minus English LAR, Table 14)
        home = _home_language(rows, opts)
        other = languages[1] if languages[0] == home else languages[0]
        a, b = (other, home) if outcome == "correct" else (home, other)
        pair = (a, b)
        try:
            contrast = paired_contrast(
                rows.where(condition=a),
                rows.where(condition=b),
                outcome=outcome,
                n_resamples=opts.n_resamples,
                seed=opts.seed,
            )
        except AnalysisError as exc:  # e.g. no item asked in both languages
            not_contrasted = str(exc)
    hook = (
        _hook_split(rows, languages, opts)
        if outcome == "captured" and len(languages) == 2
        else None
    )
    return LanguageAnalysis(
        hook=hook,
        accuracy=accuracy,
        lar=lar,
        calibration={lang: calibration(rows.where(condition=lang)) for lang in languages},
        contrast_languages=pair,
        contrast=contrast,
        not_contrasted=not_contrasted,
    )
