"""Running a study (uvicorn on the given address) and reading one back for the import."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from choiceaudit.errors import InputError
from choiceaudit.human._app import create_app
from choiceaudit.human._db import DB_FILE, ResponsesDB, TrialExport, Withdrawal, corrupt_db
from choiceaudit.human._panel_id import PanelIdError, normalise_panel_id
from choiceaudit.human._study import (
    SECRET_FILE,
    STUDY_FILE,
    StudyFileJSON,
    StudyItems,
    StudySpec,
    load_study_items,
)
from choiceaudit.human._study_dir import open_study, read_study_record
from choiceaudit.human._throttle import Limits
from choiceaudit.net import listening_socket
from choiceaudit.store import QUERIES

__all__ = ["LOOPBACK_HOSTS", "StudyRecord", "allowed_hosts_for", "read_study", "serve", "withdraw"]

#: the Host header names a study bound to a loopback address answers by default
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")


def allowed_hosts_for(host: str, allowed_hosts: Sequence[str] | None) -> list[str]:
    """The Host names a study served on ``host`` answers: ``allowed_hosts`` when given, the
    loopback names when it listens on loopback; on any other address the names must be given
    (the study cannot know the name its participants' browsers use), else an InputError."""
    if allowed_hosts is not None:
        names = [h.strip() for h in allowed_hosts]
        if not names or any(not h for h in names):
            raise InputError("--allowed-host needs a host name (or '*' for any)")
        return names
    if host in LOOPBACK_HOSTS or host.startswith("127."):
        return [*LOOPBACK_HOSTS, host] if host not in LOOPBACK_HOSTS else list(LOOPBACK_HOSTS)
    raise InputError(
        f"serving on {host}: name the host names participants' browsers will use with "
        "--allowed-host (e.g. --allowed-host study.example.org), or --allowed-host '*' to "
        "answer any Host header"
    )


def serve(
    items: Path | str,
    out: Path | str,
    spec: StudySpec | None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: Limits | None = None,
    secure_cookies: bool = False,
    allowed_hosts: Sequence[str] | None = None,
    on_open: Callable[[Sequence[str]], None] | None = None,
) -> None:
    """Create or reopen the study directory ``out`` and serve it until interrupted. Requests
    whose Host header is not one of :func:`allowed_hosts_for` ``(host, allowed_hosts)`` get
    400. ``on_open`` is called with those Host names once the study is open, just before the
    server starts (a study that is refused never calls it). The address is bound first: one in
    use is an InputError naming it, before the study directory is created or opened.

    ``limits`` (:class:`~choiceaudit.human.Limits`) throttles by client address and panel id.
    uvicorn's own proxy-header handling is turned off: it would believe ``X-Forwarded-For``
    from 127.0.0.1 by default, so every client of a study on loopback could name its own
    address. Only ``limits.trusted_proxies`` decides whose forwarded address is believed."""
    import uvicorn

    hosts = allowed_hosts_for(host, allowed_hosts)  # refuse before touching the study
    sock = listening_socket(host, port)  # an address in use is refused before the study opens
    try:
        spec, study_items, secret = open_study(items, out, spec)
        app = create_app(
            out,
            spec,
            study_items,
            secret,
            limits=limits,
            secure_cookies=secure_cookies,
            allowed_hosts=hosts,
        )
        if on_open is not None:
            on_open(hosts)
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            server_header=False,
            proxy_headers=False,
        )
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


@dataclass(frozen=True)
class StudyRecord:
    """A study directory read back: its spec, its items (re-verified) and every trial row
    (``ResponsesDB.export``)."""

    path: Path
    spec: StudySpec
    items: StudyItems
    trials: tuple[TrialExport, ...]
    record: StudyFileJSON


