"""Scoring queries into a run directory: resume, progress, partial failures.

:func:`run_scoring` is the one scoring loop every command and the Python API use. It holds the
run's lock for the whole session, checks that a resumed run was made by the same scorer and
configuration, scores only the queries not yet stored, and commits one atomically written part
per chunk. The manifest it keeps is a :class:`~choiceaudit.store.Manifest`, rewritten (atomically)
after every part; :class:`~._session.Session` holds what one session changes in it.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from choiceaudit.audit._pending import STREAM_WINDOW, QueryStream, plan
from choiceaudit.audit._session import (
    Session,
    SessionRecord,
    SkippedLine,
    now,
    skipped_line_records,
)
from choiceaudit.errors import InputError, ScorerError, StoreError
from choiceaudit.files import (
    atomic_write_bytes,
    canonical_hash,
    canonical_json,
    json_lines,
    sha256_bytes,
)
from choiceaudit.scorers import PartialScoreError, Scorer, resume_identity
from choiceaudit.store import Manifest, PartStamp, RunStore
from choiceaudit.types import Decision, Query, RunConfig

__all__ = [
    "ChunkExecutor",
    "ProgressCallback",
    "QueryStream",
    "RunSummary",
    "check_chunk_size",
    "git_commit",
    "run_scoring",
]

#: ``on_progress(done, total)`` after each committed part (and once before the first).
ProgressCallback = Callable[[int, int], None]

#: ``executor(chunks)`` yields ``(chunk index, decisions)`` once per chunk, in any order (a
#: chunk whose scorer raised :class:`PartialScoreError` yields that error instead; any other
#: exception propagates). The default scores the chunks one after another with the scorer;
#: :mod:`._fanout` scores them on Ray actors. Only the caller of the executor writes parts.
ChunkExecutor = Callable[
    [Sequence[Sequence[Query]]], Iterator[tuple[int, "list[Decision | None] | PartialScoreError"]]
]


#: One chunk's outcome as a worker elsewhere (a process, a Ray actor) sends it back:
#: ``(kind, decisions, message, query_id)``, ``kind`` one of ``ok``, ``partial``, ``error``,
#: ``distrust`` (the server was found inconsistent: nothing of the session is kept).
ChunkOutcome = tuple[str, "list[Decision | None] | None", str, "str | None"]


def chunk_outcome(scorer: Scorer, queries: Sequence[Query]) -> ChunkOutcome:
    """Score one chunk where the worker runs, a scorer failure kept as a value, so the driver
    can keep what a partial failure returned."""
    try:
        return "ok", list(scorer.score(queries)), "", None
    except PartialScoreError as exc:
        if exc.distrust is not None:  # the message is what was observed
            return "distrust", None, exc.distrust, exc.query_id
        return "partial", exc.completed, str(exc), exc.query_id
    except ScorerError as exc:
        return "error", None, str(exc), exc.query_id


def outcome_result(outcome: ChunkOutcome) -> list[Decision | None] | PartialScoreError:
    """The driver's side of :func:`chunk_outcome`: what an executor yields for the chunk (its
    decisions, or the partial failure), or the scorer's error raised here."""
    kind, decisions, message, query_id = outcome
    if kind == "error":
        raise ScorerError(message, query_id=query_id)
    if kind == "partial":
        return PartialScoreError(message, decisions or [], query_id=query_id)
    if kind == "distrust":
        return PartialScoreError(message, [], query_id=query_id, distrust=message)
    return decisions or []


def score_as_one_chunk(execute: ChunkExecutor, queries: Sequence[Query]) -> list[Decision]:
    """``Scorer.score`` of a fan-out: ``queries`` as one chunk through its executor (a partial
    failure is raised)."""
    for _, outcome in execute([list(queries)]):
        if isinstance(outcome, PartialScoreError):
            raise outcome
        return [d for d in outcome if d is not None]
    return []


