"""Every meaning analysis one arm's rows support, as a typed :class:`ArmAnalysis`.

:func:`analyse_meaning` reads the rows of one model's run and computes, per experiment present:

* ``e1`` — the ladder (accuracy per family), LAR and the gold / literal / other decomposition on
  d-lit and d-hard, LAR by idiom length and cue strata on d-lit (§5.6, Appendix J), calibration
  and output distributions per family, the paired contrast (McNemar and bootstrap) of d-rand
  against every other family, slot shares pooled over the ladder (Appendix Q, Figure 11) and the
  risk–coverage curves of d-rand and d-lit (Figure 4, at most 101 points each);
* ``e2`` — surface agreement and divergence; ``e3`` — unit integrity; ``e4`` — accuracy per
  language and the paired language contrast; ``e6`` — signal retention, and calibration and the
  overconfidence gap of the semantics-free control o4; ``e7`` — the order audit;
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
    cue_strata,
    order_audit,
    signal_retention,
    surface_agreement,
    unit_integrity,
)
from choiceaudit.instruments.meaning._results import (
    Agreement,
    ArmAnalysis,
    Calibration,
    CueStratum,
    Decomposition,
    Interval,
    LadderAnalysis,
    LanguageAnalysis,
    O4Control,
    OptionAblation,
    OrderAudit,
    OutputDistribution,
    PairedContrast,
    PermutationTravel,
    Retention,
    RiskCoverage,
    SurfaceAgreement,
    UnitIntegrity,
)
from choiceaudit.instruments.meaning._rows import MeaningRows

__all__ = ["CURVE_FAMILIES", "MAX_CURVE_POINTS", "analyse_meaning"]

#: the two families the reliability and risk–coverage figures compare (Figure 4)
CURVE_FAMILIES = ("d-rand", "d-lit")
#: risk–coverage points kept per curve (evenly spaced indices over the full curve)
MAX_CURVE_POINTS = 101


@dataclass(frozen=True)
class _Opts:
    n_resamples: int
    seed: int


def analyse_meaning(
    rows: MeaningRows, *, n_resamples: int = N_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> ArmAnalysis:
    """All analyses for the experiments present in ``rows`` (see the module docstring)."""
    opts = _Opts(n_resamples, seed)
    experiments = set(rows.experiment.tolist())

    def part(name: str) -> MeaningRows | None:
        return rows.where(experiment=name) if name in experiments else None

    e1, e2, e3, e4 = part("e1"), part("e2"), part("e3"), part("e4")
    e6, e7, matrix = part("e6"), part("e7"), part("matrix")
    return ArmAnalysis(
        n_rows=len(rows),
        k=rows.k,
        e1=None if e1 is None else _ladder(e1, opts),
        e2=None if e2 is None else _surface(e2),
        e3=None if e3 is None else _unit(e3, opts),
        e4=None if e4 is None else _languages(e4, opts, outcome="correct"),
        e6=None if e6 is None else _ablation(e6, opts),
        e7=None if e7 is None else _order(e7),
        matrix=None if matrix is None else _languages(matrix, opts, outcome="captured"),
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
    cues: dict[str, CueStratum] = {}
    if "d-lit" in families:
        d_lit = rows.where(family="d-lit")
        by_length = _intervals(
            lar_by_stratum(
                d_lit, length_strata(d_lit), n_resamples=opts.n_resamples, seed=opts.seed
            )
        )
        strata = cue_strata(d_lit, n_resamples=opts.n_resamples, seed=opts.seed)
        cues = {cue: _cue(cell) for cue, cell in strata.items()}
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
    )


def _surface(rows: MeaningRows) -> SurfaceAgreement:
    return SurfaceAgreement(**surface_agreement(rows))


def _unit(rows: MeaningRows, opts: _Opts) -> UnitIntegrity:
    result = unit_integrity(rows, n_resamples=opts.n_resamples, seed=opts.seed)
    agreement = {}
    for variant, cell in result["agreement_with_intact"].items():
        interval = cell.get("interval")
        agreement[variant] = Agreement(
            n_pairs=cell["n_pairs"],
            agreement=cell["agreement"],
            n_tied_excluded=cell["n_tied_excluded"],
            interval=None if interval is None else Interval.from_dict(interval),
        )
    return UnitIntegrity(accuracy=_intervals(result["accuracy"]), agreement_with_intact=agreement)


def _ablation(rows: MeaningRows, opts: _Opts) -> OptionAblation:
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
    return OptionAblation(signal_retention=retention, o4=control)


def _order(rows: MeaningRows) -> OrderAudit:
    audit = order_audit(rows)
    return OrderAudit(
        n_items=audit["n_items"],
        n_incomplete_items_excluded=audit["n_incomplete_items_excluded"],
        answer_instability=audit["answer_instability"],
        mean_distinct_choices=audit["mean_distinct_choices"],
        mean_gold_prob_range=audit["mean_gold_prob_range"],
        selection_spread=audit["selection_spread"],
        slot_shares=tuple(audit["slot_shares"]),
        permutation_audit=PermutationTravel(**audit["permutation_audit"]),
    )


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
    return LanguageAnalysis(
        accuracy=_intervals(accuracy),
        lar=lar,
        calibration={
            lang: Calibration.from_dict(calibration(rows.where(condition=lang)))
            for lang in languages
        },
        contrast_languages=pair,
        contrast=contrast,
    )
