"""The signalling report (issue 7, signalling half): *Consistency Without Alignment* on run
directories made by ``choiceaudit run signalling``.

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
from dataclasses import dataclass
from typing import Any

from choiceaudit import stats
from choiceaudit.instruments.signalling import (
    ChooserRows,
    FrozenInstrument,
    InstrumentMismatchError,
    analysis_set_label,
    battery_cells,
    check_run_hash,
    condition_records,
    coordinate_table,
    fit_cost_records,
    format_l_records,
    load_instrument,
    read_amendments,
)
from choiceaudit.report._html import Section
from choiceaudit.report._signalling_figures import (
    coordinate_figure,
    coordinate_records,
    excess_figure,
    excess_records,
    fit_cost_figure,
)
from choiceaudit.report._tables import ReportTable
from choiceaudit.store import Run

__all__ = [
    "SignallingRun",
    "analyse_signalling_run",
    "signalling_cells",
    "signalling_sections",
]

REFERENCE_RULE = "probs"
#: Fewest cells for a bootstrap interval of r (§IV-C has 21).
MIN_CELLS_CI = 6


@dataclass
class SignallingRun(ChooserRows):
    """One run's coordinate rows (primary, exponential decay), with the run, its verified
    frozen instrument and the same rows under the Gaussian decay family (§I-A)."""

    run: Run
    frozen: FrozenInstrument
    rows_gaussian: list[dict[str, Any]]


def _label(run: Run) -> tuple[str, str]:
    config = run.manifest.config
    if config.get("chooser"):
        return str(config["chooser"]), "reference"
    return str(config.get("model") or run.label), "model"


def analyse_signalling_run(run: Run, frozen: FrozenInstrument | None = None) -> SignallingRun:
    """Verify a run against the items given (``frozen``; default: the run's own copy of its
    item directory, re-verified) and place every choice on the coordinate. A run whose
    recorded hash differs from the items is refused (``InstrumentMismatchError``)."""
    config = dict(run.manifest.config)
    if frozen is None:
        frozen = load_instrument(run.path / "instrument")
    check_run_hash(config, frozen, run=str(run.path))
    queries = frozen.render(
        conditions=config.get("conditions"),
        formats=config.get("formats"),
        label_forms=config.get("label_forms"),
    )
    by_id = {q.id: q for q in queries}
    label, kind = _label(run)
    battery = frozen.analysis.get("rules", ["pmi", "sum", "mean"])
    present = run.rules()
    rules = [REFERENCE_RULE] if kind == "reference" else [r for r in battery if r in present]
    if not rules:
        rules = [REFERENCE_RULE]
    picked, decisions = [], []
    for n, stored in enumerate(run.rows):
        query = by_id.get(stored.query.id)
        if query is None:
            raise InstrumentMismatchError(
                f"{run.path}: row {n} (field query_id {stored.query.id}) is not a rendering of "
                "the frozen instrument"
            )
        picked.append(query)
        decisions.append(stored.decision)
    rows = coordinate_table(frozen.items, picked, decisions, rules=rules)
    gaussian = coordinate_table(frozen.items, picked, decisions, rules=rules, decay="gaussian")
    forms = [q.meta.get("label_form") for q in picked for _ in rules]
    for row, row_g, form in zip(rows, gaussian, forms, strict=True):
        row["label_form"] = row_g["label_form"] = form
    return SignallingRun(label, kind, rules, rows, run, frozen, gaussian)


def _facets(analysed: Sequence[SignallingRun]) -> list[str]:
    rules = [r for a in analysed if a.kind == "model" for r in a.rules]
    return list(dict.fromkeys(rules)) or [REFERENCE_RULE]


def signalling_cells(
    analysed: Sequence[SignallingRun], *, n_resamples: int | None = None
) -> list[dict[str, Any]]:
    """Table I records (``battery_cells``) of runs on one frozen instrument."""
    if not analysed:
        return []
    return battery_cells(analysed, analysed[0].frozen.analysis, n_resamples=n_resamples)


_METHOD = """<p>The signalling instrument of <i>Consistency Without Alignment</i> (Huynh, arXiv
2609.00576). Every choice is placed on two axes normalised within its item's option set:
<code>fit_norm</code> (1 = the salience pole, the fit-maximising option <code>o_fit</code>) and
<code>post_norm</code> (1 = the Bayes pole, <code>o_bayes</code>); exact ties score the mean
coordinate over the tied options (§I-F1, §I-H). The random reference is uniform selection over the
option set, shown with its SD across items (§I-H1). Intervals: 95 % percentile bootstrap with the
item as the unit, paired against the per-item random reference, plus the Bonferroni count across
the cells shown (§I-H2). Excess is permutation consistency over the two stored permutations minus
the chooser's own marginal null (§IV-A); it is item-sensitivity, not alignment (§IV-C).
Analysis set (frozen before any run, "What is pre-registered"): {set_label}. Instrument hash
<code>{hash}</code>, {n_items} items, norms <code>{norms}</code>; amendments logged: {n_amend}.
Language models are scored under PMI (primary), the unnormalised sum and the per-token mean;
reference choosers have no scoring rule and repeat across the rule facets (§I-K).</p>"""


def _run_table(group: Sequence[SignallingRun], key: str) -> ReportTable:
    records = [
        {
            "run": a.run.path.name,
            "chooser": a.label,
            "kind": a.kind,
            "rules": ", ".join(a.rules),
            "rows": len(a.run.rows),
            "status": a.run.manifest.status,
            "items_hash": a.frozen.hash[:16],
        }
        for a in group
    ]
    return ReportTable.from_records(f"signalling_runs{key}", "Signalling runs", records)


_TABLE1 = {
    "chooser": "chooser",
    "rule": "rule",
    "n": "n_items",
    "post_mean": "post_norm_mean",
    "post_med": "post_norm_median",
    "fit_mean": "fit_norm_mean",
    "delta": "delta_post_vs_random",
    "lo": "delta_low",
    "hi": "delta_high",
    "sig": "delta_excludes_zero",
    "sig_bonf": "delta_excludes_zero_bonferroni",
    "consist": "consistency",
    "excess": "excess",
    "o_fit": "agree_o_fit",
    "o_bayes": "agree_o_bayes",
    "ties": "n_tied_renderings",
}


def _table1(cells: list[dict[str, Any]], key: str, set_label: str) -> ReportTable:
    records = [{short: c[name] for short, name in _TABLE1.items()} for c in cells]
    level = cells[0]["bonferroni_level"]
    return ReportTable.from_records(
        f"signalling_table1{key}",
        f"Table I: coordinate per chooser x rule ({set_label})",
        records,
        note=(
            "post/fit = post_norm/fit_norm over items; delta = paired per-item difference of "
            "post_norm from the random reference with its 95 % interval [lo, hi]; sig = that "
            "interval excludes 0; sig_bonf = the interval at level "
            f"{level:.4f} (Bonferroni across the {len(cells)} cells) excludes 0; consist = "
            "permutation consistency; excess = permutation consistency minus the marginal null (§IV-A); o_fit / "
            "o_bayes = share of choices on the salience / Bayes option; ties = renderings whose "
            "choice is a tied set."
        ),
    )


def _references_table(cells: list[dict[str, Any]], key: str, set_label: str) -> ReportTable:
    c = cells[0]
    records = [
        {
            "reference": "random",
            "fit_norm": c["random_fit_norm"],
            "fit_norm_sd": c["random_fit_norm_sd"],
            "post_norm": c["random_post_norm"],
            "post_norm_sd": c["random_post_norm_sd"],
        },
        {
            "reference": "salience pole",
            "fit_norm": 1.0,
            "fit_norm_sd": None,
            "post_norm": c["salience_post_norm"],
            "post_norm_sd": None,
        },
        {
            "reference": "Bayes pole",
            "fit_norm": c["bayes_fit_norm"],
            "fit_norm_sd": None,
            "post_norm": 1.0,
            "post_norm_sd": None,
        },
    ]
    return ReportTable.from_records(
        f"signalling_references{key}",
        f"The three references, means over the {c['n_items']} items ({set_label}; §I-H1)",
        records,
        note="SD across items: the random reference is drawn with its spread, not as a point.",
    )


def _decay_table(
    group: Sequence[SignallingRun], cells: list[dict[str, Any]], key: str, set_label: str
) -> ReportTable:
    """Table I's coordinates under both decay families side by side (§I-A: the family is a
    reported dimension; the analysis runs under both)."""
    gaussian = battery_cells(
        [ChooserRows(a.label, a.kind, a.rules, a.rows_gaussian) for a in group],
        group[0].frozen.analysis,
    )
    by_cell = {(c["chooser"], c["rule"]): c for c in gaussian}
    records = []
    for c in cells:
        g = by_cell.get((c["chooser"], c["rule"]), {})
        records.append(
            {
                "chooser": c["chooser"],
                "rule": c["rule"],
                "post_exp": c["post_norm_mean"],
                "post_gauss": g.get("post_norm_mean"),
                "fit_exp": c["fit_norm_mean"],
                "fit_gauss": g.get("fit_norm_mean"),
                "delta_exp": c["delta_post_vs_random"],
                "delta_gauss": g.get("delta_post_vs_random"),
                "sig_exp": c["delta_excludes_zero"],
                "sig_gauss": g.get("delta_excludes_zero"),
            }
        )
    return ReportTable.from_records(
        f"signalling_decay_families{key}",
        f"Decay family: coordinates under exponential (primary) and Gaussian decay ({set_label})",
        records,
        note=(
            "Exponential f = exp(-d/w) is the primary family; Gaussian f = exp(-(d/w)^2). Both "
            "are pre-registered and run everywhere (§I-A); sig = the 95 % interval of delta "
            "excludes 0."
        ),
    )


def _slope_table(records: list[dict[str, Any]], key: str, set_label: str) -> ReportTable:
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:
        rule = r["facet"] if r["kind"] == "model" else "probs"
        seen.setdefault(
            (r["chooser"], rule),
            {
                "chooser": r["chooser"],
                "rule": rule,
                "slope": r["slope"],
                "low": r["slope_low"],
                "high": r["slope_high"],
                "bayes_slope": r["bayes_slope"],
            },
        )
    return ReportTable.from_records(
        f"signalling_fit_cost_slopes{key}",
        f"Slope of achieved fit_norm on fit_cost ({set_label}; §IV-D)",
        list(seen.values()),
        note=(
            "Least squares over items with a 95 % item-bootstrap interval; a salience chooser's "
            "slope is 0, the Bayes oracle's is bayes_slope (paper: about -0.90)."
        ),
    )


def _section(group: Sequence[SignallingRun], key: str) -> Section:
    frozen = group[0].frozen
    battery = frozen.analysis
    set_label = analysis_set_label(battery["analysis_set"])
    skipped: list[str] = []
    figures, tables = [], [_run_table(group, key)]
    facets = _facets(group)
    cells = signalling_cells(group)
    if not cells:
        skipped.append(
            f"coordinates, Table I, excess: no scored rows in the analysis set ({set_label})"
        )
    else:
        figures.append(coordinate_figure(coordinate_records(cells, facets), set_label))
        tables.append(_table1(cells, key, set_label))
        tables.append(_references_table(cells, key, set_label))
        tables.append(_decay_table(group, cells, key, set_label))
        fit_records = fit_cost_records(group, frozen.items, battery, facets=facets, skipped=skipped)
        if fit_records:
            figures.append(fit_cost_figure(fit_records, set_label))
            tables.append(_slope_table(fit_records, key, set_label))
        excess = excess_records(cells)
        no_excess = sorted(
            {f"{c['chooser']}/{c['rule']}" for c in cells}
            - {f"{e['chooser']}/{e['rule']}" for e in excess}
        )
        if no_excess:
            skipped.append(
                f"excess for {', '.join(no_excess)}: no item with an untied choice under both "
                "permutations (a chooser indifferent between all options has no excess)"
            )
        if excess:
            models = [e for e in excess if e["kind"] == "model"]
            if len(models) >= 3:
                r = stats.pearson_r(
                    [e["excess"] for e in models],
                    [e["distance_from_random"] for e in models],
                    n_resamples=int(battery["bootstrap"]["n_resamples"]),
                    seed=int(battery["seed"]),
                )
                interval = f" [{r.low:+.2f}, {r.high:+.2f}]" if len(models) >= MIN_CELLS_CI else ""
                r_text = f"r = {r.estimate:+.2f}{interval} over {len(models)} model x rule cells"
                if not interval:
                    skipped.append(
                        f"interval of r: {len(models)} model x rule cells; a bootstrap over "
                        f"fewer than {MIN_CELLS_CI} cells is degenerate"
                    )
            else:
                r_text = f"r not computed: {len(models)} model x rule cell(s), 3 needed"
                skipped.append(
                    "r between excess and distance from random (§IV-C): needs at least 3 model x "
                    f"rule cells with an excess, got {len(models)}"
                )
            figures.append(excess_figure(excess, r_text))
    conditions = condition_records(group)
    if conditions:
        tables.append(
            ReportTable.from_records(
                f"signalling_condition_agreement{key}",
                "Condition 4 vs condition 5: agreement of canonical choices and total-variation "
                "distance (§IV-G; format V, all items)",
                conditions,
            )
        )
    else:
        skipped.append(
            "condition 4 vs 5: no model run holds both conditions under format V (reference "
            "choosers never read the instruction)"
        )
    format_l = format_l_records(group)
    if format_l:
        tables.append(
            ReportTable.from_records(
                f"signalling_format_l{key}",
                "Format L: permutation consistency and the letter prior (§IV-H4; condition 4)",
                format_l,
                note=(
                    "n = items with an untied choice under both permutations (tied: left out); "
                    "null = the marginal null; excess ≤ 0 means the canonical choice carries no "
                    "item information; chance = 1/k; top_share = share of renderings on the most "
                    "chosen letter (the letter prior); canonical_dev = largest distance of the "
                    "canonical option distribution from uniform."
                ),
            )
        )
    else:
        skipped.append(
            "format L: no model run holds format-L renderings (reference choosers read the "
            "item, not the letters)"
        )
    method = _METHOD.format(
        set_label=set_label,
        hash=frozen.hash[:16],
        n_items=len(frozen.items),
        norms=frozen.record.get("norms"),
        n_amend=len(read_amendments(frozen.path)),
    )
    return Section(
        key=f"signalling{key}",
        title="Signalling: consistency without alignment" + (f" ({key[1:]})" if key else ""),
        method=method,
        figures=figures,
        tables=tables,
        skipped=skipped,
        runs=[(str(a.run.path), a.run.manifest.to_dict()) for a in group],
    )


def signalling_sections(runs: Sequence[Run]) -> list[Section]:
    """One section per instrument hash (choosers are compared only on identical items)."""
    groups: dict[str, list[SignallingRun]] = {}
    for run in runs:
        a = analyse_signalling_run(run)
        groups.setdefault(a.frozen.hash, []).append(a)
    keyed = len(groups) > 1
    return [_section(group, f"-{h[:8]}" if keyed else "") for h, group in groups.items()]
