"""The ``choiceaudit`` command line (typer + rich). Every command has ``--help``.

A command parses its options, calls one function of :mod:`choiceaudit.audit` (or the report
writer on what it returned) and prints. :func:`guarded` turns a
:class:`~choiceaudit.errors.ChoiceAuditError` into a one-line ``error:`` message and exit code 1;
any other exception is a bug and shows its traceback.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from choiceaudit.audit import RaySettings, repair_run, score_file
from choiceaudit.errors import ChoiceAuditError
from choiceaudit.scorers import model_status

__all__ = [
    "RayGpusOpt",
    "RayOpt",
    "RayWorkersOpt",
    "WorkersOpt",
    "app",
    "console",
    "guarded",
    "main",
    "models",
    "out",
    "parse_options",
    "progress_bar",
    "ray_settings",
    "repair",
    "score",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")

app = typer.Typer(
    name="choiceaudit",
    help="Audit models that choose among caller-supplied options.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# soft_wrap: an error message is never broken inside a path or a token, whatever the width.
console = Console(stderr=True, soft_wrap=True)
# Summaries are tables: when stdout is a file or pipe, keep them whole rather than at 80 columns.
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160)


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """``key=value`` pairs for a scorer; values are JSON literals when they parse, else strings."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{pair!r} is not key=value", param_hint="--option")
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    return options


class _RateColumn(ProgressColumn):
    """Queries per second over rich's recent window ('–' until it has two samples)."""

    def render(self, task: Any) -> Text:
        speed = task.finished_speed or task.speed
        return Text("–/s" if speed is None else f"{speed:.1f}/s", style="progress.data.speed")


def progress_bar() -> Progress:
    """One bar per model and phase: done/total, rate (queries/s) and the time remaining."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def _fail(message: str, code: int = 1) -> typer.Exit:
    console.print(f"[red]error:[/red] {message}", highlight=False, markup=True)
    return typer.Exit(code)


def guarded(command: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``command`` with choiceaudit's errors shown as one ``error:`` line (exit 1)."""

    @functools.wraps(command)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return command(*args, **kwargs)
        except ChoiceAuditError as exc:
            raise _fail(_escape(str(exc))) from None

    return wrapper


def _escape(text: str) -> str:
    # Messages quote paths and values; rich markup in them must print literally.
    from rich.markup import escape

    return escape(text)


@app.command()
@guarded
def models(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the built-in models and whether each is installed."""
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
    out.print(
        "Also: hf:<local dir | .gguf | hub id>, lm-choice:<causal LM>, sparrow:<model>, "
        "systemone:<model> and openai:<model> (with -o base_url=…)."
    )


RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        help="Score the parts on Ray actors, one model each: 'auto' (a cluster on this machine, "
        "else a local one) or a cluster ADDRESS; parts are written here (needs "
        "choiceaudit[ray]).",
    ),
]
RayWorkersOpt = Annotated[
    int | None, typer.Option(help="Ray actors (default: one per CPU of the cluster).")
]
RayGpusOpt = Annotated[
    float, typer.Option(help="GPUs Ray reserves per actor (with -o device=cuda).")
]
WorkersOpt = Annotated[
    int,
    typer.Option(
        "--workers",
        help="Processes of this machine scoring a causal LM loaded in process (hf, lm-choice), "
        "each loading it and taking its share of the cores as torch threads; 1: this process.",
    ),
]


def ray_settings(ray: str | None, workers: int | None, gpus: float) -> RaySettings | None:
    """The ``--ray`` options as :class:`~choiceaudit.audit.RaySettings` (``None``: in process)."""
    return None if ray is None else RaySettings(ray, workers, gpus)


@app.command()
@guarded
def score(
    queries: Annotated[Path, typer.Argument(help="JSONL query file (format: see README).")],
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
) -> None:
    """Score a JSONL query file into a run directory; an existing run resumes where it stopped."""
    with progress_bar() as bar:
        task = bar.add_task(f"scoring with {model}", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        result = score_file(
            queries,
            model,
            out_dir,
            scorer_options=parse_options(option or []),
            chunk_size=chunk_size,
            skip_invalid=skip_invalid,
            command=["choiceaudit", *sys.argv[1:]],
            on_progress=advance,
            ray=ray,
            ray_workers=ray_workers,
            ray_gpus_per_worker=ray_gpus_per_worker,
            workers=workers,
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


@app.command()
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
    """Move unreadable parts of a run aside (recorded in its manifest) so a resume re-scores
    their queries; remove temporaries a killed writer left; say what else blocks the run and
    how to recover it (--rebuild-manifest where the parts allow it)."""
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


def main() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Progress is shown with rich; the libraries' own tqdm bars would interleave with it.
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    app()


# Sub-commands registered by other modules (imported for their side effect on ``app``).
from choiceaudit.cli import (  # noqa: E402,F401
    _data,
    _demo,
    _gate,
    _groups,
    _human,
    _import_harness,
    _meaning,
    _report,
    _serve,
    _signalling,
)
