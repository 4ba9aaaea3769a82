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

The computations live in ``_analysis`` and ``_audits`` (plain-dict results, tested one by one);
this module runs them per experiment and freezes their output into ``_results`` types. An order
audit without a complete item raises :class:`~choiceaudit.errors.AnalysisError`; the caller
(:func:`~choiceaudit.instruments.meaning.analyse_meaning_runs`) turns it into a skip.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from choiceaudit import stats
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
from choiceaudit.instruments.meaning._item_audits import (
    ablation_items,
    surface_items,
    unit_items,
)
from choiceaudit.instruments.meaning._order_audit import order_result
from choiceaudit.instruments.meaning._results import (
    Agreement,
    ArmAnalysis,
    Calibration,
    ChoiceCheck,
    CueFree,
    CueStratum,
    Decomposition,
    HookSplit,
    Interval,
    LadderAnalysis,
    LanguageAnalysis,
    O4Control,
    OptionAblation,
    OutputDistribution,
    PairedContrast,
    Retention,
    RiskCoverage,
    SurfaceAgreement,
    UnitIntegrity,
)
from choiceaudit.instruments.meaning._rows import MeaningRows

__all__ = ["CURVE_FAMILIES", "MAX_CURVE_POINTS", "analyse_meaning", "language_analysis"]

#: the two families the reliability and risk–coverage figures compare (Figure 4)
CURVE_FAMILIES = ("d-rand", "d-lit")
#: risk–coverage points kept per curve (evenly spaced indices over the full curve)
MAX_CURVE_POINTS = 101


@dataclass(frozen=True)
class _Opts:
    n_resamples: int
    seed: int
    hook_stopwords: Mapping[str, frozenset[str]] | None = None


def analyse_meaning(
    rows: MeaningRows,
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    hook_stopwords: Mapping[str, frozenset[str]] | None = None,
) -> ArmAnalysis:
    """All analyses for the experiments present in ``rows`` (see the module docstring). The
    rows of E1, E2, E3, E6 and E7 must be in one language and one block each (the caller,
    :func:`~choiceaudit.instruments.meaning.analyse_meaning_runs`, splits a run that holds
    several); E4 and the matrix carry their languages as conditions."""
    opts = _Opts(n_resamples, seed, hook_stopwords)
    experiments = set(rows.experiment.tolist())
    for name in ("e1", "e2", "e3", "e6", "e7"):
        if name in experiments:
            part_rows = rows.where(experiment=name)
            cells = sorted(set(zip(part_rows.language.tolist(), part_rows.blocks.tolist(),
                                   strict=True)))  # fmt: skip
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


def _intervals(cells: Mapping[str, Mapping[str, Any]]) -> dict[str, Interval]:
    return {key: Interval.from_dict(cell) for key, cell in cells.items()}


def _decomposition(rows: MeaningRows) -> Decomposition:
    parts = decomposition(rows)
    return Decomposition(
        gold=float(parts["gold"]),
        literal=float(parts["literal"]),
        other=float(parts["other"]),
        n_rows=int(parts["n_rows"]),
    )


def _risk_coverage(rows: MeaningRows, max_points: int = MAX_CURVE_POINTS) -> RiskCoverage:
    curve = stats.risk_coverage_curve(rows.peak, rows.correct)
    n = curve.coverage.size
    keep = np.unique(np.linspace(0, n - 1, min(n, max_points)).round().astype(int))
    return RiskCoverage(
        coverage=tuple(float(curve.coverage[i]) for i in keep),
        selective_risk=tuple(float(curve.selective_risk[i]) for i in keep),
        random_gate=stats.random_gate_aurc(rows.correct),
    )


