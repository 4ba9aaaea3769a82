"""The panel id is not a credential: a session is resumed with its cookie (the same browser)
or with the resume code shown once at consent; a new browser with only the id gets nothing,
and its refusal does not say whether the id is enrolled."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Protocol

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from choiceaudit.human import (
    DB_FILE,
    RESUME_CODE_LENGTH,
    SESSION_COOKIE,
    Limits,
    create_app,
    open_study,
    parse_study_file,
    resume_digest,
)
from human.human_helpers import (
    answer_fields,
    choices,
    frozen_items,
    hidden,
    resume_csrf,
    study_file,
)


class Page(Protocol):
    """What these tests read of a response (the test client's own httpx may be either one)."""

    @property
    def status_code(self) -> int: ...

    @property
    def text(self) -> str: ...


ONE_BLOCK = 'seed = 2\nattention_checks = 0\nblocks = [{ name = "population", n_items = 3 }]\n'


@pytest.fixture
def app(tmp_path: Path) -> Starlette:
    items, out = frozen_items(tmp_path), tmp_path / "study"
    toml = study_file(tmp_path, ONE_BLOCK + 'completion_code = "DONE42"\n')
    spec, study_items, secret = open_study(items, out, parse_study_file(toml))
    (tmp_path / "key").write_bytes(secret)
    return create_app(out, spec, study_items, secret, limits=Limits(rate=1000, burst=1000))


def _browser(app: Starlette) -> TestClient:
    return TestClient(app, follow_redirects=True)


def _consent(browser: TestClient, pid: str) -> tuple[str, str]:
    """Consent as ``pid``: (the page after consent, the resume code shown on it)."""
    page = browser.get(f"/?PROLIFIC_PID={pid}")
    r = browser.post(
        "/consent", data={"csrf": hidden(page.text, "csrf"), "panel_id": pid, "consent": "yes"}
    )
    assert r.status_code == 200 and "Instructions" in r.text
    m = re.search(r'id="resume-code">([0-9A-Z-]+)<', r.text)
    assert m, "no resume code on the page after consent"
    return r.text, m.group(1)


def _resume(browser: TestClient, pid: str, code: str) -> Page:
    page = browser.get(f"/?PROLIFIC_PID={pid}")
    return browser.post(
        "/resume", data={"csrf": resume_csrf(page.text), "panel_id": pid, "code": code}
    )


def _scrub(html: str) -> str:
    # what differs between any two renderings of one page: the nonce and the form tokens
    html = re.sub(r'nonce(-|=")[A-Za-z0-9_-]+', "nonce", html)
    html = re.sub(r'name="csrf" value="[^"]*"', 'name="csrf"', html)
    return html.replace("VICTIM1", "ID").replace("NOBODY1", "ID")


def test_a_new_browser_with_only_the_panel_id_gets_no_access(
    app: Starlette, tmp_path: Path
) -> None:
    owner = _browser(app)
    page, _ = _consent(owner, "VICTIM1")
    page = owner.post("/start", data={"csrf": hidden(page, "csrf")}).text
    owner.post("/answer", data=answer_fields(page, choices(page)[0]))

    thief = _browser(app)
    link = thief.get("/?PROLIFIC_PID=VICTIM1")
    unknown = _browser(app).get("/?PROLIFIC_PID=NOBODY1")
    # the consent page, exactly as for an id nobody has: it says nothing of the id
    assert link.status_code == unknown.status_code == 200
    assert _scrub(link.text) == _scrub(unknown.text)
    assert SESSION_COOKIE not in thief.cookies
    for path in ("/item", "/done", "/instructions"):
        assert thief.get(path).status_code == 403
    # consenting again opens nothing either, and shows no completion code
    r = thief.post(
        "/consent",
        data={"csrf": hidden(link.text, "csrf"), "panel_id": "VICTIM1", "consent": "yes"},
    )
    assert r.status_code == 403 and "resume code" in r.text and "DONE42" not in r.text
    assert SESSION_COOKIE not in thief.cookies
    assert thief.get("/item").status_code == 403
    # the owner is where they were
    assert "Page 2 of 3" in owner.get("/?PROLIFIC_PID=VICTIM1").text


def test_the_consent_page_says_how_to_resume(app: Starlette) -> None:
    text = _browser(app).get("/?PROLIFIC_PID=ANY1").text
    assert "resume code" in text and "same browser" in text
    assert "the panel id alone does not open your answers" in text


def test_the_resume_code_opens_the_session_in_a_new_browser(app: Starlette) -> None:
    owner = _browser(app)
    page, code = _consent(owner, "MOVER1")
    assert re.fullmatch(r"[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}", code)
    assert len(code.replace("-", "")) == RESUME_CODE_LENGTH
    page = owner.post("/start", data={"csrf": hidden(page, "csrf")}).text
    second = owner.post("/answer", data=answer_fields(page, choices(page)[0])).text
    assert "Page 2 of 3" in second
    # shown once: the instructions page reloaded does not show it again
    assert code not in owner.get("/instructions").text

    laptop = _browser(app)
    r = _resume(laptop, "MOVER1", code.lower().replace("-", " "))  # as a person may type it
    assert r.status_code == 200 and "Page 2 of 3" in r.text
    assert hidden(r.text, "position") == hidden(second, "position")
    # and the first browser's return link still works
    assert "Page 2 of 3" in owner.get("/?PROLIFIC_PID=MOVER1").text


def test_a_wrong_code_and_an_unknown_id_get_the_same_refusal(app: Starlette) -> None:
    _, code = _consent(_browser(app), "REAL1")
    wrong = _resume(_browser(app), "REAL1", "0000-0000-0000")
    unknown = _resume(_browser(app), "NOSUCH1", code)
    empty = _resume(_browser(app), "REAL1", "")
    assert wrong.status_code == unknown.status_code == empty.status_code == 403
    texts = {
        _scrub(r.text).replace("REAL1", "ID").replace("NOSUCH1", "ID")
        for r in (wrong, unknown, empty)
    }
    assert len(texts) == 1 and "does not open a session" in texts.pop()


def test_resume_codes_are_stored_only_as_a_keyed_digest(app: Starlette, tmp_path: Path) -> None:
    _, code = _consent(_browser(app), "STORED1")
    out = tmp_path / "study"
    stored = b"".join(p.read_bytes() for p in sorted(out.glob(DB_FILE + "*")))
    for form in (code, code.replace("-", "")):
        assert form.encode() not in stored
    con = sqlite3.connect(out / DB_FILE)
    (digest,) = con.execute(
        "SELECT resume_digest FROM participants WHERE panel_id = 'STORED1'"
    ).fetchone()
    con.close()
    assert digest == resume_digest((tmp_path / "key").read_bytes(), code)
    assert digest != resume_digest(b"another study's key", code)
