"""Run directories: ``manifest.json`` plus ``decisions/part-*.parquet``, written atomically.

A part is written to a temporary file in the same directory and renamed into place, so at any
instant a part either exists whole or not at all. Resume reads the query ids in the finished
parts and scores only the rest; a finished run re-run scores nothing. A lock file keeps two
processes from scoring into one run at once.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from choiceaudit.errors import StoreError
from choiceaudit.scorers._protocol import PartialScoreError, Scorer, ScorerError
from choiceaudit.store._rows import rows_to_table
from choiceaudit.types import Decision, Query

__all__ = ["IDENTITY_FIELDS", "RunStore", "RunSummary", "StoreError", "run_scoring"]

#: Fields of a scorer description that must match for a run to be resumed by a scorer.
IDENTITY_FIELDS = ("backend", "model", "model_id", "weights_sha256", "revision", "dtype", "name")

MANIFEST = "manifest.json"
PARTS = "decisions"


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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file, fsync and rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _identity(description: dict[str, Any]) -> dict[str, Any]:
    return {k: description.get(k) for k in IDENTITY_FIELDS if k in description}


@dataclass
class RunSummary:
    """What one scoring session did."""

    requested: int
    already_done: int
    scored: int
    duplicates_in_input: int
    parts_written: int
    manifest: dict[str, Any] = field(default_factory=dict)


class RunStore:
    """A run directory. Open with :meth:`open`; read rows with :meth:`read`."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.parts_dir = self.path / PARTS

    # -- manifest -------------------------------------------------------------------------
    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    def exists(self) -> bool:
        return self.manifest_path.exists()

    def manifest(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StoreError(f"{self.path} is not a run directory (no {MANIFEST})") from None
        except json.JSONDecodeError as exc:
            raise StoreError(f"{self.manifest_path}: invalid JSON ({exc})") from None
        return data

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        blob = json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False, default=str)
        atomic_write_bytes(self.manifest_path, blob.encode("utf-8") + b"\n")

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive lock on the run; a second process fails at once rather than interleaving."""
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / ".lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreError(f"{self.path} is being written by another process") from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- parts ----------------------------------------------------------------------------
    def part_paths(self) -> list[Path]:
        if not self.parts_dir.exists():
            return []
        return sorted(self.parts_dir.glob("part-*.parquet"))

    def _clean_partial(self) -> int:
        """Remove temporary files a killed writer left behind; they never count as rows."""
        removed = 0
        if self.parts_dir.exists():
            for tmp in self.parts_dir.glob(".part-*.tmp"):
                tmp.unlink()
                removed += 1
        return removed

    def done_ids(self) -> set[str]:
        done: set[str] = set()
        for part in self.part_paths():
            try:
                ids = pq.read_table(part, columns=["query_id"]).column("query_id").to_pylist()
            except (pa.ArrowInvalid, OSError) as exc:
                raise StoreError(f"{part}: unreadable Parquet part ({exc})") from None
            done.update(ids)
        return done

    def write_part(self, table: pa.Table) -> Path:
        self.parts_dir.mkdir(parents=True, exist_ok=True)
        existing = self.part_paths()
        index = int(existing[-1].stem.split("-")[1]) + 1 if existing else 0
        target = self.parts_dir / f"part-{index:05d}.parquet"
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        atomic_write_bytes(target, sink.getvalue().to_pybytes())
        return target

    def read(self) -> pa.Table:
        """All rows of the run, in input order, one per query (duplicates are an error)."""
        parts = self.part_paths()
        if not parts:
            raise StoreError(f"{self.path} has no decisions yet")
        table = pa.concat_tables([pq.read_table(p) for p in parts], promote_options="default")
        ids = table.column("query_id").to_pylist()
        if len(set(ids)) != len(ids):
            raise StoreError(f"{self.path}: a query id occurs in more than one row")
        return table.sort_by("row")


def _session_manifest(
    store: RunStore,
    scorer: Scorer,
    *,
    command: Sequence[str] | None,
    config: dict[str, Any] | None,
) -> dict[str, Any]:
    description = scorer.describe()
    if store.exists():
        manifest = store.manifest()
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


def _version() -> str:
    from choiceaudit import __version__

    return __version__


def run_scoring(
    scorer: Scorer,
    queries: Sequence[Query],
    store: RunStore,
    *,
    chunk_size: int = 32,
    command: Sequence[str] | None = None,
    config: dict[str, Any] | None = None,
    skipped: dict[str, int] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> RunSummary:
    """Score the queries not yet in ``store``, one atomically written part per chunk.

    ``on_progress(done, total)`` is called after each part. ``skipped`` records input rows the
    caller did not turn into queries (reason → count); it goes into the manifest.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    with store.lock():
        manifest = _session_manifest(store, scorer, command=command, config=config)
        stale = store._clean_partial()
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
                    store.write_part(rows_to_table(kept))
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
            store.write_part(rows_to_table(rows))
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
            requested=len(queries),
            already_done=session["already_done"],
            scored=session["scored"],
            duplicates_in_input=duplicates,
            parts_written=parts,
            manifest=manifest,
        )
