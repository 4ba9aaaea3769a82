"""``choiceaudit score``: a JSONL query file scored by one model into one run directory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from choiceaudit.audit._backend import RaySettings, open_scorer
from choiceaudit.audit._scoring import (
    ProgressCallback,
    RunSummary,
    check_chunk_size,
    run_scoring,
)
from choiceaudit.errors import InputError, ScorerError
from choiceaudit.scorers import Scorer
from choiceaudit.store import RepairReport, RunStore, read_queries

__all__ = ["ScoreFileResult", "repair_run", "score_file"]


@dataclass(frozen=True)
class ScoreFileResult:
    """The scoring session's summary and the input lines that were skipped
    (``(line, field, message)``; empty unless ``skip_invalid``)."""

    summary: RunSummary
    skipped_lines: tuple[tuple[int, str, str], ...]


def score_file(
    queries: Path | str,
    model: str,
    out: Path | str,
    *,
    scorer_options: dict[str, Any] | None = None,
    chunk_size: int = 32,
    skip_invalid: bool = False,
    command: Sequence[str] | None = None,
    on_progress: ProgressCallback | None = None,
    ray: str | None = None,
    ray_workers: int | None = None,
    ray_gpus_per_worker: float = 0.0,
) -> ScoreFileResult:
    """Read ``queries`` (invalid lines are an :class:`~choiceaudit.errors.InputError` listing
    every one, unless ``skip_invalid``, which records them in the manifest), load ``model`` and
    score into the run directory ``out`` (created or resumed). With ``ray`` (``"auto"`` or a
    cluster address) the chunks are scored on ``ray_workers`` Ray actors, one model each
    (``ray_gpus_per_worker`` GPUs reserved for each; pass ``-o device=cuda`` to use them), and
    the parts are written here (:class:`~choiceaudit.audit.RayFanout`)."""
    check_chunk_size(chunk_size)  # refused before a model is loaded
    result = read_queries(queries, skip_invalid=skip_invalid)
    if not result.queries:  # an empty run would look like a finished one
        skipped_note = f" ({len(result.errors)} invalid line(s) skipped)" if result.errors else ""
        raise InputError(
            f"no queries to score{skipped_note}; a query file needs at least one JSON line "
            'such as {"state": "…", "options": ["…", "…"]}',
            source=str(queries),
        )
    options = dict(scorer_options or {})
    skipped = {"invalid_input_line": len(result.errors)} if result.errors else {}
    settings = None
    if ray is not None:
        settings = RaySettings(ray, ray_workers, ray_gpus_per_worker)
    with open_scorer(model, options, settings) as (scorer, executor):
        summary = _score(scorer, result, out, chunk_size, command, skipped, on_progress, executor)
    return ScoreFileResult(summary, tuple(result.errors))


def _score(
    scorer: Scorer,
    result: Any,
    out: Path | str,
    chunk_size: int,
    command: Sequence[str] | None,
    skipped: dict[str, int],
    on_progress: ProgressCallback | None,
    executor: Any,
) -> RunSummary:
    try:
        return run_scoring(
            scorer,
            result.queries,
            out,
            chunk_size=chunk_size,
            command=command,
            config={"kind": "score"},
            skipped=skipped,
            skipped_lines=result.errors,
            on_progress=on_progress,
            executor=executor,
        )
    except ScorerError as exc:
        result.locate(exc)  # name the input line the failing query came from
        raise


def repair_run(path: Path | str) -> RepairReport:
    """Move a run's unreadable parts aside (``<run>/quarantine/``), record them in the manifest
    and remove stale temporaries; the next resume re-scores the queries those parts held."""
    store = RunStore(path)
    if not store.path.is_dir():
        raise InputError(f"{store.path}: no such run directory")
    return store.repair()
