"""``choiceaudit models``, ``score`` and ``repair``: the built-in models, scoring a query file
into a run, and unblocking a run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from choiceaudit.audit import MAX_FLIP_RATE, repair_run, score_file
from choiceaudit.cli._app import (
    AcceptFlipsOpt,
    MaxFlipRateOpt,
    PrecisionGateOpt,
    RayGpusOpt,
    RayOpt,
    RayWorkersOpt,
    WorkersOpt,
    _escape,
    _fail,
    app,
    console,
    guarded,
    out,
    panel,
    parse_options,
    precision_settings,
    print_precision,
    progress_bar,
    ray_settings,
)
from choiceaudit.scorers import model_status, spec_forms

__all__ = ["models", "repair", "score"]


@app.command(rich_help_panel=panel("models"))
@guarded
def models(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the models: built-in, installed or not, and plug-ins.

    Each row names the model's backend, whether its packages are installed and, for a missing
    one, the pip commands that install it; the spec forms every backend answers to follow.

    Example:

    \b
      choiceaudit models
      choiceaudit models --json
    """
    rows = model_status()
    if as_json:
        out.print_json(json.dumps(rows))
        return
    table = Table(title="built-in models")
    for col in ("name", "backend", "installed", "description / install"):
        table.add_column(col)
    for row in rows:
        detail = (
            row["description"] if row["installed"] else "missing: " + " && ".join(row["missing"])
        )
        table.add_row(row["name"], row["backend"], "yes" if row["installed"] else "no", detail)
    out.print(table)
    out.print(f"Also: {', '.join(spec_forms())} (each with the options its backend requires).")


@app.command(rich_help_panel=panel("score"))
@guarded
def score(
    queries: Annotated[
        Path, typer.Argument(help="JSONL query file (format: docs/reference/query-format.md).")
    ],
    model: Annotated[str, typer.Option("--model", "-m", help="Model spec, e.g. smollm2, sparrow.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Run directory (created or resumed).")],
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            "-o",
            help="Scorer option key=value (repeatable); each backend accepts only its own, e.g. -o dtype=bfloat16 -o max_batch_rows=16 (hf), -o truncate=true (sparrow, minilm), -o base_url=… (systemone, openai). An unknown option is an error that lists the accepted ones.",
        ),
    ] = None,
    chunk_size: Annotated[
        int, typer.Option(help="Queries per Parquet part (resume granularity).")
    ] = 32,
    skip_invalid: Annotated[
        bool, typer.Option(help="Score the valid lines; record invalid ones in the manifest.")
    ] = False,
    ray: RayOpt = None,
    ray_workers: RayWorkersOpt = None,
    ray_gpus_per_worker: RayGpusOpt = 0.0,
    workers: WorkersOpt = 1,
    precision_gate: PrecisionGateOpt = True,
    max_flip_rate: MaxFlipRateOpt = MAX_FLIP_RATE,
    accept_flips: AcceptFlipsOpt = False,
) -> None:
    """Score a JSONL query file with one model.

    Each line is a query: a state, its options, and optionally an instruction, keys and meta
    (a gold option in meta makes the report show accuracy). The run directory is created, or
    resumed where it stopped: the same command again scores only what is missing.

    Example:

    \b
      choiceaudit score mc.jsonl -m smollm2 --out runs/mc
      choiceaudit report runs/mc --out report
    """
    with progress_bar() as bar:
        task = bar.add_task(f"scoring with {model}", total=None)

        def advance(_label: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        result = score_file(
            queries,
            model,
            out=out_dir,
            scorer_options=parse_options(option or []),
            chunk_size=chunk_size,
            skip_invalid=skip_invalid,
            command=["choiceaudit", *sys.argv[1:]],
            progress=advance,
            ray=ray_settings(ray, ray_workers, ray_gpus_per_worker),
            workers=workers,
            precision_gate=precision_settings(precision_gate, max_flip_rate, accept_flips),
        )
    for line, fld, msg in result.skipped_lines:
        console.print(f"[yellow]skipped[/yellow] {queries}:{line}: {fld}: {_escape(msg)}")
    summary = result.summary
    out.print(
        f"{out_dir}: {summary.scored} scored, {summary.already_done} already done, "
        f"{summary.duplicates_in_input} duplicate(s) in input, "
        f"{len(result.skipped_lines)} invalid line(s) skipped; rows = {summary.manifest.rows}",
        highlight=False,
    )
    print_precision([summary.path])


@app.command(rich_help_panel=panel("repair"))
@guarded
def repair(
    run: Annotated[Path, typer.Argument(help="Run directory whose resume is blocked.")],
    rebuild_manifest: Annotated[
        bool,
        typer.Option(
            help="Rebuild an unreadable or missing manifest.json from the parts, when they "
            "carry the scorer identity and configuration (the old file is kept in quarantine/)."
        ),
    ] = False,
) -> None:
    """Make a blocked run resumable again.

    Moves unreadable parts of a run aside (recorded in its manifest) so a resume re-scores
    their queries, removes temporaries a killed writer left, and says what else blocks the run
    and how to recover it (--rebuild-manifest where the parts allow it).

    Example:

    \b
      choiceaudit repair runs/mc
      choiceaudit repair runs/mc --rebuild-manifest
    """
    report = repair_run(run, rebuild_manifest=rebuild_manifest)
    for part, reason in report.moved:
        out.print(f"moved aside: {run / part} ({reason})", highlight=False)
    if report.manifest_rebuilt:
        out.print(
            f"rebuilt {run / 'manifest.json'} from the parts ({report.manifest_problem}); its "
            "sessions and command are lost",
            highlight=False,
        )
    out.print(
        f"{run}: {len(report.moved)} unreadable part(s) moved aside, "
        f"{report.temporaries_removed} temporary file(s) removed",
        highlight=False,
    )
    if report.blocked:
        for blocker in report.blocked:
            out.print(f"blocked: {blocker}", highlight=False)
        raise _fail(f"{run}: still blocked ({len(report.blocked)} problem(s) above)")
    out.print(f"{run}: nothing else blocks it; resume the run to re-score", highlight=False)
