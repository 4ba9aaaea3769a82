"""Scoring queries into a run directory: resume, progress, partial failures.

:func:`run_scoring` is the one scoring loop every command and the Python API use. It holds the
run's lock for the whole session, checks that a resumed run was made by the same scorer and
configuration, scores only the queries not yet stored, and commits one atomically written part
per chunk.
"""

from __future__ import annotations

import datetime as dt
import platform
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from choiceaudit.errors import ScorerError, StoreError
from choiceaudit.files import canonical_hash, canonical_json
from choiceaudit.scorers import PartialScoreError, Scorer, resume_identity
from choiceaudit.store import PartStamp, RunStore
from choiceaudit.types import Decision, Query

__all__ = ["ChunkExecutor", "ProgressCallback", "RunSummary", "run_scoring"]

#: ``on_progress(done, total)`` after each committed part (and once before the first).
ProgressCallback = Callable[[int, int], None]

#: ``executor(chunks)`` yields ``(chunk index, decisions)`` once per chunk, in any order (a
#: chunk whose scorer raised :class:`PartialScoreError` yields that error instead; any other
#: exception propagates). The default scores the chunks one after another with the scorer;
#: :mod:`._fanout` scores them on Ray actors. Only the caller of the executor writes parts.
ChunkExecutor = Callable[
    [Sequence[Sequence[Query]]], Iterator[tuple[int, "list[Decision | None] | PartialScoreError"]]
]


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
    manifest: dict[str, Any] = field(default_factory=dict)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _git_commit() -> str | None:
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


def _stamp(description: dict[str, Any], config: dict[str, Any] | None) -> PartStamp:
    return PartStamp(
        scorer_identity=canonical_json(resume_identity(description)),
        config_hash=canonical_hash(config or {}),
    )


def _check_parts(store: RunStore, stamp: PartStamp) -> None:
    """Every existing part must have been written by this scorer under this configuration,
    whether or not the manifest survived."""
    for part, found in store.part_stamps().items():
        if found is None:
            if not store.exists():
                raise StoreError(
                    f"{part}: written without a scorer stamp and the run has no manifest; "
                    "cannot tell which model made it. Use a new --out directory."
                )
            continue  # a part from before stamps: the manifest's identity check covers it
        if found.scorer_identity != stamp.scorer_identity:
            raise StoreError(
                f"{part} was written by scorer {found.scorer_identity}; this scorer is "
                f"{stamp.scorer_identity}. Resume with the same model, or use a new --out."
            )
        if found.config_hash != stamp.config_hash:
            raise StoreError(
                f"{part} was written under another configuration (hash {found.config_hash[:12]}, "
                f"now {stamp.config_hash[:12]}); use a new --out"
            )


def _session_manifest(
    store: RunStore,
    scorer: Scorer,
    description: dict[str, Any],
    *,
    command: Sequence[str] | None,
    config: dict[str, Any] | None,
) -> dict[str, Any]:
    if store.exists():
        manifest = store.read_manifest()
        # the stored description may predate a field the backend now declares: then it is
        # left out and the identities differ, rather than the check failing
        old = resume_identity(manifest.get("scorer", {}), strict=False)
        new = resume_identity(description)
        if old != new:
            raise StoreError(
                f"{store.path} was scored by {old}; this scorer is {new}. "
                "Resume with the same model, or choose a new --out directory."
            )
        if config is not None and manifest.get("config") not in (None, config):
            raise StoreError(
                f"{store.path} was made with a different configuration; use a new --out"
            )
    else:
        manifest = {
            "choiceaudit_version": _version(),
            "created": _now(),
            "git_commit": _git_commit(),
            "config": config or {},
            "sessions": [],
        }
    manifest["scorer"] = description
    manifest["python"] = sys.version.split()[0]
    manifest["platform"] = platform.platform()
    manifest["command"] = list(command) if command is not None else list(sys.argv)
    return manifest


def _close_killed_session(manifest: dict[str, Any], rows_now: int) -> None:
    """A session the manifest still shows running was killed (we hold the lock, so nobody is
    writing): record what it left, counted from the parts on disk."""
    sessions = manifest.get("sessions") or []
    if manifest.get("status") != "running" or not sessions:
        return
    last = sessions[-1]
    if "ended" in last:
        return
    start = last.get("rows_at_start")
    if start is not None:
        last["scored"] = rows_now - int(start)
    last["outcome"] = "killed"
    last["ended"] = None
    last["found_killed_by_next_session"] = _now()


