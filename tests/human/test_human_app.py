"""The study application over HTTP: consent, instructions, items,
progress, completion; resume; validation and refusals that change nothing."""

from __future__ import annotations

import html as html_lib
import re
import sqlite3
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from choiceaudit.errors import InputError
from choiceaudit.human import (
    ADMIN_TOKEN_ENV,
    DB_FILE,
    Limits,
    Trial,
    assign,
    create_app,
    open_study,
    parse_study_file,
)
from choiceaudit.instruments.signalling import load_instrument
from human.human_helpers import (
    answer_fields,
    check_target,
    choices,
    frozen_items,
    hidden,
    option_slot,
    study_file,
)


@pytest.fixture
def study(tmp_path: Path) -> tuple[Path, Path]:
    return frozen_items(tmp_path), tmp_path / "study"


def _client(items: Path, out: Path, *, limits: Limits | None = None) -> TestClient:
    spec = parse_study_file(study_file(out.parent))
    spec, study_items, secret = open_study(items, out, spec)
    app = create_app(out, spec, study_items, secret, limits=limits)
    return TestClient(app, follow_redirects=True)


def _enter(client: TestClient, pid: str) -> str:
    page = client.get(f"/?PROLIFIC_PID={pid}")
    assert page.status_code == 200 and "consent" in page.text
    r = client.post(
        "/consent", data={"csrf": hidden(page.text, "csrf"), "panel_id": pid, "consent": "yes"}
    )
    assert r.status_code == 200 and "Instructions" in r.text
    r = client.post("/start", data={"csrf": hidden(r.text, "csrf")})
    assert r.status_code == 200 and "Page 1 of" in r.text
    return r.text


def _finish(client: TestClient, html: str, pick: int = 0, pages: list[str] | None = None) -> str:
    while 'name="choice"' in html:
        if pages is not None:
            pages.append(html)
        target = check_target(html)
        slot = option_slot(html, target) if target else choices(html)[pick]
        r = client.post("/answer", data=answer_fields(html, slot))
        assert r.status_code == 200, r.text
        html = r.text
    return html


def test_a_participant_completes_the_study_and_gets_the_code(study: tuple[Path, Path]) -> None:
    items, out = study
    client = _client(items, out)
    html = _enter(client, "P001")
    # the item as a chooser sees it: both lists, the target pair marked, the question, options
    assert html.count('class="target"') == 2 and "Means" in html and "Clues" in html
    assert len(choices(html)) == 4
    assert "Page 1 of 11" in html  # 6 classification + 4 population + 1 attention check
    pages: list[str] = []
    done = _finish(client, html, pages=pages)
    assert "C8TEST" in done
    con = sqlite3.connect(out / DB_FILE)
    n = con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    blocks = dict(con.execute("SELECT block, COUNT(*) FROM trials GROUP BY block").fetchall())
    assert n == 11 and blocks == {"classification": 6, "population": 4, "attention": 1}
    rts = [r[0] for r in con.execute("SELECT rt_ms FROM responses")]
    assert rts == [1234] * 11
    # every page showed the frozen rendering of its trial, options in the stored order
    frozen = {q.id: q for q in load_instrument(items).render(conditions=["4"], formats=["V"])}
    trials = con.execute(
        "SELECT position, query_id, block FROM trials ORDER BY position"
    ).fetchall()
    for (position, query_id, block), page in zip(trials, pages, strict=True):
        q = frozen[query_id]
        shown = re.findall(r'required id="choice-\d+">([^<]*)</label>', page)
        assert [html_lib.unescape(o) for o in shown] == list(q.options), position
        if block != "attention":
            assert q.meta["format"] == "V" and html_lib.escape(q.instruction, quote=False) in page
    # a finished participant cannot submit again (a genuine form of the last page), and
    # returning shows the code
    last = answer_fields(pages[-1], 0)
    r = client.post("/answer", data=last)
    assert r.status_code == 409 and "already finished" in r.text
    assert con.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 11
    assert "C8TEST" in client.get("/?PROLIFIC_PID=P001").text


