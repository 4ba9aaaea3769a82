"""The study app throttles by what a client cannot rotate: its address (and, at consent and
resume, the panel id), in tables of bounded size; X-Forwarded-For only from a trusted proxy."""

from __future__ import annotations

import secrets
import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from choiceaudit.errors import InputError
from choiceaudit.human import (
    DB_FILE,
    SESSION_COOKIE,
    KeyedLimiter,
    Limits,
    client_key,
    create_app,
    open_study,
    parse_study_file,
)
from human.human_helpers import frozen_items, hidden, resume_csrf, study_file

FULL_AT_20 = (
    "seed = 1\nmax_participants = 20\nattention_checks = 0\n"
    'blocks = [{ name = "population", n_items = 3 }]\n'
)


def _app(tmp_path: Path, limits: Limits, toml: str = FULL_AT_20) -> Any:
    items, out = frozen_items(tmp_path), tmp_path / "study"
    spec, study_items, secret = open_study(items, out, parse_study_file(study_file(tmp_path, toml)))
    return create_app(out, spec, study_items, secret, limits=limits)


def _participants(tmp_path: Path) -> int:
    con = sqlite3.connect(tmp_path / "study" / DB_FILE)
    try:
        return int(con.execute("SELECT COUNT(*) FROM participants").fetchone()[0])
    finally:
        con.close()


def test_a_new_cookie_on_every_request_is_still_one_client(tmp_path: Path) -> None:
    # a refill slow enough that the test's own duration adds no token: exactly the burst passes
    codes = []
    with TestClient(_app(tmp_path, Limits(rate=0.01, burst=30))) as client:
        for _ in range(100):
            client.cookies.set(SESSION_COOKIE, secrets.token_urlsafe(3000))
            codes.append(client.get("/?PROLIFIC_PID=R1").status_code)
    assert codes.count(200) == 30 and codes[:30] == [200] * 30
    assert codes.count(429) == 70


def test_rotating_cookies_and_invented_ids_cannot_fill_the_study(tmp_path: Path) -> None:
    # requests are not the limit here (1000 a second): enrolment per address is, at its default
    app = _app(tmp_path, Limits(rate=1000, burst=1000))
    assert Limits().enrol_limit == 5
    client = TestClient(app, follow_redirects=True)
    codes = []
    for n in range(50):
        client.cookies.clear()  # a fresh browser each time
        page = client.get(f"/?PROLIFIC_PID=INVENTED{n:03d}")
        r = client.post(
            "/consent",
            data={
                "csrf": hidden(page.text, "csrf"),
                "panel_id": f"INVENTED{n:03d}",
                "consent": "yes",
            },
        )
        codes.append(r.status_code)
    assert codes[:5] == [200] * 5 and codes[5:] == [429] * 45
    assert _participants(tmp_path) == 5  # far from max_participants = 20
    # another address enrols as before: the limit is per address, not global
    other = TestClient(app, client=("198.51.100.4", 40000))
    page = other.get("/?PROLIFIC_PID=OTHER1")
    r = other.post(
        "/consent", data={"csrf": hidden(page.text, "csrf"), "panel_id": "OTHER1", "consent": "yes"}
    )
    assert r.status_code == 200 and "Instructions" in r.text
    assert _participants(tmp_path) == 6


def test_resume_attempts_are_limited_per_panel_id_from_any_address(tmp_path: Path) -> None:
    app = _app(tmp_path, Limits(rate=1000, burst=1000, id_limit=4, id_window=600))
    codes = []
    for n in range(6):  # six addresses guessing one id's code
        c = TestClient(app, client=(f"192.0.2.{n + 1}", 40000))
        page = c.get("/?PROLIFIC_PID=TARGET1")
        r = c.post(
            "/resume",
            data={"csrf": resume_csrf(page.text), "panel_id": "TARGET1", "code": "AAAA-BBBB-CCCC"},
        )
        codes.append(r.status_code)
    assert codes == [403] * 4 + [429] * 2


def _fill(limiter: KeyedLimiter) -> None:
    for n in range(100_000):  # distinct keys of 4,000 characters each
        limiter.allow(f"{n:08d}" + "x" * 3992, now=n * 0.001)


def test_a_full_table_stays_at_its_size_whatever_the_keys() -> None:
    """100,000 distinct keys: the table keeps 32,768 buckets (its default), each a 16-byte
    digest and a pair of floats, so its size does not grow with the keys' length."""
    limiter = KeyedLimiter(10, 30)
    assert limiter.max_keys == 32_768
    _fill(limiter)
    assert len(limiter) == 32_768
    assert limiter.table_bytes() < 12 * 2**20  # the human study guide's bound for one full table
    # the most recent keys are the ones kept: the newest still has its bucket (29 tokens left)
    assert limiter.allow(f"{99_999:08d}" + "x" * 3992, now=100.0) is None
    assert len(limiter) == 32_768


