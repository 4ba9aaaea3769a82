"""The responses database: SQLite through the standard library, one file per study.

Durability: WAL journal with ``synchronous=FULL``, every write one ``BEGIN IMMEDIATE``
transaction committed before the server answers, so a response the participant saw
acknowledged (the redirect to the next page) survives a SIGKILL of the server. A response is
keyed by (participant, position) — the primary key refuses a second answer to the same trial —
and an answer is accepted only for the participant's current trial, so a double submission,
a back-button resubmission or a forged position changes nothing.

Nothing about a person is stored beyond the panel id: the participant's consent time, the
trials assigned, and per response the chosen display slot, the response time (client-measured
and server-measured) and the time it was recorded.

Withdrawal (``withdraw``) deletes the participant's row, trials and responses and keeps, in the
``withdrawn`` table, only a keyed digest of the panel id (``_security.withdrawal_digest``) and
the time, so the same id is refused at enrolment (``WithdrawnError``) instead of being enrolled
afresh; ``erase=True`` keeps no digest either. Every connection runs with ``secure_delete`` and a
withdrawal ends by checkpointing and truncating the write-ahead log, so the deleted rows (the raw
panel id among them) are overwritten in the file, not merely unlinked.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typing_extensions import TypedDict

from choiceaudit.human._assign import Trial
from choiceaudit.human._db_open import corrupt_db, open_read_only
from choiceaudit.human._security import withdrawal_digest

__all__ = [
    "DB_FILE",
    "Participant",
    "ResponsesDB",
    "TrialExport",
    "Withdrawal",
    "WithdrawnError",
    "corrupt_db",
]

DB_FILE = "responses.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS participants (
    id INTEGER PRIMARY KEY,
    k INTEGER NOT NULL UNIQUE,
    panel_id TEXT NOT NULL UNIQUE,
    token TEXT NOT NULL UNIQUE,
    consented_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    n_trials INTEGER NOT NULL,
    resume_digest TEXT
);
CREATE TABLE IF NOT EXISTS trials (
    participant INTEGER NOT NULL REFERENCES participants(id),
    position INTEGER NOT NULL,
    block TEXT NOT NULL,
    item_id TEXT,
    query_id TEXT,
    perm_index INTEGER,
    check_option INTEGER,
    shown_at REAL,
    PRIMARY KEY (participant, position)
);
CREATE TABLE IF NOT EXISTS responses (
    participant INTEGER NOT NULL,
    position INTEGER NOT NULL,
    slot INTEGER NOT NULL,
    rt_ms INTEGER,
    server_rt_ms INTEGER,
    answered_at TEXT NOT NULL,
    PRIMARY KEY (participant, position),
    FOREIGN KEY (participant, position) REFERENCES trials(participant, position)
);
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS withdrawn (
    digest TEXT PRIMARY KEY,
    withdrawn_at TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class Participant:
    id: int
    k: int
    panel_id: str
    token: str
    started: bool
    finished: bool
    n_trials: int
    #: the keyed digest of the participant's resume code (``_security.resume_digest``); None
    #: for a participant enrolled by a version without resume codes
    resume_digest: str | None = None


class WithdrawnError(Exception):
    """Enrolment refused: the panel id's digest is in ``withdrawn`` (nothing was written)."""


@dataclass(frozen=True)
class Withdrawal:
    """What ``ResponsesDB.withdraw`` did. ``found``: a participant had this panel id (their row,
    trials and ``responses`` responses were deleted). ``erased``: an erasure request, so no
    digest is kept. ``blocked``: the id's digest is in ``withdrawn`` afterwards, so it cannot
    enrol; ``was_blocked``: it already was before. ``scrubbed``: the write-ahead log was
    checkpointed and truncated, so no earlier copy of a deleted row is left in the files (False
    only when another connection kept it busy for 30 s; the next checkpoint then does it)."""

    found: bool
    responses: int
    erased: bool
    was_blocked: bool
    scrubbed: bool

    @property
    def blocked(self) -> bool:
        return not self.erased


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _blocked(con: sqlite3.Connection, digest: str) -> bool:
    """Whether ``digest`` (a withdrawn panel id's) is in ``withdrawn``."""
    return con.execute("SELECT 1 FROM withdrawn WHERE digest = ?", (digest,)).fetchone() is not None


