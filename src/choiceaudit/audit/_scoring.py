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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from choiceaudit.errors import ScorerError, StoreError
from choiceaudit.scorers import PartialScoreError, Scorer
from choiceaudit.store import IDENTITY_FIELDS, RunStore
from choiceaudit.types import Decision, Query

__all__ = ["ProgressCallback", "RunSummary", "run_scoring"]

#: ``on_progress(done, total)`` after each committed part (and once before the first).
ProgressCallback = Callable[[int, int], None]


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


def _identity(description: dict[str, Any]) -> dict[str, Any]:
    return {k: description.get(k) for k in IDENTITY_FIELDS if k in description}


def _session_manifest(
    store: RunStore,
    scorer: Scorer,
    *,
    command: Sequence[str] | None,
    config: dict[str, Any] | None,
) -> dict[str, Any]:
    description = scorer.describe()
    if store.exists():
        manifest = store.read_manifest()
        old = _identity(manifest.get("scorer", {}))
        new = _identity(description)
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


def run_scoring(
    scorer: Scorer,
    queries: Sequence[Query],
    run: RunStore | Path | str,
    *,
    chunk_size: int = 32,
    command: Sequence[str] | None = None,
    config: dict[str, Any] | None = None,
    skipped: dict[str, int] | None = None,
    on_progress: ProgressCallback | None = None,
) -> RunSummary:
    """Score the queries not yet in the run ``run``, one atomically written part per chunk.

    ``on_progress(done, total)`` is called after each part. ``skipped`` records input rows the
    caller did not turn into queries (reason → count); it goes into the manifest. A
    :class:`~choiceaudit.scorers.PartialScoreError` keeps the decisions that came back, records
    the failure and is re-raised; a resume scores only the rest.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    store = run if isinstance(run, RunStore) else RunStore(run)
    with store.lock():
        manifest = _session_manifest(store, scorer, command=command, config=config)
        stale = store.clean_partial()
        done = store.done_ids()
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
            "scored": 0,
        }
        manifest["sessions"].append(session)
        manifest["status"] = "running"
        store.write_manifest(manifest)
        total = len(unique)
        progress = total - len(pending)
        if on_progress is not None:
            on_progress(progress, total)
        parts = 0
        for start in range(0, len(pending), chunk_size):
            chunk = pending[start : start + chunk_size]
            try:
                decisions: list[Decision | None] = list(scorer.score([q for _, q in chunk]))
            except PartialScoreError as exc:
                # Keep what came back, record the failure, then stop: a resume scores the rest.
                kept = [
                    (i, q, d)
                    for (i, q), d in zip(chunk, exc.completed, strict=True)
                    if d is not None
                ]
                if kept:
                    store.write_part(kept)
                session["scored"] += len(kept)
                session["failed"] = f"{len(chunk) - len(kept)} queries failed: {exc}"
                session["ended"] = _now()
                manifest["status"] = "incomplete"
                manifest["rows"] = len(store.done_ids())
                manifest["scorer"] = scorer.describe()
                store.write_manifest(manifest)
                raise
            if len(decisions) != len(chunk):
                raise ScorerError(
                    f"scorer returned {len(decisions)} decisions for {len(chunk)} queries"
                )
            rows = [(i, q, d) for (i, q), d in zip(chunk, decisions, strict=True) if d is not None]
            if len(rows) != len(chunk):
                raise ScorerError(
                    "scorer returned None for a query without raising PartialScoreError"
                )
            store.write_part(rows)
            parts += 1
            progress += len(chunk)
            session["scored"] += len(chunk)
            if on_progress is not None:
                on_progress(progress, total)
        n_rows = len(store.done_ids())
        session["ended"] = _now()
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
