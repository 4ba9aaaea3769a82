"""People as an arm (paper §V, condition 8): per-participant strategy classification against
the two references, and the population curve, from an imported human run.

The imported run (``choiceaudit.audit.import_human``) is analysed by
``analyse_signalling_runs`` like any chooser's: one row per frozen rendering, the crowd's
choice distribution as ``probs``. This module reads the individual responses the run keeps
beside each row (``aux["responses"]``) and places each one on the coordinate with the same
``coordinate_table`` every chooser goes through:

* **classification block** (powered to classify an individual, §V): per participant, the share
  of choices on the salience option (``o_fit``, or any option tied with it on fit) and on the
  Bayes option (``o_bayes``), each with its exact (Clopper–Pearson) interval at ``level``, next
  to what uniform random selection gives on the same items (the mean over items of the share of
  options in the fit set, and of 1/k). The paper fixes no decision rule; the one used (a
  choice made here, a parameter through ``level``) is: **salience** when the ``o_fit`` interval
  lies above both its random rate and the ``o_bayes`` interval; **Bayes** when the ``o_bayes``
  interval lies above both its random rate and the ``o_fit`` interval; **random-like** when both
  intervals contain their random rates; otherwise **unclassified**. Mean ``fit_norm`` and
  ``post_norm`` are given with percentile bootstrap intervals over the participant's items.
* **population block** (powered to estimate a population curve): every response of the block on
  the frozen analysis set, averaged within item and then over items (the item is the unit,
  §I-H2), with the paired item bootstrap against the random reference, and achieved ``fit_norm``
  by ``fit_cost`` bin (§IV-D).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy import stats as sps

from choiceaudit import stats
from choiceaudit.instruments.signalling._analysis import (
    CoordinateRow,
    cell_summary,
    coordinate_table,
)
from choiceaudit.instruments.signalling._battery import analysis_set_label, in_analysis_set
from choiceaudit.instruments.signalling._config import SignallingConfig
from choiceaudit.instruments.signalling._divergence import fit_cost_deciles
from choiceaudit.instruments.signalling._freeze import check_run_hash, load_instrument
from choiceaudit.instruments.signalling._freeze_records import AnalysisBattery
from choiceaudit.types import Arm, Decision, Item, Query, Skipped

__all__ = [
    "STRATEGIES",
    "HumanAnalysis",
    "ParticipantStrategy",
    "PopulationBin",
    "PopulationCurve",
    "analyse_human_runs",
]

STRATEGIES = ("salience", "Bayes", "random-like", "unclassified")


@dataclass(frozen=True)
class ParticipantStrategy:
    """One participant on the classification block (panel id as recorded, nothing else)."""

    panel_id: str
    n_items: int
    o_fit_rate: float
    o_fit_low: float
    o_fit_high: float
    random_o_fit_rate: float
    o_bayes_rate: float
    o_bayes_low: float
    o_bayes_high: float
    random_o_bayes_rate: float
    fit_norm_mean: float
    fit_norm_low: float
    fit_norm_high: float
    post_norm_mean: float
    post_norm_low: float
    post_norm_high: float
    strategy: str


@dataclass(frozen=True)
class PopulationBin:
    bin: int
    fit_cost: float
    achieved_fit_norm: float
    bayes_fit_norm: float
    random_fit_norm: float


@dataclass(frozen=True)
class PopulationCurve:
    """The population block on the analysis set: per-response coordinates, item as the unit."""

    n_items: int
    n_responses: int
    fit_norm_mean: float
    post_norm_mean: float
    random_post_norm: float
    delta_post_vs_random: float
    delta_low: float
    delta_high: float
    delta_fit_vs_random: float
    delta_fit_low: float
    delta_fit_high: float
    bins: tuple[PopulationBin, ...]
    slope: float | None
    slope_low: float | None
    slope_high: float | None


@dataclass(frozen=True)
class HumanAnalysis:
    """The human arm's own analyses (beside its Table I cell in the ``SignallingAnalysis``)."""

    source: str
    chooser: str
    instrument_hash: str
    set_label: str
    level: float
    n_participants: int
    excluded: dict[str, int]
    participants: tuple[ParticipantStrategy, ...]
    counts: dict[str, int]
    population: PopulationCurve | None
    skipped: tuple[Skipped, ...]


