"""Figures of the meaning section. Each draws exactly the records of one
:class:`~choiceaudit.report.ReportTable` (written beside it as the figure's CSV), so every plotted
number can be re-read; one colour per model throughout, the dashed line is chance (0.25)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from choiceaudit.report._figures import ReportFigure
from choiceaudit.report._meaning_plot import (
    as_number,
    chance_line,
    grouped_bars,
    model_colour,
    model_names,
    shared_legend,
    unit_axis,
    wrap_label,
)
from choiceaudit.report._meaning_tables import CURVE_FAMILIES
from choiceaudit.report._tables import ReportTable

__all__ = [
    "ablation_figure",
    "confidence_figure",
    "e4_figure",
    "ladder_figure",
    "lar_figure",
    "matrix_figure",
    "o4_figure",
    "order_figure",
    "reliability_figure",
    "risk_coverage_figure",
    "slot_figure",
    "unit_figure",
]


def ladder_figure(table: ReportTable, families: Sequence[str]) -> ReportFigure:
    """The ladder's bars, families on the x axis in ``families``' order (the analysis's)."""
    records = table.records()

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        groups = list(families)
        grouped_bars(ax, records, group="family", value="accuracy", groups=groups)
        chance_line(ax)
        unit_axis(ax)
        ax.set_xlabel("distractor family")
        ax.set_ylabel("accuracy (95% CI)")

    return ReportFigure(
        "meaning_ladder",
        "The distractor ladder",
        table,
        draw,
        caption="Accuracy per distractor family with 95% item-bootstrap intervals; the dashed line "
        "is chance. d-lit swaps one random distractor for the idiom's own literal gloss: a drop "
        "there, below chance, is literal attraction (§5.1, Figure 3 left).",
    )


def lar_figure(table: ReportTable) -> ReportFigure:
    records = table.records()

    def draw(fig: Figure) -> None:
        left, right = fig.subplots(1, 2, width_ratios=[1, 1.3])
        grouped_bars(left, records, group="family", value="lar")
        chance_line(left)
        unit_axis(left)
        left.set_ylabel("literal attraction rate (95% CI)")
        left.set_title("LAR", fontsize=9)
        labels = [f"{wrap_label(str(r['model']))}\n{r['family']}" for r in records]
        bottom = np.zeros(len(records))
        for part, colour in (("gold", "#4c9a2a"), ("literal", "#c0392b"), ("other", "#999999")):
            vals = np.array([as_number(r[part]) for r in records])
            right.bar(range(len(records)), vals, bottom=bottom, color=colour, label=part)
            bottom += vals
        right.set_xticks(range(len(records)), labels, fontsize=7)
        right.set_ylabel("share of choices")
        right.set_title("gold / literal / other", fontsize=9)
        unit_axis(right)

    return ReportFigure(
        "meaning_literal_attraction",
        "Literal attraction",
        table,
        draw,
        caption="Left: LAR, the share of choices landing on the expression's own literal gloss, on "
        "the families that carry it. Right: every choice split into gold, literal and other "
        "(§4.2, §5.1).",
        width=8.0,
    )


def matrix_figure(table: ReportTable) -> ReportFigure:
    records = [r for r in table.records() if "minus" not in str(r["language"])]

    def draw(fig: Figure) -> None:
        left, right = fig.subplots(1, 2)
        for ax, value, name in ((left, "lar", "LAR"), (right, "accuracy", "accuracy")):
            grouped_bars(
                ax,
                records,
                group="model",
                series="language",
                value=value,
                low=f"{value}_low",
                high=f"{value}_high",
            )
            chance_line(ax)
            ax.set_ylabel(f"{name} (95% CI)")
            unit_axis(ax, title="task language")

    return ReportFigure(
        "meaning_capture_matrix",
        "The capture matrix (model × task language)",
        table,
        draw,
        caption="Both language cells of an item come from one draw, so bars of one model are "
        "paired (Appendix I, Figure 5).",
        width=8.0,
    )


def reliability_figure(table: ReportTable) -> ReportFigure:
    records = table.records()
    models = model_names(records)

    def draw(fig: Figure) -> None:
        axes = np.atleast_1d(fig.subplots(1, len(models), sharey=True, squeeze=False)[0])
        for ax, model in zip(axes, models, strict=True):
            ax.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=0.8, label="perfect")
            for family, marker in zip(CURVE_FAMILIES, ("o", "s"), strict=True):
                mine = [r for r in records if r["model"] == model and r["family"] == family]
                if mine:
                    ax.plot(
                        [r["confidence"] for r in mine],
                        [r["accuracy"] for r in mine],
                        marker=marker,
                        label=family,
                        color="C0" if family == "d-rand" else "C3",
                    )
            ax.set_xlim(0, 1)
            ax.set_title(wrap_label(model, 40), fontsize=9)
            ax.set_xlabel("confidence (peak probability)")
            unit_axis(ax)
        axes[0].set_ylabel("accuracy")

    return ReportFigure(
        "meaning_reliability",
        "Reliability diagrams, d-rand and d-lit",
        table,
        draw,
        caption="15 equal-width bins (non-empty bins shown). Under d-lit a curve bending down "
        "means the model is most wrong where it is most sure (§5.2, Figure 4).",
        width=max(4.0, 3.2 * len(models)),
        height=3.4,
    )


