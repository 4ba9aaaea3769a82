"""``choiceaudit import lm-eval`` and ``choiceaudit import inspect``: per-item outputs of other
harnesses into a run directory (:func:`choiceaudit.audit.import_lm_eval`,
:func:`choiceaudit.audit.import_inspect`); prints what was mapped and what was not."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from choiceaudit.audit import ImportResult, import_inspect, import_lm_eval
from choiceaudit.cli import guarded, out
from choiceaudit.cli._groups import import_app

__all__ = ["print_import"]


def print_import(result: ImportResult, run: Path) -> None:
    summary = result.summary
    out.print(
        f"{run}: {result.mapped} row(s) imported from {result.source} "
        f"{result.version or '(version unknown)'} for model {result.model} "
        f"({summary.scored} new, {summary.already_done} already there, "
        f"{summary.duplicates_in_input} duplicate(s)); rows = {summary.manifest.rows}",
        highlight=False,
    )
    for reason, n in sorted(result.unmappable.items()):
        out.print(f"  not imported: {n} row(s): {reason}", highlight=False)
    if result.unmapped_fields:
        names = ", ".join(sorted(result.unmapped_fields))
        out.print(f"  fields not mapped (recorded in the manifest): {names}", highlight=False)


_FILES = Annotated[list[Path], typer.Argument(help="Files, or directories searched for them.")]
_OUT = Annotated[Path, typer.Option("--out", help="Run directory (created, or resumed as is).")]
_MODEL = Annotated[
    str | None,
    typer.Option("--model-name", help="Model label for the run (default: the harness's own)."),
]


@import_app.command("lm-eval")
@guarded
def lm_eval(files: _FILES, out_dir: _OUT, model_name: _MODEL = None) -> None:
    """Import lm-evaluation-harness --log_samples files (samples_<task>_<time>.jsonl) of
    multiple-choice tasks; the results_<time>.json beside them gives version and model."""
    result = import_lm_eval(
        files, out_dir, model=model_name, command=["choiceaudit", *sys.argv[1:]]
    )
    print_import(result, out_dir)


@import_app.command("inspect")
@guarded
def inspect_logs(files: _FILES, out_dir: _OUT, model_name: _MODEL = None) -> None:
    """Import inspect eval logs (.json, or .eval the standard library can read) of
    multiple-choice tasks; per-choice probabilities come from the answer letters'
    log-probabilities where the log has them."""
    result = import_inspect(
        files, out_dir, model=model_name, command=["choiceaudit", *sys.argv[1:]]
    )
    print_import(result, out_dir)
