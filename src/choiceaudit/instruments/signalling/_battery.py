"""The frozen analysis battery over several choosers' coordinate rows (paper §I-H, §IV-A–§IV-D,
§IV-G, §IV-H4): Table I cells, achieved fit by ``fit_cost`` bin, condition 4 vs 5 and format L.

A :class:`ChooserRows` is one chooser's :func:`coordinate_table` rows (plus ``label_form``); the
battery is the ``analysis`` block of a frozen item directory (``default_analysis``), so every
choice made here — analysis set, bootstrap size and level, bins, seed — was fixed before any run.
Results are the typed records of ``_results``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from choiceaudit import stats
from choiceaudit.instruments.signalling._analysis import summarise_cells
from choiceaudit.instruments.signalling._divergence import (
    choice_distributions,
    condition_agreement,
    fit_cost_deciles,
)
from choiceaudit.instruments.signalling._results import (
    ConditionAgreement,
    CoordinateCell,
    FitCostBin,
    FormatLRecord,
)
from choiceaudit.types import Item, Skipped

__all__ = [
    "ChooserRows",
    "analysis_set_label",
    "battery_cells",
    "condition_records",
    "fit_cost_records",
    "format_l_records",
    "in_analysis_set",
]


@dataclass
class ChooserRows:
    """One chooser's coordinate rows: ``kind`` is "model" (a cell per scoring rule) or
    "reference" (no scoring rule: its choice, ``probs``, repeats across rule facets)."""

    label: str
    kind: str
    rules: list[str]
    rows: list[dict[str, Any]]


def in_analysis_set(row: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    # a None criterion (``tile`` None: every tile) selects everything
    return all(v is None or row[k] == v for k, v in spec.items())


def battery_cells(
    choosers: Sequence[ChooserRows],
    battery: Mapping[str, Any],
    *,
    n_resamples: int | None = None,
) -> list[CoordinateCell]:
    """Table I: one record per chooser x rule on the frozen analysis set, with the paired
    bootstrap against random (and its Bonferroni interval across all the cells), excess over
    the marginal null and agreement with ``o_fit`` / ``o_bayes``."""
    if not choosers:
        return []
    spec = battery["analysis_set"]
    boot = battery["bootstrap"]
    rows = [
        {**r, "chooser": a.label}
        for a in choosers
        for r in a.rows
        if in_analysis_set(r, spec) and r["covered"]
    ]
    if not rows:
        return []
    cells = summarise_cells(
        rows,
        by=("chooser", "rule"),
        seed=int(battery["seed"]),
        n_resamples=n_resamples or int(boot["n_resamples"]),
        level=float(boot["level"]),
    )
    kinds = {a.label: a.kind for a in choosers}
    out = []
    for (chooser, rule), c in cells.items():
        d = c["post_norm_minus_random"]
        db = c["post_norm_minus_random_bonferroni"]
        ex = c["excess_consistency"]
        out.append(
            CoordinateCell(
                chooser=chooser,
                kind=kinds[chooser],
                rule=rule,
                n_items=c["n_items"],
                post_norm_mean=c["post_norm"]["mean"],
                post_norm_median=c["post_norm"]["median"],
                fit_norm_mean=c["fit_norm"]["mean"],
                fit_norm_median=c["fit_norm"]["median"],
                delta_post_vs_random=d["estimate"],
                delta_low=d["low"],
                delta_high=d["high"],
                delta_excludes_zero=d["excludes_zero"],
                delta_excludes_zero_bonferroni=db["excludes_zero"],
                bonferroni_level=db["level"],
                excess=ex.get("excess") if ex.get("available") else None,
                consistency=ex.get("consistency") if ex.get("available") else None,
                agree_o_fit=c["agree_fit"]["mean"],
                agree_o_bayes=c["agree_bayes"]["mean"],
                random_post_norm=c["random_post_norm"]["mean"],
                random_post_norm_sd=c["random_post_norm"]["sd"],
                random_fit_norm=c["random_fit_norm"]["mean"],
                random_fit_norm_sd=c["random_fit_norm"]["sd"],
                salience_post_norm=c["salience_post_norm"]["mean"],
                bayes_fit_norm=c["bayes_fit_norm"]["mean"],
                n_tied_renderings=c["n_tied_renderings"],
                n_uncovered_rows=c["n_uncovered_rows"],
            )
        )
    return out


def analysis_set_label(spec: Mapping[str, Any]) -> str:
    """Words for a frozen analysis set, e.g. "size conflict items, condition 4, format V"."""
    kind = "conflict" if spec.get("conflict") else "control"
    tile = spec.get("tile") or "all-tile"
    return f"{tile} {kind} items, condition {spec['condition']}, format {spec['format']}"


def fit_cost_records(
    choosers: Sequence[ChooserRows],
    items: Iterable[Item],
    battery: Mapping[str, Any],
    *,
    facets: Sequence[str],
    skipped: list[Skipped],
) -> list[FitCostBin]:
    """Achieved fit by ``fit_cost`` bin per chooser x facet (§IV-D, Fig. 3); what cannot be
    binned is appended to ``skipped``."""
    spec = battery["analysis_set"]
    items = list(items)
    n_set = len({r["item_id"] for a in choosers for r in a.rows if in_analysis_set(r, spec)})
    n_bins = min(int(battery["fit_cost_bins"]), n_set // 2)
    if n_bins < 2:
        skipped.append(
            Skipped(
                "achieved fit by fit_cost decile",
                f"the analysis set has {n_set} items (at least 4 needed for two bins of two)",
            )
        )
        return []
    if n_bins < int(battery["fit_cost_bins"]):
        skipped.append(
            Skipped(
                "fit_cost deciles",
                f"{n_set} items in the analysis set, so {n_bins} bins are used "
                f"instead of {battery['fit_cost_bins']}",
            )
        )
    records = []
    seed = int(battery["seed"])
    for a in choosers:
        for rule in a.rules:
            rows = [
                r for r in a.rows if r["rule"] == rule and in_analysis_set(r, spec) and r["covered"]
            ]
            if len({r["item_id"] for r in rows}) < n_bins:
                skipped.append(
                    Skipped(f"fit_cost bins for {a.label}/{rule}", "too few covered items")
                )
                continue
            res = fit_cost_deciles(rows, items, n_bins=n_bins, seed=seed, n_resamples=1000)
            for facet in facets if a.kind == "reference" else [rule]:
                for b, row in enumerate(res["bins"], start=1):
                    records.append(
                        FitCostBin(
                            facet=facet,
                            chooser=a.label,
                            kind=a.kind,
                            bin=b,
                            fit_cost=row["fit_cost"],
                            achieved_fit_norm=row["achieved_fit_norm"],
                            salience_fit_norm=row["salience_fit_norm"],
                            bayes_fit_norm=row["bayes_fit_norm"],
                            random_fit_norm=row["random_fit_norm"],
                            random_fit_norm_sd=row["random_fit_norm_sd"],
                            slope=res["slope"]["estimate"],
                            slope_low=res["slope"]["low"],
                            slope_high=res["slope"]["high"],
                            bayes_slope=res["bayes_slope"]["estimate"],
                        )
                    )
    return records


def condition_records(choosers: Sequence[ChooserRows]) -> list[ConditionAgreement]:
    """Condition 4 vs 5 (§IV-G), format V: agreement and total-variation distance per model x
    rule, over all items (``tile`` "all"; the TVD only when every menu has one size) and per
    tile. Reference choosers never read the instruction, so they are left out."""
    records = []
    for a in choosers:
        if a.kind == "reference":
            continue
        for rule in a.rules:
            tiles = sorted({r["tile"] for r in a.rows})
            for tile in ["all", *tiles]:
                base = [
                    r
                    for r in a.rows
                    if r["rule"] == rule and r["format"] == "V" and tile in ("all", r["tile"])
                ]
                c4 = [r for r in base if r["condition"] == "4"]
                c5 = [r for r in base if r["condition"] == "5"]
                if not c4 or not c5:
                    continue
                res = condition_agreement(c4, c5)
                records.append(
                    ConditionAgreement(
                        chooser=a.label,
                        rule=rule,
                        tile=tile,
                        n_matched=res["n_matched"],
                        agreement=res["agreement"],
                        tvd=res.get("tvd"),
                    )
                )
    return records


def format_l_records(choosers: Sequence[ChooserRows]) -> list[FormatLRecord]:
    """Format L (§IV-H4): permutation consistency against its marginal null, and the letter
    prior (the most chosen slot's share beside the canonical distribution's distance from
    uniform), per model x rule x tile x label form. Tied renderings are left out of the
    consistency and counted. Reference choosers read the item, not the letters, and are left
    out."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for a in choosers:
        for r in a.rows:
            if a.kind != "reference" and r["format"] == "L" and r["condition"] == "4":
                key = (a.label, r["rule"], r["tile"], str(r["label_form"]))
                groups.setdefault(key, []).append(r)
    records = []
    for (chooser, rule, tile, form), rows in sorted(groups.items()):
        dist = choice_distributions(rows)
        pairs: dict[str, dict[int, dict[str, Any]]] = {}
        for r in rows:
            pairs.setdefault(r["item_id"], {})[int(r["perm_index"])] = r
        both = [p for p in pairs.values() if 0 in p and 1 in p]
        untied = [p for p in both if p[0]["n_tied"] == 1 and p[1]["n_tied"] == 1]
        k = int(rows[0]["n_options"])
        consistency = null = excess = None
        if untied:
            ca = [p[0]["chosen"][0] for p in untied]
            cb = [p[1]["chosen"][0] for p in untied]
            consistency = stats.permutation_consistency(ca, cb, k)
            null = stats.marginal_null(ca, cb, k)
            excess = stats.excess_consistency(ca, cb, k)
        records.append(
            FormatLRecord(
                chooser=chooser,
                rule=rule,
                tile=tile,
                label_form=form,
                n=len(untied),
                tied=len(both) - len(untied),
                consistency=consistency,
                null=null,
                excess=excess,
                chance=1.0 / k,
                top_letter=chr(ord("A") + dist["top_slot"]),
                top_share=dist["top_slot_share"],
                canonical_dev=dist["canonical_max_deviation_from_uniform"],
            )
        )
    return records
