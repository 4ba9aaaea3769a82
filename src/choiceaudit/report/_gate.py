"""The confidence-gate section, laid out from
:class:`~choiceaudit.gate.GateAnalysis`: the cut-point of every model and
definition with its interval and out-of-sample estimate, what it delivers on every slice (missed
targets flagged), the four definitions side by side, and one figure per model with each slice's
risk–coverage curve and the cut-point's operating point on it. Nothing here computes a
statistic."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure

from choiceaudit.gate import DefinitionGate, GateAnalysis, Interval, SliceResult
from choiceaudit.metrics import DEFINITION_TEXT
from choiceaudit.report._figures import ReportFigure
from choiceaudit.report._html import Section
from choiceaudit.report._tables import Computed, ReportTable

__all__ = ["gate_section", "risk_coverage_panels"]


PAGE = "instruments/scoring.md"
_ACCEPT = (
    "a row is accepted when its confidence (under the definition named) is at or above the "
    "cut-point; correct = its argmax is the gold option, a tie holding it earning 1/(tie size)."
)
THRESHOLDS = Computed(
    rule=_ACCEPT,
    aggregation="the cut-point chosen on the fit slice's rows for the objective; its interval a "
    "percentile bootstrap over items with the cut-point re-chosen each time; oos_* cross-fitted "
    "over folds of items (min and max over the fold assignments).",
    n="column fit_rows: the fit slice's rows.",
    page=PAGE,
)
SLICES = Computed(
    rule=_ACCEPT,
    aggregation="per slice: coverage (share accepted), accuracy among the accepted, AURC and "
    "AUGRC against the random gate; intervals a bootstrap over items with the cut-point fixed.",
    n="columns n_rows and n_items.",
    page=PAGE,
)
SIDE_BY_SIDE = Computed(
    rule=_ACCEPT + " Each definition has its own cut-point, fitted to the same target.",
    aggregation="per model and slice: coverage and accuracy among the accepted, per definition.",
    n="the slice's rows, as in gate_slices.",
    page=PAGE,
)
RISK_COVERAGE = Computed(
    rule="confidence under each definition; error = 1 − credit of the argmax.",
    aggregation="per slice, selective risk at each coverage (most confident accepted first), "
    "and the point the fitted cut-point gives there.",
    n="the slice's rows, as in gate_slices.",
    page=PAGE,
    anchor="gate_risk_coverage",
)


def _est(i: Interval | None) -> float | None:
    return None if i is None else i.estimate


def _low(i: Interval | None) -> float | None:
    return None if i is None else i.low


def _high(i: Interval | None) -> float | None:
    return None if i is None else i.high


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _threshold_records(analysis: GateAnalysis) -> list[dict[str, object]]:
    records: list[dict[str, object]] = []
    for g in analysis.gates:
        oos = g.out_of_sample
        records.append(
            {
                "model": g.model,
                "definition": g.definition,
                "cut_point": g.cut_point,
                "cut_low": _low(g.cut_point_interval),
                "cut_high": _high(g.cut_point_interval),
                "infeasible_resamples": None
                if g.cut_point_interval is None
                else g.cut_point_interval.n_undefined,
                "fit_rows": g.fit.n_rows,
                "fit_coverage": g.fit.coverage.estimate,
                "fit_accuracy": _est(g.fit.accuracy),
                "oos_accuracy": None if oos is None else _finite(oos.accuracy),
                "oos_acc_min": None if oos is None else _finite(oos.accuracy_min),
                "oos_acc_max": None if oos is None else _finite(oos.accuracy_max),
                "oos_coverage": None if oos is None else oos.coverage,
                "oos_target_met": None if oos is None else oos.target_met,
                "slices_missed": f"{g.n_missed} of {len(g.slices) - 1}",
            }
        )
    return records


def _slice_record(g: DefinitionGate, s: SliceResult) -> dict[str, object]:
    record: dict[str, object] = {
        "model": g.model,
        "definition": g.definition,
        "slice": f"{s.value} (fit)" if s.is_fit else s.value,
        "n_rows": s.n_rows,
        "n_items": s.n_items,
        "accuracy_all": s.accuracy_all,
        "coverage": s.coverage.estimate,
        "cov_low": s.coverage.low,
        "cov_high": s.coverage.high,
        "coverage_shift": s.coverage_shift,
        "accuracy": _est(s.accuracy),
        "acc_low": _low(s.accuracy),
        "acc_high": _high(s.accuracy),
        "status": s.status.upper() if s.missed else s.status,
    }
    if s.cost is not None:
        record["cost"] = s.cost.estimate
    record.update(
        {
            "aurc": s.aurc,
            "aurc_random": s.aurc_random,
            "advantage": _finite(s.advantage),
            "augrc": s.augrc,
            "augrc_random": s.augrc_random,
        }
    )
    return record


def _side_by_side(analysis: GateAnalysis) -> list[dict[str, object]]:
    """model × slice rows, one coverage and one accuracy column per definition."""
    rows: dict[tuple[str, str], dict[str, object]] = {}
    for g in analysis.gates:
        for s in g.slices:
            key = (g.model, s.value)
            row = rows.setdefault(
                key, {"model": g.model, "slice": f"{s.value} (fit)" if s.is_fit else s.value}
            )
            row[f"coverage {g.definition}"] = s.coverage.estimate
            row[f"accuracy {g.definition}"] = _est(s.accuracy)
            row[f"missed {g.definition}"] = s.missed
    return list(rows.values())


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "model"


def risk_coverage_panels(
    fig: Figure,
    records: Sequence[dict[str, Any]],
    *,
    series: str,
    panel: str = "definition",
    target_risk: float | None = None,
) -> None:
    """One panel per ``panel`` value, one risk–coverage line per ``series`` value, from records
    with ``coverage``, ``selective_risk``, ``random_gate`` and ``kind`` (``curve`` or
    ``cut-point``: a marker at the operating point)."""
    panels = list(dict.fromkeys(str(r[panel]) for r in records))
    names = list(dict.fromkeys(str(r[series]) for r in records))
    axes = fig.subplots(1, max(len(panels), 1), sharey=True, squeeze=False)[0]
    for ax, name in zip(axes, panels, strict=False):
        mine = [r for r in records if str(r[panel]) == name]
        for i, s in enumerate(names):
            colour = f"C{i % 10}"
            curve = [r for r in mine if str(r[series]) == s and r["kind"] == "curve"]
            if not curve:
                continue
            ax.plot(
                [r["coverage"] for r in curve],
                [r["selective_risk"] for r in curve],
                color=colour,
                label=s,
                linewidth=1.2,
            )
            ax.axhline(curve[0]["random_gate"], color=colour, linestyle=":", linewidth=0.8)
            for r in mine:
                if (
                    str(r[series]) == s
                    and r["kind"] == "cut-point"
                    and r["selective_risk"] is not None
                ):
                    ax.plot(r["coverage"], r["selective_risk"], "o", color=colour, markersize=5)
        if target_risk is not None:
            ax.axhline(target_risk, color="k", linestyle="--", linewidth=0.8, label="target risk")
        ax.set_title(name, fontsize=9)
        ax.set_xlim(0, 1.02)
        ax.set_xlabel("coverage (share accepted)")
    axes[0].set_ylabel("selective risk (error rate among accepted)")
    axes[0].legend(fontsize=7)


def _curve_records(g: DefinitionGate) -> list[dict[str, object]]:
    records: list[dict[str, object]] = []
    for n, c in enumerate(g.curves):
        label = f"{c.value} (fit)" if n == 0 else c.value  # the fit slice comes first
        for cov, risk in zip(c.coverage, c.selective_risk, strict=True):
            records.append(
                {
                    "model": g.model,
                    "definition": g.definition,
                    "slice": label,
                    "kind": "curve",
                    "coverage": cov,
                    "selective_risk": risk,
                    "random_gate": c.random_gate,
                }
            )
        records.append(
            {
                "model": g.model,
                "definition": g.definition,
                "slice": label,
                "kind": "cut-point",
                "coverage": c.operating_coverage,
                "selective_risk": c.operating_risk,
                "random_gate": c.random_gate,
            }
        )
    return records


def _figure(model: str, gates: Sequence[DefinitionGate], analysis: GateAnalysis) -> ReportFigure:
    records = [r for g in gates for r in _curve_records(g)]
    table = ReportTable.from_records(
        f"gate_risk_coverage_{_safe(model)}",
        f"Risk–coverage by slice: {model}",
        records,
        computed=RISK_COVERAGE,
    )
    target = 1.0 - analysis.spec.required_accuracy
    fit = f"{analysis.fit_key}={analysis.fit_value}"

    def draw(fig: Figure) -> None:
        risk_coverage_panels(fig, table.records(), series="slice", target_risk=target)

    return ReportFigure(
        f"gate_risk_coverage_{_safe(model)}",
        f"Risk–coverage curves of every {analysis.fit_key} slice: {model}",
        table,
        draw,
        caption=f"One panel per confidence definition, one line per slice. The dot on each line "
        f"is what the cut-point fitted on {fit} delivers there; a dot above the dashed target "
        "line misses the target. Dotted lines: each slice's random gate (its error rate). A "
        "curve that rises towards low coverage is inverted: confidence ranks errors first.",
        width=3.2 * max(len(gates), 1) + 0.8,
        height=3.6,
    )


def gate_section(analysis: GateAnalysis) -> Section:
    """The gate section (see the module docstring)."""
    spec = analysis.spec
    fit = f"{analysis.fit_key}={analysis.fit_value}"
    where = " and ".join(f"{k}={v}" for k, v in spec.where)
    oos = next((g.out_of_sample for g in analysis.gates if g.out_of_sample), None)
    definitions = "".join(
        f"<li><code>{html.escape(d)}</code>: {html.escape(DEFINITION_TEXT[d])}</li>"
        for d in spec.definitions
    )
    section = Section(
        key="gate",
        title=f"Confidence gate fitted on {fit}",
        method=(
            f"Objective: {html.escape(spec.describe())}. A row is accepted when its confidence is "
            f"at or above the cut-point and escalated otherwise; the cut-point is chosen on the "
            f"rows of <code>{html.escape(fit)}</code>"
            + (f" (among rows with {html.escape(where)})" if where else "")
            + " and then applied unchanged to every other value of "
            f"<code>{html.escape(analysis.fit_key)}</code>. Interval: {spec.level:.0%} percentile "
            f"bootstrap over items ({spec.n_resamples} resamples, seed {spec.seed}), the "
            "cut-point re-chosen on each resample. Out-of-sample: "
            + html.escape(oos.method if oos else "split-by-item cross-fitting")
            + ". Slices are flagged MISSED where the accuracy among accepted rows is below "
            f"{spec.required_accuracy:.3f}. AURC, AUGRC and their random-gate baselines follow the "
            "meaning paper §5.2 (a random gate scores the error rate on AURC and half of it on "
            "AUGRC); advantage = aurc_random / aurc. Confidence definitions, side by side:"
            f"<ul>{definitions}</ul>"
        ),
        runs=[(a.source, a.manifest) for a in analysis.arms],
    )
    if analysis.gates:
        section.tables.append(
            ReportTable.from_records(
                "gate_thresholds",
                f"Cut-points fitted on {fit}, with interval and out-of-sample estimate",
                _threshold_records(analysis),
                note="cut_point empty: no cut-point meets the target on the fit slice (accept "
                "nothing). fit_accuracy is in-sample and biased upwards; oos_accuracy is the "
                "cross-fitted estimate (its min and max over the fold assignments).",
                computed=THRESHOLDS,
            )
        )
        section.tables.append(
            ReportTable.from_records(
                "gate_slices",
                "What each cut-point delivers on every slice",
                [_slice_record(g, s) for g in analysis.gates for s in g.slices],
                note="coverage: share of the slice's rows accepted (automation rate); "
                "coverage_shift: against the fit slice; accuracy: among accepted rows; intervals "
                "are item bootstraps with the cut-point fixed. status MISSED: below target; "
                "MISSED (INTERVAL BELOW TARGET): the whole interval is.",
                computed=SLICES,
            )
        )
        section.tables.append(
            ReportTable.from_records(
                "gate_definitions_side_by_side",
                "Automation rate and accuracy by confidence definition",
                _side_by_side(analysis),
                note="Each definition has its own cut-point, fitted on the same slice to the same "
                "target; a threshold tuned on one definition says nothing about the automation "
                "rate of another.",
                computed=SIDE_BY_SIDE,
            )
        )
        by_model: dict[str, list[DefinitionGate]] = {}
        for g in analysis.gates:
            by_model.setdefault(g.model, []).append(g)
        for model, gates in by_model.items():
            section.figures.append(_figure(model, gates, analysis))
    section.skipped.extend(str(s) for s in analysis.skipped)
    for model, reasons in analysis.excluded.items():
        for reason, n in reasons.items():
            section.skipped.append(f"{model}: {n} row(s) left out ({reason})")
    return section
