"""The section for plain scoring runs (``choiceaudit score``): what any set of choices supports
without an instrument — accuracy where rows carry a gold option, selection by display slot, and
the order audit where items were rendered under several orderings."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from choiceaudit import stats
from choiceaudit.report._figures import ReportFigure
from choiceaudit.report._html import Section
from choiceaudit.report._runs import permutation_sweeps
from choiceaudit.report._tables import ReportTable
from choiceaudit.store import Run

__all__ = ["run_summary_table", "scoring_section"]

SEED = 20261129
N_RESAMPLES = 2000


def run_summary_table(runs: Sequence[Run], name: str = "runs") -> ReportTable:
    records = []
    for run in runs:
        scorer = run.manifest.scorer
        records.append(
            {
                "run": run.path.name,
                "model": run.label,
                "backend": scorer.get("backend"),
                "dtype": scorer.get("dtype"),
                "rows": len(run.rows),
                "status": run.manifest.status,
                "created": run.manifest.created,
            }
        )
    return ReportTable.from_records(name, "Runs in this report", records)


def _slot_table(runs: Sequence[Run]) -> ReportTable | None:
    records = []
    for run in runs:
        by_k: dict[int, list[np.ndarray]] = {}
        for row in run.rows:
            by_k.setdefault(row.decision.n_options, []).append(row.decision.probs)
        for k, probs in sorted(by_k.items()):
            if k < 2:
                continue
            shares = stats.slot_shares(np.stack(probs))
            for slot, share in enumerate(shares):
                records.append(
                    {
                        "model": run.label,
                        "k": k,
                        "slot": slot,
                        "share": float(share),
                        "uniform": 1 / k,
                        "n": len(probs),
                    }
                )
    if not records:
        return None
    return ReportTable.from_records(
        "slot_shares",
        "Share of choices by display slot (ties split evenly)",
        records,
        note="Without position bias and with options placed at random, each slot gets 1/k.",
    )


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


def _accuracy_table(runs: Sequence[Run]) -> ReportTable | None:
    records = []
    for run in runs:
        correct, clusters = [], []
        for row in run.rows:
            gold = row.meta.get("gold")
            if gold is None:
                continue
            chosen = row.choice_canonical
            correct.append(1.0 / len(chosen) if gold in chosen else 0.0)  # ties: expected credit
            clusters.append(str(row.meta.get("item_id") or row.query.id))
        if not correct:
            continue
        ci = stats.bootstrap_ci(
            np.array(correct), n_resamples=N_RESAMPLES, clusters=clusters, seed=SEED
        )
        records.append(
            {"model": run.label, "rows": len(correct), "items": len(set(clusters)),
             "accuracy": ci.estimate, "ci_low": ci.low, "ci_high": ci.high}
        )  # fmt: skip
    if not records:
        return None
    return ReportTable.from_records(
        "accuracy",
        "Accuracy against the gold option (95% item-clustered bootstrap)",
        records,
        note=f"Percentile bootstrap, {N_RESAMPLES} resamples of whole items, seed {SEED}; a tie "
        "containing the gold option earns 1/(tie size).",
    )


def _order_table(runs: Sequence[Run]) -> tuple[ReportTable | None, list[str]]:
    records, skipped = [], []
    for run in runs:
        sweep = permutation_sweeps(run)
        if sweep is None:
            skipped.append(
                f"{run.label}: no item rendered under more than one ordering; no order audit"
            )
            continue
        audit = stats.permutation_audit(sweep.probs, sweep.perms)
        record = {
            "model": run.label,
            "items": len(sweep.item_ids),
            "orderings": int(sweep.probs.shape[1]),
            "answer_instability": stats.answer_instability(sweep.probs, sweep.perms),
            "mean_distinct_choices": float(
                np.mean(stats.n_distinct_choices(sweep.probs, sweep.perms))
            ),
            "selection_spread": stats.selection_spread(sweep.probs),
            "median_travel": audit.median,
            "share_travel_le_1e-4": audit.share_at_or_below,
        }
        if sweep.gold is not None:
            record["mean_gold_prob_range"] = float(
                np.mean(stats.gold_prob_range(sweep.probs, sweep.perms, sweep.gold))
            )
        records.append(record)
    if not records:
        return None, skipped
    table = ReportTable.from_records(
        "order_audit",
        "Order audit over permutation sweeps",
        records,
        note="Answer identity is the canonical option perm[slot(ŷ)], never the slot letter; travel "
        "is the largest distance one option's own probability moves across orderings.",
    )
    return table, skipped


def scoring_section(runs: Sequence[Run]) -> Section:
    section = Section(
        key="scoring",
        title="Scoring runs",
        method=(
            "Rows come straight from each run's Parquet parts. Choices are the argmax of the "
            "probabilities, with exact ties kept as tied sets. Accuracy needs a canonical "
            "<code>gold</code> index in the query meta; the order audit needs items rendered "
            "under several orderings (a <code>perm</code> per row)."
        ),
        runs=[(str(r.path), r.manifest.to_dict()) for r in runs],
    )
    section.tables.append(run_summary_table(runs))
    accuracy = _accuracy_table(runs)
    if accuracy is None:
        section.skipped.append("accuracy: no row carries a gold option in its meta")
    else:
        section.tables.append(accuracy)
    slots = _slot_table(runs)
    if slots is not None:
        section.figures.append(_draw_slots(slots))
        section.tables.append(slots)
    order, skipped = _order_table(runs)
    section.skipped.extend(skipped)
    if order is not None:
        section.tables.append(order)
    return section