def _clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    alpha = 1.0 - level
    low = 0.0 if k == 0 else float(sps.beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(sps.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def _classify(p: dict[str, float]) -> str:
    if p["o_fit_low"] > max(p["random_o_fit_rate"], p["o_bayes_high"]):
        return "salience"
    if p["o_bayes_low"] > max(p["random_o_bayes_rate"], p["o_fit_high"]):
        return "Bayes"
    fit_random = p["o_fit_low"] <= p["random_o_fit_rate"] <= p["o_fit_high"]
    bayes_random = p["o_bayes_low"] <= p["random_o_bayes_rate"] <= p["o_bayes_high"]
    return "random-like" if fit_random and bayes_random else "unclassified"


class Response(NamedTuple):
    """One person's response on the coordinate, with who gave it and in which block."""

    row: CoordinateRow
    panel_id: str
    block: str


def _response_rows(arm: Arm, items: Iterable[Item]) -> list[Response]:
    """One coordinate row per response (``coordinate_table`` on a one-hot decision), with the
    participant and block beside it."""
    queries: list[Query] = []
    decisions: list[Decision] = []
    who: list[tuple[str, str]] = []
    for q, d in arm.rows:
        for resp in d.aux.get("responses", []):
            queries.append(q)
            decisions.append(Decision.uniform_over(q.id, q.n_options, [int(resp["slot"])]))
            who.append((str(resp["panel_id"]), str(resp["block"])))
    rows = coordinate_table(items, queries, decisions, rules=["probs"])
    return [
        Response(row, panel_id, block) for row, (panel_id, block) in zip(rows, who, strict=True)
    ]


def _participants(
    responses: Sequence[Response], level: float, n_resamples: int, seed: int
) -> list[ParticipantStrategy]:
    by: dict[str, list[CoordinateRow]] = {}
    for r in responses:
        if r.block == "classification" and r.row.conflict:
            by.setdefault(r.panel_id, []).append(r.row)
    out = []
    for panel_id, own in sorted(by.items()):
        n = len(own)
        k_fit = round(sum(r.agree_fit for r in own))
        k_bayes = round(sum(r.agree_bayes for r in own))
        fit_lo, fit_hi = _clopper_pearson(k_fit, n, level)
        bay_lo, bay_hi = _clopper_pearson(k_bayes, n, level)
        fit_ci = stats.bootstrap_ci(
            [r.fit_norm for r in own], n_resamples=n_resamples, level=level, seed=seed
        )
        post_ci = stats.bootstrap_ci(
            [r.post_norm for r in own], n_resamples=n_resamples, level=level, seed=seed
        )
        p = {
            "o_fit_rate": k_fit / n,
            "o_fit_low": fit_lo,
            "o_fit_high": fit_hi,
            "random_o_fit_rate": float(np.mean([r.random_agree_fit for r in own])),
            "o_bayes_rate": k_bayes / n,
            "o_bayes_low": bay_lo,
            "o_bayes_high": bay_hi,
            "random_o_bayes_rate": float(np.mean([r.random_agree_bayes for r in own])),
        }
        out.append(
            ParticipantStrategy(
                panel_id=panel_id,
                n_items=n,
                fit_norm_mean=fit_ci.estimate,
                fit_norm_low=fit_ci.low,
                fit_norm_high=fit_ci.high,
                post_norm_mean=post_ci.estimate,
                post_norm_low=post_ci.low,
                post_norm_high=post_ci.high,
                strategy=_classify(p),
                **p,
            )
        )
    return out


def _population(
    responses: Sequence[Response],
    frozen_items: Iterable[Item],
    battery: AnalysisBattery,
    level: float,
    skipped: list[Skipped],
) -> PopulationCurve | None:
    spec = battery["analysis_set"]
    block = [r.row for r in responses if r.block == "population"]
    use = [r for r in block if in_analysis_set(r, spec)]
    if len(use) < len(block):
        skipped.append(
            Skipped(
                "population responses outside the analysis set",
                f"{len(block) - len(use)} of {len(block)} (pool 'all') are not in the curve",
            )
        )
    if not use:
        skipped.append(
            Skipped("population curve", "no population-block response on the analysis set")
        )
        return None
    seed = int(battery["seed"])
    n_resamples = int(battery["bootstrap"]["n_resamples"])
    s = cell_summary(use, seed=seed, n_resamples=n_resamples, level=level)
    n_items = s.n_items
    n_bins = min(int(battery["fit_cost_bins"]), n_items // 2)
    bins: list[PopulationBin] = []
    slope: tuple[float | None, float | None, float | None] = (None, None, None)
    if n_bins >= 2:
        res = fit_cost_deciles(use, frozen_items, n_bins=n_bins, seed=seed, n_resamples=1000)
        bins = [
            PopulationBin(
                b,
                row.fit_cost,
                row.achieved_fit_norm,
                row.bayes_fit_norm,
                row.random_fit_norm,
            )
            for b, row in enumerate(res.bins, start=1)
        ]
        slope = (res.slope.estimate, res.slope.low, res.slope.high)
    else:
        skipped.append(Skipped("population fit_cost bins", f"{n_items} items (at least 4 needed)"))
    d, dfit = s.post_norm_minus_random, s.fit_norm_minus_random
    return PopulationCurve(
        n_items=n_items,
        n_responses=len(use),
        fit_norm_mean=s.fit_norm.mean,
        post_norm_mean=s.post_norm.mean,
        random_post_norm=s.random_post_norm.mean,
        delta_post_vs_random=d.estimate,
        delta_low=d.low,
        delta_high=d.high,
        delta_fit_vs_random=dfit.estimate,
        delta_fit_low=dfit.low,
        delta_fit_high=dfit.high,
        bins=tuple(bins),
        slope=slope[0],
        slope_low=slope[1],
        slope_high=slope[2],
    )


def analyse_human_runs(arms: Sequence[Arm], *, level: float = 0.95) -> tuple[HumanAnalysis, ...]:
    """The human arms among ``arms`` (runs written by ``import human``: ``config["human"]``),
    each verified against its own copy of the frozen items; other arms are ignored."""
    out = []
    for arm in arms:
        config = arm.with_config(SignallingConfig).config
        human = config.human
        if not human:
            continue
        frozen = load_instrument(Path(arm.source) / "instrument")
        check_run_hash(config.to_json(), frozen, run=arm.source)
        by_id = {
            q.id
            for q in frozen.render(
                conditions=config.conditions, formats=["V"], label_forms=["bare"]
            )
        }
        for n, (q, _) in enumerate(arm.rows):
            if q.id not in by_id:
                from choiceaudit.instruments.signalling._freeze import InstrumentMismatchError

                raise InstrumentMismatchError(
                    f"{arm.source}: row {n} (field query_id {q.id}) is not a rendering of the frozen instrument"
                )
        battery = frozen.analysis
        rows = _response_rows(arm, frozen.items)
        skipped: list[Skipped] = []
        seed = int(battery["seed"])
        people = _participants(rows, level, int(battery["bootstrap"]["n_resamples"]), seed)
        if not people:
            skipped.append(
                Skipped(
                    "strategy classification", "no classification-block response on a conflict item"
                )
            )
        counts = {s: sum(p.strategy == s for p in people) for s in STRATEGIES}
        out.append(
            HumanAnalysis(
                source=arm.source,
                chooser=str(config.chooser or "people"),
                instrument_hash=frozen.hash,
                set_label=analysis_set_label(battery["analysis_set"]),
                level=level,
                n_participants=int(human.get("participants", len(people))),
                excluded=dict(human.get("excluded", {})),
                participants=tuple(people),
                counts=counts,
                population=_population(rows, frozen.items, battery, level, skipped),
                skipped=tuple(skipped),
            )
        )
    return tuple(out)