@pytest.mark.slow
def test_a_full_table_holds_a_bounded_amount_of_memory() -> None:
    """The same under tracemalloc: everything the table allocated and still holds."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        limiter = KeyedLimiter(10, 30)
        _fill(limiter)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(limiter) == 32_768
    assert held < 12 * 2**20  # the human study guide's bound for one full table


def test_a_bucket_refills_at_its_rate_and_says_how_long_to_wait() -> None:
    limiter = KeyedLimiter(rate=0.5, burst=2)
    assert limiter.allow("a", now=0.0) is None
    assert limiter.allow("a", now=0.0) is None
    assert limiter.allow("a", now=0.0) == pytest.approx(2.0)  # one token at 0.5 a second
    assert limiter.allow("a", now=1.0) == pytest.approx(1.0)
    assert limiter.allow("a", now=2.0) is None
    assert limiter.allow("b", now=2.0) is None  # another key, its own bucket


def test_forwarded_for_is_ignored_unless_the_peer_is_a_trusted_proxy() -> None:
    default = Limits()
    assert default.trusted_proxies == ()
    assert client_key("203.0.113.9", "1.2.3.4", default) == "ip:203.0.113.9"
    assert client_key("127.0.0.1", "1.2.3.4", default) == "ip:127.0.0.1"
    proxied = Limits(trusted_proxies=("10.0.0.0/8", "127.0.0.1"))
    # the rightmost address the trusted proxies did not write is the client; what the client
    # put to its left proves nothing
    assert client_key("127.0.0.1", "6.6.6.6, 203.0.113.9", proxied) == "ip:203.0.113.9"
    assert client_key("127.0.0.1", "6.6.6.6, 203.0.113.9, 10.1.2.3", proxied) == "ip:203.0.113.9"
    assert client_key("127.0.0.1", "junk", proxied) == "ip:127.0.0.1"
    assert client_key("203.0.113.9", "1.2.3.4", proxied) == "ip:203.0.113.9"  # not a proxy
    # an IPv6 host picks freely inside its /64, so the /64 is the client
    a = client_key("2001:db8:1:2::1", None, default)
    b = client_key("2001:db8:1:2:ffff::9", None, default)
    assert a == b == "ip:2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1", None, default) != a
    with pytest.raises(InputError, match="trusted_proxies"):
        Limits(trusted_proxies=("not-an-address",))


def test_the_app_keys_on_the_forwarded_address_only_behind_a_trusted_proxy(
    tmp_path: Path,
) -> None:
    app = _app(tmp_path, Limits(rate=0.01, burst=2, trusted_proxies=("192.0.2.1",)))
    direct = TestClient(app, client=("203.0.113.50", 40000))
    codes = [
        direct.get("/?PROLIFIC_PID=D1", headers={"X-Forwarded-For": f"1.1.1.{n}"}).status_code
        for n in range(4)
    ]
    assert codes == [200, 200, 429, 429]  # a client cannot name its own address
    proxy = TestClient(app, client=("192.0.2.1", 40000))
    codes = [
        proxy.get("/?PROLIFIC_PID=D1", headers={"X-Forwarded-For": f"1.1.1.{n}"}).status_code
        for n in range(4)
    ]
    assert codes == [200] * 4  # four clients behind the proxy, one request each


def test_serve_turns_off_uvicorns_own_forwarded_header_handling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    from choiceaudit.human import serve

    seen: list[uvicorn.Config] = []

    class Recorded:
        """Stands in for uvicorn's server: records its configuration instead of serving."""

        def __init__(self, config: uvicorn.Config) -> None:
            seen.append(config)

        def run(self, sockets: object = None) -> None:
            return None

    monkeypatch.setattr(uvicorn, "Server", Recorded)
    study = parse_study_file(study_file(tmp_path))
    serve(frozen_items(tmp_path), tmp_path / "study", study, port=0)
    (config,) = seen
    assert config.proxy_headers is False


def test_serve_human_passes_its_limits_and_refuses_a_bad_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    import choiceaudit.human
    from choiceaudit.cli import app as cli

    seen: dict[str, Any] = {}
    monkeypatch.setattr(choiceaudit.human, "serve", lambda *a, **kw: seen.update(kw))
    items, toml = frozen_items(tmp_path), study_file(tmp_path)
    args = ["serve-human", str(items), "--out", str(tmp_path / "s"), "--study", str(toml)]
    extra = ["--enrol-limit", "7", "--id-window", "60", "--trusted-proxy", "10.0.0.0/8"]
    result = CliRunner().invoke(cli, [*args, *extra])
    assert result.exit_code == 0, result.output
    assert seen["limits"] == Limits(enrol_limit=7, id_window=60, trusted_proxies=("10.0.0.0/8",))
    bad = CliRunner().invoke(cli, [*args, "--trusted-proxy", "proxy.local"])
    assert bad.exit_code != 0 and "Traceback" not in bad.output
    lines = [line for line in bad.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "trusted_proxies" in lines[0] and "proxy.local" in lines[0]
