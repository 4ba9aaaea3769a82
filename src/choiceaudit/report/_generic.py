"""The section for plain scoring runs (``choiceaudit score``), laid out from
:class:`~choiceaudit.instruments.scoring.ScoringAnalysis`: accuracy where rows carry a gold
option, selection by display slot, and the order audit where items were rendered under several
orderings. Nothing here computes a statistic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from choiceaudit.instruments.scoring import ScoringAnalysis
from choiceaudit.report._figures import ReportFigure
from choiceaudit.report._html import Section
from choiceaudit.report._tables import ReportTable

__all__ = ["run_summary_table", "scoring_section"]


def run_summary_table(
    runs: Sequence[tuple[str, str, Mapping[str, Any], int]], name: str = "runs"
) -> ReportTable:
    """One row per run from ``(label, run directory, manifest, rows)``."""
    records = []
    for label, source, manifest, n_rows in runs:
        scorer = manifest.get("scorer", {})
        records.append(
            {
                "run": Path(source).name,
                "model": label,
                "backend": scorer.get("backend"),
                "dtype": scorer.get("dtype"),
                "rows": n_rows,
                "status": manifest.get("status"),
                "created": manifest.get("created"),
            }
        )
    return ReportTable.from_records(name, "Runs in this report", records)


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


def _order_record(cell: Any) -> dict[str, Any]:
    record = asdict(cell)
    record["share_travel_le_1e-4"] = record.pop("share_travel_le_1e_4")
    gold = record.pop("mean_gold_prob_range")
    if gold is not None:
        record["mean_gold_prob_range"] = gold
    return record


def scoring_section(analysis: ScoringAnalysis) -> Section:
    """The scoring section (see the module docstring)."""
    section = Section(
        key="scoring",
        title="Scoring runs",
        method=(
            "Rows come straight from each run's Parquet parts. Choices are the argmax of the "
            "probabilities, with exact ties kept as tied sets. Accuracy needs a canonical "
            "<code>gold</code> index in the query meta; the order audit needs items rendered "
            "under several orderings (a <code>perm</code> per row)."
        ),
        runs=[(a.source, dict(a.manifest)) for a in analysis.arms],
    )
    section.tables.append(
        run_summary_table([(a.label, a.source, a.manifest, a.rows) for a in analysis.arms])
    )
    if analysis.accuracy:
        section.tables.append(
            ReportTable.from_records(
                "accuracy",
                "Accuracy against the gold option (95% item-clustered bootstrap)",
                [asdict(c) for c in analysis.accuracy],
                note=f"Percentile bootstrap, {analysis.n_resamples} resamples of whole items, "
                f"seed {analysis.seed}; a tie containing the gold option earns 1/(tie size).",
            )
        )
    if analysis.slot_shares:
        slots = ReportTable.from_records(
            "slot_shares",
            "Share of choices by display slot (ties split evenly)",
            [asdict(c) for c in analysis.slot_shares],
            note="Without position bias and with options placed at random, each slot gets 1/k.",
        )
        section.figures.append(_draw_slots(slots))
        section.tables.append(slots)
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
            )
        )
    return section