def _sequential(scorer: Scorer) -> ChunkExecutor:
    def execute(
        chunks: Sequence[Sequence[Query]],
    ) -> Iterator[tuple[int, list[Decision | None] | PartialScoreError]]:
        for index, chunk in enumerate(chunks):
            try:
                yield index, list(scorer.score(chunk))
            except PartialScoreError as exc:
                yield index, exc

    return execute


@dataclass(frozen=True)
class RunSummary:
    """What one scoring session did, and the manifest it left."""

    path: Path
    requested: int
    already_done: int
    scored: int
    duplicates_in_input: int
    parts_written: int
    manifest: Manifest = field(default_factory=Manifest)


def git_commit() -> str | None:
    """The commit of the choiceaudit checkout that produced a run (None outside a checkout)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _version() -> str:
    from choiceaudit import __version__

    return __version__


def _stamp(description: Mapping[str, object], config: Mapping[str, object]) -> PartStamp:
    return PartStamp(
        scorer_identity=canonical_json(resume_identity(description)),
        config_hash=canonical_hash(config),
        config_json=canonical_json(config),
    )


def _check_parts(store: RunStore, stamp: PartStamp) -> None:
    """Every existing part must have been written by this scorer under this configuration,
    whether or not the manifest survived."""
    for part, found in store.part_writers().items():
        if found is None:
            if not store.exists():
                raise StoreError(
                    f"{part}: written without a scorer stamp and the run has no manifest; "
                    "cannot tell which model made it. Use a new --out directory."
                )
            continue  # a part from before stamps: the manifest's identity check covers it
        identity, config_hash = found
        if identity != stamp.scorer_identity:
            raise StoreError(
                f"{part} was written by scorer {identity}; this scorer is "
                f"{stamp.scorer_identity}. Resume with the same model, or use a new --out."
            )
        if config_hash != stamp.config_hash:
            raise StoreError(
                f"{part} was written under another configuration (hash {config_hash[:12]}, "
                f"now {stamp.config_hash[:12]}); use a new --out"
            )


def _session_manifest(
    store: RunStore,
    description: Mapping[str, object],
    *,
    command: Sequence[str] | None,
    config: Mapping[str, object] | None,
) -> Manifest:
    """The run's manifest as this session starts it: the stored one (after checking that this
    scorer and configuration made it) or a new one, with this session's scorer and platform."""
    if store.exists():
        manifest = store.manifest()
        # the stored description may predate a field the backend now declares: then it is
        # left out and the identities differ, rather than the check failing
        old = resume_identity(dict(manifest.scorer or {}), strict=False)
        new = resume_identity(description)
        if old != new:
            raise StoreError(
                f"{store.path} was scored by {old}; this scorer is {new}. "
                "Resume with the same model, or choose a new --out directory."
            )
        if config is not None and manifest.config not in (None, config):
            raise StoreError(
                f"{store.path} was made with a different configuration; use a new --out"
            )
    else:
        manifest = Manifest(
            choiceaudit_version=_version(),
            created=now(),
            git_commit=git_commit(),
            config=config or {},
        )
        manifest = replace(manifest, stored_keys=frozenset({"git_commit"}))
    return replace(
        manifest,
        scorer=description,
        python=sys.version.split()[0],
        platform=platform.platform(),
        command=tuple(command) if command is not None else tuple(sys.argv),
    )


def _close_killed_session(manifest: Manifest, rows_now: int) -> Manifest:
    """A session the manifest still shows running was killed (we hold the lock, so nobody is
    writing): record what it left, counted from the parts on disk."""
    sessions = manifest.sessions
    if manifest.status != "running" or not sessions or "ended" in sessions[-1]:
        return manifest
    last = dict(sessions[-1])
    start = last.get("rows_at_start")
    if start is not None:
        last["scored"] = rows_now - int(start)
    last.update(outcome="killed", ended=None, found_killed_by_next_session=now())
    return replace(manifest, sessions=(*sessions[:-1], last))


