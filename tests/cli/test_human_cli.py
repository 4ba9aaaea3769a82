"""``choiceaudit withdraw-human``: the default withdrawal (a keyed digest keeps the id out) and
``--erase`` (nothing kept, the id may enrol again), with what each prints."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from choiceaudit.cli import app
from choiceaudit.human import (
    DB_FILE,
    ResponsesDB,
    StudyItems,
    StudySpec,
    WithdrawnError,
    assign,
    open_study,
    parse_study_file,
)
from choiceaudit.human._db import Participant
from human.human_helpers import frozen_items, study_file

runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path) -> ResponsesDB:
    """A study with participant C001 (one response) and C002, through its own database."""
    db = ResponsesDB(_open(tmp_path)[2], secret=(tmp_path / "study" / "secret").read_bytes())
    for pid in ("C001", "C002"):
        assert _enrol(db, pid) is not None
    first = db.by_panel_id("C001")
    assert first is not None
    db.start(first)
    assert db.answer(first, 0, 0, 1000) == "ok"
    return db


def _open(root: Path) -> tuple[StudySpec, StudyItems, Path]:
    spec, items, _ = open_study(
        frozen_items(root), root / "study", parse_study_file(study_file(root))
    )
    return spec, items, root / "study" / DB_FILE


def _enrol(db: ResponsesDB, pid: str) -> Participant | None:
    spec, items, _ = _open(db.path.parent.parent)  # reopening a study reads its record
    return db.enrol(pid, lambda k: assign(spec, items, k, pid))


def test_withdraw_human_keeps_a_digest_by_default(db: ResponsesDB) -> None:
    study = str(db.path.parent)
    r = runner.invoke(app, ["withdraw-human", study, "C001"])
    assert r.exit_code == 0, r.output
    assert "C001 withdrawn: 1 response(s) deleted" in r.output
    assert "keyed digest" in r.output and "cannot enrol again" in r.output
    assert db.by_panel_id("C001") is None and db.is_withdrawn("C001")
    with pytest.raises(WithdrawnError):
        _enrol(db, "C001")
    r = runner.invoke(app, ["withdraw-human", study, "C001"])
    assert r.exit_code == 1 and "already withdrawn; nothing changed" in r.output
    # an id never seen: an error (a typo shows), yet it is recorded and kept out
    r = runner.invoke(app, ["withdraw-human", study, "NEVER01"])
    assert r.exit_code == 1 and "no participant" in r.output and "now recorded" in r.output
    assert db.is_withdrawn("NEVER01") and db.n_participants() == 1


def test_withdraw_human_erase_keeps_nothing(db: ResponsesDB) -> None:
    study = str(db.path.parent)
    r = runner.invoke(app, ["withdraw-human", study, "C001", "--erase"])
    assert r.exit_code == 0, r.output
    assert "C001 erased (1 response(s) deleted)" in r.output and "may enrol again" in r.output
    assert db.by_panel_id("C001") is None and not db.is_withdrawn("C001")
    assert _enrol(db, "C001") is not None  # re-entry is possible
    # an erasure after a withdrawal removes the digest
    assert runner.invoke(app, ["withdraw-human", study, "C002"]).exit_code == 0
    r = runner.invoke(app, ["withdraw-human", study, "C002", "--erase"])
    assert r.exit_code == 0 and "C002 erased (withdrawal digest deleted)" in r.output
    assert not db.is_withdrawn("C002")
    r = runner.invoke(app, ["withdraw-human", study, "C002", "--erase"])
    assert r.exit_code == 1 and "no participant and no withdrawal record" in r.output


def test_serve_human_off_loopback_needs_the_host_names(tmp_path: Path) -> None:
    """On a non-loopback address the study cannot guess the name participants use: the command
    refuses before creating the study directory and says which option to give."""
    items, toml = frozen_items(tmp_path), study_file(tmp_path)
    out = tmp_path / "study"
    args = ["serve-human", str(items), "--out", str(out), "--study", str(toml)]
    r = runner.invoke(app, [*args, "--host", "0.0.0.0"])
    assert r.exit_code == 1
    assert "serving on 0.0.0.0" in r.output and "--allowed-host" in r.output
    assert "answering Host" not in r.output  # refused before it claims to serve
    assert not out.exists()


def test_serve_human_refuses_a_study_it_cannot_open_before_claiming_to_serve(
    tmp_path: Path,
) -> None:
    """A study file the items cannot fill is refused (exit 1) without the 'serving' line."""
    items = frozen_items(tmp_path)
    toml = study_file(tmp_path, 'seed = 1\nblocks = [{ name = "classification", n_items = 999 }]\n')
    out = tmp_path / "study"
    args = ["serve-human", str(items), "--out", str(out), "--study", str(toml), "--port", "0"]
    r = runner.invoke(app, args)
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.exception
    assert "the classification block asks for 999" in r.output
    assert "answering Host" not in r.output
    assert not out.exists()
