"""Every meaning analysis a run supports, as one JSON-ready dict (what the report draws).

:func:`analyse_meaning` reads the rows of one model's run and computes, per experiment present:

* ``e1`` — the ladder (accuracy per family), LAR on d-lit and d-hard, the d-lit decomposition
  and its LAR by idiom length,
  calibration and output distributions per family, McNemar of d-rand against every other family,
  slot shares pooled over the ladder (Appendix Q, Figure 11) and cue strata on d-lit (§5.6);
* ``e2`` — surface agreement and divergence; ``e3`` — unit integrity; ``e4`` — accuracy per
  language and the paired language contrast; ``e6`` — signal retention, and calibration and the
  overconfidence gap of the semantics-free control o4; ``e7`` — the order audit;
* ``matrix`` — accuracy, LAR and calibration per language, and the paired language contrast on
  LAR (Appendix I, Table 15).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
from choiceaudit.instruments.meaning._rows import MeaningRows

__all__ = ["analyse_meaning"]


@dataclass(frozen=True)
class _Opts:
    n_resamples: int
    seed: int


def analyse_meaning(
    rows: MeaningRows, *, n_resamples: int = N_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> dict[str, Any]:
    """All analyses for the experiments present in ``rows`` (see the module docstring)."""
    opts = _Opts(n_resamples, seed)
    out: dict[str, Any] = {"n_rows": len(rows)}
    experiments = set(rows.experiment.tolist())
    if "e1" in experiments:
        out["e1"] = _ladder(rows.where(experiment="e1"), opts)
    if "e2" in experiments:
        out["e2"] = surface_agreement(rows.where(experiment="e2"))
    if "e3" in experiments:
        out["e3"] = unit_integrity(
            rows.where(experiment="e3"), n_resamples=opts.n_resamples, seed=opts.seed
        )
    if "e4" in experiments:
        out["e4"] = _languages(rows.where(experiment="e4"), opts, outcome="correct")
    if "e6" in experiments:
        e6 = rows.where(experiment="e6")
        out["e6"] = {
            "signal_retention": signal_retention(e6, n_resamples=opts.n_resamples, seed=opts.seed)
        }
        o4 = e6.where(condition="o4")
        if len(o4):
            out["e6"]["o4_calibration"] = calibration(o4)
            out["e6"]["o4_overconfidence_gap"] = overconfidence_gap(
                o4, n_resamples=opts.n_resamples, seed=opts.seed
            )
    if "e7" in experiments:
        out["e7"] = order_audit(rows.where(experiment="e7"))
    if "matrix" in experiments:
        out["matrix"] = _languages(rows.where(experiment="matrix"), opts, outcome="captured")
    return out


def _ladder(rows: MeaningRows, opts: _Opts) -> dict[str, Any]:
    accuracy = accuracy_by(rows, n_resamples=opts.n_resamples, seed=opts.seed)
    families = list(accuracy)
    out: dict[str, Any] = {"accuracy": accuracy}
    out["lar"] = {
        f: literal_attraction_rate(
            rows.where(family=f), n_resamples=opts.n_resamples, seed=opts.seed
        )
        for f in families
        if (rows.where(family=f).literal_slot >= 0).any()
    }
    if "d-lit" in families:
        d_lit = rows.where(family="d-lit")
        out["decomposition_d_lit"] = decomposition(d_lit)
        out["lar_by_length_d_lit"] = lar_by_stratum(
            d_lit, length_strata(d_lit), n_resamples=opts.n_resamples, seed=opts.seed
        )
        out["cue_strata_d_lit"] = cue_strata(d_lit, n_resamples=opts.n_resamples, seed=opts.seed)
    out["calibration"] = {f: calibration(rows.where(family=f)) for f in families}
    out["output_distribution"] = {f: output_distribution(rows.where(family=f)) for f in families}
    if "d-rand" in families:
        base = rows.where(family="d-rand")
        out["contrast_vs_d_rand"] = {
            f: paired_contrast(
                base, rows.where(family=f), n_resamples=opts.n_resamples, seed=opts.seed
            )
            for f in families
            if f != "d-rand"
        }
    out["slot_shares"] = stats.slot_shares(rows.probs).tolist()
    return out


def _languages(rows: MeaningRows, opts: _Opts, *, outcome: str) -> dict[str, Any]:
    languages = sorted(set(rows.condition.tolist()))
    out: dict[str, Any] = {
        "accuracy": accuracy_by(rows, "condition", n_resamples=opts.n_resamples, seed=opts.seed)
    }
    if outcome == "captured":
        out["lar"] = {
            lang: literal_attraction_rate(
                rows.where(condition=lang), n_resamples=opts.n_resamples, seed=opts.seed
            )
            for lang in languages
        }
    out["calibration"] = {lang: calibration(rows.where(condition=lang)) for lang in languages}
    if len(languages) == 2:
        a, b = languages
        out[f"contrast_{a}_minus_{b}"] = paired_contrast(
            rows.where(condition=a),
            rows.where(condition=b),
            outcome=outcome,
            n_resamples=opts.n_resamples,
            seed=opts.seed,
        )
    return out
