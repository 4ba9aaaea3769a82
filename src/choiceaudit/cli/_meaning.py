"""``choiceaudit meaning run``: the meaning-choice instrument (arXiv 2610.22526) on one or more
models, one resumable run directory per model, all answering byte-identical questions.

:func:`run_meaning` is the plain function behind the command (``choiceaudit demo`` reuses it):
load the corpus, build the plan once, then score it with each model into
``<out>/meaning-<model>``, with the plan's queries beside the decisions (``queries.jsonl``). The
run's ``config`` (in its manifest) holds the plan configuration, the loader report, the
per-experiment build reports and the embedder used for d-sem / d-hard, so a report can say what
was drawn and what was skipped. A second call with the same arguments resumes each run and
scores nothing already done.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from choiceaudit.cli import _fail, console, out, parse_options, progress_bar
from choiceaudit.cli._groups import run_app
from choiceaudit.instruments.meaning import (
    EXPERIMENTS,
    Corpus,
    CorpusError,
    Embedder,
    load_bagdhara,
    load_idioms_en,
    plan_meaning,
)
from choiceaudit.scorers import ScorerError, backend_of, load_scorer
from choiceaudit.store import RunStore, StoreError, run_scoring, write_queries

if TYPE_CHECKING:
    from choiceaudit.types import Query

__all__ = [
    "DEFAULT_MEANING_EXPERIMENTS",
    "QUERIES_FILE",
    "load_meaning_corpus",
    "meaning_run_dir",
    "meaning_summary",
    "print_meaning_summary",
    "resolve_embedder",
    "run_meaning",
]

#: Every experiment; e4 and the capture matrix need a two-language corpus and are skipped
#: (with the reason in the run's config) on one-language corpora such as idioms-en.
DEFAULT_MEANING_EXPERIMENTS: tuple[str, ...] = ("e1", "e2", "e3", "e4", "e6", "e7", "matrix")

#: The plan's queries, written into every run directory (so ``<out>/*`` is a list of runs).
QUERIES_FILE = "queries.jsonl"

ProgressCallback = Callable[[str, int, int], None]


def load_meaning_corpus(spec: str) -> Corpus:
    """``idioms-en`` (the englishidioms package) or ``bagdhara:<path>`` (JSONL or CSV)."""
    if spec == "idioms-en":
        return load_idioms_en()
    if spec.startswith("idioms-en:"):
        return load_idioms_en(spec.partition(":")[2])
    if spec.startswith("bagdhara:") and spec.partition(":")[2]:
        return load_bagdhara(spec.partition(":")[2])
    raise ValueError(f"unknown corpus {spec!r}; use idioms-en or bagdhara:<path to .jsonl/.csv>")


def resolve_embedder(name: str) -> tuple[Embedder | None, str]:
    """The embedder for d-sem / d-hard on untagged corpora: ``minilm``, ``none`` or ``auto``
    (minilm when its packages are installed, else none). Returns it and the name recorded."""
    if name not in ("auto", "minilm", "none"):
        raise ValueError(f"unknown embedder {name!r}; use auto, minilm or none")
    if name == "none":
        return None, "none"
    if name == "auto":
        from choiceaudit.scorers import BUILTIN_MODELS

        if BUILTIN_MODELS["minilm"].missing():
            return None, "none"
    from choiceaudit.scorers._cosine import CosineScorer

    return CosineScorer.load().embed, "minilm"


def meaning_run_dir(out_root: Path, model: str) -> Path:
    """``out_root/meaning-<model>`` with characters unsafe in a directory name replaced."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-") or "model"
    return out_root / f"meaning-{slug}"


def _json_ready(value: dict[str, Any]) -> dict[str, Any]:
    # The store compares a resumed run's config with the stored JSON, so tuples must be lists.
    result: dict[str, Any] = json.loads(json.dumps(value, default=str))
    return result


def queries_for(model: str, queries: Sequence[Query]) -> list[Query]:
    """The plan's queries as ``model`` reads them.

    Decision models (and ``lm-choice``) get the keyed A–D menu. A causal LM scored by option
    log-probability (``hf``: ``smollm2``, ``gemma3-270m``, ``hf:…``) has no menu to read, so each
    gloss is scored independently as the continuation after the idiom (``answer_format="text"``);
    the permutation and meta are unchanged, so the rows pair with the other arms by item.
    """
    if backend_of(model) != "hf":
        return list(queries)
    return [dataclasses.replace(q, answer_format="text", id="") for q in queries]


