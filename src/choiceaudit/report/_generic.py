"""The section for plain scoring runs (``choiceaudit score``, imported harness results), laid out
from :class:`~choiceaudit.instruments.scoring.ScoringAnalysis`: accuracy where rows carry a gold
option, selection by display slot, the order audit where items were rendered under several
orderings, and the meaning report's calibration, selective-prediction and risk–coverage views
(ECE, Brier, AURC / AUGRC against the random gate under four confidence definitions, selective
accuracy, reliability bins). Nothing here computes a statistic."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from choiceaudit.instruments.scoring import (
    COVERAGES,
    RULE_TEXT,
    OrderAuditCell,
    ScoringAnalysis,
)
from choiceaudit.report._figures import ReportFigure
from choiceaudit.report._gate import risk_coverage_panels
from choiceaudit.report._html import Section
from choiceaudit.report._tables import Computed, ReportTable
from choiceaudit.types import Manifest

__all__ = ["run_summary_table", "scoring_section"]

#: the scoring guide, whose section named after each table defines it
PAGE = "instruments/scoring.md"
#: a choice under a rule, as every gold-scored table of the section reads it
CHOICE = "the choice is the argmax of the row's probabilities (probs); a tie is a tied set."
CREDIT = "a tie holding the gold option earns 1/(tie size)."

RUNS = Computed(
    rule="none: what each run's manifest records.",
    aggregation="one row per run.",
    n="rows = the rows the run stores.",
    page="reference/report.md",
)
SLOT_SHARES = Computed(
    rule=CHOICE + " The chosen display slot; a tie splits its one choice evenly over its slots.",
    aggregation="share of a model's choices falling in each slot, per menu size k.",
    n="column n: the rows of that menu size.",
    page=PAGE,
)
CALIBRATION = Computed(
    rule="confidence = the top-label probability; correct = the argmax is the gold option, "
    + CREDIT,
    aggregation="ECE over 15 equal-width bins (ece) and 15 equal-mass bins (ece_mass), "
    "multiclass Brier, per cell (all rows, then each condition or task).",
    n="column n_rows: the gold-scored rows of the cell.",
    page=PAGE,
)
SELECTIVE_GATES = Computed(
    rule="confidence under each definition (maxprob, conf_head, margin, entropy); correct as "
    "for accuracy, " + CREDIT,
    aggregation="area under the risk–coverage curve (AURC) and its generalised form (AUGRC), "
    "against a random gate's (the error rate; half of it); ties in confidence spread evenly.",
    n="column n_rows: the gold-scored rows of the cell.",
    page=PAGE,
)
SELECTIVE_ACCURACY = Computed(
    rule="rows ordered by confidence under each definition; correct as for accuracy, " + CREDIT,
    aggregation="accuracy on the most confident fraction of rows at each coverage (at_1.00: "
    "all rows); ties in confidence spread evenly.",
    n="the gold-scored rows of the cell, as in scoring_selective_gates.",
    page=PAGE,
)
RELIABILITY = Computed(
    rule="confidence = the top-label probability; correct as for accuracy.",
    aggregation="15 equal-width bins of confidence; per bin the mean confidence and the "
    "accuracy (empty bins left out).",
    n="column n_rows: the rows in the bin.",
    page=PAGE,
)
RISK_COVERAGE = Computed(
    rule="confidence under each definition; error = 1 − credit of the argmax.",
    aggregation="selective risk (the error rate among the accepted rows) at each coverage, "
    "the most confident accepted first; the dotted line is the overall error rate.",
    n="the gold-scored rows of each series.",
    page=PAGE,
)
ORDER_AUDIT = Computed(
    rule="the chosen canonical option perm[slot] of each ordering of an item (never the slot "
    "letter); travel: an option's own probability across orderings.",
    aggregation="over items seen under several orderings: the share whose choice changes "
    "(answer_instability), the mean number of distinct choices, travel's median and share "
    "under 1e-4.",
    n="columns items and orderings.",
    page=PAGE,
)


def _accuracy_computed(analysis: ScoringAnalysis) -> Computed:
    rules = "; ".join(
        f"{rule}: the argmax of {RULE_TEXT.get(rule, 'the stored score ' + rule)}"
        for rule in dict.fromkeys(c.rule for c in analysis.accuracy)
    )
    return Computed(
        rule=f"one row per choice rule (column rule) — {rules}; " + CREDIT,
        aggregation=f"mean credit over rows; 95% percentile bootstrap over whole items "
        f"({analysis.n_resamples} resamples, seed {analysis.seed}).",
        n="columns rows and items.",
        page=PAGE,
    )


def run_summary_table(
    runs: Sequence[tuple[str, str, Manifest, int]], name: str = "runs"
) -> ReportTable:
    """One row per run from ``(label, run directory, manifest, rows)``."""
    records = []
    for label, source, manifest, n_rows in runs:
        scorer = manifest.scorer or {}
        records.append(
            {
                "run": Path(source).name,
                "model": label,
                "backend": scorer.get("backend"),
                "dtype": scorer.get("dtype"),
                "rows": n_rows,
                "status": manifest.status,
                "created": manifest.created,
            }
        )
    return ReportTable.from_records(name, "Runs in this report", records, computed=RUNS)


def _draw_slots(table: ReportTable) -> ReportFigure:
    records = table.records()
    models = list(dict.fromkeys(r["model"] for r in records))

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        width = 0.8 / max(len(models), 1)
        for m, model in enumerate(models):
            mine = [r for r in records if r["model"] == model]
            x = np.array([r["slot"] for r in mine]) + m * width
            ax.bar(x, [r["share"] for r in mine], width=width, label=model)
        for k in sorted({r["k"] for r in records}):
            ax.axhline(1 / k, color="k", linestyle="--", linewidth=0.8, label=f"uniform (k={k})")
        n_slots = max(r["slot"] for r in records) + 1
        ax.set_xticks(
            np.arange(n_slots) + width * (len(models) - 1) / 2, [str(i + 1) for i in range(n_slots)]
        )
        ax.set_xlabel("display slot (1 = first shown)")
        ax.set_ylabel("share of choices")
        ax.legend(fontsize=7)

    return ReportFigure(
        "slot_shares",
        "Selection by display slot",
        table,
        draw,
        caption="Bars far from the dashed line are position (or label) preferences.",
    )


def _order_record(cell: OrderAuditCell) -> dict[str, object]:
    record: dict[str, object] = asdict(cell)
    record["share_travel_le_1e-4"] = record.pop("share_travel_le_1e_4")
    gold = record.pop("mean_gold_prob_range")
    if gold is not None:
        record["mean_gold_prob_range"] = gold
    return record


def _calibration_tables(analysis: ScoringAnalysis) -> list[ReportTable]:
    tables = []
    if analysis.calibration:
        tables.append(
            ReportTable.from_records(
                "scoring_calibration",
                "Calibration of the reported distributions",
                [asdict(c) for c in analysis.calibration],
                note="Meaning paper Appendix F. Confidence = top-label probability. ece: 15 "
                "equal-width bins; ece_mass: 15 equal-mass bins; multiclass Brier against its "
                "uniform reference 1 − 1/k (above it: worse than reporting a flat distribution; "
                "empty where menus differ in size). Cells: all rows, then each condition / task.",
                computed=CALIBRATION,
            )
        )
    if analysis.selective:
        gates = []
        for c in analysis.selective:
            gates.append(
                {
                    "model": c.model,
                    "cell": c.cell,
                    "confidence": c.definition,
                    "n_rows": c.n_rows,
                    "aurc": c.aurc,
                    "aurc_random": c.aurc_random,
                    "advantage": c.advantage if c.aurc > 0 else None,
                    "augrc": c.augrc,
                    "augrc_random": c.augrc_random,
                    "conf_correct": c.mean_confidence_correct,
                    "conf_incorrect": c.mean_confidence_incorrect,
                }
            )
        tables.append(
            ReportTable.from_records(
                "scoring_selective_gates",
                "Selective prediction: AURC and AUGRC against the random gate",
                gates,
                note="Meaning paper §5.2, Appendix F. A gate that ignores the item scores the "
                "error rate on AURC and half of it on AUGRC; advantage = aurc_random / aurc "
                "(below 1: confidence ranks errors first). conf_correct > conf_incorrect is the "
                "direction a gate needs; the reverse is anti-diagnostic. maxprob = max p, "
                "conf_head = the model's own confidence field, margin = p(1) − p(2), entropy = "
                "1 − H(p)/log k.",
                computed=SELECTIVE_GATES,
            )
        )
        tables.append(
            ReportTable.from_records(
                "scoring_selective_accuracy",
                "Selective accuracy: accuracy on the most confident fraction",
                [
                    {
                        "model": c.model,
                        "cell": c.cell,
                        "confidence": c.definition,
                        **{f"at_{k}": v for k, v in c.selective_accuracy.items()},
                    }
                    for c in analysis.selective
                ],
                note=f"Coverages {', '.join(f'{c:.2f}' for c in COVERAGES)} (Appendix F, Table "
                "9); at_1.00 is plain accuracy. Ties in confidence are spread evenly.",
                computed=SELECTIVE_ACCURACY,
            )
        )
    if analysis.reliability:
        records = [
            {
                "model": r.model,
                "cell": r.cell,
                "bin": i,
                "n_rows": n,
                "confidence": conf,
                "accuracy": acc,
            }
            for r in analysis.reliability
            for i, (n, conf, acc) in enumerate(zip(r.n_rows, r.confidence, r.accuracy, strict=True))
        ]
        tables.append(
            ReportTable.from_records(
                "scoring_reliability",
                "Reliability bins of the top-label probability (15 equal-width, non-empty)",
                records,
                computed=RELIABILITY,
            )
        )
    return tables


def _risk_coverage_figure(analysis: ScoringAnalysis) -> ReportFigure | None:
    records = []
    for c in analysis.risk_coverage:
        if c.cell != "all" and len({a.label for a in analysis.arms}) > 3:
            continue  # many models: one line per model keeps the plot legible
        for cov, risk in zip(c.coverage, c.selective_risk, strict=True):
            records.append(
                {
                    "series": c.model if c.cell == "all" else f"{c.model} {c.cell}",
                    "definition": c.definition,
                    "kind": "curve",
                    "coverage": cov,
                    "selective_risk": risk,
                    "random_gate": c.random_gate,
                }
            )
    if not records:
        return None
    table = ReportTable.from_records(
        "scoring_risk_coverage", "Risk–coverage curves", records, computed=RISK_COVERAGE
    )
    n_panels = len({r["definition"] for r in records})

    def draw(fig: Figure) -> None:
        risk_coverage_panels(fig, table.records(), series="series")

    return ReportFigure(
        "scoring_risk_coverage",
        "Risk–coverage curves under four confidence definitions",
        table,
        draw,
        caption="Accept the most confident fraction (x); y is the error rate among the "
        "accepted. Dotted: each line's random gate (its overall error rate). A useful confidence "
        "falls towards low coverage; a rising curve is inverted (the meaning paper §5.2).",
        width=3.2 * n_panels + 0.8,
    )


def scoring_section(analysis: ScoringAnalysis) -> Section:
    """The scoring section (see the module docstring)."""
    section = Section(
        key="scoring",
        title="Scoring runs",
        method=(
            "Rows come straight from each run's Parquet parts. Choices are the argmax of the "
            "probabilities, with exact ties kept as tied sets. Accuracy, calibration and "
            "selective prediction need a canonical <code>gold</code> index in the query meta; "
            "the order audit needs items rendered under several orderings (a <code>perm</code> "
            "per row). A confidence cut-point fitted on one slice and read on the others is "
            "<code>choiceaudit gate</code>."
        ),
        runs=[(a.source, a.manifest) for a in analysis.arms],
    )
    section.tables.append(
        run_summary_table([(a.label, a.source, a.manifest, a.rows) for a in analysis.arms])
    )
    if analysis.accuracy:
        section.tables.append(
            ReportTable.from_records(
                "accuracy",
                "Accuracy against the gold option under each choice rule (95% item-clustered "
                "bootstrap)",
                [asdict(c) for c in analysis.accuracy],
                note="rule: the choice is the argmax of "
                + "; ".join(
                    f"{rule}: {RULE_TEXT.get(rule, 'the stored score ' + rule)}"
                    for rule in dict.fromkeys(c.rule for c in analysis.accuracy)
                )
                + f". Percentile bootstrap, {analysis.n_resamples} resamples of whole items, "
                f"seed {analysis.seed}; a tie containing the gold option earns 1/(tie size).",
                computed=_accuracy_computed(analysis),
            )
        )
    if analysis.slot_shares:
        slots = ReportTable.from_records(
            "slot_shares",
            "Share of choices by display slot (ties split evenly)",
            [asdict(c) for c in analysis.slot_shares],
            note="Without position bias and with options placed at random, each slot gets 1/k.",
            computed=SLOT_SHARES,
        )
        section.figures.append(_draw_slots(slots))
        section.tables.append(slots)
    figure = _risk_coverage_figure(analysis)
    if figure is not None:
        section.figures.append(figure)
    section.tables.extend(_calibration_tables(analysis))
    section.skipped.extend(str(s) for s in analysis.skipped)
    if analysis.order_audit:
        section.tables.append(
            ReportTable.from_records(
                "order_audit",
                "Order audit over permutation sweeps",
                [_order_record(c) for c in analysis.order_audit],
                note="Answer identity is the canonical option perm[slot(ŷ)], never the slot "
                "letter; travel is the largest distance one option's own probability moves "
                "across orderings.",
                computed=ORDER_AUDIT,
            )
        )
    return section
