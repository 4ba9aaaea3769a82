"""The study server as a process on loopback: many participants at once lose
nothing and record nothing twice; a SIGKILL mid-study loses nothing acknowledged."""

from __future__ import annotations

import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from human_helpers import Server, frozen_items, run_participant, study_file

from choiceaudit.errors import InputError
from choiceaudit.human import DB_FILE, open_study, parse_study_file


def _stored(study: Path) -> set[tuple[str, int, int]]:
    con = sqlite3.connect(study / DB_FILE)
    try:
        rows = con.execute(
            "SELECT p.panel_id, r.position, r.slot FROM responses r JOIN participants p "
            "ON p.id = r.participant"
        ).fetchall()
    finally:
        con.close()
    return {(str(a), int(b), int(c)) for a, b, c in rows}


@pytest.mark.parametrize(
    "n", [pytest.param(10, id="10"), pytest.param(50, id="50", marks=pytest.mark.slow)]
)
def test_concurrent_participants_lose_nothing_and_record_nothing_twice(
    tmp_path: Path, n: int
) -> None:
    items, toml = frozen_items(tmp_path), study_file(tmp_path)
    study = tmp_path / "study"
    server = Server(items, study, toml)
    acked: list[tuple[str, int, int]] = []
    try:
        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=n) as pool:
            pages = list(
                pool.map(
                    lambda k: run_participant(server.url, f"L{k:03d}", acked, pick=k), range(n)
                )
            )
        elapsed = time.monotonic() - start
    finally:
        server.kill()
    assert all("C8TEST" in p for p in pages)
    assert len(acked) == n * 11 == len(set(acked))
    stored = _stored(study)
    assert stored == set(acked)  # nothing lost, nothing extra
    con = sqlite3.connect(study / DB_FILE)
    assert con.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == n * 11
    ks = [r[0] for r in con.execute("SELECT k FROM participants ORDER BY k")]
    assert ks == list(range(n))  # balanced assignment needs each k once
    assert elapsed < 120


def test_sigkill_mid_study_loses_nothing_acknowledged(tmp_path: Path) -> None:
    items, toml = frozen_items(tmp_path), study_file(tmp_path)
    study = tmp_path / "study"
    server = Server(items, study, toml)
    acked: list[tuple[str, int, int]] = []
    n, n_before, n_busy = 6, 2, 4
    browsers: dict[str, httpx.Cookies] = {}  # each participant comes back in their browser

    def hammer(k: int) -> None:
        # answer until the server dies under us; only acknowledged answers are counted
        try:
            run_participant(server.url, f"K{k:02d}", acked, pick=k, browsers=browsers)
        except Exception:
            return

    for k in range(n_before):  # some answers before the kill
        run_participant(server.url, f"K{k:02d}", acked, pick=k, stop_after=3, browsers=browsers)
    threads = [threading.Thread(target=hammer, args=(k,)) for k in range(n_before, n)]
    for t in threads:
        t.start()
    initial = len(acked)
    deadline = time.monotonic() + 60
    while len(acked) < initial + 8 and time.monotonic() < deadline:
        time.sleep(0.01)  # kill while the four are mid-study (44 answers to give)
    server.kill()  # SIGKILL: no shutdown handler runs
    for t in threads:
        t.join(timeout=60)
    before = list(acked)
    assert initial + 8 <= len(before) < n * 11  # killed mid-study
    assert set(before) <= _stored(study)  # every acknowledged answer is on disk
    # restart: each participant resumes where the database says and finishes
    server = Server(items, study, toml)
    try:
        with ThreadPoolExecutor(max_workers=n) as pool:
            pages = list(
                pool.map(
                    lambda k: run_participant(
                        server.url, f"K{k:02d}", acked, pick=k, browsers=browsers
                    ),
                    range(n),
                )
            )
    finally:
        server.kill()
    assert all("C8TEST" in page for page in pages)
    stored = _stored(study)
    assert set(acked) <= stored and len(acked) == len(set(acked))
    assert len(stored) == n * 11  # every page answered exactly once
    for k in range(n):
        assert sorted(p for pid, p, _ in stored if pid == f"K{k:02d}") == list(range(11))
    # an answer committed while the server died before replying was never acknowledged: kept,
    # and the participant resumed after it (at most the one in flight per participant)
    extra = stored - set(acked)
    assert len({pid for pid, _, _ in extra}) == len(extra) <= n_busy


def test_reopening_a_study_with_another_study_file_is_refused(tmp_path: Path) -> None:
    items, toml = frozen_items(tmp_path), study_file(tmp_path)
    open_study(items, tmp_path / "study", parse_study_file(toml))
    (tmp_path / "b").mkdir()
    other = study_file(
        tmp_path / "b", 'seed = 12\nblocks = [{ name = "population", n_items = 3 }]\n'
    )
    with pytest.raises(InputError, match="another study file"):
        open_study(items, tmp_path / "study", parse_study_file(other))
    spec, _, _ = open_study(items, tmp_path / "study", None)  # no file: the recorded one
    assert spec == parse_study_file(toml)


def test_withdrawal_while_the_server_runs_keeps_the_id_out(tmp_path: Path) -> None:
    from choiceaudit.human import withdraw

    items, toml = frozen_items(tmp_path), study_file(tmp_path)
    study = tmp_path / "study"
    server = Server(items, study, toml)
    acked: list[tuple[str, int, int]] = []
    pid = "5f0c9e2ab7d4419c8e3a6b1d"
    browsers: dict[str, httpx.Cookies] = {}
    try:
        run_participant(server.url, pid, acked, stop_after=3)
        run_participant(server.url, "R002", acked, stop_after=2, browsers=browsers)
        done = withdraw(study, pid)  # the server keeps its connection open meanwhile
        assert done.found and done.responses == 3 and done.scrubbed
        page = httpx.get(f"{server.url}/?PROLIFIC_PID={pid}", timeout=30)
        assert page.status_code == 410 and "nothing more is recorded" in page.text
        # the served study answers its loopback names only (serve-human's default)
        forged = httpx.get(f"{server.url}/", headers={"Host": "rebind.example"}, timeout=30)
        assert forged.status_code == 400
        # the other one comes back in the same browser, resumes and finishes
        last = run_participant(server.url, "R002", acked, browsers=browsers)
    finally:
        server.kill()
    assert "C8TEST" in last
    assert {p for p, _, _ in _stored(study)} == {"R002"}
    con = sqlite3.connect(study / DB_FILE)
    assert con.execute("SELECT COUNT(*) FROM withdrawn").fetchone()[0] == 1
    assert con.execute("SELECT COUNT(*) FROM participants").fetchone()[0] == 1
    con.close()
    assert not any(pid.encode() in p.read_bytes() for p in study.glob(DB_FILE + "*"))