def read_study(path: Path | str) -> StudyRecord:
    """Read the study directory at ``path`` (its own copy of the items, verified against the
    hash the study recorded)."""
    root = Path(path)
    record_path = root / STUDY_FILE
    if not record_path.is_file():
        raise InputError(f"not a study directory (no {STUDY_FILE})", source=str(root))
    record: StudyFileJSON = read_study_record(record_path)
    spec = StudySpec.from_dict(record["study"], source=str(record_path))
    source = root / "instrument" if record["instrument"] == "signalling" else root / QUERIES
    items = load_study_items(source, condition=spec.condition)
    items = dataclasses.replace(items, source_config=dict(record.get("source_config") or {}))
    if items.items_hash != record["items_hash"]:
        raise InputError(
            "the study's copy of the items changed after the study began", source=str(source)
        )
    if not (root / DB_FILE).is_file():
        raise InputError(f"no responses yet ({DB_FILE} missing)", source=str(root))
    db = ResponsesDB(root / DB_FILE, read_only=True)
    try:
        trials = tuple(db.export())
    except sqlite3.DatabaseError as exc:
        raise corrupt_db(root / DB_FILE, exc) from None
    finally:
        db.close()
    return StudyRecord(root, spec, items, trials, record)


def withdraw(path: Path | str, panel_id: str, *, erase: bool = False) -> Withdrawal:
    """Withdraw ``panel_id`` from the study at ``path`` (safe while the server runs).

    By default the participant's row, trials and responses are deleted and a keyed digest of
    the id (HMAC-SHA256 under a key derived from the study's ``secret``; never the id itself)
    is kept, so the same id is refused when it opens the study link again. ``erase=True`` (an
    erasure request) deletes the digest too: nothing about the id is left, and it may enrol
    again.

    An unknown panel id is an error (InputError), as a typo should be noticed; without
    ``erase`` its digest is recorded before the error all the same, so a person who withdraws
    before ever starting is kept out too (the message says so; ``erase=True`` undoes it). With
    ``erase`` an id with neither a participant nor a digest is an error and nothing changes.

    An id the panel-id rule refuses is an error, with one exception: ``erase=True`` of a
    participant stored with exactly that id (by a version that did not check ids), which the
    import refuses until it is gone."""
    root = Path(path)
    # The app enrols only ids the one rule accepts, so anything else (a trailing newline, a
    # space, a control character) names nobody; recording its digest would suggest it had
    # withdrawn someone.
    try:
        normalise_panel_id(panel_id, source=str(root), field="panel id")
    except PanelIdError:
        if not (erase and _stored_verbatim(root, panel_id)):
            raise
    if not (root / DB_FILE).is_file():
        raise InputError(f"not a study directory (no {DB_FILE})", source=str(root))
    secret_path = root / SECRET_FILE
    if not secret_path.is_file():
        raise InputError(
            f"the study has no {SECRET_FILE} file: the withdrawal digest needs the study key",
            source=str(root),
        )
    db = ResponsesDB(root / DB_FILE, secret=secret_path.read_bytes())
    try:
        result = db.withdraw(panel_id, erase=erase)
    finally:
        db.close()
    if result.found or (erase and result.was_blocked):
        return result
    if erase:
        why = f"no participant and no withdrawal record with panel id {panel_id!r}; nothing changed"
    elif result.was_blocked:
        why = (
            f"no participant with panel id {panel_id!r}: it had already withdrawn; nothing changed"
        )
    else:
        why = (
            f"no participant with panel id {panel_id!r}, nothing deleted; its digest is now "
            "recorded as withdrawn, so this id cannot enrol (erase=True / --erase undoes that)"
        )
    raise InputError(why, source=str(root))


def _stored_verbatim(root: Path, panel_id: str) -> bool:
    """Whether a participant is stored with exactly ``panel_id``."""
    if not (root / DB_FILE).is_file():
        return False
    db = ResponsesDB(root / DB_FILE)
    try:
        return db.by_panel_id(panel_id) is not None
    finally:
        db.close()
