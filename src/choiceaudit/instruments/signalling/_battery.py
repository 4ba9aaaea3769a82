"""The frozen analysis battery over several choosers' coordinate rows (paper §I-H, §IV-A–§IV-D,
§IV-G, §IV-H4): Table I cells, condition 4 vs 5 and format L;
achieved fit by ``fit_cost`` bin is in ``_battery_fit_cost``.

A :class:`ChooserRows` is one chooser's :func:`coordinate_table` rows; the
battery is the ``analysis`` block of a frozen item directory (``default_analysis``), so every
choice made here — analysis set, bootstrap size and level, bins, seed — was fixed before any run.
Results are the typed records of ``_results``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from choiceaudit.instruments.signalling._analysis import (
    CoordinateRow,
    paired_excess,
    summarise_cells,
)
from choiceaudit.instruments.signalling._divergence import (
    choice_distributions,
    condition_agreement,
)
from choiceaudit.instruments.signalling._freeze_records import AnalysisBattery, AnalysisSetSpec
from choiceaudit.instruments.signalling._results import (
    ConditionAgreement,
    CoordinateCell,
    FormatLRecord,
    LabelFormAgreement,
    RandomComparison,
    RuleAgreement,
    TileExcess,
)
from choiceaudit.types import Skipped

__all__ = [
    "MIN_ITEMS_CI",
    "ChooserRows",
    "analysis_set_label",
    "battery_cells",
    "condition_records",
    "format_l_records",
    "in_analysis_set",
    "interval_skips",
    "label_form_records",
    "random_comparison",
    "rule_agreement_records",
    "tile_excess_records",
]


#: Fewest items for a cell's interval against random: below it the percentile bootstrap's
#: 2.5 % tails are a handful of resamples (one item gives the point twice, so a difference of
#: 1e-16 "excluded" zero), and the interval is left out with a typed skip, as r's is below
#: ``MIN_CELLS_CI``. The paper's cells have hundreds of items; the choice is the project's.
MIN_ITEMS_CI = 6


@dataclass
class ChooserRows:
    """One chooser's coordinate rows: ``kind`` is "model" (a cell per scoring rule) or
    "reference" (no scoring rule: its choice, ``probs``, repeats across rule facets)."""

    label: str
    kind: str
    rules: list[str]
    rows: list[CoordinateRow]
    #: the paper's condition (§I-K): "4" for a model on the analysis set, "1"-"3", "6", "7"
    #: for conditions run as choosers, "reference" for uniform and salience
    condition: str = "4"
    #: the run was allowed to score only the items its source covers (--allow-partial-coverage)
    partial_coverage: bool = False


def in_analysis_set(row: CoordinateRow, spec: AnalysisSetSpec) -> bool:
    # a None criterion (``tile`` None: every tile) selects everything
    return all(v is None or row.field(k) == v for k, v in spec.items())


def battery_cells(
    choosers: Sequence[ChooserRows],
    battery: AnalysisBattery,
    *,
    n_resamples: int | None = None,
) -> list[CoordinateCell]:
    """Table I: one record per chooser x rule on the frozen analysis set, with the paired
    bootstrap against random on both axes (and its Bonferroni interval across the model x rule
    cells only: reference choosers are not tested cells, §I-H2), excess over
    the marginal null and agreement with ``o_fit`` / ``o_bayes``."""
    if not choosers:
        return []
    spec = battery["analysis_set"]
    boot = battery["bootstrap"]
    # uncovered rows stay in: the cell excludes and counts them (n_uncovered_rows); a chooser
    # that covers nothing of the analysis set has no cell
    scored = {a.label for a in choosers for r in a.rows if in_analysis_set(r, spec) and r.covered}
    rows = [
        replace(r, chooser=a.label)
        for a in choosers
        for r in a.rows
        if a.label in scored and in_analysis_set(r, spec)
    ]
    if not rows:
        return []
    partial = {a.label: a.partial_coverage for a in choosers}
    n_set = {
        a.label: len({r.item_id for r in a.rows if in_analysis_set(r, spec)}) for a in choosers
    }
    kinds = {a.label: a.kind for a in choosers}
    conditions = {a.label: a.condition for a in choosers}
    model_cells = {(r.chooser, r.rule) for r in rows if kinds[r.chooser] == "model"}
    cells = summarise_cells(
        rows,
        by=("chooser", "rule"),
        seed=int(battery["seed"]),
        n_resamples=n_resamples or int(boot["n_resamples"]),
        level=float(boot["level"]),
        bonferroni_cells=max(len(model_cells), 1),
    )
    out = []
    for key, c in cells.items():
        chooser, rule = str(key[0]), str(key[1])
        d, df = c.post_norm_minus_random, c.fit_norm_minus_random
        # summarise_cells always passes a cell count, so the Bonferroni intervals are there
        db, dfb = c.post_norm_minus_random_bonferroni, c.fit_norm_minus_random_bonferroni
        if db is None or dfb is None:
            raise ValueError(f"cell {chooser}/{rule} has no Bonferroni interval")
        ex = c.excess_consistency
        # too few items for an interval: the point estimate stays, the test is not made
        tested = c.n_items >= MIN_ITEMS_CI
        nan = float("nan")
        post, rand = c.post_norm.mean, c.random_post_norm.mean
        sal = c.salience_post_norm.mean
        out.append(
            CoordinateCell(
                chooser=chooser,
                kind=kinds[chooser],
                rule=rule,
                n_items=c.n_items,
                post_norm_mean=c.post_norm.mean,
                post_norm_median=c.post_norm.median,
                fit_norm_mean=c.fit_norm.mean,
                fit_norm_median=c.fit_norm.median,
                delta_post_vs_random=d.estimate,
                delta_low=d.low if tested else nan,
                delta_high=d.high if tested else nan,
                delta_excludes_zero=d.excludes_zero if tested else None,
                delta_excludes_zero_bonferroni=db.excludes_zero if tested else None,
                bonferroni_level=db.level,
                excess=ex.excess if ex.available else None,
                consistency=ex.consistency if ex.available else None,
                agree_o_fit=c.agree_fit.mean,
                agree_o_bayes=c.agree_bayes.mean,
                random_post_norm=c.random_post_norm.mean,
                random_post_norm_sd=c.random_post_norm.sd,
                random_fit_norm=c.random_fit_norm.mean,
                random_fit_norm_sd=c.random_fit_norm.sd,
                salience_post_norm=c.salience_post_norm.mean,
                bayes_fit_norm=c.bayes_fit_norm.mean,
                n_tied_renderings=c.n_tied_renderings,
                n_uncovered_rows=c.n_uncovered_rows,
                condition=conditions[chooser],
                delta_fit_vs_random=df.estimate,
                delta_fit_low=df.low if tested else nan,
                delta_fit_high=df.high if tested else nan,
                delta_fit_excludes_zero=df.excludes_zero if tested else None,
                delta_fit_excludes_zero_bonferroni=dfb.excludes_zero if tested else None,
                random_to_salience=(post - rand) / (sal - rand) if sal != rand else float("nan"),
                salience_to_bayes=(post - sal) / (1.0 - sal) if sal != 1.0 else float("nan"),
                share_o_fit_both=c.share_o_fit_both,
                n_covered_items=c.n_items,
                n_analysis_items=n_set[chooser],
                partial_coverage=partial[chooser],
                excess_n_items=ex.n_items,
                excess_tied_items=ex.tied_items,
                excess_excluded_unpaired=ex.excluded_unpaired,
            )
        )
    return out


def interval_skips(cells: Sequence[CoordinateCell]) -> list[Skipped]:
    """A typed skip for each cell whose interval against random was not computed (fewer than
    :data:`MIN_ITEMS_CI` items)."""
    return [
        Skipped(
            f"interval of delta vs random for {c.chooser}/{c.rule}",
            f"{c.n_items} item(s) in the cell (at least {MIN_ITEMS_CI} needed for a bootstrap "
            "interval); the point estimate is shown without it",
        )
        for c in cells
        if c.delta_excludes_zero is None
    ]


def random_comparison(cells: Sequence[CoordinateCell]) -> list[RandomComparison]:
    """§IV-B: counts of model x rule cells indistinguishable from and worse than random on
    each axis, at 95 % and under Bonferroni across the model cells only (those with an
    interval: a cell of fewer than :data:`MIN_ITEMS_CI` items is not tested)."""
    models = [c for c in cells if c.kind == "model" and c.delta_excludes_zero is not None]
    if not models:
        return []
    level = models[0].bonferroni_level
    out = []
    for axis, est, sig, sig_b in (
        (
            "post_norm",
            "delta_post_vs_random",
            "delta_excludes_zero",
            "delta_excludes_zero_bonferroni",
        ),
        (
            "fit_norm",
            "delta_fit_vs_random",
            "delta_fit_excludes_zero",
            "delta_fit_excludes_zero_bonferroni",
        ),
    ):
        out.append(
            RandomComparison(
                axis=axis,
                n_cells=len(models),
                bonferroni_level=level,
                indistinguishable=sum(not getattr(c, sig) for c in models),
                indistinguishable_bonferroni=sum(not getattr(c, sig_b) for c in models),
                worse=sum(getattr(c, sig) and getattr(c, est) < 0 for c in models),
                worse_bonferroni=sum(getattr(c, sig_b) and getattr(c, est) < 0 for c in models),
                below_random_mean=sum(getattr(c, est) < 0 for c in models),
            )
        )
    return out


def _perm(row: CoordinateRow) -> int:
    if row.perm_index is None:
        raise ValueError(f"row for item {row.item_id!r} has no stored permutation index")
    return row.perm_index


def _tile_key(tile: str | None) -> str:
    # rows of one arm share a tile type; None (a query without a tile) sorts as its own name
    return "" if tile is None else tile


def _set_agreement(a: Sequence[int], b: Sequence[int]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / (len(sa) * len(sb))


def rule_agreement_records(
    choosers: Sequence[ChooserRows], battery: AnalysisBattery
) -> list[RuleAgreement]:
    """§I-H: per model, agreement between every two scoring rules on the chosen option over
    the renderings of the analysis set."""
    spec = battery["analysis_set"]
    out = []
    for a in choosers:
        if a.kind != "model" or len(a.rules) < 2:
            continue
        by_rule: dict[str, dict[tuple[str, int], tuple[int, ...]]] = {}
        for r in a.rows:
            if in_analysis_set(r, spec):
                by_rule.setdefault(r.rule, {})[(r.item_id, _perm(r))] = r.chosen
        rules = [r for r in a.rules if r in by_rule]
        for i, ra in enumerate(rules):
            for rb in rules[i + 1 :]:
                keys = sorted(set(by_rule[ra]) & set(by_rule[rb]))
                if not keys:
                    continue
                agree = [_set_agreement(by_rule[ra][k], by_rule[rb][k]) for k in keys]
                out.append(RuleAgreement(a.label, ra, rb, len(keys), float(np.mean(agree))))
    return out


def tile_excess_records(choosers: Sequence[ChooserRows]) -> list[TileExcess]:
    """§IV-H3: excess over the marginal null per tile, condition 4, format V, every item of
    the tile (conflict and control), per chooser x rule; ties by split credit."""
    out = []
    for a in choosers:
        for rule in a.rules:
            tiles: dict[str, list[CoordinateRow]] = {}
            for r in a.rows:
                if r.rule == rule and r.condition == "4" and r.format == "V" and r.covered:
                    tiles.setdefault(str(r.tile), []).append(r)
            for tile, tile_rows in sorted(tiles.items()):
                ex = paired_excess(tile_rows)
                out.append(
                    TileExcess(
                        a.label,
                        rule,
                        tile,
                        ex.n_items,
                        ex.consistency,
                        ex.marginal_null,
                        ex.excess,
                        tied=ex.tied_items,
                    )
                )
    return out


def label_form_records(choosers: Sequence[ChooserRows]) -> list[LabelFormAgreement]:
    """§IV-H4: agreement of the canonical choice between label forms ``paren`` and ``bare``
    of format L (condition 4), per model x rule x tile."""
    out = []
    for a in choosers:
        if a.kind != "model":
            continue
        forms: dict[tuple[str, str, str], dict[tuple[str, int], tuple[int, ...]]] = {}
        for r in a.rows:
            if r.format == "L" and r.condition == "4":
                key = (r.rule, str(r.tile), str(r.label_form))
                forms.setdefault(key, {})[(r.item_id, _perm(r))] = r.chosen
        for (rule, tile, form), rows in sorted(forms.items()):
            if form != "paren" or (rule, tile, "bare") not in forms:
                continue
            bare = forms[(rule, tile, "bare")]
            keys = sorted(set(rows) & set(bare))
            if keys:
                agree = [_set_agreement(rows[k], bare[k]) for k in keys]
                out.append(
                    LabelFormAgreement(a.label, rule, tile, len(keys), float(np.mean(agree)))
                )
    return out


def analysis_set_label(spec: AnalysisSetSpec) -> str:
    """Words for a frozen analysis set, e.g. "size conflict items, condition 4, format V"."""
    kind = "conflict" if spec.get("conflict") else "control"
    tile = spec.get("tile") or "all-tile"
    return f"{tile} {kind} items, condition {spec['condition']}, format {spec['format']}"


def condition_records(choosers: Sequence[ChooserRows]) -> list[ConditionAgreement]:
    """Condition 4 vs 5 (§IV-G), format V: agreement and total-variation distance per model x
    rule, over all items (``tile`` "all"; the TVD only when every menu has one size) and per
    tile. Reference choosers never read the instruction, so they are left out."""
    records = []
    for a in choosers:
        if a.kind == "reference":
            continue
        for rule in a.rules:
            tiles = sorted({r.tile for r in a.rows}, key=_tile_key)
            for tile in ["all", *tiles]:
                base = [
                    r
                    for r in a.rows
                    if r.rule == rule and r.format == "V" and tile in ("all", r.tile)
                ]
                c4 = [r for r in base if r.condition == "4"]
                c5 = [r for r in base if r.condition == "5"]
                if not c4 or not c5:
                    continue
                res = condition_agreement(c4, c5)
                records.append(
                    ConditionAgreement(
                        chooser=a.label,
                        rule=rule,
                        tile=str(tile),
                        n_matched=res.n_matched,
                        agreement=res.agreement,
                        tvd=res.tvd,
                    )
                )
    return records


def format_l_records(choosers: Sequence[ChooserRows]) -> list[FormatLRecord]:
    """Format L (§IV-H4): permutation consistency against its marginal null, and the letter
    prior (the most chosen slot's share beside the canonical distribution's distance from
    uniform), per model x rule x tile x label form. Tied renderings enter the consistency by
    split credit and are counted. Reference choosers read the item, not the letters, and are left
    out."""
    groups: dict[tuple[str, str, str, str], list[CoordinateRow]] = {}
    for a in choosers:
        for r in a.rows:
            if a.kind != "reference" and r.format == "L" and r.condition == "4":
                key = (a.label, r.rule, str(r.tile), str(r.label_form))
                groups.setdefault(key, []).append(r)
    records = []
    for (chooser, rule, tile, form), rows in sorted(groups.items()):
        dist = choice_distributions(rows)
        ex = paired_excess(rows)
        k = rows[0].n_options
        records.append(
            FormatLRecord(
                chooser=chooser,
                rule=rule,
                tile=tile,
                label_form=form,
                n=ex.n_items,
                tied=ex.tied_items,
                consistency=ex.consistency,
                null=ex.marginal_null,
                excess=ex.excess,
                chance=1.0 / k,
                top_letter=chr(ord("A") + dist.top_slot),
                top_share=dist.top_slot_share,
                canonical_dev=dist.canonical_max_deviation_from_uniform,
            )
        )
    return records
