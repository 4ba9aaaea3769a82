"""The one run loop: every command that fills run directories (``run meaning``, ``run
signalling``, ``score``, ``import human``) describes each directory as a :class:`RunJob` and
hands the jobs to :func:`run_jobs`, which opens each job's scorer, scores its queries into its
run directory (:func:`~choiceaudit.audit.run_scoring`: lock, resume, stamps, ``on_accepted``),
reports progress under the job's label and closes the scorer, one job after another.

Within each part the scorer sees its queries sorted by prompt (:func:`by_prompt`), so queries
that share a prompt are scored side by side and the in-process engine computes their shared
head once; the part's contents, its stored row order and so a resume are exactly as without
the sort, and the sort is the same whether or not a prefix cache is on."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from choiceaudit.audit._backend import ProcessSettings, RaySettings, open_scorer
from choiceaudit.audit._precision_gate import (
    DEFAULT_PRECISION_GATE,
    PrecisionGate,
    run_precision_gate,
)
from choiceaudit.audit._scoring import ChunkExecutor, RunSummary, _sequential, run_scoring
from choiceaudit.scorers import PartialScoreError, Scorer
from choiceaudit.store import RunStore
from choiceaudit.types import Decision, Query, RunConfig

__all__ = [
    "JobProgress",
    "ModelOpener",
    "ReplayScorer",
    "RunJob",
    "by_prompt",
    "loaded",
    "made",
    "model_scorer",
    "run_jobs",
]

#: ``progress(label, done, total)`` after each committed part of the job labelled ``label``.
JobProgress = Callable[[str, int, int], None]
#: Opens a job's scorer: ``(scorer, executor or None)`` for the job's duration.
ScorerOpener = Callable[[], AbstractContextManager[tuple[Scorer, ChunkExecutor | None]]]


@dataclass(frozen=True)
class ModelOpener:
    """Opens the model ``spec`` with ``options`` when its job starts (on Ray actors with
    ``ray``, in worker processes with ``processes``); in a reduced precision the job first runs
    the precision gate (``precision``; ``None``: opted out, which is recorded)."""

    spec: str
    options: Mapping[str, Any]
    ray: RaySettings | None = None
    processes: ProcessSettings | None = None
    precision: PrecisionGate | None = DEFAULT_PRECISION_GATE

    def __call__(self) -> AbstractContextManager[tuple[Scorer, ChunkExecutor | None]]:
        return open_scorer(self.spec, self.options, self.ray, self.processes)

    def gate(self, queries: Sequence[Query], store: RunStore) -> dict[str, Any] | None:
        """The run's ``precision_gate`` record (see :func:`run_precision_gate`); a resumed run
        keeps the one its first session stored."""
        stored = store.manifest().precision_gate if store.exists() else None
        return run_precision_gate(self.spec, self.options, queries, self.precision, stored=stored)


def model_scorer(
    spec: str,
    options: Mapping[str, Any],
    ray: RaySettings | None,
    processes: ProcessSettings | None = None,
    *,
    precision: PrecisionGate | None = DEFAULT_PRECISION_GATE,
) -> ModelOpener:
    """Open the model ``spec`` with ``options`` when the job starts (see :class:`ModelOpener`)."""
    return ModelOpener(spec, options, ray, processes, precision)


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


def _prompt_key(query: Query) -> tuple[str, str]:
    neutral = query.prompt(neutral=True) if query.neutral_state is not None else ""
    return query.prompt(), neutral


def _order(chunk: Sequence[Query]) -> list[int]:
    keys = [_prompt_key(q) for q in chunk]
    return sorted(range(len(chunk)), key=keys.__getitem__)


def _unsort(values: list[Decision | None], order: Sequence[int]) -> list[Decision | None]:
    """Put decisions scored in ``order`` back in the chunk's order (a wrong count is left as
    it came, for the run loop to refuse)."""
    if len(values) != len(order):
        return values
    out: list[Decision | None] = [None] * len(order)
    for position, k in enumerate(order):
        out[k] = values[position]
    return out


def by_prompt(execute: ChunkExecutor) -> ChunkExecutor:
    """``execute`` with each chunk's queries sorted by prompt (then neutral prompt) and the
    decisions handed back in the chunk's own order: the sort is stable and a function of the
    chunk alone, so the stored parts do not change and a resumed run scores the same chunks."""

    def run(
        chunks: Sequence[Sequence[Query]],
    ) -> Iterator[tuple[int, list[Decision | None] | PartialScoreError]]:
        orders = [_order(chunk) for chunk in chunks]
        inner = execute([[c[k] for k in order] for c, order in zip(chunks, orders, strict=True)])
        try:
            for index, outcome in inner:
                if isinstance(outcome, PartialScoreError):
                    outcome.completed = _unsort(outcome.completed, orders[index])
                    yield index, outcome
                else:
                    yield index, _unsort(list(outcome), orders[index])
        finally:
            close = getattr(inner, "close", None)
            if close is not None:  # stop the executor's work still in flight
                close()

    return run


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

        gate = job.scorer.gate if isinstance(job.scorer, ModelOpener) else None
        precision = None if gate is None else gate(job.queries, store)
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
                executor=by_prompt(executor or _sequential(scorer)),
                session_notes=job.notes,
                precision_gate=precision,
            )
        if job.after is not None:
            job.after(store)
        yield summary
