"""Opening a study's responses file: the error for a file SQLite cannot read, and the
read-only connection that reading a study (an import, an export) uses, which can change
nothing in the file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from choiceaudit.errors import InputError

__all__ = ["STUDY_TABLES", "corrupt_db", "open_read_only"]


def corrupt_db(path: Path, exc: sqlite3.Error) -> InputError:
    """The error for a responses file SQLite cannot read: it names the file and what to do."""
    return InputError(
        f"not a readable SQLite responses database ({exc}); the answers live only in this "
        "file: restore it from a backup, or serve a new study directory (--out)",
        source=str(path),
    )


#: the tables every study database holds from its first start
STUDY_TABLES = ("participants", "trials", "responses")


def open_read_only(path: Path) -> sqlite3.Connection:
    """A connection that can change nothing in the file (``mode=ro``), for reading a study:
    a file without the study's tables is refused, never given them. Opening such a file for
    writing would create empty tables over it, and an import would then report no responses
    where the answers are missing (a copy made without its write-ahead log holds only what had
    been checkpointed, which may be nothing)."""
    if not path.is_file():
        raise InputError("does not exist; give a study directory", source=str(path))
    try:
        con = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro",
            uri=True,
            isolation_level=None,
            check_same_thread=False,
            timeout=30,
        )
        con.row_factory = sqlite3.Row
        tables = {r["name"] for r in con.execute("SELECT name FROM sqlite_master")}
        con.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError as exc:
        raise corrupt_db(path, exc) from None
    missing = [t for t in STUDY_TABLES if t not in tables]
    if missing:
        con.close()
        wal = path.with_name(path.name + "-wal")
        beside = "" if wal.exists() else f", with no {wal.name} beside it"
        raise InputError(
            f"holds no study tables ({', '.join(missing)} missing; the file is "
            f"{path.stat().st_size} bytes{beside}): a copy of a running study made without its write-ahead log ({wal.name}) "
            "holds only what had been written back to the main file; copy the study directory "
            "again with the server stopped, or with the -wal file beside this one",
            source=str(path),
        )
    return con