def risk_coverage_figure(table: ReportTable) -> ReportFigure:
    records = table.records()
    models = model_names(records)

    def draw(fig: Figure) -> None:
        families = [f for f in CURVE_FAMILIES if any(r["family"] == f for r in records)]
        axes = fig.subplots(1, len(families), sharey=True, squeeze=False)[0]
        for ax, family in zip(axes, families, strict=True):
            for model in models:
                mine = [r for r in records if r["model"] == model and r["family"] == family]
                if not mine:
                    continue
                colour = model_colour(models, model)
                ax.plot(
                    [r["coverage"] for r in mine],
                    [r["selective_risk"] for r in mine],
                    color=colour,
                    label=model,
                )
                ax.axhline(mine[0]["random_gate"], color=colour, linestyle=":", linewidth=0.9)
            ax.set_title(f"{family} (dotted: random gate)", fontsize=9)
            ax.set_xlabel("coverage")
            ax.set_xlim(0, 1)
            unit_axis(ax, legend=False)
        axes[0].set_ylabel("selective risk (error among accepted)", fontsize=8)
        shared_legend(fig)

    return ReportFigure(
        "meaning_risk_coverage",
        "Risk–coverage against the random gate",
        table,
        draw,
        caption="Accepting the most confident fraction first; a curve above its dotted random gate "
        "means confidence sorts errors to the top (Appendix F).",
        width=8.0,
    )


def confidence_figure(table: ReportTable) -> ReportFigure:
    records = [r for r in table.records() if r["signal"] == "peak" and r["cell"] in CURVE_FAMILIES]
    models = model_names(records)

    def draw(fig: Figure) -> None:
        axes = fig.subplots(1, len(models), sharey=True, squeeze=False)[0]
        for ax, model in zip(axes, models, strict=True):
            mine = [r for r in records if r["model"] == model]
            grouped_bars(
                ax,
                mine,
                group="cell",
                series="outcome",
                value="mean_confidence",
                low=None,
                high=None,
            )
            ax.set_title(wrap_label(model, 40), fontsize=9)
            unit_axis(ax)
        axes[0].set_ylabel("mean peak probability")

    return ReportFigure(
        "meaning_confidence_by_outcome",
        "Confidence by outcome",
        table,
        draw,
        caption="Mean confidence when the choice is correct, incorrect, or the literal gloss. "
        "captured ≥ correct makes confidence useless as a gate under the shift (§5.2). The CSV "
        "also holds the separate confidence head and the other cells.",
        width=max(4.0, 3.2 * len(models)),
        height=3.4,
    )


def order_figure(table: ReportTable) -> ReportFigure:
    records = table.records()
    measures = ("answer_instability", "mean_gold_prob_range", "selection_spread")
    long = [
        {"model": f"{r['model']} ({r['keys']} keys)", "measure": m.replace("_", " "), "value": r[m]}
        for r in records
        for m in measures
    ]

    def draw(fig: Figure) -> None:
        left, right = fig.subplots(1, 2, width_ratios=[2, 1])
        grouped_bars(left, long, group="measure", value="value", low=None, high=None)
        left.set_ylabel("share / probability")
        unit_axis(left, legend=False)
        left.tick_params(axis="x", labelsize=7)
        models = model_names(long)
        # one bar per (model, keys) in the left panel's colours; the shared legend names them
        right.bar(
            range(len(models)),
            [r["mean_distinct_choices"] for r in records],
            color=[f"C{i % 10}" for i in range(len(models))],
        )
        right.axhline(1, color="k", linestyle="--", linewidth=0.8)
        right.set_xticks(range(len(models)), [str(i + 1) for i in range(len(models))], fontsize=7)
        right.set_ylim(0, 4)
        right.set_ylabel("distinct glosses chosen (of 24 orderings)", fontsize=8)
        shared_legend(fig, ncols=2)

    return ReportFigure(
        "meaning_order_sensitivity",
        "Order sensitivity (24 orderings per item)",
        table,
        draw,
        caption="Left: share of items whose chosen gloss changes across orderings, mean within-item "
        "range of p(gold), and selection spread. Right: mean number of distinct glosses chosen (bars in the legend's order); "
        "1 is perfect stability (§5.4, Figure 12, Table 21). Slot keys (the paper's E7) move a "
        "gloss and relabel it; travelling keys move it only.",
        width=8.0,
    )


