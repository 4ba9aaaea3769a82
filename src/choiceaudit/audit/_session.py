"""One scoring session as the run's manifest records it: what was asked and found at the
start, what was scored, what was moved aside and why, and how it ended. :class:`Session` writes
the manifest after every change, so a killed process leaves the manifest of its last part.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from typing_extensions import TypedDict

from choiceaudit.store import Manifest, PartStamp, RunStore
from choiceaudit.types import Decision, Query

__all__ = ["Session", "SessionRecord", "SkippedLine", "now", "skipped_line_records"]


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class SkippedLine(TypedDict):
    """An input line the caller did not turn into a query, and why."""

    line: int
    field: str
    reason: str


@dataclass
class SessionRecord:
    """One scoring session as the manifest's ``sessions`` list records it: what was asked and
    found at the start, what was scored, how it ended, and the caller's notes (an import's
    source). :meth:`to_json` keeps the stored key order: start facts, input left out (its lines
    only when there were some), counts, notes, then the ending once there is one."""

    started: str
    requested: int
    already_done: int
    duplicates_in_input: int
    stale_partial_files_removed: int
    skipped_input: dict[str, int]
    skipped_input_lines: list[SkippedLine]
    rows_at_start: int
    notes: dict[str, object]
    scored: int = 0
    truncated: int = 0
    failed: str | None = None
    outcome: str | None = None
    ended: str | None = None
    quarantined: list[dict[str, object]] | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "started": self.started,
            "requested": self.requested,
            "already_done": self.already_done,
            "duplicates_in_input": self.duplicates_in_input,
            "stale_partial_files_removed": self.stale_partial_files_removed,
            "skipped_input": dict(self.skipped_input),
        }
        if self.skipped_input_lines:
            out["skipped_input_lines"] = [dict(line) for line in self.skipped_input_lines]
        out.update(rows_at_start=self.rows_at_start, scored=self.scored, truncated=self.truncated)
        out.update(self.notes)
        if self.failed is not None:
            out["failed"] = self.failed
        if self.quarantined is not None:
            out["quarantined"] = list(self.quarantined)
        if self.outcome is not None:
            out["outcome"] = self.outcome
            out["ended"] = self.ended
        return out


class Session:
    """One scoring session's changes to the manifest: the session record (``sessions[-1]``),
    the row counts and the status, written to the store after every change."""

    def __init__(self, store: RunStore, manifest: Manifest, stamp: PartStamp) -> None:
        self.store = store
        self.manifest = manifest
        self.stamp = stamp
        self.record: SessionRecord | None = None
        self.parts = 0
        #: the parts this session wrote, with their row counts
        self.written: list[tuple[Path, int]] = []

    def write(self, **changes: Any) -> None:
        assert self.record is not None, "a session writes only after begin()"
        sessions = (*self.manifest.sessions[: self.n_before], self.record.to_json())
        self.manifest = replace(self.manifest, sessions=sessions, **changes)
        self.store.write_manifest(self.manifest)

    def begin(self, record: SessionRecord, rows: int) -> None:
        self.n_before = len(self.manifest.sessions)
        self.record = record
        self.write(status="running", rows=rows)

    def commit(self, rows: list[tuple[int, Query, Decision]]) -> None:
        assert self.record is not None, "a session commits only after begin()"
        self.written.append((self.store.write_part(rows, stamp=self.stamp), len(rows)))
        n_truncated = sum(1 for _, _, d in rows if d.aux.get("truncated"))
        self.record.scored += len(rows)
        self.record.truncated += n_truncated
        self.write(
            truncated_rows=int(self.manifest.truncated_rows or 0) + n_truncated,
            rows=int(self.manifest.rows or 0) + len(rows),
        )

    def distrust(self, observed: str, **changes: Any) -> None:
        """End the session after a check found its server inconsistent: every part this
        session wrote moves to ``quarantine/`` (recorded with ``observed``), so its queries
        are scored again on resume, and the run is left incomplete."""
        assert self.record is not None, "a session ends only after begin()"
        moved = [(self.store.move_aside(path), n) for path, n in self.written]
        n_moved = sum(n for _, n in moved)
        self.record.quarantined = [
            {"part": str(p.relative_to(self.store.path)), "rows": n} for p, n in moved
        ]
        self.record.scored -= n_moved
        self.written = []
        self.end(
            "server inconsistent",
            f"{observed} ({n_moved} rows this session scored through it moved to quarantine/)",
            status="incomplete",
            rows=int(self.manifest.rows or 0) - n_moved,
            **changes,
        )

    def end(self, outcome: str, failed: str | None = None, **changes: Any) -> None:
        assert self.record is not None, "a session ends only after begin()"
        if failed is not None:
            self.record.failed = failed
        self.record.outcome = outcome
        self.record.ended = now()
        self.write(**changes)


def skipped_line_records(lines: Sequence[tuple[int, str, str]]) -> list[SkippedLine]:
    """The input lines the caller did not turn into queries, as the manifest records them."""
    return [{"line": line, "field": fld, "reason": reason} for line, fld, reason in lines]