def _score_chunks(
    session: Session,
    scorer: Scorer,
    chunks: list[list[tuple[int, Query]]],
    execute: ChunkExecutor,
    advance: Callable[[int], None],
) -> None:
    """Score the chunks (in any order the executor yields them) and commit each as a part; a
    :class:`PartialScoreError` commits what came back, records the failure and re-raises."""
    outcomes = execute([[q for _, q in chunk] for chunk in chunks])
    try:
        for index, outcome in outcomes:
            chunk = chunks[index]
            if isinstance(outcome, PartialScoreError) and outcome.distrust is not None:
                # The server contradicted itself or answered the impossible: what it gave
                # earlier in this session is moved aside, and a resume scores it again.
                session.distrust(outcome.distrust, scorer=scorer.describe())
                raise outcome
            if isinstance(outcome, PartialScoreError):
                # Keep what came back, record the failure, then stop: a resume scores the rest.
                kept = [
                    (i, q, d)
                    for (i, q), d in zip(chunk, outcome.completed, strict=True)
                    if d is not None
                ]
                if kept:
                    session.commit(kept)
                failed = f"{len(chunk) - len(kept)} queries failed: {outcome}"
                session.end(
                    "partial failure", failed, status="incomplete", scorer=scorer.describe()
                )
                raise outcome
            if len(outcome) != len(chunk):
                raise ScorerError(
                    f"scorer returned {len(outcome)} decisions for {len(chunk)} queries"
                )
            rows = [(i, q, d) for (i, q), d in zip(chunk, outcome, strict=True) if d is not None]
            if len(rows) != len(chunk):
                raise ScorerError(
                    "scorer returned None for a query without raising PartialScoreError"
                )
            session.commit(rows)
            session.parts += 1
            advance(len(chunk))
    finally:
        close = getattr(outcomes, "close", None)
        if close is not None:  # stop an executor's work still in flight
            close()


#: skipped input lines the session record lists; every one is in the session's own file
SHOWN_LINES = 20


def _skipped_file(store: RunStore, session: int, lines: Sequence[SkippedLine]) -> dict[str, object]:
    """Write every skipped input line of this session once, to ``skipped-input-<session>.jsonl``
    in the run directory, and say where: the manifest, rewritten after every part, lists only
    the first :data:`SHOWN_LINES`."""
    if not lines:
        return {}
    name = f"skipped-input-{session}.jsonl"
    data = json_lines(lines)
    atomic_write_bytes(store.path / name, data)
    return {"skipped_input_file": {"file": name, "count": len(lines), "sha256": sha256_bytes(data)}}


def check_chunk_size(chunk_size: int) -> None:
    """Refuse a part size below one query (an InputError naming the option)."""
    if chunk_size < 1:
        raise InputError(
            f"must be at least 1 (queries per Parquet part), got {chunk_size}; "
            "pass --chunk-size 1 or more",
            field="chunk_size",
        )