def _cue(cell: Mapping[str, Any]) -> CueStratum:
    def side(d: Mapping[str, Any]) -> Interval | None:
        return Interval.from_dict(d) if d["n_rows"] else None

    return CueStratum(
        lar_with=cell["with"]["estimate"],
        n_with=cell["with"]["n_rows"],
        lar_without=cell["without"]["estimate"],
        n_without=cell["without"]["n_rows"],
        difference=cell["difference"],
        with_interval=side(cell["with"]),
        without_interval=side(cell["without"]),
        difference_low=cell.get("difference_low", float("nan")),
        difference_high=cell.get("difference_high", float("nan")),
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


def _ladder(rows: MeaningRows, opts: _Opts) -> LadderAnalysis:
    accuracy = accuracy_by(rows, n_resamples=opts.n_resamples, seed=opts.seed)
    families = list(accuracy)
    literal = [f for f in families if (rows.where(family=f).literal_slot >= 0).any()]
    lar = {
        f: literal_attraction_rate(
            rows.where(family=f), n_resamples=opts.n_resamples, seed=opts.seed
        )
        for f in literal
    }
    by_length: dict[str, Interval] = {}
    by_frequency: dict[str, Interval] = {}
    cues: dict[str, CueStratum] = {}
    free: CueFree | None = None
    if "d-lit" in families:
        d_lit = rows.where(family="d-lit")
        by_length = _intervals(
            lar_by_stratum(
                d_lit, length_strata(d_lit), n_resamples=opts.n_resamples, seed=opts.seed
            )
        )
        labels = {
            str(i): str(f)
            for i, f in zip(d_lit.item_id.tolist(), d_lit.frequencies.tolist(), strict=True)
            if f
        }
        if labels:
            by_frequency = _intervals(
                lar_by_stratum(d_lit, labels, n_resamples=opts.n_resamples, seed=opts.seed)
            )
        strata = cue_strata(
            d_lit, hook_stopwords=opts.hook_stopwords, n_resamples=opts.n_resamples, seed=opts.seed
        )
        cues = {cue: _cue(cell) for cue, cell in strata.items()}
        free_cell = cue_free(
            d_lit, hook_stopwords=opts.hook_stopwords, n_resamples=opts.n_resamples, seed=opts.seed
        )
        if free_cell is not None:
            free = CueFree(
                lar=Interval.from_dict(free_cell["lar"]),
                accuracy=Interval.from_dict(free_cell["accuracy"]),
                mean_literal_chars=free_cell["mean_literal_chars"],
                mean_other_chars=free_cell["mean_other_chars"],
                longest=_cue(free_cell["longest"]),
            )
    pooled_rows = rows.select(np.isin(rows.family, ["d-lit", "d-hard"]))
    has_choice = bool(rows.has_reported_choice.any())
    contrasts: dict[str, PairedContrast] = {}
    if "d-rand" in families:
        base = rows.where(family="d-rand")
        contrasts = {
            f: PairedContrast.from_dict(
                paired_contrast(
                    base, rows.where(family=f), n_resamples=opts.n_resamples, seed=opts.seed
                )
            )
            for f in families
            if f != "d-rand"
        }
        contrasts = _bonferroni(contrasts)
    return LadderAnalysis(
        accuracy=_intervals(accuracy),
        lar=_intervals(lar),
        decomposition={f: _decomposition(rows.where(family=f)) for f in literal},
        calibration={f: Calibration.from_dict(calibration(rows.where(family=f))) for f in families},
        output_distribution={
            f: OutputDistribution(**output_distribution(rows.where(family=f))) for f in families
        },
        contrast_vs_d_rand=contrasts,
        slot_shares=tuple(stats.slot_shares(rows.probs).tolist()),
        risk_coverage={
            f: _risk_coverage(rows.where(family=f)) for f in CURVE_FAMILIES if f in families
        },
        lar_by_length_d_lit=by_length,
        cue_strata_d_lit=cues,
        mean_p_gold={f: float(rows.where(family=f).p_gold.mean()) for f in families},
        mean_p_literal={f: float(np.nanmean(rows.where(family=f).p_literal)) for f in literal},
        literal_pooled=Calibration.from_dict(calibration(pooled_rows))
        if len(pooled_rows)
        else None,
        lar_by_frequency_d_lit=by_frequency,
        cue_free_d_lit=free,
        parenthetical_accuracy={
            f: _cue(cell)
            for f, cell in parenthetical_accuracy(
                rows, n_resamples=opts.n_resamples, seed=opts.seed
            ).items()
        },
        choice_check={f: _choice_check(rows.where(family=f)) for f in families}
        if has_choice
        else {},
        language=str(rows.language[0]),
        block=str(rows.blocks[0]),
    )


def _surface(rows: MeaningRows) -> SurfaceAgreement:
    return SurfaceAgreement(**surface_agreement(rows), items=surface_items(rows))


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
                contrasts[variant] = PairedContrast.from_dict(
                    paired_contrast(
                        rows.where(condition=variant),
                        intact,
                        n_resamples=opts.n_resamples,
                        seed=opts.seed,
                    )
                )
            except AnalysisError as exc:
                not_contrasted[variant] = str(exc)
    elif len(rows):
        not_contrasted = {
            str(v): "no intact (v0) rows to contrast with"
            for v in sorted(set(rows.condition.tolist()))
        }
    contrasts = _bonferroni(contrasts)
    agreement = {}
    for variant, cell in result["agreement_with_intact"].items():
        interval = cell.get("interval")
        agreement[variant] = Agreement(
            n_pairs=cell["n_pairs"],
            agreement=cell["agreement"],
            n_tied_excluded=cell["n_tied_excluded"],
            interval=None if interval is None else Interval.from_dict(interval),
        )
    return UnitIntegrity(
        accuracy=_intervals(result["accuracy"]),
        agreement_with_intact=agreement,
        contrast_vs_intact=contrasts,
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
    retention = {
        variant: Retention(Interval.from_dict(cell), cell["signal_retained"])
        for variant, cell in signal_retention(
            rows, n_resamples=opts.n_resamples, seed=opts.seed
        ).items()
    }
    o4 = rows.where(condition="o4")
    control = None
    if len(o4):
        control = O4Control(
            calibration=Calibration.from_dict(calibration(o4)),
            overconfidence_gap=Interval.from_dict(
                overconfidence_gap(o4, n_resamples=opts.n_resamples, seed=opts.seed)
            ),
        )
    return OptionAblation(
        signal_retention=retention,
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
    home = _home_language(rows)
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
            return PairedContrast.from_dict(
                paired_contrast(a, b, outcome="captured", n_resamples=opts.n_resamples,
                                seed=opts.seed)
            )  # fmt: skip
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


def _home_language(rows: MeaningRows) -> str:
    """The corpus language of a two-language experiment: the plan writes each item's
    corpus-language cell first (``_matrix.language_cells``), so it is the first row's."""
    return str(rows.language[0])


def language_analysis(
    rows: MeaningRows, *, n_resamples: int = N_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> LanguageAnalysis:
    """E4's analysis (accuracy per language, the paired language contrast) of rows that carry
    their language as the condition."""
    return _languages(rows, _Opts(n_resamples, seed), outcome="correct")


def _languages(rows: MeaningRows, opts: _Opts, *, outcome: str) -> LanguageAnalysis:
    languages = sorted(set(rows.condition.tolist()))
    accuracy = accuracy_by(rows, "condition", n_resamples=opts.n_resamples, seed=opts.seed)
    lar: dict[str, Interval] = {}
    if outcome == "captured":
        lar = {
            lang: Interval.from_dict(
                literal_attraction_rate(
                    rows.where(condition=lang), n_resamples=opts.n_resamples, seed=opts.seed
                )
            )
            for lang in languages
        }
    pair: tuple[str, str] | None = None
    contrast = None
    if len(languages) == 2:
        a, b = languages
        pair = (a, b)
        contrast = PairedContrast.from_dict(
            paired_contrast(
                rows.where(condition=a),
                rows.where(condition=b),
                outcome=outcome,
                n_resamples=opts.n_resamples,
                seed=opts.seed,
            )
        )
    hook = (
        _hook_split(rows, languages, opts)
        if outcome == "captured" and len(languages) == 2
        else None
    )
    return LanguageAnalysis(
        hook=hook,
        accuracy=_intervals(accuracy),
        lar=lar,
        calibration={
            lang: Calibration.from_dict(calibration(rows.where(condition=lang)))
            for lang in languages
        },
        contrast_languages=pair,
        contrast=contrast,
    )
