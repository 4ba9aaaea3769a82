"""``choiceaudit score``: a JSONL query file scored by one model into one run directory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from choiceaudit.audit._scoring import ProgressCallback, RunSummary, run_scoring
from choiceaudit.errors import InputError, ScorerError
from choiceaudit.scorers import load_scorer
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
) -> ScoreFileResult:
    """Read ``queries`` (invalid lines are an :class:`~choiceaudit.errors.InputError` listing
    every one, unless ``skip_invalid``, which records them in the manifest), load ``model`` and
    score into the run directory ``out`` (created or resumed)."""
    result = read_queries(queries, skip_invalid=skip_invalid)
    scorer = load_scorer(model, **(scorer_options or {}))
    skipped = {"invalid_input_line": len(result.errors)} if result.errors else {}
    try:
        summary = run_scoring(
            scorer,
            result.queries,
            out,
            chunk_size=chunk_size,
            command=command,
            config={"kind": "score"},
            skipped=skipped,
            skipped_lines=result.errors,
            on_progress=on_progress,
        )
    except ScorerError as exc:
        result.locate(exc)  # name the input line the failing query came from
        raise
    return ScoreFileResult(summary, tuple(result.errors))


def repair_run(path: Path | str) -> RepairReport:
    """Move a run's unreadable parts aside (``<run>/quarantine/``), record them in the manifest
    and remove stale temporaries; the next resume re-scores the queries those parts held."""
    store = RunStore(path)
    if not store.path.is_dir():
        raise InputError(f"{store.path}: no such run directory")
    return store.repair()
