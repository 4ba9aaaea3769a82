"""The ``choiceaudit`` command line (typer + rich). Every command has ``--help``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from choiceaudit.scorers import ScorerError, load_scorer, model_status
from choiceaudit.store import QueryFileError, RunStore, StoreError, read_queries, run_scoring

__all__ = ["app", "main", "parse_options", "progress_bar"]

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


def progress_bar() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def _fail(message: str, code: int = 1) -> typer.Exit:
    console.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(code)


@app.command()
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
        "systemone:<model> (with -o base_url=…)."
    )


@app.command()
def score(
    queries: Annotated[Path, typer.Argument(help="JSONL query file (format: see README).")],
    model: Annotated[str, typer.Option("--model", "-m", help="Model spec, e.g. smollm2, sparrow.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Run directory (created or resumed).")],
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option", "-o", help="Scorer option key=value (repeatable), e.g. batch_size=16."
        ),
    ] = None,
    chunk_size: Annotated[
        int, typer.Option(help="Queries per Parquet part (resume granularity).")
    ] = 32,
    skip_invalid: Annotated[
        bool, typer.Option(help="Score the valid lines; count invalid ones in the manifest.")
    ] = False,
) -> None:
    """Score a JSONL query file into a run directory; an existing run resumes where it stopped."""
    try:
        result = read_queries(queries, skip_invalid=skip_invalid)
    except QueryFileError as exc:
        raise _fail(str(exc)) from None
    for line, fld, msg in result.errors:
        console.print(f"[yellow]skipped[/yellow] {queries}:{line}: {fld}: {msg}", highlight=False)
    try:
        scorer = load_scorer(model, **parse_options(option or []))
    except (ScorerError, TypeError) as exc:
        raise _fail(str(exc)) from None
    store = RunStore(out_dir)
    skipped = {"invalid_input_line": len(result.errors)} if result.errors else {}
    try:
        with progress_bar() as bar:
            task = bar.add_task(f"scoring with {model}", total=None)

            def advance(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            summary = run_scoring(
                scorer,
                result.queries,
                store,
                chunk_size=chunk_size,
                command=["choiceaudit", *sys.argv[1:]],
                config={"kind": "score"},
                skipped=skipped,
                on_progress=advance,
            )
    except (StoreError, ScorerError) as exc:
        raise _fail(str(exc)) from None
    out.print(
        f"{out_dir}: {summary.scored} scored, {summary.already_done} already done, "
        f"{summary.duplicates_in_input} duplicate(s) in input, "
        f"{len(result.errors)} invalid line(s) skipped; rows = {summary.manifest['rows']}"
    )


def main() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Progress is shown with rich; the libraries' own tqdm bars would interleave with it.
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    app()


# Sub-commands registered by other modules (imported for their side effect on ``app``).
from choiceaudit.cli import _data, _demo, _groups, _meaning, _report, _signalling  # noqa: E402,F401
