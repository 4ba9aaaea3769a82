"""``choiceaudit run meaning``: parse options, call :func:`choiceaudit.audit.run_meaning`, print
the summary."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from typing_extensions import TypedDict

from choiceaudit.audit import (
    DEFAULT_MEANING_EXPERIMENTS,
    MAX_FLIP_RATE,
    MeaningDryRun,
    analyse_runs,
    dry_run_meaning,
    run_meaning,
)
from choiceaudit.cli._app import (
    AcceptFlipsOpt,
    MaxFlipRateOpt,
    PrecisionGateOpt,
    RayGpusOpt,
    RayOpt,
    RayWorkersOpt,
    WorkersOpt,
    _fail,
    console,
    guarded,
    labelled_progress,
    out,
    parse_options,
    precision_settings,
    print_precision,
    progress_bar,
    ray_settings,
)
from choiceaudit.cli._groups import run_app
from choiceaudit.instruments.meaning import EXPERIMENTS, MeaningAnalysis

__all__ = ["SummaryRecord", "meaning_summary", "print_dry_run", "print_meaning_summary"]

#: One printed summary line: model, rows, accuracy per ladder family, LAR (plain numbers).
SummaryRecord = dict[str, str | int | float]


def meaning_summary(run_dirs: Sequence[Path]) -> list[SummaryRecord]:
    """Per run with rows: model, rows, accuracy per ladder family and LAR on d-lit (plain
    estimates, no intervals; the report has the intervals), from
    :meth:`~choiceaudit.instruments.meaning.MeaningAnalysis.summary`. Families a run lacks are
    left out of its record (the printed table shows them as –); LAR without d-lit is NaN."""
    return [
        record
        for result in analyse_runs(run_dirs)
        if isinstance(result, MeaningAnalysis)
        for record in result.summary()
    ]


def print_meaning_summary(records: Sequence[SummaryRecord]) -> None:
    """The summary as a rich table on stdout (accuracy per family, then LAR)."""
    columns: list[str] = []
    for record in records:
        columns.extend(c for c in record if c not in columns)
    table = Table(title="meaning: accuracy by distractor family (chance 0.250) and LAR")
    for column in columns:
        table.add_column(column, justify="left" if column == "model" else "right", overflow="fold")
    for record in records:
        cells = []
        for column in columns:
            value = record.get(column)
            cells.append(
                "–"
                if value is None or (isinstance(value, float) and math.isnan(value))
                else f"{value:.3f}"
                if isinstance(value, float)
                else str(value)
            )
        table.add_row(*(escape(c) for c in cells))  # "[en]" is a label, not rich markup
    out.print(table)


def print_dry_run(plan: MeaningDryRun) -> None:
    """Every block with its items, rows and calls, then the totals (the matrix apart)."""
    table = Table(
        title=f"meaning dry run: design {plan.design or '(none)'}, corpus {plan.corpus}, "
        f"E7 keys {','.join(plan.e7_keys)}, {len(plan.models)} model(s)"
    )
    for column in ("block", "experiment", "language", "items", "rows", "calls"):
        table.add_column(column, justify="left" if column in ("block", "experiment") else "right")
    for b in plan.blocks:
        table.add_row(
            b.block, b.experiment, b.language, f"{b.n_items:,}", f"{b.n_rows:,}", f"{b.n_calls:,}"
        )
    out.print(table)
    n = len(plan.models)
    out.print(
        f"total: {plan.main_rows:,} rows without the capture matrix + {plan.matrix_rows:,} "
        f"capture-matrix rows = {plan.total_rows:,} rows; {plan.total_calls:,} calls over "
        f"{n} model(s). Nothing was scored or written.",
        highlight=False,
    )


class _PlanOptions(TypedDict):
    """What ``run_meaning`` and ``dry_run_meaning`` both take from the options."""

    corpus: str
    experiments: list[str]
    n_items: int | None
    n_order_items: int
    design: str | None
    languages: list[str] | None
    matrix_items: int | None
    e7_keys: list[str]
    embedder: str
    split_seed: int | None


def _split_csv(values: list[str]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


_DEFAULT_EXPERIMENTS = ",".join(DEFAULT_MEANING_EXPERIMENTS)
MeaningModelOpt = Annotated[
    list[str],
    typer.Option("--model", "-m", help="Model spec (repeatable), e.g. sparrow, lm-choice:smollm2."),
]

CorpusOpt = Annotated[
    str,
    typer.Option(help="idioms-en (offline default), or bagdhara with --data (or bagdhara:<path>)."),
]

ExperimentsOpt = Annotated[
    str,
    typer.Option(
        help=f"Comma-separated experiments from {','.join(EXPERIMENTS)} "
        "(e4 and matrix need a two-language corpus)."
    ),
]

MeaningNItemsOpt = Annotated[
    int | None,
    typer.Option(
        help="Items sampled from the corpus (0 = every usable item; default 100, or with "
        "--design the design's full item sets)."
    ),
]

DesignOpt = Annotated[
    str | None,
    typer.Option(
        help="Build one arm of the paper exactly: laya (Bengali, full set), lod (the 10% "
        "subset), jev (the commercial arm's English blocks and Bengali control)."
    ),
]

LanguagesOpt = Annotated[
    str | None,
    typer.Option(
        help="Comma-separated test languages of the plan (default: the corpus's), e.g. bn,en."
    ),
]

E7KeysOpt = Annotated[
    str,
    typer.Option(
        help="E7 key bindings: slot (the paper's, default), travelling (keys move with "
        "options), or slot,travelling for both."
    ),
]

MeaningOptionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        help="For every model: Scorer option key=value (repeatable); each backend accepts only its own, e.g. -o dtype=bfloat16 -o max_batch_rows=16 (hf), -o truncate=true (sparrow, minilm), -o base_url=… (systemone). An unknown option is an error that lists the accepted ones.",
    ),
]

SplitSeedOpt = Annotated[
    int | None,
    typer.Option(help="Split seed recorded in the run config (default the paper's 20261001)."),
]

DryRunOpt = Annotated[
    bool,
    typer.Option("--dry-run", help="Print every block's items, rows and calls, and write nothing."),
]


@run_app.command("meaning")
@guarded
def run_command(
    model: MeaningModelOpt,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Root directory: one run directory per model.")
    ] = Path("runs/meaning"),
    corpus: CorpusOpt = "idioms-en",
    data: Annotated[
        Path | None, typer.Option(help="The corpus file for --corpus bagdhara (JSONL or CSV).")
    ] = None,
    experiments: ExperimentsOpt = _DEFAULT_EXPERIMENTS,
    n_items: MeaningNItemsOpt = None,
    n_order_items: Annotated[
        int,
        typer.Option(help="Items of the 24-ordering audit (E7), drawn at random from the sample."),
    ] = 20,
    design: DesignOpt = None,
    languages: LanguagesOpt = None,
    n_matrix_items: Annotated[
        int, typer.Option(help="Items of the capture matrix (0 = its whole pool).")
    ] = 0,
    e7_keys: E7KeysOpt = "slot",
    embedder: Annotated[
        str, typer.Option(help="Embedder for d-sem/d-hard on untagged corpora: auto, minilm, none.")
    ] = "auto",
    option: MeaningOptionOpt = None,
    chunk_size: Annotated[int, typer.Option(help="Queries per Parquet part (resume unit).")] = 32,
    ray: RayOpt = None,
    ray_workers: RayWorkersOpt = None,
    ray_gpus_per_worker: RayGpusOpt = 0.0,
    workers: WorkersOpt = 1,
    precision_gate: PrecisionGateOpt = True,
    max_flip_rate: MaxFlipRateOpt = MAX_FLIP_RATE,
    accept_flips: AcceptFlipsOpt = False,
    split_seed: SplitSeedOpt = None,
    dry_run: DryRunOpt = False,
) -> None:
    """Run the meaning instrument on one or more models.

    Scores the meaning plan with each model (resumable), then prints a short summary;
    --dry-run counts the plan's items, rows and calls without scoring.

    Example:

    \b
      choiceaudit run meaning -m sparrow -m lm-choice:smollm2 --out runs/meaning
      choiceaudit run meaning -m smollm2 --dry-run
    """
    models = _split_csv(model)
    options = parse_options(option or [])
    if corpus == "bagdhara":
        if data is None:
            raise _fail("--corpus bagdhara needs --data FILE (the corpus as JSONL or CSV)")
        corpus = f"bagdhara:{data}"
    elif data is not None:
        raise _fail(f"--data is only for --corpus bagdhara (got --corpus {corpus})")
    plan_options: _PlanOptions = {
        "corpus": corpus,
        "experiments": _split_csv([experiments]),
        "n_items": n_items,  # None: the library's default (default_n_items), 0: every item
        "n_order_items": n_order_items,
        "design": design,
        "languages": _split_csv([languages]) if languages else None,
        "matrix_items": n_matrix_items or None,
        "e7_keys": _split_csv([e7_keys]),
        "embedder": embedder,
        "split_seed": split_seed,
    }
    if dry_run:
        print_dry_run(dry_run_meaning(models, **plan_options))
        return
    with progress_bar() as bar:
        advance = labelled_progress(bar, "meaning")
        paths = run_meaning(
            models,
            out=out_dir,
            **plan_options,
            scorer_options={m: options for m in models},
            chunk_size=chunk_size,
            ray=ray_settings(ray, ray_workers, ray_gpus_per_worker),
            workers=workers,
            precision_gate=precision_settings(precision_gate, max_flip_rate, accept_flips),
            progress=advance,
            command=["choiceaudit", *sys.argv[1:]],
        )
    print_meaning_summary(meaning_summary(paths))
    print_precision(paths)
    for path in paths:
        out.print(f"run: {path}")
    console.print(f"report: choiceaudit report {' '.join(str(p) for p in paths)} --out REPORT_DIR")