def run_scoring(
    scorer: Scorer,
    queries: Sequence[Query],
    run: RunStore | Path | str,
    *,
    chunk_size: int = 32,
    command: Sequence[str] | None = None,
    config: dict[str, Any] | None = None,
    skipped: dict[str, int] | None = None,
    skipped_lines: Sequence[tuple[int, str, str]] = (),
    on_accepted: Callable[[Path], None] | None = None,
    on_progress: ProgressCallback | None = None,
    executor: ChunkExecutor | None = None,
) -> RunSummary:
    """Score the queries not yet in the run ``run``, one atomically written part per chunk.

    Nothing is written into the run directory before its lock is held and the scorer and
    configuration are accepted; ``on_accepted(run_dir)`` is then called (under the lock) for
    files that belong beside the decisions, such as the queries or a frozen item set.

    The manifest is kept current: each committed part updates the session's ``scored`` count
    and the run's ``rows`` (atomically); an exception records ``status: failed`` with the
    reason; a session found still ``running`` by the next one was killed, and is closed with
    what it left. Every part is stamped with the scorer identity and configuration hash, and a
    resume by another scorer or configuration is refused even when the manifest is gone.
    ``skipped`` records input rows the caller did not turn into queries (reason → count) and
    ``skipped_lines`` each such line as ``(line, field, reason)``. A
    :class:`~choiceaudit.scorers.PartialScoreError` keeps the decisions that came back, records
    the failure and is re-raised; a resume scores only the rest. ``executor`` scores the
    chunks elsewhere (Ray actors: :func:`choiceaudit.audit.ray_executor`); parts are still
    written here, one per chunk as it comes back, under the lock.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    store = run if isinstance(run, RunStore) else RunStore(run)
    with store.lock():
        description = scorer.describe()
        stamp = _stamp(description, config)
        manifest = _session_manifest(store, scorer, description, command=command, config=config)
        stale = store.clean_partial()
        _check_parts(store, stamp)
        done = store.done_ids()
        _close_killed_session(manifest, len(done))
        if on_accepted is not None:
            on_accepted(store.path)
        unique: dict[str, tuple[int, Query]] = {}
        duplicates = 0
        for index, query in enumerate(queries):
            if query.id in unique:
                duplicates += 1
                continue
            unique[query.id] = (index, query)
        pending = [(i, q) for qid, (i, q) in unique.items() if qid not in done]
        session: dict[str, Any] = {
            "started": _now(),
            "requested": len(queries),
            "already_done": len(unique) - len(pending),
            "duplicates_in_input": duplicates,
            "stale_partial_files_removed": stale,
            "skipped_input": dict(skipped or {}),
            "rows_at_start": len(done),
            "scored": 0,
            "truncated": 0,
        }
        if skipped_lines:
            session["skipped_input_lines"] = [
                {"line": line, "field": fld, "reason": reason}
                for line, fld, reason in skipped_lines
            ]
        manifest["sessions"].append(session)
        manifest["status"] = "running"
        manifest["rows"] = len(done)
        store.write_manifest(manifest)
        total = len(unique)
        progress = total - len(pending)
        if on_progress is not None:
            on_progress(progress, total)
        parts = 0

        def commit(rows: list[tuple[int, Query, Decision]]) -> None:
            store.write_part(rows, stamp=stamp)
            session["scored"] += len(rows)
            n_truncated = sum(1 for _, _, d in rows if d.aux.get("truncated"))
            session["truncated"] += n_truncated
            manifest["truncated_rows"] = int(manifest.get("truncated_rows", 0)) + n_truncated
            manifest["rows"] = int(manifest["rows"]) + len(rows)
            store.write_manifest(manifest)

        chunks = [pending[s : s + chunk_size] for s in range(0, len(pending), chunk_size)]
        execute = executor or _sequential(scorer)
        try:
            outcomes = execute([[q for _, q in chunk] for chunk in chunks])
            try:
                for index, outcome in outcomes:
                    chunk = chunks[index]
                    if isinstance(outcome, PartialScoreError):
                        # Keep what came back, record the failure, then stop: a resume scores the
                        # rest.
                        kept = [
                            (i, q, d)
                            for (i, q), d in zip(chunk, outcome.completed, strict=True)
                            if d is not None
                        ]
                        if kept:
                            commit(kept)
                        session["failed"] = f"{len(chunk) - len(kept)} queries failed: {outcome}"
                        session["outcome"] = "partial failure"
                        session["ended"] = _now()
                        manifest["status"] = "incomplete"
                        manifest["scorer"] = scorer.describe()
                        store.write_manifest(manifest)
                        raise outcome
                    decisions = outcome
                    if len(decisions) != len(chunk):
                        raise ScorerError(
                            f"scorer returned {len(decisions)} decisions for {len(chunk)} queries"
                        )
                    rows = [
                        (i, q, d)
                        for (i, q), d in zip(chunk, decisions, strict=True)
                        if d is not None
                    ]
                    if len(rows) != len(chunk):
                        raise ScorerError(
                            "scorer returned None for a query without raising PartialScoreError"
                        )
                    commit(rows)
                    parts += 1
                    progress += len(chunk)
                    if on_progress is not None:
                        on_progress(progress, total)
            finally:
                close = getattr(outcomes, "close", None)
                if close is not None:  # stop an executor's work still in flight
                    close()
        except PartialScoreError:
            raise
        except BaseException as exc:
            interrupted = isinstance(exc, KeyboardInterrupt | SystemExit)
            session["outcome"] = "interrupted" if interrupted else "failed"
            session["failed"] = f"{type(exc).__name__}: {exc}"
            session["ended"] = _now()
            manifest["status"] = "interrupted" if interrupted else "failed"
            manifest["failure"] = session["failed"]
            store.write_manifest(manifest)
            raise
        n_rows = len(store.done_ids())
        session["ended"] = _now()
        session["outcome"] = "complete" if n_rows >= total else "incomplete"
        manifest.pop("failure", None)
        manifest["scorer"] = scorer.describe()  # call counts, retries etc. as of the end
        manifest["status"] = "complete" if n_rows >= total else "incomplete"
        manifest["rows"] = n_rows
        manifest["parts"] = len(store.part_paths())
        manifest["updated"] = _now()
        store.write_manifest(manifest)
        return RunSummary(
            path=store.path,
            requested=len(queries),
            already_done=session["already_done"],
            scored=session["scored"],
            duplicates_in_input=duplicates,
            parts_written=parts,
            manifest=manifest,
        )
