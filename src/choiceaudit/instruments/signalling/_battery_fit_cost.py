"""The battery's achieved fit and posterior by ``fit_cost`` bin (paper §IV-D, §IV-E, Fig. 3).

Per chooser and scoring rule, the frozen analysis set's items are binned by ``fit_cost`` with
the frozen battery's bin count, seed and bootstrap; what cannot be binned is recorded as a
``Skipped`` reason rather than dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from choiceaudit.instruments.signalling._battery import ChooserRows, in_analysis_set
from choiceaudit.instruments.signalling._divergence import FitCostDeciles, fit_cost_deciles
from choiceaudit.instruments.signalling._freeze_records import AnalysisBattery
from choiceaudit.instruments.signalling._results import FitCostBin, FitCostSlope
from choiceaudit.types import Item, Skipped

__all__ = ["fit_cost_records"]


def fit_cost_records(
    choosers: Sequence[ChooserRows],
    items: Iterable[Item],
    battery: AnalysisBattery,
    *,
    facets: Sequence[str],
    skipped: list[Skipped],
) -> tuple[list[FitCostBin], list[FitCostSlope]]:
    """Achieved fit and posterior by ``fit_cost`` bin per chooser x facet (§IV-D, Fig. 3) and
    the slopes with intervals of the frozen battery's ``n_resamples`` (§IV-D, §IV-E); what
    cannot be binned is appended to ``skipped``."""
    spec = battery["analysis_set"]
    items = list(items)
    n_set = len({r.item_id for a in choosers for r in a.rows if in_analysis_set(r, spec)})
    n_bins = min(int(battery["fit_cost_bins"]), n_set // 2)
    if n_bins < 2:
        skipped.append(
            Skipped(
                "achieved fit by fit_cost decile",
                f"the analysis set has {n_set} items (at least 4 needed for two bins of two)",
            )
        )
        return [], []
    if n_bins < int(battery["fit_cost_bins"]):
        skipped.append(
            Skipped(
                "fit_cost deciles",
                f"{n_set} items in the analysis set, so {n_bins} bins are used "
                f"instead of {battery['fit_cost_bins']}",
            )
        )
    records: list[FitCostBin] = []
    slopes: list[FitCostSlope] = []
    seed = int(battery["seed"])
    boot = battery["bootstrap"]
    n_resamples = int(boot["n_resamples"])
    sesoi = float(battery.get("sesoi", 0.05))
    for a in choosers:
        for rule in a.rules:
            rows = [r for r in a.rows if r.rule == rule and in_analysis_set(r, spec) and r.covered]
            if len({r.item_id for r in rows}) < n_bins:
                skipped.append(
                    Skipped(f"fit_cost bins for {a.label}/{rule}", "too few covered items")
                )
                continue
            try:
                res = fit_cost_deciles(
                    rows,
                    items,
                    n_bins=n_bins,
                    seed=seed,
                    n_resamples=n_resamples,
                    level=float(boot["level"]),
                )
            except ValueError as exc:  # e.g. every item at one fit_cost: no slope exists
                skipped.append(Skipped(f"fit_cost bins for {a.label}/{rule}", str(exc)))
                continue
            slopes.append(_slope_of(res, a.label, rule, sesoi=sesoi, n_resamples=n_resamples))
            for facet in facets if a.kind == "reference" else [rule]:
                records.extend(_bins_of(res, facet, a.label, a.kind))
    return records, slopes


def _slope_of(
    res: FitCostDeciles, chooser: str, rule: str, *, sesoi: float, n_resamples: int
) -> FitCostSlope:
    """The §IV-D/§IV-E slopes of one chooser x rule from :func:`fit_cost_deciles`' result."""
    sl, ps, pc = res.slope, res.post_slope, res.post_predicted_change
    return FitCostSlope(
        chooser=chooser,
        rule=rule,
        slope=sl.estimate,
        low=sl.low,
        high=sl.high,
        bayes_slope=res.bayes_slope.estimate,
        excludes_zero=bool(sl.low > 0 or sl.high < 0),
        post_slope=ps.estimate,
        post_low=ps.low,
        post_high=ps.high,
        post_excludes_zero=bool(ps.low > 0 or ps.high < 0),
        predicted_change=pc.estimate,
        predicted_low=pc.low,
        predicted_high=pc.high,
        sesoi=sesoi,
        n_resamples=n_resamples,
    )


def _bins_of(res: FitCostDeciles, facet: str, chooser: str, kind: str) -> list[FitCostBin]:
    """Fig. 3's bins of one chooser in one facet, each carrying the chooser's slope."""
    sl = res.slope
    return [
        FitCostBin(
            facet=facet,
            chooser=chooser,
            kind=kind,
            bin=b,
            fit_cost=row.fit_cost,
            achieved_fit_norm=row.achieved_fit_norm,
            salience_fit_norm=row.salience_fit_norm,
            bayes_fit_norm=row.bayes_fit_norm,
            random_fit_norm=row.random_fit_norm,
            random_fit_norm_sd=row.random_fit_norm_sd,
            slope=sl.estimate,
            slope_low=sl.low,
            slope_high=sl.high,
            bayes_slope=res.bayes_slope.estimate,
            fit_separation=row.fit_separation,
            achieved_post_norm=row.achieved_post_norm,
            salience_post_norm=row.salience_post_norm,
            bayes_post_norm=row.bayes_post_norm,
            post_separation=row.post_separation,
            random_post_norm=row.random_post_norm,
            random_post_norm_sd=row.random_post_norm_sd,
            departure_from_o_fit=row.departure_from_o_fit,
        )
        for b, row in enumerate(res.bins, start=1)
    ]
