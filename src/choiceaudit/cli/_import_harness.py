"""``choiceaudit import lm-eval``, ``import inspect`` and ``import decisions``: per-item outputs
of other harnesses, or anyone's per-item decision files, into a run directory
(:func:`choiceaudit.audit.import_lm_eval`, :func:`~choiceaudit.audit.import_inspect`,
:func:`~choiceaudit.audit.import_decisions`); prints what was mapped and what was not."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from choiceaudit.audit import ImportResult, import_decisions, import_inspect, import_lm_eval
from choiceaudit.cli._app import console, guarded, out
from choiceaudit.cli._groups import import_app

__all__ = ["print_import"]


def print_import(result: ImportResult, run: Path) -> None:
    summary = result.summary
    out.print(
        f"{run}: {result.mapped} row(s) imported from {result.source} "
        f"{result.version or '(version unknown)'} for model {result.model} "
        f"({summary.scored} new, {summary.already_done} already there, "
        f"{result.identical_duplicates} identical duplicate row(s) dropped); "
        f"rows = {summary.manifest.rows}",
        highlight=False,
    )
    for reason, n in sorted(result.unmappable.items()):
        out.print(f"  not imported: {n} row(s): {reason}", highlight=False)
    if result.unmapped_fields:
        names = ", ".join(sorted(result.unmapped_fields))
        out.print(f"  fields not mapped (recorded in the manifest): {names}", highlight=False)
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)


_FILES = Annotated[list[Path], typer.Argument(help="Files, or directories searched for them.")]
_OUT = Annotated[Path, typer.Option("--out", help="Run directory (created, or resumed as is).")]
_MODEL = Annotated[
    str | None,
    typer.Option("--model-name", help="Model label for the run (default: the harness's own)."),
]


@import_app.command("lm-eval")
@guarded
def lm_eval(files: _FILES, out_dir: _OUT, model_name: _MODEL = None) -> None:
    """Import lm-evaluation-harness per-sample outputs.

    Reads --log_samples files (samples_<task>_<time>.jsonl) of multiple-choice tasks; the
    results_<time>.json beside them gives the version and the model.

    Example:

    \b
      choiceaudit import lm-eval results/ --out runs/lm-eval
    """
    result = import_lm_eval(
        files, out=out_dir, model=model_name, command=["choiceaudit", *sys.argv[1:]]
    )
    print_import(result, out_dir)


@import_app.command("inspect")
@guarded
def inspect_logs(files: _FILES, out_dir: _OUT, model_name: _MODEL = None) -> None:
    """Import inspect_ai eval logs of multiple-choice tasks.

    Reads .json logs, or .eval archives the standard library can read; per-choice
    probabilities come from the answer letters' log-probabilities where the log has them.

    Example:

    \b
      choiceaudit import inspect logs/ --out runs/inspect
    """
    result = import_inspect(
        files, out=out_dir, model=model_name, command=["choiceaudit", *sys.argv[1:]]
    )
    print_import(result, out_dir)


@import_app.command("decisions")
@guarded
def decisions(
    files: Annotated[list[Path], typer.Argument(help="CSV, JSONL or Parquet files, or folders.")],
    out_dir: _OUT,
    instrument: Annotated[
        str, typer.Option("--instrument", help="meaning, scoring or signalling: what the run is.")
    ] = "meaning",
    mapping: Annotated[
        list[str] | None,
        typer.Option("--map", help="field=column (repeatable); probs=pA,pB,pC,pD for columns."),
    ] = None,
    mapping_file: Annotated[
        Path | None, typer.Option("--mapping", help="TOML or JSON mapping file (map, values).")
    ] = None,
    constants: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="field=value (repeatable): one value for every row, e.g. experiment=e7."
        ),
    ] = None,
    model_name: _MODEL = None,
    language: Annotated[
        str | None, typer.Option("--language", help="Test language where no column gives it.")
    ] = None,
    corpus_language: Annotated[
        str | None,
        typer.Option("--corpus-language", help="Language E4 and the matrix are analysed under."),
    ] = None,
    position_base: Annotated[
        int, typer.Option("--position-base", help="0 or 1: how gold/literal positions count.")
    ] = 0,
    sum_tolerance: Annotated[
        float, typer.Option("--sum-tolerance", help="Accepted |sum of probs - 1|.")
    ] = 0.02,
    items: Annotated[
        Path | None,
        typer.Option("--items", help="Signalling: the frozen item directory the rows render."),
    ] = None,
    chooser: Annotated[
        str | None,
        typer.Option("--chooser", help="Signalling: the reference chooser the rows come from."),
    ] = None,
) -> None:
    """Import per-item decision files (CSV, JSONL, Parquet).

    One row per item per condition (item id, experiment, condition or family, the probability
    vector, gold key or position, literal key, display order) as a meaning or scoring run, or
    (item id, condition, format, display order, vector or chosen option) as a signalling arm
    on --items; rows that cannot be validated are listed with their reasons.

    Example:

    \b
      choiceaudit import decisions released.csv --map probs=pA,pB,pC,pD --out runs/released
    """
    result = import_decisions(
        files,
        out=out_dir,
        instrument=instrument,
        mapping=mapping or [],
        mapping_file=mapping_file,
        constants=constants or [],
        model=model_name,
        language=language,
        corpus_language=corpus_language,
        position_base=position_base,
        sum_tolerance=sum_tolerance,
        items=items,
        chooser=chooser,
        command=["choiceaudit", *sys.argv[1:]],
    )
    print_import(result, out_dir)
