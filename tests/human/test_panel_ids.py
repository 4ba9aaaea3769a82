"""A panel id is the whole string or nothing: no trailing newline or other invisible character
makes a second person of one id, on enrolment, on withdrawal or in the study file."""

from __future__ import annotations

import sqlite3
import unicodedata
from functools import partial
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from choiceaudit.audit import import_human
from choiceaudit.errors import InputError
from choiceaudit.human import (
    DB_FILE,
    PANEL_ID_PATTERN,
    PanelIdError,
    ResponsesDB,
    assign,
    create_app,
    normalise_panel_id,
    open_study,
    parse_study_file,
    withdraw,
)
from human.human_helpers import frozen_items, hidden, study_file

# Every Unicode whitespace, control, format and separator character, the invisible ones a
# panel id could carry unnoticed.
_INVISIBLE = [
    chr(c)
    for c in range(0x110000)
    if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zs", "Zl", "Zp") or chr(c).isspace()
]


@settings(max_examples=300, deadline=None)
@given(
    base=st.from_regex(r"[A-Za-z0-9_-]{1,60}", fullmatch=True),
    extra=st.sampled_from(_INVISIBLE),
    where=st.sampled_from(["end", "start", "middle"]),
)
def test_an_id_with_an_invisible_character_is_not_an_id(base: str, extra: str, where: str) -> None:
    assert PANEL_ID_PATTERN.fullmatch(base)
    cut = len(base) // 2
    variant = {
        "end": base + extra,
        "start": extra + base,
        "middle": base[:cut] + extra + base[cut:],
    }
    assert PANEL_ID_PATTERN.fullmatch(variant[where]) is None


def test_a_trailing_newline_is_refused_at_the_link_at_consent_and_at_withdrawal(
    tmp_path: Path,
) -> None:
    items, out = frozen_items(tmp_path), tmp_path / "study"
    spec = parse_study_file(study_file(tmp_path))
    spec, study_items, secret = open_study(items, out, spec)
    client = TestClient(create_app(out, spec, study_items, secret), follow_redirects=True)
    assert client.get("/?PROLIFIC_PID=" + quote("X1\n")).status_code == 400
    page = client.get("/?PROLIFIC_PID=X1")
    assert page.status_code == 200
    token = hidden(page.text, "csrf")
    twin = client.post("/consent", data={"csrf": token, "panel_id": "X1\n", "consent": "yes"})
    assert twin.status_code == 400
    with pytest.raises(InputError, match="trailing newline"):
        withdraw(out, "X1\n")


# -- one rule at import too -------------------------------------------------------------------
@pytest.fixture(scope="module")
def old_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study with two answered participants, written through the database directly, as a
    version that did not check ids could have left it."""
    return _old_study(tmp_path_factory.mktemp("old_study"))


def _old_study(root: Path) -> Path:
    toml = study_file(
        root, 'seed = 3\nattention_checks = 0\nblocks = [{ name = "population", n_items = 2 }]\n'
    )
    out = root / "study"
    spec, items, secret = open_study(frozen_items(root), out, parse_study_file(toml))
    db = ResponsesDB(out / DB_FILE, secret=secret)
    for pid in ("GOOD1", "TWIN1"):
        who = db.enrol(pid, partial(assign, spec, items, panel_id=pid))
        assert who is not None
        db.start(who)
        while (t := db.current(who)) is not None:
            assert db.answer(who, t.position, 0, 900) == "ok"
    db.close()
    return out


def _rename(study: Path, new: str) -> None:
    con = sqlite3.connect(study / DB_FILE)
    with con:
        con.execute("UPDATE participants SET panel_id = ? WHERE k = 1", (new,))
    con.close()


@settings(max_examples=25, deadline=None)
@given(extra=st.sampled_from(_INVISIBLE), where=st.sampled_from(["end", "start", "middle"]))
def test_import_refuses_an_id_the_app_could_not_have_enrolled(
    old_study: Path, tmp_path_factory: pytest.TempPathFactory, extra: str, where: str
) -> None:
    variant = {"end": "TWIN1" + extra, "start": extra + "TWIN1", "middle": "TW" + extra + "IN1"}
    _rename(old_study, variant[where])
    out = tmp_path_factory.mktemp("people") / "run"
    with pytest.raises(InputError) as caught:
        import_human(old_study, out=out)
    assert caught.value.field == "panel_id"
    assert caught.value.row == "participant k=1, position 0"
    assert caught.value.source == str(old_study / DB_FILE)
    assert not out.exists()  # refused before anything was written


def test_import_reads_the_same_ids_the_app_enrols(old_study: Path, tmp_path: Path) -> None:
    _rename(old_study, "TWIN1")
    done = import_human(old_study, out=tmp_path / "run")
    assert done.participants == 2


@settings(max_examples=200, deadline=None)
@given(
    base=st.from_regex(r"[A-Za-z0-9_-]{1,60}", fullmatch=True),
    extra=st.sampled_from(_INVISIBLE),
)
def test_the_one_rule_keeps_an_id_and_refuses_its_invisible_twins(base: str, extra: str) -> None:
    assert normalise_panel_id(base) == base
    for twin in (base + extra, extra + base):
        with pytest.raises(PanelIdError, match="not a panel id"):
            normalise_panel_id(twin, source="f", row=3, field="panel_id")


def test_an_old_invalid_id_can_be_erased_so_the_study_imports(tmp_path: Path) -> None:
    study = _old_study(tmp_path)
    _rename(study, "TWIN1\n")
    with pytest.raises(InputError, match="withdraw-human STUDY ID --erase"):
        import_human(study, out=tmp_path / "refused")
    with pytest.raises(PanelIdError):
        withdraw(study, "TWIN1\n")  # a withdrawal would keep a digest of a non-id: refused
    with pytest.raises(PanelIdError):
        withdraw(study, "NOBODY\n", erase=True)  # not stored: still refused
    done = withdraw(study, "TWIN1\n", erase=True)
    assert done.found and done.erased and done.responses == 2
    assert import_human(study, out=tmp_path / "run").participants == 1