def slot_figure(table: ReportTable) -> ReportFigure:
    records = table.records()
    sources = list(dict.fromkeys(str(r["source"]) for r in records))

    def draw(fig: Figure) -> None:
        axes = fig.subplots(1, len(sources), sharey=True, squeeze=False)[0]
        for ax, source in zip(axes, sources, strict=True):
            mine = [r for r in records if r["source"] == source]
            grouped_bars(ax, mine, group="slot", value="share", low=None, high=None)
            chance_line(ax, label="no bias 0.25")
            ax.set_title(source, fontsize=9)
            ax.set_xlabel("display slot")
            unit_axis(ax, legend=False)
        axes[0].set_ylabel("share of selections")
        shared_legend(fig)

    return ReportFigure(
        "meaning_slot_shares",
        "Selections by display slot",
        table,
        draw,
        caption="With gold placed uniformly at random, every slot should get 0.25; departures are "
        "position or label bias (Appendix Q, Figure 11).",
        width=8.0,
    )


def ablation_figure(table: ReportTable) -> ReportFigure:
    records = table.records()

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        grouped_bars(ax, records, group="variant", value="accuracy")
        chance_line(ax)
        ax.set_ylabel("accuracy (95% CI)")
        ax.tick_params(axis="x", labelsize=7)
        unit_axis(ax)

    return ReportFigure(
        "meaning_option_ablation",
        "Option-side ablation (E6)",
        table,
        draw,
        caption="Accuracy as the options are truncated, scrambled, swapped for the other language "
        "or replaced by bare labels (o4, the semantics-free control; should sit at chance). Little "
        "loss under scrambling means the options are read lexically (§5.5, Figure 10).",
        width=8.0,
    )


def unit_figure(table: ReportTable) -> ReportFigure:
    records = table.records()

    def draw(fig: Figure) -> None:
        left, right = fig.subplots(1, 2)
        grouped_bars(left, records, group="variant", value="accuracy")
        chance_line(left)
        left.set_ylabel("accuracy (95% CI)")
        agree = [r for r in records if not str(r["variant"]).startswith("v0")]
        grouped_bars(
            right,
            agree,
            group="variant",
            value="agreement_with_intact",
            low="agreement_low",
            high="agreement_high",
        )
        right.set_ylabel("agreement with the intact answer")
        for ax in (left, right):
            ax.tick_params(axis="x", labelsize=6, rotation=30)
            unit_axis(ax, legend=False)
        shared_legend(fig)

    return ReportFigure(
        "meaning_unit_integrity",
        "Unit integrity (E3)",
        table,
        draw,
        caption="The idiom is perturbed and the options held fixed. High accuracy and agreement "
        "under shuffling or reversal mean the expression is read as a bag of words, not a unit "
        "(Appendix M, Figure 9).",
        width=8.0,
        height=3.8,
    )


def e4_figure(table: ReportTable) -> ReportFigure:
    """Figure 6: accuracy by task language, grouped by model."""
    records = [r for r in table.records() if "minus" not in str(r["task_language"])]

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        grouped_bars(ax, records, group="model", series="task_language", value="accuracy")
        chance_line(ax)
        ax.set_ylabel("accuracy (95% CI)")
        ax.tick_params(axis="x", labelsize=7)
        unit_axis(ax, title="task language")

    return ReportFigure(
        "meaning_task_language",
        "Accuracy by task language (E4)",
        table,
        draw,
        caption="The same items asked in each language under d-rand (the other-language cell "
        "presents the annotator's equivalent idiom and that language's glosses); bars of one "
        "model are paired, and the McNemar test of the table is the one to read (§5.7, "
        "Figure 6).",
        width=8.0,
    )


def o4_figure(table: ReportTable) -> ReportFigure:
    """Figure 7: the semantics-free control, accuracy beside mean confidence per model."""
    records = table.records()
    long = [
        {"model": r["model"], "measure": m, "value": r[m]}
        for r in records
        for m in ("accuracy", "mean_confidence")
    ]

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        grouped_bars(ax, long, group="model", series="measure", value="value", low=None, high=None)
        chance_line(ax)
        ax.tick_params(axis="x", labelsize=7)
        unit_axis(ax)

    return ReportFigure(
        "meaning_o4_control",
        "The semantics-free control (o4)",
        table,
        draw,
        caption="Bare labels carry no information, so accuracy should sit at chance and any "
        "confidence above it is overconfidence (§5.3, Figure 7). The model label names the "
        "language of its labels.",
        width=8.0,
    )
