"""The signalling analysis of scored runs: :func:`analyse_signalling_runs` (paper §I-H, §IV-A–
§IV-D, §IV-G, §IV-H4).

Each run carries its own copy of the frozen instrument (``<run>/instrument/``); the run's
recorded ``items_hash`` must equal that copy's hash (the analysis refuses anything else), and
every stored row must be one of the frozen renderings, re-rendered here from the items. Runs
are grouped by instrument hash: choosers are compared only on identical items.

A model run contributes one cell per scoring rule of the frozen battery (PMI primary, sum,
per-token mean); a reference chooser (uniform, salience, Bayes oracle, cosine) has no scoring
rule, so its choice (``probs``) repeats across the rule facets, as in the paper's Fig. 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from choiceaudit import stats
from choiceaudit.instruments.signalling._analysed_arm import AnalysedArm
from choiceaudit.instruments.signalling._analysis import coordinate_table
from choiceaudit.instruments.signalling._batch_flips import batch_flip_records, is_batch_one
from choiceaudit.instruments.signalling._battery import (
    ChooserRows,
    analysis_set_label,
    battery_cells,
    condition_records,
    format_l_records,
    in_analysis_set,
    interval_skips,
    label_form_records,
    random_comparison,
    rule_agreement_records,
    tile_excess_records,
)
from choiceaudit.instruments.signalling._battery_fit_cost import fit_cost_records
from choiceaudit.instruments.signalling._chooser_factory import chooser_condition
from choiceaudit.instruments.signalling._config import SignallingConfig
from choiceaudit.instruments.signalling._diagnostics import (
    cosine_sign_records,
    inert_parameters,
)
from choiceaudit.instruments.signalling._freeze import (
    FrozenInstrument,
    InstrumentMismatchError,
    check_run_hash,
    load_instrument,
    read_amendments,
)
from choiceaudit.instruments.signalling._freeze_records import AnalysisBattery
from choiceaudit.instruments.signalling._results import (
    ArmSummary,
    CoordinateCell,
    CoordinatePoint,
    DecayComparison,
    ExcessCorrelation,
    ExcessPoint,
    FitCostBin,
    FitCostSlope,
    ReferencePoint,
    SignallingAnalysis,
)
from choiceaudit.types import Arm, Item, Skipped

__all__ = [
    "MIN_CELLS_CI",
    "REFERENCE_RULE",
    "AnalysedArm",
    "analyse_arm",
    "analyse_signalling_runs",
]

REFERENCE_RULE = "probs"
#: Fewest cells for a bootstrap interval of r (§IV-C has 21).
MIN_CELLS_CI = 6


def _label(arm: Arm[SignallingConfig]) -> tuple[str, str]:
    config = arm.config
    if config.chooser:
        return str(config.chooser), "reference"
    return str(config.model or arm.label), "model"


def _present_rules(arm: Arm) -> list[str]:
    # scoring rules every row holds, probs first, the others sorted
    if not arm.rows:
        return ["probs"]
    common = set.intersection(*(set(d.scores) for _, d in arm.rows))
    return ["probs", *sorted(common)]


def analyse_arm(given: Arm, frozen: FrozenInstrument | None = None) -> AnalysedArm:
    """Verify an arm against the items given (``frozen``; default: the run's own copy of its
    item directory, ``<arm.source>/instrument``, re-verified) and place every choice on the
    coordinate. A run whose recorded hash differs from the items, or a row that is not one of
    their renderings, is refused (``InstrumentMismatchError``)."""
    arm = given.with_config(SignallingConfig)
    config = arm.config
    if frozen is None:
        frozen = load_instrument(Path(arm.source) / "instrument")
    check_run_hash(config.to_json(), frozen, run=arm.source)
    queries = frozen.render(
        conditions=config.conditions, formats=config.formats, label_forms=config.label_forms
    )
    by_id = {q.id: q for q in queries}
    label, kind = _label(arm)
    battery = frozen.analysis.get("rules", ["pmi", "sum", "mean"])
    present = _present_rules(arm)
    rules = [REFERENCE_RULE] if kind == "reference" else [r for r in battery if r in present]
    if not rules:
        rules = [REFERENCE_RULE]
    picked, decisions = [], []
    for n, (stored, decision) in enumerate(arm.rows):
        query = by_id.get(stored.id)
        if query is None:
            raise InstrumentMismatchError(
                f"{arm.source}: row {n} (field query_id {stored.id}) is not a rendering of "
                "the frozen instrument"
            )
        picked.append(query)
        decisions.append(decision)
    rows = coordinate_table(frozen.items, picked, decisions, rules=rules)
    gaussian = coordinate_table(frozen.items, picked, decisions, rules=rules, decay="gaussian")
    condition = chooser_condition(str(config.chooser)) if kind == "reference" else "4"
    partial = bool(config.coverage.get("partial_allowed", False)) if config.coverage else False
    return AnalysedArm(
        label,
        kind,
        rules,
        rows,
        condition,
        partial,
        arm=arm,
        frozen=frozen,
        rows_gaussian=gaussian,
    )


def _facets(group: Sequence[AnalysedArm]) -> list[str]:
    rules = [r for a in group if a.kind == "model" for r in a.rules]
    return list(dict.fromkeys(rules)) or [REFERENCE_RULE]


def _references(cells: Sequence[CoordinateCell]) -> tuple[ReferencePoint, ...]:
    c = cells[0]
    return (
        ReferencePoint(
            "random",
            c.random_fit_norm,
            c.random_fit_norm_sd,
            c.random_post_norm,
            c.random_post_norm_sd,
        ),
        ReferencePoint("salience pole", 1.0, None, c.salience_post_norm, None),
        ReferencePoint("Bayes pole", c.bayes_fit_norm, None, 1.0, None),
    )


def _coordinates(
    cells: Sequence[CoordinateCell], facets: Sequence[str]
) -> tuple[CoordinatePoint, ...]:
    points = []
    for facet in facets:
        here = [c for c in cells if c.rule == facet or c.kind == "reference"]
        if not here:
            continue
        ref = here[0]
        poles = [
            ("salience pole (S)", 1.0, ref.salience_post_norm, 0.0, 0.0),
            ("Bayes pole (B)", ref.bayes_fit_norm, 1.0, 0.0, 0.0),
            (
                "random (R)",
                ref.random_fit_norm,
                ref.random_post_norm,
                ref.random_fit_norm_sd,
                ref.random_post_norm_sd,
            ),
        ]
        for name, fx, py, sx, sy in poles:
            points.append(CoordinatePoint(facet, name, "pole", fx, py, sx, sy, ref.n_items))
        for c in here:
            points.append(
                CoordinatePoint(
                    facet,
                    c.chooser,
                    c.kind,
                    c.fit_norm_mean,
                    c.post_norm_mean,
                    None,
                    None,
                    c.n_items,
                )
            )
    return tuple(points)


def _decay(
    group: Sequence[AnalysedArm], cells: Sequence[CoordinateCell]
) -> tuple[DecayComparison, ...]:
    """Table I's coordinates under both decay families side by side (§I-A: the family is a
    reported dimension; the analysis runs under both)."""
    gaussian = battery_cells(
        [
            ChooserRows(a.label, a.kind, a.rules, a.rows_gaussian, a.condition, a.partial_coverage)
            for a in group
        ],
        group[0].frozen.analysis,
    )
    by_cell = {(g.chooser, g.rule): g for g in gaussian}
    out = []
    for c in cells:
        g = by_cell.get((c.chooser, c.rule))
        out.append(
            DecayComparison(
                chooser=c.chooser,
                rule=c.rule,
                post_exp=c.post_norm_mean,
                post_gauss=None if g is None else g.post_norm_mean,
                fit_exp=c.fit_norm_mean,
                fit_gauss=None if g is None else g.fit_norm_mean,
                delta_exp=c.delta_post_vs_random,
                delta_gauss=None if g is None else g.delta_post_vs_random,
                sig_exp=c.delta_excludes_zero,
                sig_gauss=None if g is None else g.delta_excludes_zero,
            )
        )
    return tuple(out)


def _gaussian_items(items: Sequence[Item]) -> list[Item]:
    """The items with ``fit_cost`` under the Gaussian family (for its fit_cost deciles)."""
    out = []
    for i in items:
        fit = i.meta["fit_gaussian"]
        cost = max(fit) - fit[int(i.meta["o_bayes_gaussian"])]
        out.append(Item(id=i.id, options=i.options, gold=i.gold, meta={**i.meta, "fit_cost": cost}))
    return out


def _flat(values: Sequence[float]) -> bool:
    # equal up to floating-point noise: a correlation over them would report rounding error
    return bool(np.ptp(values) <= 1e-12 * max(1.0, float(np.max(np.abs(values)))))


def _excess(
    cells: Sequence[CoordinateCell], battery: AnalysisBattery, skipped: list[Skipped]
) -> tuple[tuple[ExcessPoint, ...], ExcessCorrelation | None]:
    points = tuple(
        ExcessPoint(
            chooser=c.chooser,
            kind=c.kind,
            rule=c.rule,
            excess=c.excess,
            delta_post_vs_random=c.delta_post_vs_random,
            distance_from_random=abs(c.delta_post_vs_random),
            n_items=c.excess_n_items,
        )
        for c in cells
        if c.excess is not None
    )
    no_excess = sorted(
        {f"{c.chooser}/{c.rule}" for c in cells} - {f"{e.chooser}/{e.rule}" for e in points}
    )
    if no_excess:
        skipped.append(
            Skipped(
                f"excess for {', '.join(no_excess)}",
                "no item holds both stored permutations",
            )
        )
    if not points:
        return points, None
    models = [e for e in points if e.kind == "model"]
    if len(models) < 3:
        skipped.append(
            Skipped(
                "r between excess and distance from random (§IV-C)",
                f"needs at least 3 model x rule cells with an excess, got {len(models)}",
            )
        )
        return points, ExcessCorrelation(len(models), None, None, None)
    xs = [e.excess for e in models]
    ys = [e.distance_from_random for e in models]
    flat = [name for name, v in (("excess", xs), ("distance from random", ys)) if _flat(v)]
    if flat:
        skipped.append(
            Skipped(
                "r between excess and distance from random (§IV-C)",
                f"{' and '.join(flat)} the same in all {len(models)} model x rule cells: a "
                "correlation is undefined",
            )
        )
        return points, ExcessCorrelation(len(models), None, None, None)
    r = stats.pearson_r(
        xs, ys, n_resamples=int(battery["bootstrap"]["n_resamples"]), seed=int(battery["seed"])
    )
    if len(models) < MIN_CELLS_CI:
        skipped.append(
            Skipped(
                "interval of r",
                f"{len(models)} model x rule cells; a bootstrap over fewer than {MIN_CELLS_CI} "
                "cells is degenerate",
            )
        )
        return points, ExcessCorrelation(len(models), r.estimate, None, None)
    return points, ExcessCorrelation(len(models), r.estimate, r.low, r.high)


def _model_conditions(a: AnalysedArm) -> str:
    """The conditions a model run rendered (its ``--condition``; both, 4 and 5, by default)."""
    asked = a.arm.config.conditions or ("4", "5")
    return " and ".join(str(c) for c in sorted(asked))


def _arm_summary(a: AnalysedArm) -> ArmSummary:
    spec = a.frozen.analysis["analysis_set"]
    in_set = [r for r in a.rows if in_analysis_set(r, spec)]
    return ArmSummary(
        source=a.arm.source,
        run=Path(a.arm.source).name,
        chooser=a.label,
        kind=a.kind,
        rules=tuple(a.rules),
        n_rows=len(a.arm.rows),
        status=a.arm.status,
        items_hash=a.frozen.hash,
        manifest=a.arm.manifest,
        condition=_model_conditions(a) if a.kind == "model" else a.condition,
        batch_of=str(a.arm.config.batch_of) if is_batch_one(a) else None,
        n_analysis_items=len({r.item_id for r in in_set}),
        n_covered_items=len({r.item_id for r in in_set if r.covered}),
    )


def _analyse_group(everything: Sequence[AnalysedArm]) -> SignallingAnalysis:
    # the batch-1 arms enter only the flip records: every count of cells (Table I, Bonferroni,
    # §IV-B, the r of §IV-C) is over the batched cells
    group = [a for a in everything if not is_batch_one(a)]
    frozen = everything[0].frozen
    battery = frozen.analysis
    set_label = analysis_set_label(battery["analysis_set"])
    facets = _facets(group)
    cells = tuple(battery_cells(group, battery))
    skipped: list[Skipped] = interval_skips(cells)
    references: tuple[ReferencePoint, ...] = ()
    coordinates: tuple[CoordinatePoint, ...] = ()
    decay: tuple[DecayComparison, ...] = ()
    bins: tuple[FitCostBin, ...] = ()
    slopes: tuple[FitCostSlope, ...] = ()
    bins_gaussian: tuple[FitCostBin, ...] = ()
    slopes_gaussian: tuple[FitCostSlope, ...] = ()
    excess: tuple[ExcessPoint, ...] = ()
    excess_r = None
    if not cells:
        skipped.append(
            Skipped(
                "coordinates, Table I, excess",
                f"no scored rows in the analysis set ({set_label})"
                if group
                else "only batch-1 arms were given; they are read beside their batched runs",
            )
        )
    else:
        coordinates = _coordinates(cells, facets)
        references = _references(cells)
        decay = _decay(group, cells)
        fc_bins, fc_slopes = fit_cost_records(
            group, frozen.items, battery, facets=facets, skipped=skipped
        )
        bins, slopes = tuple(fc_bins), tuple(fc_slopes)
        g_bins, g_slopes = fit_cost_records(
            [
                ChooserRows(
                    a.label, a.kind, a.rules, a.rows_gaussian, a.condition, a.partial_coverage
                )
                for a in group
            ],
            _gaussian_items(list(frozen.items)),
            battery,
            facets=facets,
            skipped=[],
        )
        bins_gaussian, slopes_gaussian = tuple(g_bins), tuple(g_slopes)
        excess, excess_r = _excess(cells, battery, skipped)
    conditions = tuple(condition_records(group))
    if not conditions:
        skipped.append(
            Skipped(
                "condition 4 vs 5",
                "no model run holds both conditions under format V (reference choosers never "
                "read the instruction)",
            )
        )
    format_l = tuple(format_l_records(group))
    if not format_l:
        skipped.append(
            Skipped(
                "format L",
                "no model run holds format-L renderings (reference choosers read the item, not "
                "the letters)",
            )
        )
    flips, flip_skips = batch_flip_records(everything)
    skipped.extend(flip_skips)
    norms = frozen.record.get("norms")
    return SignallingAnalysis(
        instrument_hash=frozen.hash,
        set_label=set_label,
        n_items=len(frozen.items),
        norms=None if norms is None else str(norms),
        n_amendments=len(read_amendments(frozen.path)),
        arms=tuple(_arm_summary(a) for a in everything),
        facets=tuple(facets),
        cells=cells,
        references=references,
        coordinates=coordinates,
        decay=decay,
        fit_cost=bins,
        slopes=slopes,
        excess=excess,
        excess_r=excess_r,
        conditions=conditions,
        format_l=format_l,
        skipped=tuple(skipped),
        random_comparison=tuple(random_comparison(cells)),
        rule_agreement=tuple(rule_agreement_records(group, battery)),
        tile_excess=tuple(tile_excess_records(group)),
        label_forms=tuple(label_form_records(group)),
        inert=inert_parameters(group),
        cosine_sign=cosine_sign_records(group),
        fit_cost_gaussian=bins_gaussian,
        slopes_gaussian=slopes_gaussian,
        batch_flips=tuple(flips),
    )


def analyse_signalling_runs(arms: Sequence[Arm]) -> tuple[SignallingAnalysis, ...]:
    """The frozen analysis battery on scored signalling runs: each arm is verified against its
    frozen instrument copy (``<arm.source>/instrument``; a mismatch raises
    ``InstrumentMismatchError`` naming the row and field), the arms are grouped by instrument
    hash (choosers are compared only on identical items) and each group is analysed once, in
    the order first seen."""
    groups: dict[str, list[AnalysedArm]] = {}
    for arm in arms:
        a = analyse_arm(arm)
        groups.setdefault(a.frozen.hash, []).append(a)
    return tuple(_analyse_group(group) for group in groups.values())
