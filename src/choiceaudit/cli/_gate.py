"""``choiceaudit gate``: a confidence cut-point fitted on one slice of stored runs and read on
every other slice; calls :func:`choiceaudit.audit.gate_runs`, prints the cut-points and the
slices where the target is missed, and writes the thresholds file (and optionally a report)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from choiceaudit.audit import gate_runs
from choiceaudit.cli._app import app, guarded, out, panel
from choiceaudit.errors import InputError
from choiceaudit.gate import GateAnalysis, GateSpec
from choiceaudit.metrics import CONFIDENCE_DEFINITIONS, N_RESAMPLES, SEED

__all__ = ["print_gate_summary"]


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def print_gate_summary(analysis: GateAnalysis) -> None:
    """One line per model and definition, then one per slice of each."""
    spec = analysis.spec
    table = Table(
        title=f"gate fitted on {analysis.fit_key}={analysis.fit_value}: {spec.describe()}",
        box=box.SIMPLE_HEAD,
    )
    for col in (
        "model",
        "confidence",
        "slice",
        "rows",
        "cut-point",
        "95% CI",
        "coverage",
        "accuracy",
        "oos acc",
        "status",
    ):
        table.add_column(
            col, justify="left" if col in ("model", "confidence", "slice") else "right"
        )
    for g in analysis.gates:
        ci = g.cut_point_interval
        for s in g.slices:
            fit = s.is_fit
            oos = g.out_of_sample if fit else None
            table.add_row(
                g.model if fit else "",
                g.definition if fit else "",
                f"{s.value} (fit)" if fit else s.value,
                str(s.n_rows),
                ("accept none" if g.cut_point is None else _fmt(g.cut_point, 4)) if fit else "",
                f"[{_fmt(ci.low, 4)}, {_fmt(ci.high, 4)}]" if fit and ci is not None else "",
                _fmt(s.coverage.estimate),
                _fmt(None if s.accuracy is None else s.accuracy.estimate),
                _fmt(oos.accuracy) if oos is not None else "",
                f"[red]{s.status}[/red]" if s.missed else s.status,
            )
    out.print(table)
    for skipped in analysis.skipped:
        out.print(f"skipped: {skipped}", highlight=False)


def _where(pairs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The ``--where key=value`` filters (each must name a key and a value)."""
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError(f"filter {pair!r} is not key=value")
        out.append((key.strip(), value.strip()))
    return tuple(out)


@app.command(rich_help_panel=panel("gate"))
@guarded
def gate(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (rows need a gold option).")],
    fit: Annotated[
        str,
        typer.Option(
            "--fit",
            help="Slice to choose the cut-point on: key=value of any meta field (family=d-rand, "
            "language=bn, experiment=e1, task=…, run=<run dir name>), or a bare value looked up "
            "in family, language, condition, experiment, task, run, then every field.",
        ),
    ],
    out_file: Annotated[
        Path, typer.Option("--out", help="Thresholds file to write (JSON a service can load).")
    ],
    target_accuracy: Annotated[
        float | None,
        typer.Option(help="Accuracy the accepted rows must reach (largest coverage that does)."),
    ] = None,
    max_risk: Annotated[
        float | None, typer.Option(help="Error rate the accepted rows may not exceed.")
    ] = None,
    cost_ratio: Annotated[
        float | None,
        typer.Option(help="Cost of an accepted error relative to one escalation (minimise cost)."),
    ] = None,
    confidence: Annotated[
        list[str] | None,
        typer.Option(
            "--confidence",
            help="Confidence definition (repeatable): maxprob, conf_head, margin, entropy. "
            "Default: all four, side by side.",
        ),
    ] = None,
    where: Annotated[
        list[str] | None,
        typer.Option(help="Keep only rows with meta key=value before slicing (repeatable)."),
    ] = None,
    report: Annotated[
        Path | None, typer.Option(help="Also write an HTML report of the gate into this folder.")
    ] = None,
    n_resamples: Annotated[int, typer.Option(help="Bootstrap resamples over items.")] = N_RESAMPLES,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the fold split.")] = SEED,
    folds: Annotated[int, typer.Option(help="Folds of items for the out-of-sample estimate.")] = 5,
    repeats: Annotated[int, typer.Option(help="Random fold assignments averaged.")] = 10,
) -> None:
    """Choose a confidence cut-point and test it out of sample.

    Chooses the cut-point on one slice of the runs (--fit) and reports what it delivers on
    every other slice, with bootstrap intervals over items; writes the thresholds as JSON a
    service can read.

    Example:

    \b
      choiceaudit gate runs/mc --fit split=dev --target-accuracy 0.9 --out thresholds.json
    """
    given = {
        "target_accuracy": target_accuracy,
        "max_risk": max_risk,
        "cost_ratio": cost_ratio,
    }
    chosen = [(k, v) for k, v in given.items() if v is not None]
    if len(chosen) != 1:
        raise InputError("give exactly one of --target-accuracy, --max-risk, --cost-ratio")
    objective, value = chosen[0]
    spec = GateSpec(
        objective=objective,  # type: ignore[arg-type]
        value=value,
        fit=fit,
        where=_where(where or []),
        definitions=tuple(confidence) if confidence else CONFIDENCE_DEFINITIONS,
        n_resamples=n_resamples,
        seed=seed,
        folds=folds,
        repeats=repeats,
    )
    result = gate_runs(runs, spec, out=out_file, command=["choiceaudit", *sys.argv[1:]])
    print_gate_summary(result.analysis)
    out.print(f"thresholds: {result.path}", highlight=False)
    if report is not None:
        from choiceaudit.report import gate_section, write_report

        index = write_report([gate_section(result.analysis)], report, title="choiceaudit gate")
        out.print(f"report: {index}", highlight=False)