class TrialExport(TypedDict):
    """One trial of one participant with its response joined on, as the export gives it (the
    database's columns, typed by its schema; the response fields are null for a trial not
    answered)."""

    k: int
    panel_id: str
    finished: bool
    position: int
    block: str
    item_id: str | None
    query_id: str | None
    perm_index: int | None
    check_option: int | None
    slot: int | None
    rt_ms: int | None
    server_rt_ms: int | None
    answered_at: str | None


class ResponsesDB:
    """The study's SQLite file; thread-safe (one connection, one lock, short transactions).

    ``secret`` is the study key (the ``secret`` file): ``enrol`` and ``withdraw`` need it to
    compute the withdrawal digest and raise ValueError without it; reading needs none."""

    def __init__(
        self, path: Path | str, *, secret: bytes | None = None, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self._secret = secret
        self._lock = threading.Lock()
        if read_only:
            self._con = open_read_only(self.path)
            return
        if not self.path.exists():
            # panel ids live here: readable by the study's owner alone (SQLite gives the
            # write-ahead log and shared-memory files the database file's permissions)
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        try:
            self._con = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30
            )
            self._con.row_factory = sqlite3.Row
            self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute("PRAGMA synchronous=FULL")
            self._con.execute("PRAGMA foreign_keys=ON")
            self._con.execute("PRAGMA secure_delete=ON")
            self._con.executescript(_SCHEMA)
            self._add_resume_column()
            self._con.execute("PRAGMA quick_check(1)").fetchone()
        except sqlite3.DatabaseError as exc:
            raise corrupt_db(self.path, exc) from None

    def _add_resume_column(self) -> None:
        # a study begun before resume codes has no such column; its participants resume in
        # their own browser only (their digest stays NULL)
        columns = {r["name"] for r in self._con.execute("PRAGMA table_info(participants)")}
        if "resume_digest" not in columns:
            self._con.execute("ALTER TABLE participants ADD COLUMN resume_digest TEXT")

    def close(self) -> None:
        with self._lock:
            self._con.close()

    def _digest(self, panel_id: str) -> str:
        if self._secret is None:
            raise ValueError(
                "ResponsesDB needs the study secret (secret=...) to enrol or withdraw: "
                "withdrawn panel ids are checked by their keyed digest"
            )
        return withdrawal_digest(self._secret, panel_id)

    def _tx(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        with self._lock:
            self._con.execute("BEGIN IMMEDIATE")
            try:
                result = work(self._con)
            except BaseException:
                self._con.execute("ROLLBACK")
                raise
            self._con.execute("COMMIT")
            return result

    @staticmethod
    def _participant(row: sqlite3.Row | None) -> Participant | None:
        if row is None:
            return None
        return Participant(
            int(row["id"]),
            int(row["k"]),
            str(row["panel_id"]),
            str(row["token"]),
            row["started_at"] is not None,
            row["finished_at"] is not None,
            int(row["n_trials"]),
            row["resume_digest"],
        )

    def by_token(self, token: str) -> Participant | None:
        with self._lock:
            row = self._con.execute(
                "SELECT * FROM participants WHERE token = ?", (token,)
            ).fetchone()
        return self._participant(row)

    def by_panel_id(self, panel_id: str) -> Participant | None:
        with self._lock:
            row = self._con.execute(
                "SELECT * FROM participants WHERE panel_id = ?", (panel_id,)
            ).fetchone()
        return self._participant(row)

    def is_withdrawn(self, panel_id: str) -> bool:
        """Whether ``panel_id`` withdrew (its digest is in ``withdrawn``)."""
        digest = self._digest(panel_id)
        with self._lock:
            return _blocked(self._con, digest)

    def n_participants(self) -> int:
        with self._lock:
            return int(self._con.execute("SELECT COUNT(*) FROM participants").fetchone()[0])

    def enrol(
        self,
        panel_id: str,
        trials: Callable[[int], Sequence[Trial]],
        *,
        max_participants: int | None = None,
        resume_digest: str | None = None,
    ) -> Participant | None:
        """The participant with ``panel_id``, created (consent recorded, ``trials(k)`` stored,
        ``resume_digest`` kept) if new; None when the study is full. An id already enrolled is
        returned as it is (its own digest, not this one: the caller compares them to tell).
        Raises WithdrawnError, writing nothing, when the id withdrew: such an id never counts
        toward ``max_participants`` nor takes a ``k``."""
        digest = self._digest(panel_id)

        def work(con: sqlite3.Connection) -> Participant | None:
            row = con.execute(
                "SELECT * FROM participants WHERE panel_id = ?", (panel_id,)
            ).fetchone()
            if row is not None:
                return self._participant(row)
            if _blocked(con, digest):
                raise WithdrawnError(
                    f"panel id {panel_id!r} withdrew from this study; not enrolled"
                )
            # k counts consents ever made: a stored counter, so a withdrawn participant's k
            # is never reused (not even the latest one's) and the balanced assignment stays a
            # function of consent order. A study file from before the counter starts it at
            # the highest k stored plus one.
            stored = con.execute("SELECT value FROM counters WHERE name = 'next_k'").fetchone()
            k = int(
                stored[0]
                if stored is not None
                else con.execute("SELECT COALESCE(MAX(k) + 1, 0) FROM participants").fetchone()[0]
            )
            n_now = int(con.execute("SELECT COUNT(*) FROM participants").fetchone()[0])
            if max_participants is not None and n_now >= max_participants:
                return None
            assigned = list(trials(k))
            cur = con.execute(
                "INSERT INTO participants (k, panel_id, token, consented_at, n_trials, "
                "resume_digest) VALUES (?, ?, ?, ?, ?, ?)",
                (k, panel_id, secrets.token_urlsafe(32), _now(), len(assigned), resume_digest),
            )
            pid = cur.lastrowid
            con.execute(
                "INSERT INTO counters (name, value) VALUES ('next_k', ?) "
                "ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                (k + 1,),
            )
            con.executemany(
                "INSERT INTO trials (participant, position, block, item_id, query_id, perm_index, "
                "check_option) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (pid, t.position, t.block, t.item_id, t.query_id, t.perm_index, t.check_option)
                    for t in assigned
                ],
            )
            return self._participant(
                con.execute("SELECT * FROM participants WHERE id = ?", (pid,)).fetchone()
            )

        result: Participant | None = self._tx(work)
        return result

    def start(self, participant: Participant) -> None:
        self._tx(
            lambda con: con.execute(
                "UPDATE participants SET started_at = ? WHERE id = ? AND started_at IS NULL",
                (_now(), participant.id),
            )
        )

    def current(self, participant: Participant) -> Trial | None:
        """The first trial without a response (None once every trial is answered); its
        first showing time is recorded for the server-measured response time."""

        def work(con: sqlite3.Connection) -> Trial | None:
            row = con.execute(
                "SELECT t.* FROM trials t LEFT JOIN responses r ON r.participant = t.participant "
                "AND r.position = t.position WHERE t.participant = ? AND r.slot IS NULL "
                "ORDER BY t.position LIMIT 1",
                (participant.id,),
            ).fetchone()
            if row is None:
                return None
            if row["shown_at"] is None:
                con.execute(
                    "UPDATE trials SET shown_at = ? WHERE participant = ? AND position = ?",
                    (time.time(), participant.id, row["position"]),
                )
            return Trial(
                int(row["position"]),
                str(row["block"]),
                row["item_id"],
                row["query_id"],
                row["perm_index"],
                row["check_option"],
            )

        result: Trial | None = self._tx(work)
        return result

    def answer(self, participant: Participant, position: int, slot: int, rt_ms: int | None) -> str:
        """Record the answer to trial ``position``: "ok", or why nothing was written ("stale":
        not the current trial; "finished": every trial is answered)."""

        def work(con: sqlite3.Connection) -> str:
            row = con.execute(
                "SELECT t.position, t.shown_at FROM trials t LEFT JOIN responses r ON "
                "r.participant = t.participant AND r.position = t.position WHERE "
                "t.participant = ? AND r.slot IS NULL ORDER BY t.position LIMIT 1",
                (participant.id,),
            ).fetchone()
            if row is None:
                return "finished"
            if int(row["position"]) != position:
                return "stale"
            shown = row["shown_at"]
            server_rt = None if shown is None else round((time.time() - float(shown)) * 1000)
            con.execute(
                "INSERT INTO responses (participant, position, slot, rt_ms, server_rt_ms, "
                "answered_at) VALUES (?, ?, ?, ?, ?, ?)",
                (participant.id, position, slot, rt_ms, server_rt, _now()),
            )
            if position == participant.n_trials - 1:
                con.execute(
                    "UPDATE participants SET finished_at = ? WHERE id = ?", (_now(), participant.id)
                )
            return "ok"

        result: str = self._tx(work)
        return result

    def progress(self, participant: Participant) -> int:
        with self._lock:
            return int(
                self._con.execute(
                    "SELECT COUNT(*) FROM responses WHERE participant = ?", (participant.id,)
                ).fetchone()[0]
            )

    def withdraw(self, panel_id: str, *, erase: bool = False) -> Withdrawal:
        """Delete the participant with ``panel_id`` (row, trials and responses) and record the
        id's keyed digest in ``withdrawn`` so it cannot enrol again; with ``erase`` (an erasure
        request) delete any digest too, so nothing about the id is left and it may enrol again.
        An unknown id is not an error here: without ``erase`` its digest is recorded all the
        same (a person who withdraws before starting stays out); ``Withdrawal.found`` says."""
        digest = self._digest(panel_id)

        def work(con: sqlite3.Connection) -> tuple[bool, int, bool]:
            was_blocked = _blocked(con, digest)
            row = con.execute(
                "SELECT id FROM participants WHERE panel_id = ?", (panel_id,)
            ).fetchone()
            n = 0
            if row is not None:
                n = con.execute(
                    "DELETE FROM responses WHERE participant = ?", (row["id"],)
                ).rowcount
                con.execute("DELETE FROM trials WHERE participant = ?", (row["id"],))
                con.execute("DELETE FROM participants WHERE id = ?", (row["id"],))
            if erase:
                con.execute("DELETE FROM withdrawn WHERE digest = ?", (digest,))
            elif not was_blocked:
                con.execute(
                    "INSERT INTO withdrawn (digest, withdrawn_at) VALUES (?, ?)", (digest, _now())
                )
            return row is not None, int(n), was_blocked

        found, n, was_blocked = self._tx(work)
        with self._lock:  # copy the overwritten pages home and empty the log
            busy = self._con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        return Withdrawal(found, n, erase, was_blocked, int(busy) == 0)

    def export(self) -> list[TrialExport]:
        """Every trial of every participant with its response (None where unanswered), in
        participant and position order: what the import and the admin export read."""
        with self._lock:
            rows = self._con.execute(
                "SELECT p.k, p.panel_id, p.finished_at IS NOT NULL AS finished, t.position, "
                "t.block, t.item_id, t.query_id, t.perm_index, t.check_option, r.slot, r.rt_ms, "
                "r.server_rt_ms, r.answered_at FROM trials t JOIN participants p ON p.id = "
                "t.participant LEFT JOIN responses r ON r.participant = t.participant AND "
                "r.position = t.position ORDER BY p.k, t.position"
            ).fetchall()
        return [
            TrialExport(
                k=r["k"],
                panel_id=r["panel_id"],
                finished=bool(r["finished"]),
                position=r["position"],
                block=r["block"],
                item_id=r["item_id"],
                query_id=r["query_id"],
                perm_index=r["perm_index"],
                check_option=r["check_option"],
                slot=r["slot"],
                rt_ms=r["rt_ms"],
                server_rt_ms=r["server_rt_ms"],
                answered_at=r["answered_at"],
            )
            for r in rows
        ]