def run_meaning(
    models: Sequence[str],
    out_root: Path,
    *,
    corpus: str | Corpus = "idioms-en",
    experiments: Sequence[str] = DEFAULT_MEANING_EXPERIMENTS,
    n_items: int | None = 100,
    n_order_items: int = 20,
    embedder: str = "auto",
    scorer_options: dict[str, dict[str, Any]] | None = None,
    chunk_size: int = 32,
    progress: ProgressCallback | None = None,
    command: Sequence[str] | None = None,
) -> list[Path]:
    """Score the meaning plan with every model; return the run directories, in model order.

    ``corpus`` is a spec for :func:`load_meaning_corpus` or a loaded :class:`Corpus`;
    ``scorer_options`` maps a model spec to its scorer's keyword options;
    ``progress(model, done, total)`` is called after each written part."""
    if not models:
        raise ValueError("run_meaning needs at least one model")
    loaded = load_meaning_corpus(corpus) if isinstance(corpus, str) else corpus
    embed, embedder_name = resolve_embedder(embedder)
    plan = plan_meaning(
        loaded,
        experiments=experiments,
        n_items=n_items,
        n_order_items=n_order_items,
        embed=embed,
    )
    queries: list[Query] = plan.queries()
    if not queries:
        raise ValueError(f"the plan over corpus {loaded.name} has no queries")
    config = _json_ready(
        {
            "instrument": "meaning",
            **plan.config,
            "corpus_spec": corpus if isinstance(corpus, str) else loaded.name,
            "embedder": embedder_name,
            "n_queries": len(queries),
            "build_reports": plan.reports(),
        }
    )
    paths: list[Path] = []
    for model in models:
        scorer = load_scorer(model, **(scorer_options or {}).get(model, {}))
        run_dir = meaning_run_dir(out_root, model)
        run_dir.mkdir(parents=True, exist_ok=True)
        model_queries = queries_for(model, queries)
        write_queries(run_dir / QUERIES_FILE, model_queries)

        def report(done: int, total: int, model: str = model) -> None:
            if progress is not None:
                progress(model, done, total)

        run_scoring(
            scorer,
            model_queries,
            RunStore(run_dir),
            chunk_size=chunk_size,
            command=list(command) if command is not None else None,
            config=config,
            on_progress=report,
        )
        paths.append(run_dir)
    return paths


def meaning_summary(run_dirs: Sequence[Path]) -> list[dict[str, Any]]:
    """Per run: model, accuracy per ladder family and LAR on d-lit (plain means, no intervals;
    the report has the intervals). Families a run lacks are NaN."""
    from choiceaudit.report import load_run
    from choiceaudit.report._meaning_rows import meaning_rows

    records = []
    for path in run_dirs:
        run = load_run(path)
        rows = meaning_rows(run)
        ladder = rows.where(experiment="e1")
        record: dict[str, Any] = {"model": run.label, "rows": len(rows)}
        for family in dict.fromkeys(ladder.family.tolist()):
            record[family] = float(ladder.where(family=family).correct.mean())
        d_lit = ladder.where(family="d-lit")
        record["LAR d-lit"] = float(d_lit.captured.mean()) if len(d_lit) else math.nan
        records.append(record)
    return records


def print_meaning_summary(records: Sequence[dict[str, Any]]) -> None:
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
        table.add_row(*cells)
    out.print(table)


def _split_csv(values: list[str]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


@run_app.command("meaning")
def run_command(
    model: Annotated[
        list[str],
        typer.Option(
            "--model", "-m", help="Model spec (repeatable), e.g. sparrow, lm-choice:smollm2."
        ),
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Root directory: one run directory per model.")
    ] = Path("runs/meaning"),
    corpus: Annotated[
        str,
        typer.Option(
            help="idioms-en (offline default), or bagdhara with --data (or bagdhara:<path>)."
        ),
    ] = "idioms-en",
    data: Annotated[
        Path | None, typer.Option(help="The corpus file for --corpus bagdhara (JSONL or CSV).")
    ] = None,
    experiments: Annotated[
        str,
        typer.Option(
            help=f"Comma-separated experiments from {','.join(EXPERIMENTS)} "
            "(e4 and matrix need a two-language corpus)."
        ),
    ] = ",".join(DEFAULT_MEANING_EXPERIMENTS),
    n_items: Annotated[
        int, typer.Option(help="Items sampled from the corpus (0 = every usable item).")
    ] = 100,
    n_order_items: Annotated[
        int, typer.Option(help="Items of the 24-ordering audit (E7), the first of the sample.")
    ] = 20,
    embedder: Annotated[
        str, typer.Option(help="Embedder for d-sem/d-hard on untagged corpora: auto, minilm, none.")
    ] = "auto",
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option", "-o", help="Scorer option key=value for every model (repeatable)."
        ),
    ] = None,
    chunk_size: Annotated[int, typer.Option(help="Queries per Parquet part (resume unit).")] = 32,
) -> None:
    """Score the meaning plan with each model (resumable), then print a short summary."""
    models = _split_csv(model)
    options = parse_options(option or [])
    if corpus == "bagdhara":
        if data is None:
            raise _fail("--corpus bagdhara needs --data FILE (the corpus as JSONL or CSV)")
        corpus = f"bagdhara:{data}"
    elif data is not None:
        raise _fail(f"--data is only for --corpus bagdhara (got --corpus {corpus})")
    try:
        with progress_bar() as bar:
            tasks: dict[str, Any] = {}

            def advance(name: str, done: int, total: int) -> None:
                if name not in tasks:
                    tasks[name] = bar.add_task(f"meaning · {name}", total=total)
                bar.update(tasks[name], completed=done, total=total)

            paths = run_meaning(
                models,
                out_dir,
                corpus=corpus,
                experiments=_split_csv([experiments]),
                n_items=n_items or None,
                n_order_items=n_order_items,
                embedder=embedder,
                scorer_options={m: options for m in models},
                chunk_size=chunk_size,
                progress=advance,
                command=["choiceaudit", *sys.argv[1:]],
            )
    except (CorpusError, ScorerError, StoreError, ValueError, TypeError) as exc:
        raise _fail(str(exc)) from None
    print_meaning_summary(meaning_summary(paths))
    for path in paths:
        out.print(f"run: {path}")
    console.print(f"report: choiceaudit report {' '.join(str(p) for p in paths)} --out REPORT_DIR")
