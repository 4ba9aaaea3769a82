"""What the precision gate of each reduced-precision run measured, laid out in its section: a
table of the gate's figures first, and a ``precision`` column beside every table row of that
model, so no number of a model scored in bfloat16 or float16 is read without its noise floor.

The figures are the gate's, stored in the run's manifest before its first row was scored
(:func:`choiceaudit.audit.run_precision_gate`); nothing here computes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from choiceaudit.metrics import floor_shown
from choiceaudit.report._html import Section
from choiceaudit.report._tables import Computed, ReportTable
from choiceaudit.types import Manifest

__all__ = ["PRECISION", "precision_notes", "with_precision"]

PRECISION = Computed(
    rule="the precision gate, run before the run's first row: an evenly spaced sample of the "
    "run's own queries scored in its precision and in float32 (|Δ score| per option, and the "
    "queries whose chosen option set differs), float32 checked against a float64 reference on "
    "the first few.",
    aggregation="per run: median, 95th percentile and largest |Δ score| per option under the "
    "summed log-probability (or, for a model without it, the first rule measured: floor_rule); "
    "the largest share of flipped choices over the rules, and its rule; the largest float32 "
    "against float64 |Δ| (empty where the backend has no float64 path).",
    n="column n_sample: the sampled queries; n_reference: those checked against float64.",
    page="reference/report.md",
    anchor="precision",
)


def _floor(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """The rule whose distances the report shows (:func:`choiceaudit.metrics.floor_shown`)."""
    return floor_shown(list(record.get("floor", ())))


def _row(label: str, run_dir: str, record: Mapping[str, Any]) -> dict[str, object]:
    if not record.get("gated"):
        return {"model": label, "run": Path(run_dir).name, "dtype": record.get("dtype")}
    shown = _floor(record)
    return {
        "model": label,
        "run": Path(run_dir).name,
        "dtype": record.get("dtype"),
        "gated": True,
        "n_sample": record.get("n_queries"),
        "floor_rule": shown.get("rule"),
        "floor_median_abs": shown.get("median_abs"),
        "floor_p95_abs": shown.get("p95_abs"),
        "floor_max_abs": shown.get("max_abs"),
        "largest_flip_rate": record.get("largest_flip_rate"),
        "flip_rule": record.get("largest_flip_rule"),
        "max_flip_rate": record.get("max_flip_rate"),
        "accepted_flips": record.get("accepted_flips"),
        "n_reference": record.get("n_reference"),
        "fp32_vs_fp64_max_abs": record.get("reference_max_abs"),
    }


def _gated(runs: Sequence[tuple[str, Manifest]]) -> list[tuple[str, str, Mapping[str, Any]]]:
    out = []
    for run_dir, manifest in runs:
        if manifest.precision_gate is not None:
            label = manifest.config.get("model") or manifest.model_label or Path(run_dir).name
            out.append((str(label), run_dir, manifest.precision_gate))
    return out


def _note(record: Mapping[str, Any]) -> str:
    dtype = record.get("dtype")
    if not record.get("gated"):
        return f"{dtype}: not gated"
    shown = _floor(record)
    largest = shown.get("max_abs")
    floor = "–" if largest is None else f"{largest:.3g}"
    rate = record.get("largest_flip_rate")
    flips = "–" if rate is None else f"{rate:.1%}"
    accepted = ", accepted" if record.get("accepted_flips") else ""
    return f"{dtype}: |Δ {shown.get('rule', '–')}| ≤ {floor}, flips {flips}{accepted}"


def precision_notes(runs: Sequence[tuple[str, Manifest]]) -> dict[str, str]:
    """The short note shown beside a model's rows, by every name a table may give the run (the
    configuration's model, the scorer's model, the run directory's name); a name two runs with
    different notes share (or a gated and an ungated run) is left out, so no row is marked with
    another run's floor (the precision table still lists every gated run)."""
    notes: dict[str, str | None] = {}
    clashes: set[str] = set()
    for run_dir, manifest in runs:
        record = manifest.precision_gate
        note = None if record is None else _note(record)
        names = {manifest.config.get("model"), manifest.model_label, Path(run_dir).name}
        for name in {str(n) for n in names if n}:
            if name in notes and notes[name] != note:
                clashes.add(name)
            notes[name] = note
    return {k: v for k, v in notes.items() if v is not None and k not in clashes}


def _annotated(table: ReportTable, notes: Mapping[str, str]) -> ReportTable:
    """``table`` with a ``precision`` column after the first column naming a gated model."""
    if "precision" in table.columns:
        return table
    for i, _ in enumerate(table.columns):
        cells = [notes.get(str(row[i])) if isinstance(row[i], str) else None for row in table.rows]
        if any(cells):
            rows = tuple(
                (*r[: i + 1], c, *r[i + 1 :]) for r, c in zip(table.rows, cells, strict=True)
            )
            columns = (*table.columns[: i + 1], "precision", *table.columns[i + 1 :])
            return replace(table, columns=columns, rows=rows)
    return table


def with_precision(section: Section) -> Section:
    """``section`` with its reduced-precision runs' gate table first and each of their rows
    annotated; unchanged when none of its runs was scored in a reduced precision."""
    gated = _gated(section.runs)
    if not gated:
        return section
    table = ReportTable.from_records(
        f"precision-{section.key}",
        "Precision gate: the noise floor of each reduced-precision run against float32",
        [_row(label, run_dir, record) for label, run_dir, record in gated],
        note="A run's scores move by up to its floor between float32 and its precision; a "
        "choice decided by less may be the precision's. Rows marked not gated were opted out.",
        # six decimals: float32 against float64 is a few 1e-5 and must not read as 0.000
        digits=6,
        computed=PRECISION,
    )
    notes = precision_notes(section.runs)
    return replace(
        section,
        tables=[table, *(_annotated(t, notes) for t in section.tables)],
        item_tables=[_annotated(t, notes) for t in section.item_tables],
    )
