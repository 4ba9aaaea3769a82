"""The signalling report: *Consistency Without Alignment* laid out
from :class:`~choiceaudit.instruments.signalling.SignallingAnalysis` results (one section per
instrument hash). Every number comes from the instrument's analysis
(``analyse_signalling_runs``); this module only arranges the typed records as tables, figures
and the method note."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

from choiceaudit.instruments.signalling import SignallingAnalysis
from choiceaudit.report._html import Section
from choiceaudit.report._signalling_computed import (
    CONDITIONS,
    DECAY,
    DECILES,
    FORMAT_L,
    PLAIN,
    RANDOM_COMPARISON,
    REFERENCES,
    RUNS,
    SLOPES,
    SLOPES_GAUSSIAN,
    TABLE1,
)
from choiceaudit.report._signalling_figures import (
    coordinate_figure,
    excess_figure,
    fit_cost_figure,
)
from choiceaudit.report._tables import ReportTable

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["signalling_sections"]


def _records(objs: Sequence[DataclassInstance]) -> list[dict[str, object]]:
    # a flat result record is one table row, its fields the columns
    return [asdict(o) for o in objs]


_METHOD = """<p>The signalling instrument of <i>Consistency Without Alignment</i> (Huynh, arXiv
2609.00576). Every choice is placed on two axes normalised within its item's option set:
<code>fit_norm</code> (1 = the salience pole, the fit-maximising option <code>o_fit</code>) and
<code>post_norm</code> (1 = the Bayes pole, <code>o_bayes</code>); exact ties score the mean
coordinate over the tied options (§I-F1, §I-H). The random reference is uniform selection over the
option set, shown with its SD across items (§I-H1). Intervals: 95 % percentile bootstrap with the
item as the unit, paired against the per-item random reference, plus the Bonferroni count across
the cells shown (§I-H2). Excess is permutation consistency over the two stored permutations minus
the chooser's own marginal null (§IV-A), a tie scored by split credit like every tie; it is
item-sensitivity, not alignment (§IV-C).
Analysis set (frozen before any run, "What is pre-registered"): {set_label}. Instrument hash
<code>{hash}</code>, {n_items} items, norms <code>{norms}</code>; amendments logged: {n_amend}.
Language models are scored under PMI (primary), the unnormalised sum and the per-token mean;
reference choosers have no scoring rule and repeat across the rule facets (§I-K).</p>"""


def _run_table(analysis: SignallingAnalysis, key: str) -> ReportTable:
    records = [
        {
            "run": a.run,
            "chooser": a.chooser,
            "condition": a.condition,
            "kind": a.kind,
            "rules": ", ".join(a.rules),
            "rows": a.n_rows,
            "status": a.status,
            "covered": f"{a.n_covered_items}/{a.n_analysis_items}",
            "items_hash": a.items_hash[:16],
            "batch_of": a.batch_of,
        }
        for a in analysis.arms
    ]
    return ReportTable.from_records(
        f"signalling_runs{key}",
        "Signalling runs and the conditions they hold (§I-K)",
        records,
        note=(
            "condition: 1 cosine, 2 SWOW walk, 3 ConceptNet path, 4 LM zero-shot, 5 LM with the "
            "hypothesis-space sentence, 6 RSA layer over an eligible base, 7 exact oracle; "
            "reference = the uniform and salience references. Only model runs are model x rule "
            "cells; a run with batch_of is that model scored again at batch size 1 (--batch-one), "
            "read beside it in the batch-1 flip table and never counted as a cell. covered: "
            "the analysis-set items the run could score of those it was given (a run that "
            "covers none is complete but has no Table I cell)."
        ),
        computed=RUNS,
    )


_TABLE1 = {
    "chooser": "chooser",
    "condition": "condition",
    "rule": "rule",
    "n": "n_items",
    "of_n": "n_analysis_items",
    "partial_cov": "partial_coverage",
    "uncovered_rows": "n_uncovered_rows",
    "post_mean": "post_norm_mean",
    "post_med": "post_norm_median",
    "fit_mean": "fit_norm_mean",
    "delta": "delta_post_vs_random",
    "lo": "delta_low",
    "hi": "delta_high",
    "sig": "delta_excludes_zero",
    "sig_bonf": "delta_excludes_zero_bonferroni",
    "delta_fit": "delta_fit_vs_random",
    "lo_fit": "delta_fit_low",
    "hi_fit": "delta_fit_high",
    "sig_fit": "delta_fit_excludes_zero",
    "sig_fit_bonf": "delta_fit_excludes_zero_bonferroni",
    "r_to_s": "random_to_salience",
    "s_to_b": "salience_to_bayes",
    "o_fit_both": "share_o_fit_both",
    "consist": "consistency",
    "excess": "excess",
    "excess_n": "excess_n_items",
    "excess_tied": "excess_tied_items",
    "excess_unpaired_out": "excess_excluded_unpaired",
    "o_fit": "agree_o_fit",
    "o_bayes": "agree_o_bayes",
    "ties": "n_tied_renderings",
}


def _table1(analysis: SignallingAnalysis, key: str) -> ReportTable:
    cells, set_label = analysis.cells, analysis.set_label
    records = [{short: getattr(c, name) for short, name in _TABLE1.items()} for c in cells]
    level = cells[0].bonferroni_level
    n_models = sum(c.kind == "model" for c in cells)
    return ReportTable.from_records(
        f"signalling_table1{key}",
        f"Table I: coordinate per chooser x rule ({set_label})",
        records,
        note=(
            "n = items the chooser scored of the of_n analysis-set items it was given "
            "(uncovered_rows = renderings its source could not score, left out and counted); "
            "partial_cov = its run was allowed to score only the covered items "
            "(--allow-partial-coverage; §I-B refuses a condition scored on a different subset, "
            "so such a row is not a comparison on the same items); "
            "post/fit = post_norm/fit_norm over items; delta = paired per-item difference of "
            "post_norm from the random reference with its 95 % interval [lo, hi]; sig = that "
            "interval excludes 0 (empty, with lo and hi, where the cell has too few items for "
            "an interval: the skipped list says so); sig_bonf = the interval at level "
            f"{level:.4f} (Bonferroni across the {n_models} model x rule cells; reference "
            "choosers and conditions 1-3, 6, 7 are not tested cells) excludes 0; delta_fit, "
            "lo_fit, hi_fit, sig_fit, sig_fit_bonf = the same on the fit axis (§IV-B); r_to_s = "
            "fraction of the way from random to the salience pole, s_to_b = from salience to "
            "Bayes (secondary, §IV-B); o_fit_both = share of items on o_fit under both stored "
            "permutations; consist = "
            "permutation consistency; excess = permutation consistency minus the marginal null "
            "(§IV-A), over the excess_n items holding both stored permutations; a tied "
            "rendering is scored by split credit, as every tie is (§I-H: each tied option gets "
            "1/|T|, an item's agreement is the sum over options of t_a(o) t_b(o), the marginal "
            "the pooled credit), so no item is left out for a tie (excess_tied of them had "
            "one; excess_unpaired_out items missing a rendering are left out); "
            "o_fit / "
            "o_bayes = share of choices on the salience / Bayes option; ties = renderings whose "
            "choice is a tied set."
        ),
        computed=TABLE1,
    )


def _references_table(analysis: SignallingAnalysis, key: str) -> ReportTable:
    return ReportTable.from_records(
        f"signalling_references{key}",
        f"The three references, means over the {analysis.cells[0].n_items} items "
        f"({analysis.set_label}; §I-H1)",
        _records(analysis.references),
        note="SD across items: the random reference is drawn with its spread, not as a point.",
        computed=REFERENCES,
    )


def _decay_table(analysis: SignallingAnalysis, key: str) -> ReportTable:
    return ReportTable.from_records(
        f"signalling_decay_families{key}",
        "Decay family: coordinates under exponential (primary) and Gaussian decay "
        f"({analysis.set_label})",
        _records(analysis.decay),
        note=(
            "Exponential f = exp(-d/w) is the primary family; Gaussian f = exp(-(d/w)^2). Both "
            "are pre-registered and run everywhere (§I-A); sig = the 95 % interval of delta "
            "excludes 0."
        ),
        computed=DECAY,
    )


def _slope_table(analysis: SignallingAnalysis, key: str) -> ReportTable:
    return ReportTable.from_records(
        f"signalling_fit_cost_slopes{key}",
        f"Slope of achieved fit_norm on fit_cost ({analysis.set_label}; §IV-D)",
        _records(analysis.slopes),
        note=(
            "Least squares over items with an item-bootstrap interval of the frozen battery's "
            "n_resamples; a salience chooser's slope is 0, the Bayes oracle's is bayes_slope "
            "(paper: about -0.90). post_slope: slope of the mean coordinate post_norm on "
            "fit_cost (§IV-E); predicted_change = post_slope x the observed fit_cost range, "
            "against the pre-registered smallest effect of interest sesoi."
        ),
        computed=SLOPES,
    )


def _deciles_table(analysis: SignallingAnalysis, key: str) -> ReportTable:
    cols = (
        "facet",
        "chooser",
        "bin",
        "fit_cost",
        "achieved_fit_norm",
        "bayes_fit_norm",
        "fit_separation",
        "achieved_post_norm",
        "salience_post_norm",
        "post_separation",
        "random_fit_norm",
        "random_post_norm",
        "departure_from_o_fit",
    )
    records = [{c: getattr(b, c) for c in cols} for b in analysis.fit_cost]
    return ReportTable.from_records(
        f"signalling_fit_cost_deciles{key}",
        f"Both axes by fit_cost decile ({analysis.set_label}; §IV-D, §IV-E)",
        records,
        note=(
            "fit axis: the salience pole is 1, fit_separation = 1 - Bayes pole fit_norm (paper: "
            "0.028 to 0.597); posterior axis: the Bayes pole is 1, post_separation = 1 - salience "
            "pole post_norm (paper: 0.128 to 0.415); departure_from_o_fit = share of choices "
            "off o_fit (uninformative where fit_cost is small, §IV-E)."
        ),
        computed=DECILES,
    )


def _r_text(analysis: SignallingAnalysis) -> str:
    r = analysis.excess_r
    if r is None:
        return ""
    if r.estimate is None:
        return f"r not computed: {r.n_cells} model x rule cell(s), 3 needed"
    interval = "" if r.low is None or r.high is None else f" [{r.low:+.2f}, {r.high:+.2f}]"
    return f"r = {r.estimate:+.2f}{interval} over {r.n_cells} model x rule cells"


# The tables laid out as their records are, in report order: (analysis field, table name,
# title with the item set's label as ``{set_label}``, note).
_PLAIN_TABLES: tuple[tuple[str, str, str, str], ...] = (
    (
        "rule_agreement",
        "signalling_rule_agreement",
        "Agreement between scoring rules on the chosen option ({set_label}; §I-H)",
        "tied choices count |A ∩ B| / (|A| |B|); the paper: 58.0 % and 63.4 %.",
    ),
    (
        "tile_excess",
        "signalling_tile_excess",
        "Excess over the marginal null per tile (condition 4, format V, all items; §IV-H3)",
        "n_items = items holding both permutations; tied = those with a tied rendering, "
        "scored by split credit (§I-H).",
    ),
    (
        "label_forms",
        "signalling_label_forms",
        "Format L: agreement between the (A) and bare A label forms (§IV-H4)",
        "the paper: 64.9 % agreement.",
    ),
    (
        "cosine_sign",
        "signalling_cosine_sign",
        "Condition 1: share of negative cosine hypothesis entries (§IV-H1)",
        "a literal listener needs a non-negative compatibility; the paper: 12.1 %, which is "
        "why cosine is refused as an RSA base.",
    ),
    (
        "batch_flips",
        "signalling_batch_flips",
        "Batch size 1 against batched scoring: flip rate per model, rule and tile (§I-K)",
        "flip_rate = share of renderings both runs hold whose chosen canonical option set "
        "differs, max_abs_score_change the largest raw score change; the paper scores the "
        "size tile at batch size 1 and batches the others. Every other table holds the "
        "batched run only.",
    ),
    (
        "inert",
        "signalling_inert_parameters",
        "Parameters that cannot move an argmax (§IV-H5)",
        "identical_share = share of covered renderings whose chosen option is identical at "
        "every swept value; 1.0 is the algebraic expectation, not convergent evidence.",
    ),
)


def _section(analysis: SignallingAnalysis, key: str) -> Section:
    set_label = analysis.set_label
    figures, tables = [], [_run_table(analysis, key)]
    if analysis.cells:
        figures.append(coordinate_figure(analysis.coordinates, set_label))
        tables.append(_table1(analysis, key))
        tables.append(_references_table(analysis, key))
        tables.append(_decay_table(analysis, key))
        if analysis.random_comparison:
            tables.append(
                ReportTable.from_records(
                    f"signalling_random_comparison{key}",
                    f"Model x rule cells against random, both axes ({set_label}; §IV-B)",
                    _records(analysis.random_comparison),
                    note=(
                        "indistinguishable = 95 % interval of the paired difference includes 0; "
                        "worse = interval entirely below 0; *_bonferroni = at the Bonferroni "
                        "level across the model x rule cells only; below_random_mean = point "
                        "estimate below the random reference."
                    ),
                    computed=RANDOM_COMPARISON,
                )
            )
        if analysis.fit_cost:
            figures.append(fit_cost_figure(analysis.fit_cost, set_label))
            tables.append(_slope_table(analysis, key))
            tables.append(_deciles_table(analysis, key))
        if analysis.slopes_gaussian:
            tables.append(
                ReportTable.from_records(
                    f"signalling_fit_cost_slopes_gaussian{key}",
                    f"Slopes under the Gaussian decay family ({set_label}; §I-A, §IV-D, §IV-E)",
                    _records(analysis.slopes_gaussian),
                    note="fit_cost, fit_norm and post_norm recomputed under f = exp(-(d/w)^2).",
                    computed=SLOPES_GAUSSIAN,
                )
            )
        if analysis.excess and analysis.excess_r is not None:
            figures.append(excess_figure(analysis.excess, _r_text(analysis)))
    if analysis.conditions:
        tables.append(
            ReportTable.from_records(
                f"signalling_condition_agreement{key}",
                "Condition 4 vs condition 5: agreement of canonical choices and total-variation "
                "distance (§IV-G; format V, all items)",
                _records(analysis.conditions),
                computed=CONDITIONS,
            )
        )
    for attr, name, title, note in _PLAIN_TABLES:
        records = getattr(analysis, attr)
        if records:
            heading = title.format(set_label=set_label)
            tables.append(
                ReportTable.from_records(
                    f"{name}{key}", heading, _records(records), note=note, computed=PLAIN[name]
                )
            )
    if analysis.format_l:
        tables.append(
            ReportTable.from_records(
                f"signalling_format_l{key}",
                "Format L: permutation consistency and the letter prior (§IV-H4; condition 4)",
                _records(analysis.format_l),
                note=(
                    "n = items holding both permutations (tied: those with a tied rendering, "
                    "scored by split credit, §I-H); "
                    "null = the marginal null; excess ≤ 0 means the canonical choice carries no "
                    "item information; chance = 1/k; top_share = share of renderings on the most "
                    "chosen letter (the letter prior); canonical_dev = largest distance of the "
                    "canonical option distribution from uniform."
                ),
                computed=FORMAT_L,
            )
        )
    method = _METHOD.format(
        set_label=set_label,
        hash=analysis.instrument_hash[:16],
        n_items=analysis.n_items,
        norms=analysis.norms,
        n_amend=analysis.n_amendments,
    )
    return Section(
        key=f"signalling{key}",
        title="Signalling: consistency without alignment" + (f" ({key[1:]})" if key else ""),
        method=method,
        figures=figures,
        tables=tables,
        skipped=[str(s) for s in analysis.skipped],
        runs=[(a.source, a.manifest) for a in analysis.arms],
    )


def signalling_sections(analyses: Sequence[SignallingAnalysis]) -> list[Section]:
    """One section per analysis (per instrument hash: choosers are compared only on identical
    items), keyed by the hash when there is more than one."""
    keyed = len(analyses) > 1
    return [_section(a, f"-{a.instrument_hash[:8]}" if keyed else "") for a in analyses]