def run_scoring(
    scorer: Scorer,
    queries: Sequence[Query] | QueryStream,
    run: RunStore | Path | str,
    *,
    chunk_size: int = 32,
    command: Sequence[str] | None = None,
    config: RunConfig | Mapping[str, object] | None = None,
    skipped: dict[str, int] | None = None,
    skipped_lines: Sequence[tuple[int, str, str]] = (),
    on_accepted: Callable[[Path], object] | None = None,
    on_progress: ProgressCallback | None = None,
    executor: ChunkExecutor | None = None,
    session_notes: Mapping[str, Any] | None = None,
    precision_gate: Mapping[str, Any] | None = None,
) -> RunSummary:
    """Score the queries not yet in the run ``run``, one atomically written part per chunk.

    Nothing is written before the run's lock is held and the scorer and configuration (an
    instrument's :class:`~choiceaudit.types.RunConfig`, stored as its JSON; a mapping as given)
    are accepted; ``on_accepted(run_dir)`` then writes (under the lock) files that belong beside
    the decisions, such as the queries or a frozen item set. The manifest is kept current after
    every part; an exception records ``status: failed`` with the reason; a session found still
    ``running`` was killed, and is closed with what it left. Every part is stamped with the
    scorer identity and configuration hash, so a resume by another scorer or configuration is
    refused even when the manifest is gone. ``skipped`` (reason → count) and ``skipped_lines``
    (``(line, field, reason)``) record input the caller did not turn into queries,
    ``session_notes`` other facts about the session (an import's source). A scorer with a
    ``prepare()`` method (the ``openai`` scorer's conformance probe) has it called first, so a
    server that would give wrong numbers is refused before anything is written. A
    :class:`~choiceaudit.scorers.PartialScoreError` keeps the decisions that came back, records
    the failure and is re-raised; a resume scores only the rest. ``executor`` scores the chunks
    elsewhere (Ray actors: :class:`choiceaudit.audit.RayFanout`); parts are still written here.
    ``queries`` may be a :class:`QueryStream`, read a chunk at a time as it is scored.
    ``precision_gate`` is what the precision gate measured before the run
    (:func:`~choiceaudit.audit.run_precision_gate`), stored in the manifest beside the
    configuration, outside its hash.
    """
    check_chunk_size(chunk_size)
    store = run if isinstance(run, RunStore) else RunStore(run)
    stored = None if config is None else _config_json(config)
    with store.lock():
        prepare = getattr(scorer, "prepare", None)
        if callable(prepare):  # a server's conformance probe, before the first row
            prepare()
        description = scorer.describe()
        manifest = _session_manifest(store, description, command=command, config=stored)
        if precision_gate is not None:
            manifest = replace(manifest, precision_gate=dict(precision_gate))
        stale = store.clean_partial()
        stamp = _stamp(description, stored or {})
        _check_parts(store, stamp)
        done = store.done_ids()
        session = Session(store, _close_killed_session(manifest, len(done)), stamp)
        if on_accepted is not None:
            on_accepted(store.path)
        total, duplicates, requested, already, windows = plan(
            queries, done, chunk_size, streamed_window=1 if executor is None else STREAM_WINDOW
        )
        skipped_records = skipped_line_records(skipped_lines)
        record = SessionRecord(
            started=now(),
            requested=requested,
            already_done=already,
            duplicates_in_input=duplicates,
            stale_partial_files_removed=stale,
            skipped_input=dict(skipped or {}),
            skipped_input_lines=skipped_records[:SHOWN_LINES],
            rows_at_start=len(done),
            notes={
                **_skipped_file(store, len(manifest.sessions), skipped_records),
                **dict(session_notes or {}),
            },
        )
        session.begin(record, len(done))
        progress = [already]

        def advance(n: int) -> None:
            progress[0] += n
            if on_progress is not None:
                on_progress(progress[0], total)

        advance(0)
        execute = executor or _sequential(scorer)
        try:
            for window in windows:
                _score_chunks(session, scorer, window, execute, advance)
        except PartialScoreError:
            raise
        except BaseException as exc:
            interrupted = isinstance(exc, KeyboardInterrupt | SystemExit)
            failed = f"{type(exc).__name__}: {exc}"
            status = "interrupted" if interrupted else "failed"
            session.end(status, failed, status=status, failure=failed)
            raise
        _finish(session, scorer, total)
        return RunSummary(
            path=store.path,
            requested=requested,
            already_done=record.already_done,
            scored=record.scored,
            duplicates_in_input=duplicates,
            parts_written=session.parts,
            manifest=session.manifest,
        )


def _finish(session: Session, scorer: Scorer, total: int) -> None:
    """Close a session that scored everything it could: complete when the run holds every
    requested row, with the scorer's counters (calls, retries) as of the end."""
    store = session.store
    n_rows = len(store.done_ids())
    complete = "complete" if n_rows >= total else "incomplete"
    session.end(
        complete,
        status=complete,
        failure=None,
        stored_keys=session.manifest.stored_keys - {"failure"},
        scorer=scorer.describe(),
        rows=n_rows,
        parts=len(store.part_paths()),
        updated=now(),
    )


def _config_json(config: RunConfig | Mapping[str, object]) -> Mapping[str, object]:
    # The store compares a resumed run's config with the stored JSON, so tuples must be lists.
    data = config.to_json() if isinstance(config, RunConfig) else dict(config)
    result: Mapping[str, object] = json.loads(json.dumps(data, default=str))
    return result
