"""The one run loop: every command that fills run directories (``run meaning``, ``run
signalling``, ``score``, ``import human``) describes each directory as a :class:`RunJob` and
hands the jobs to :func:`run_jobs`, which opens each job's scorer, scores its queries into its
run directory (:func:`~choiceaudit.audit.run_scoring`: lock, resume, stamps, ``on_accepted``),
reports progress under the job's label and closes the scorer, one job after another."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from choiceaudit.audit._backend import RaySettings, open_scorer
from choiceaudit.audit._scoring import ChunkExecutor, RunSummary, run_scoring
from choiceaudit.scorers import Scorer
from choiceaudit.store import RunStore
from choiceaudit.types import Decision, Query, RunConfig

__all__ = [
    "JobProgress",
    "ReplayScorer",
    "RunJob",
    "loaded",
    "made",
    "model_scorer",
    "run_jobs",
]

#: ``progress(label, done, total)`` after each committed part of the job labelled ``label``.
JobProgress = Callable[[str, int, int], None]
#: Opens a job's scorer: ``(scorer, executor or None)`` for the job's duration.
ScorerOpener = Callable[[], AbstractContextManager[tuple[Scorer, ChunkExecutor | None]]]


def model_scorer(spec: str, options: Mapping[str, Any], ray: RaySettings | None) -> ScorerOpener:
    """Open the model ``spec`` with ``options`` when the job starts (on Ray actors with
    ``ray``)."""
    return lambda: open_scorer(spec, options, ray)


def loaded(scorer: Scorer) -> ScorerOpener:
    """A scorer already in hand (a replay of stored decisions, a scorer a caller loaded)."""
    return lambda: contextlib.nullcontext((scorer, None))


def made(make: Callable[[], Scorer]) -> ScorerOpener:
    """A scorer made here when its job starts (a reference chooser)."""
    return lambda: contextlib.nullcontext((make(), None))


class ReplayScorer:
    """A scorer that hands back decisions already made (imported harness rows, people's
    answers), so imports are stored by the same loop as any model's run."""

    def __init__(self, decisions: Mapping[str, Decision], description: Mapping[str, Any]) -> None:
        self._decisions = decisions
        self._description = dict(description)
        self.name = str(description.get("model") or description.get("name"))

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        return [self._decisions[q.id] for q in queries]

    def describe(self) -> dict[str, Any]:
        return dict(self._description)


@dataclass(frozen=True)
class RunJob:
    """One run directory to fill: where, under which configuration, which queries, how to
    open its scorer, what to write beside the decisions once the run is accepted
    (``on_accepted(run_dir)``), input left out (``skipped``, ``skipped_lines``, as for
    :func:`~choiceaudit.audit.run_scoring`), facts about the session (``notes``) and what to
    check before scoring (``before(store)``) or record after it (``after(store)``)."""

    path: Path
    label: str
    config: RunConfig
    queries: Sequence[Query]
    scorer: ScorerOpener
    on_accepted: Callable[[Path], object] | None = None
    skipped: Mapping[str, int] = field(default_factory=dict)
    skipped_lines: Sequence[tuple[int, str, str]] = ()
    notes: Mapping[str, Any] = field(default_factory=dict)
    before: Callable[[RunStore], object] | None = None
    after: Callable[[RunStore], object] | None = None


def run_jobs(
    jobs: Sequence[RunJob],
    *,
    chunk_size: int = 32,
    command: Sequence[str] | None = None,
    progress: JobProgress | None = None,
) -> list[RunSummary]:
    """Fill every job's run directory, in order; return each session's summary."""
    return list(_run_each(jobs, chunk_size, command, progress))


def _run_each(
    jobs: Sequence[RunJob],
    chunk_size: int,
    command: Sequence[str] | None,
    progress: JobProgress | None,
) -> Iterator[RunSummary]:
    for job in jobs:
        store = RunStore(job.path)
        if job.before is not None:
            job.before(store)

        def advance(done: int, total: int, label: str = job.label) -> None:
            if progress is not None:
                progress(label, done, total)

        with job.scorer() as (scorer, executor):
            summary = run_scoring(
                scorer,
                job.queries,
                store,
                chunk_size=chunk_size,
                command=list(command) if command is not None else None,
                config=job.config,
                skipped=dict(job.skipped),
                skipped_lines=job.skipped_lines,
                on_accepted=job.on_accepted,
                on_progress=advance,
                executor=executor,
                session_notes=job.notes,
            )
        if job.after is not None:
            job.after(store)
        yield summary