def test_reload_and_reconnect_resume_where_the_participant_was(study: tuple[Path, Path]) -> None:
    items, out = study
    client = _client(items, out)
    html = _enter(client, "P002")
    r = client.post("/answer", data=answer_fields(html, choices(html)[1]))
    second = r.text
    assert "Page 2 of" in second
    assert client.get("/item").text.count("Page 2 of") == 1  # reload
    # the panel's return link in the same browser, after a restart of the server
    same = _client(items, out)
    same.cookies = client.cookies
    again = same.get("/?PROLIFIC_PID=P002")
    assert "Page 2 of" in again.text and hidden(again.text, "position") == hidden(
        second, "position"
    )


def test_forged_and_malformed_submissions_are_refused_and_change_nothing(
    study: tuple[Path, Path],
) -> None:
    items, out = study
    client = _client(items, out)
    html = _enter(client, "P003")
    good = answer_fields(html, choices(html)[0])

    def count() -> int:
        con = sqlite3.connect(out / DB_FILE)
        return int(con.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    cases = [
        ({**good, "csrf": "0" * 64}, 403),  # forged token
        ({k: v for k, v in good.items() if k != "csrf"}, 403),
        ({**good, "choice": "4"}, 422),  # not a displayed option (four are shown)
        ({**good, "choice": "-1"}, 400),
        ({**good, "choice": "A"}, 400),
        ({**good, "choice": "\uff10"}, 400),  # a non-ASCII digit
        ({**good, "choice": "1e0"}, 400),
        ({k: v for k, v in good.items() if k != "choice"}, 400),
        ({**good, "position": "3"}, 409),  # not the current trial
        ({**good, "position": "99"}, 422),
        ({**good, "rt_ms": "99999999"}, 422),
    ]
    for data, status in cases:
        r = client.post("/answer", data=data)
        assert r.status_code == status, (data, r.status_code, r.text)
        assert count() == 0
    r = client.post("/answer", content=b"choice=0", headers={"content-type": "application/json"})
    assert r.status_code == 415
    r = client.post(
        "/answer",
        content=b"csrf=1&csrf=2&position=0&choice=0",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 400
    r = client.post(
        "/answer",
        content=b"x=" + b"a" * 5000,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 413
    other = _client(items, out)  # no session cookie
    assert other.post("/answer", data=good).status_code == 403
    assert count() == 0
    # the genuine answer is accepted once; the same form again is a resubmission
    assert client.post("/answer", data=good).status_code == 200
    assert client.post("/answer", data=good).status_code == 409
    assert count() == 1


def test_consent_needs_its_token_and_declining_records_nothing(study: tuple[Path, Path]) -> None:
    items, out = study
    client = _client(items, out)
    page = client.get("/?PROLIFIC_PID=P004")
    token = hidden(page.text, "csrf")
    assert (
        client.post(
            "/consent", data={"csrf": "bad", "panel_id": "P004", "consent": "yes"}
        ).status_code
        == 403
    )
    assert (
        client.post(
            "/consent", data={"csrf": token, "panel_id": "P 4", "consent": "yes"}
        ).status_code
        == 400
    )
    r = client.post("/consent", data={"csrf": token, "panel_id": "P004", "consent": "no"})
    assert r.status_code == 200 and "Nothing was recorded" in r.text
    con = sqlite3.connect(out / DB_FILE)
    assert con.execute("SELECT COUNT(*) FROM participants").fetchone()[0] == 0
    assert client.get("/?PROLIFIC_PID=").status_code == 400
    assert client.get("/?PROLIFIC_PID=<script>").status_code == 400


def test_nothing_is_served_outside_the_study(study: tuple[Path, Path]) -> None:
    items, out = study
    client = _client(items, out)
    for path in (
        "/static/x",
        "/responses.sqlite",
        "/secret",
        "/study.json",
        "/../secret",
        "/admin",
    ):
        assert client.get(path).status_code == 404, path
    assert client.get("/admin/export").status_code == 404  # no token configured: no route
    r = client.get("/?PROLIFIC_PID=P005")
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY" and r.headers["cache-control"] == "no-store"
    assert client.get("/item").status_code == 403  # no session yet


def test_admin_export_needs_the_token_from_the_environment(
    study: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    items, out = study
    monkeypatch.setenv(ADMIN_TOKEN_ENV, "s3cret-token")
    client = _client(items, out)
    _enter(client, "P006")
    assert client.get("/admin/export").status_code == 401
    assert client.get("/admin/export", headers={"authorization": "Bearer wrong"}).status_code == 401
    r = client.get("/admin/export", headers={"authorization": "Bearer s3cret-token"})
    assert r.status_code == 200
    rows = r.json()["trials"]
    assert len(rows) == 11 and {row["panel_id"] for row in rows} == {"P006"}
    assert set(rows[0]) == {
        "k",
        "panel_id",
        "finished",
        "position",
        "block",
        "item_id",
        "query_id",
        "perm_index",
        "check_option",
        "slot",
        "rt_ms",
        "server_rt_ms",
        "answered_at",
    }


def test_rate_limiting_answers_429_with_retry_after(study: tuple[Path, Path]) -> None:
    items, out = study
    client = _client(items, out, limits=Limits(rate=0.5, burst=3))
    codes = [client.get("/?PROLIFIC_PID=P007").status_code for _ in range(5)]
    assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]
    r = client.get("/?PROLIFIC_PID=P007")
    assert int(r.headers["retry-after"]) >= 1


def test_assignment_is_seeded_balanced_and_never_repeats(study: tuple[Path, Path]) -> None:
    items, out = study
    spec = parse_study_file(study_file(out.parent))
    spec, study_items, _ = open_study(items, out, spec)
    trials = {k: assign(spec, study_items, k, f"P{k}") for k in range(20)}
    assert trials[3] == assign(spec, study_items, 3, "P3")  # a pure function of (seed, k, id)
    shared = None
    seen: dict[str, int] = {}
    perms: dict[int, int] = {0: 0, 1: 0}
    per_item: dict[tuple[str, int], int] = {}
    for _k, ts in trials.items():
        shown = [t.item_id for t in ts if t.block != "attention"]
        assert len(shown) == len(set(shown)) == 10  # never the same item twice
        cls = sorted(_item_of(t) for t in ts if t.block == "classification")
        shared = shared or cls
        assert cls == shared  # everyone is classified on the same items
        for t in ts:
            if t.block == "population":
                seen[_item_of(t)] = seen.get(_item_of(t), 0) + 1
                key = (_item_of(t), int(t.perm_index or 0))
                per_item[key] = per_item.get(key, 0) + 1
            if t.block != "attention":
                perms[int(t.perm_index or 0)] += 1
    # 20 participants x 4 population items over the pool of 34: covered evenly (2 or 3 each)
    assert set(seen.values()) <= {2, 3} and sum(seen.values()) == 80
    assert abs(perms[0] - perms[1]) <= 2  # both stored renderings shown about equally
    for item_id in seen:  # each item alternates its two renderings across showings
        assert abs(per_item.get((item_id, 0), 0) - per_item.get((item_id, 1), 0)) <= 1
    orders = {tuple(t.item_id for t in ts if t.block == "classification") for ts in trials.values()}
    assert len(orders) > 10  # the order depends on the participant


def test_withdrawal_deletes_everything_about_a_participant(study: tuple[Path, Path]) -> None:
    from typer.testing import CliRunner

    from choiceaudit.cli import app

    items, out = study
    client = _client(items, out)
    html = _enter(client, "W001")
    client.post("/answer", data=answer_fields(html, choices(html)[0]))
    other = _client(items, out)
    _finish(other, _enter(other, "W002"))
    r = CliRunner().invoke(app, ["withdraw-human", str(out), "W001"])
    assert r.exit_code == 0 and "1 response(s) deleted" in r.output
    con = sqlite3.connect(out / DB_FILE)
    assert [p for (p,) in con.execute("SELECT panel_id FROM participants")] == ["W002"]
    assert (
        con.execute(
            "SELECT COUNT(*) FROM trials t JOIN participants p ON p.id = t.participant"
        ).fetchone()[0]
        == con.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
        == 11
    )
    assert con.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 11
    # a later participant gets a fresh k: the balanced assignment never reuses one
    _enter(_client(items, out), "W003")
    assert [k for (k,) in con.execute("SELECT k FROM participants ORDER BY k")] == [1, 2]
    r = CliRunner().invoke(app, ["withdraw-human", str(out), "W001"])
    assert r.exit_code == 1 and "no participant" in r.output


def test_a_full_study_refuses_newcomers_and_a_double_submit_records_once(
    study: tuple[Path, Path], tmp_path: Path
) -> None:
    import threading

    from choiceaudit.human import ResponsesDB

    items, out = study
    toml = tmp_path / "full.toml"
    toml.write_text(
        "seed = 1\nmax_participants = 1\nattention_checks = 0\n"
        'blocks = [{ name = "population", n_items = 3 }]\n',
        encoding="utf-8",
    )
    spec, study_items, secret = open_study(items, out, parse_study_file(toml))
    client = TestClient(create_app(out, spec, study_items, secret), follow_redirects=True)
    _enter(client, "F001")
    late = TestClient(create_app(out, spec, study_items, secret), follow_redirects=True)
    page = late.get("/?PROLIFIC_PID=F002")
    r = late.post(
        "/consent", data={"csrf": hidden(page.text, "csrf"), "panel_id": "F002", "consent": "yes"}
    )
    assert r.status_code == 409 and "full" in r.text
    # twenty simultaneous submissions of the same page (double clicks, two tabs): one is kept
    db = ResponsesDB(out / DB_FILE)
    who = db.by_panel_id("F001")
    assert who is not None
    outcomes: list[str] = []
    threads = [
        threading.Thread(target=lambda s=s: outcomes.append(db.answer(who, 0, s % 4, None)))
        for s in range(20)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ok"] + ["stale"] * 19
    assert db.progress(who) == 1


# -- withdrawal keeps the id out (a keyed digest, never the id) --------------------------------
WITHDRAWN_ID = "5f0c9e2ab7d4419c8e3a6b1d"  # a Prolific-like id: long enough to find in bytes


def _item_of(trial: Trial) -> str:
    """The item a trial shows (every block but the attention checks shows one)."""
    assert trial.item_id is not None
    return trial.item_id


def _study_bytes(out: Path) -> bytes:
    """Every byte SQLite keeps for the study: the database, its write-ahead log and index."""
    return b"".join(p.read_bytes() for p in sorted(out.glob(DB_FILE + "*")))


def _counts(out: Path) -> tuple[int, int, int, int]:
    con = sqlite3.connect(out / DB_FILE)
    try:
        participants, trials, responses, withdrawn = (
            int(con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
            for t in ("participants", "trials", "responses", "withdrawn")
        )
        return participants, trials, responses, withdrawn
    finally:
        con.close()


def _consent_fields(client: TestClient, pid: str) -> dict[str, str]:
    """A valid consent form for ``pid``: the CSRF token is bound to the browser's pre-session
    cookie, not to the id, so one taken from another id's consent page passes."""
    page = client.get("/?PROLIFIC_PID=FRESH01")
    assert page.status_code == 200 and "consent" in page.text
    return {"csrf": hidden(page.text, "csrf"), "panel_id": pid, "consent": "yes"}


def test_a_withdrawn_panel_id_is_refused_and_nothing_is_recorded(
    study: tuple[Path, Path],
) -> None:
    from choiceaudit.human import withdraw

    items, out = study
    client = _client(items, out)
    html = _enter(client, "W001")
    client.post("/answer", data=answer_fields(html, choices(html)[0]))
    _enter(_client(items, out), "W002")
    done = withdraw(out, "W001")
    assert done.found and done.responses == 1 and done.blocked and not done.erased
    before = _counts(out)
    assert before == (1, 11, 0, 1)
    # the study link again, in a fresh browser: a clear page, 410, no consent form
    again = _client(items, out)
    page = again.get("/?PROLIFIC_PID=W001")
    assert page.status_code == 410
    assert "You have withdrawn from this study; nothing more is recorded" in page.text
    assert 'name="panel_id"' not in page.text and "csrf" not in page.text
    # the old session cookie is gone with the participant; a forged consent is refused too
    assert client.get("/item").status_code == 403
    r = again.post("/consent", data=_consent_fields(again, "W001"))
    assert r.status_code == 410 and "You have withdrawn" in r.text
    assert _counts(out) == before  # nothing written: no participant, no trial, no response
    # no k was consumed: the next newcomer takes the one W001 would have taken again
    _enter(_client(items, out), "W003")
    con = sqlite3.connect(out / DB_FILE)
    ks = dict(con.execute("SELECT panel_id, k FROM participants").fetchall())
    assert ks == {"W002": 1, "W003": 2}


def test_the_latest_participants_k_is_not_reused_after_a_withdrawal(
    study: tuple[Path, Path],
) -> None:
    """k counts consents ever made: when the most recent participant withdraws, the next
    newcomer gets the next k, not the withdrawn one's (the assignment is a function of consent
    order), also after the server restarts on the same study file."""
    from choiceaudit.human import withdraw

    items, out = study
    _enter(_client(items, out), "K001")
    _enter(_client(items, out), "K002")
    assert withdraw(out, "K002").found
    _enter(_client(items, out), "K003")
    assert withdraw(out, "K003", erase=True).found
    _enter(_client(items, out), "K004")  # a fresh client reopens the study file
    con = sqlite3.connect(out / DB_FILE)
    ks = dict(con.execute("SELECT panel_id, k FROM participants").fetchall())
    assert ks == {"K001": 0, "K004": 3}


def test_a_withdrawn_panel_id_takes_no_place_in_a_full_study(
    study: tuple[Path, Path], tmp_path: Path
) -> None:
    from choiceaudit.human import withdraw

    items, out = study
    toml = tmp_path / "two.toml"
    toml.write_text(
        "seed = 1\nmax_participants = 2\nattention_checks = 0\n"
        'blocks = [{ name = "population", n_items = 3 }]\n',
        encoding="utf-8",
    )
    spec, study_items, secret = open_study(items, out, parse_study_file(toml))

    def client() -> TestClient:
        return TestClient(create_app(out, spec, study_items, secret), follow_redirects=True)

    for pid in ("M001", "M002"):
        c = client()
        assert c.post("/consent", data=_consent_fields(c, pid)).status_code == 200
    withdraw(out, "M001")
    c = client()
    r = c.post("/consent", data=_consent_fields(c, "M001"))
    assert r.status_code == 410  # refused as withdrawn, not counted: one place is still free
    c = client()
    r = c.post("/consent", data=_consent_fields(c, "M003"))
    assert r.status_code == 200 and "Instructions" in r.text
    c = client()
    r = c.post("/consent", data=_consent_fields(c, "M004"))
    assert r.status_code == 409 and "full" in r.text


def test_withdrawal_keeps_a_keyed_digest_never_the_panel_id(study: tuple[Path, Path]) -> None:
    import hashlib
    import hmac

    from choiceaudit.human import ResponsesDB, withdraw
    from choiceaudit.human._security import csrf_token, withdrawal_digest

    items, out = study
    client = _client(items, out)
    html = _enter(client, WITHDRAWN_ID)
    _finish(client, html)
    _enter(_client(items, out), "W002")
    assert WITHDRAWN_ID.encode() in _study_bytes(out)  # the check below can see it
    # a study database from before the withdrawn table: the table is created when opened
    con = sqlite3.connect(out / DB_FILE)
    con.execute("DROP TABLE withdrawn")
    con.close()
    done = withdraw(out, WITHDRAWN_ID)
    assert done.found and done.responses == 11 and done.scrubbed
    secret = (out / "secret").read_bytes()
    con = sqlite3.connect(out / DB_FILE)
    rows = con.execute("SELECT digest, withdrawn_at FROM withdrawn").fetchall()
    con.close()
    assert len(rows) == 1
    digest, when = rows[0]
    assert digest == withdrawal_digest(secret, WITHDRAWN_ID) and len(digest) == 64
    assert WITHDRAWN_ID not in digest and WITHDRAWN_ID not in when
    # purpose-separated: neither a plain HMAC of the id nor any CSRF token of the study key
    assert digest != hmac.new(secret, WITHDRAWN_ID.encode(), hashlib.sha256).hexdigest()
    assert digest not in {csrf_token(secret, WITHDRAWN_ID, p) for p in ("consent", "withdrawn")}
    # the deleted rows are overwritten, not merely unlinked: no byte of the files holds the id
    assert WITHDRAWN_ID.encode() not in _study_bytes(out)
    assert b"W002" in _study_bytes(out)
    # the admin view and the import read the participants only, as before
    reader = ResponsesDB(out / DB_FILE)
    assert {r["panel_id"] for r in reader.export()} == {"W002"}
    reader.close()


def test_erase_leaves_no_trace_and_allows_reentry(study: tuple[Path, Path]) -> None:
    from choiceaudit.human import withdraw
    from choiceaudit.human._security import withdrawal_digest

    items, out = study
    client = _client(items, out)
    _enter(client, WITHDRAWN_ID)
    digest = withdrawal_digest((out / "secret").read_bytes(), WITHDRAWN_ID)
    withdraw(out, WITHDRAWN_ID)
    assert _counts(out) == (0, 0, 0, 1) and digest.encode() in _study_bytes(out)
    done = withdraw(out, WITHDRAWN_ID, erase=True)  # the erasure request comes later
    assert not done.found and done.was_blocked and done.erased and not done.blocked
    assert _counts(out) == (0, 0, 0, 0)
    assert digest.encode() not in _study_bytes(out)
    assert WITHDRAWN_ID.encode() not in _study_bytes(out)
    _enter(_client(items, out), WITHDRAWN_ID)  # enrolled afresh
    # an erasure of an enrolled participant deletes them and keeps no digest at all
    done = withdraw(out, WITHDRAWN_ID, erase=True)
    assert done.found and not done.was_blocked and not done.blocked
    assert _counts(out) == (0, 0, 0, 0)
    assert _client(items, out).get(f"/?PROLIFIC_PID={WITHDRAWN_ID}").status_code == 200
    # nothing to erase: an error, nothing changes
    with pytest.raises(InputError, match="no participant and no withdrawal record"):
        withdraw(out, WITHDRAWN_ID, erase=True)


def test_an_unknown_panel_id_is_an_error_but_is_kept_out(study: tuple[Path, Path]) -> None:
    from choiceaudit.human import withdraw

    items, out = study
    client = _client(items, out)
    _enter(client, "W002")
    # a person who withdraws before ever opening the link: reported (no participant), and kept out
    with pytest.raises(InputError, match=r"no participant .* now recorded as withdrawn"):
        withdraw(out, "NEVER01")
    assert _counts(out) == (1, 11, 0, 1)
    page = _client(items, out).get("/?PROLIFIC_PID=NEVER01")
    assert page.status_code == 410 and "You have withdrawn" in page.text
    with pytest.raises(InputError, match="already withdrawn; nothing changed"):
        withdraw(out, "NEVER01")
    assert _counts(out) == (1, 11, 0, 1)


def test_only_the_allowed_host_names_are_answered(study: tuple[Path, Path]) -> None:
    """A request whose Host header is not allowed (a DNS-rebinding page, a stray vhost) gets
    400 before anything is rendered or stored; the allowed name is served as usual."""
    items, out = study
    spec = parse_study_file(study_file(out.parent))
    spec, study_items, secret = open_study(items, out, spec)
    app = create_app(out, spec, study_items, secret, allowed_hosts=["127.0.0.1", "localhost"])
    stranger = TestClient(app, base_url="http://rebind.example", follow_redirects=True)
    for path in ("/?PROLIFIC_PID=H001", "/item", "/admin/export"):
        r = stranger.get(path)
        assert r.status_code == 400 and "Invalid host header" in r.text, path
    r = stranger.post("/consent", data={"panel_id": "H001", "consent": "yes"})
    assert r.status_code == 400
    assert _counts(out)[0] == 0
    for base in ("http://127.0.0.1:8000", "http://localhost"):
        local = TestClient(app, base_url=base, follow_redirects=True)
        assert "consent" in local.get("/?PROLIFIC_PID=H001").text
    _enter(TestClient(app, base_url="http://127.0.0.1:8000", follow_redirects=True), "H001")
    assert _counts(out)[0] == 1
    with pytest.raises(ValueError, match="allowed_hosts is empty"):
        create_app(out, spec, study_items, secret, allowed_hosts=[])


def test_the_served_host_names_default_to_loopback_and_are_required_elsewhere() -> None:
    from choiceaudit.human import allowed_hosts_for

    assert allowed_hosts_for("127.0.0.1", None) == ["127.0.0.1", "localhost"]
    assert allowed_hosts_for("localhost", None) == ["127.0.0.1", "localhost"]
    assert allowed_hosts_for("127.0.0.2", None) == ["127.0.0.1", "localhost", "127.0.0.2"]
    with pytest.raises(InputError, match=r"serving on 0\.0\.0\.0: .*--allowed-host"):
        allowed_hosts_for("0.0.0.0", None)
    with pytest.raises(InputError, match="--allowed-host"):
        allowed_hosts_for("192.0.2.7", None)
    assert allowed_hosts_for("0.0.0.0", ["study.example.org", "*.lab.example"]) == [
        "study.example.org",
        "*.lab.example",
    ]
    assert allowed_hosts_for("0.0.0.0", ["*"]) == ["*"]
    with pytest.raises(InputError, match="needs a host name"):
        allowed_hosts_for("0.0.0.0", [" "])


def test_the_population_block_can_draw_on_the_analysis_set(study: tuple[Path, Path]) -> None:
    # the human study guide's study file: classification takes its n_items conflict items of the analysis
    # set, and the population block draws on the rest of the analysis set (not on nothing)
    items, out = study
    text = (
        'seed = 8\ncondition = "4"\nattention_checks = 1\nblocks = [\n'
        '  { name = "classification", n_items = 6 },\n'
        '  { name = "population", n_items = 4, pool = "analysis_set" },\n]\n'
    )
    spec = parse_study_file(study_file(out.parent, text))
    spec, study_items, _ = open_study(items, out, spec)
    in_set = {i.item_id for i in study_items.items if i.in_analysis_set}
    shared: set[str] | None = None
    for k in range(8):
        ts = assign(spec, study_items, k, f"P{k}")
        cls = {_item_of(t) for t in ts if t.block == "classification"}
        pop = [_item_of(t) for t in ts if t.block == "population"]
        shared = shared or cls
        assert cls == shared and len(cls) == 6
        assert len(pop) == len(set(pop)) == 4
        assert set(pop) <= in_set - cls
