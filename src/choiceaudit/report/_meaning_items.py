"""Per-item CSVs of the meaning audits and Figure 12's distribution of distinct choices.

:func:`item_tables` lays out the per-item values every audit carries (E2 per pair, E3 per item
and variant, E6 per item and form, E7 per item and key binding), one table per audit with a
``model`` column, written as ``items/<name>.csv`` so a reader can compare an arm with a
published per-item file row by row. :func:`distinct_table` and :func:`distinct_figure` give
Figure 12 left: how many items chose 1, 2, 3 or 4 distinct glosses across their 24 orderings.
:func:`descriptives_table` lays out the Appendix H / J descriptives. Nothing here computes a
statistic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from choiceaudit.instruments.meaning import MeaningAnalysis
from choiceaudit.report._figures import ReportFigure
from choiceaudit.report._meaning_tables import TableRecord, arms, make_table
from choiceaudit.report._tables import ReportTable

__all__ = ["descriptives_table", "distinct_figure", "distinct_table", "item_tables"]


def _table(
    name: str, title: str, parts: Sequence[tuple[Mapping[str, object], Any]]
) -> ReportTable | None:
    columns: list[str] = []
    rows: list[tuple[Any, ...]] = []
    for lead, values in parts:
        if values is None or not len(values):
            continue
        if not columns:
            columns = [*lead, *values.columns]
        rows.extend((*lead.values(), *row) for row in values.rows)
    return ReportTable(name, title, tuple(columns), tuple(rows)) if rows else None


def item_tables(analysis: MeaningAnalysis) -> list[ReportTable]:
    """One per-item table per audit the analysis carries (see the module docstring)."""
    order, surface, unit, ablation = [], [], [], []
    for label, a in arms(analysis):
        if a.e7 is not None:
            order.append(({"model": label, "keys": a.e7.key_binding}, a.e7.items))
            if a.e7.travelling is not None:
                order.append(({"model": label, "keys": "travelling"}, a.e7.travelling.items))
        if a.e2 is not None:
            surface.append(({"model": label}, a.e2.items))
        if a.e3 is not None:
            unit.append(({"model": label}, a.e3.items))
        if a.e6 is not None:
            ablation.append(({"model": label}, a.e6.items))
    tables = [
        _table(
            "meaning_items_order",
            "E7 per item: distinct choices, instability, p(gold) "
            "range, travel (vectors as returned)",
            order,
        ),
        _table(
            "meaning_items_surface",
            "E2 per pair: canonical and alternative choice, agreement, JS divergence, correctness",
            surface,
        ),
        _table(
            "meaning_items_unit",
            "E3 per item and variant: intact and variant choice, agreement, correctness",
            unit,
        ),
        _table(
            "meaning_items_ablation",
            "E6 per item and option form: correctness, peak, confidence head",
            ablation,
        ),
    ]
    return [t for t in tables if t is not None]


def distinct_table(analysis: MeaningAnalysis) -> ReportTable | None:
    """Figure 12 left: per model and key binding, items by number of distinct glosses chosen."""
    records = []
    for label, a in arms(analysis):
        audits = [] if a.e7 is None else [(a.e7.key_binding, a.e7)]
        if a.e7 is not None and a.e7.travelling is not None:
            audits.append(("travelling", a.e7.travelling))
        for binding, e7 in audits:
            total = sum(e7.distinct_choice_counts)
            for n, count in enumerate(e7.distinct_choice_counts, start=1):
                records.append(
                    {
                        "model": label,
                        "keys": binding,
                        "distinct_choices": n,
                        "n_items": count,
                        "share": count / total if total else float("nan"),
                    }
                )
    return make_table(
        "meaning_distinct_choices",
        "Distinct glosses chosen across the 24 orderings (E7; Figure 12 left)",
        records,
        "Appendix Q, Figure 12 left: per model, the share of items that chose 1, 2, 3 or 4 "
        "distinct glosses (identity perm[slot]) over the 24 orderings of one option set; "
        "1 is perfect stability.",
    )


def distinct_figure(table: ReportTable) -> ReportFigure:
    records = table.records()
    series = list(dict.fromkeys(f"{r['model']} ({r['keys']} keys)" for r in records))
    groups = sorted({int(r["distinct_choices"]) for r in records})

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        width = 0.8 / max(len(series), 1)
        for s, name in enumerate(series):
            mine = {
                int(r["distinct_choices"]): float(r["share"])
                for r in records
                if f"{r['model']} ({r['keys']} keys)" == name
            }
            x = np.array(groups, dtype=float) - 0.4 + width * (s + 0.5)
            ax.bar(
                x,
                [mine.get(g, 0.0) for g in groups],
                width=width * 0.95,
                color=f"C{s % 10}",
                label=name,
            )
        ax.set_xticks(groups, [str(g) for g in groups])
        ax.set_xlabel("distinct glosses chosen across 24 orderings")
        ax.set_ylabel("share of items")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=7, frameon=False)

    return ReportFigure(
        "meaning_distinct_choices",
        "Distinct glosses chosen per item (Figure 12 left)",
        table,
        draw,
        caption="Within each group one bar per model and key binding; 1 means the model "
        "chose the same gloss under every ordering (Appendix Q, Figure 12).",
        width=6.0,
    )


def descriptives_table(analysis: MeaningAnalysis) -> ReportTable | None:
    """Appendix H / J descriptives, one record per (model, measure, cell)."""
    records: list[TableRecord] = []
    for label, a in arms(analysis):
        d = a.descriptives
        if d is None:
            continue

        def add(measure: str, cell: str, value: Any, label: str = label) -> None:
            records.append({"model": label, "measure": measure, "cell": cell, "value": value})

        for family, n in d.n_literal_certain.items():
            add("items at p(literal) = 1.000, p(gold) = 0.000", family, n)
        if d.e2_mean_peak is not None:
            add("E2 mean peak on the pairs (canonical form, once per pair)", "e2", d.e2_mean_peak)
        if d.e2_mean_peak_rows is not None:
            add(
                "E2 mean peak over every row of the pairs (each row once)",
                "e2",
                d.e2_mean_peak_rows,
            )
        if d.construction is not None:
            c = d.construction
            for measure, value in (
                ("items", c.n_items),
                ("share single-word idiom", c.share_single_word),
                ("share literal contains the idiom", c.share_verbatim),
                ("share literal longer than gold", c.share_literal_longer_than_gold),
                ("share literal longest of four", c.share_literal_longest),
                ("mean characters: literal", c.mean_literal_chars),
                ("mean characters: gold", c.mean_gold_chars),
                ("mean characters: other three", c.mean_other_chars),
            ):
                add(measure, "d-lit", value)
        if d.matrix is not None:
            m = d.matrix
            add("items", "matrix", m.n_items)
            for language in m.jaccard_gold_literal:
                add(
                    "mean Jaccard gold vs literal",
                    f"matrix {language}",
                    m.jaccard_gold_literal[language],
                )
                add(
                    "share hook (literal shares a content word with the state)",
                    f"matrix {language}",
                    m.hook_share[language],
                )
                add(
                    "mean characters: literal", f"matrix {language}", m.mean_literal_chars[language]
                )
    return make_table(
        "meaning_descriptives",
        "Output and construction descriptives (Appendices H, J)",
        records,
        "Appendix H: items whose returned vector reads 1.000 on the literal and 0.000 on the "
        "gold to three decimals; Appendix N: E2's mean peak on the pairs as the paper aggregates "
        "it (the canonical form's peak, once per pair), and beside it the mean over every "
        "distinct row of the pairs, canonical and alternatives each once. Appendix J, item "
        "construction (d-lit rows): single-word idioms (whitespace words), verbatim containment, "
        "length (characters). Appendix J, the four asymmetries (capture matrix, per language "
        "cell): gold-literal Jaccard on word sets (iii), the content-word hook (iv), the literal "
        "option's length (ii).",
    )
