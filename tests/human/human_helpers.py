"""Shared helpers for the human-condition tests: a frozen lancaster item set built in the test
(no shared data needed), a study file, and a participant session driven over HTTP."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from choiceaudit.instruments.signalling import build_signalling_items, freeze_instrument
from choiceaudit.types import ItemSet

STUDY_TOML = """
seed = 11
condition = "4"
attention_checks = 1
completion_code = "C8TEST"
blocks = [
  { name = "classification", n_items = 6 },
  { name = "population", n_items = 4, pool = "all" },
]
"""


@cache
def lancaster_items() -> ItemSet:
    return build_signalling_items("lancaster", seed=3, n_candidates=2000, n_items=40).items


def frozen_items(root: Path) -> Path:
    """The lancaster item set frozen under ``root/items`` (once per directory)."""
    target = root / "items"
    if not (target / "instrument.json").exists():
        freeze_instrument(lancaster_items(), target)
    return target


def study_file(root: Path, text: str = STUDY_TOML) -> Path:
    path = root / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


def hidden(html: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert m, f"no field {name} in page"
    return m.group(1)


def resume_csrf(html: str) -> str:
    """The CSRF token of the consent page's resume-code form (the second form on the page)."""
    return hidden(html[html.index('action="/resume"') :], "csrf")


def choices(html: str) -> list[int]:
    return [int(v) for v in re.findall(r'name="choice" value="(\d+)"', html)]


def check_target(html: str) -> str | None:
    m = re.search(r"please choose <b>([^<]*)</b>", html)
    return m.group(1) if m else None


def option_slot(html: str, text: str) -> int:
    for slot, label in re.findall(
        r'name="choice" value="(\d+)" required id="choice-\d+">([^<]*)</label>', html
    ):
        if label == text:
            return int(slot)
    raise AssertionError(f"option {text!r} not on the page")


def answer_fields(html: str, slot: int, rt: int | None = 1234) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "csrf": hidden(html, "csrf"),
        "position": hidden(html, "position"),
        "choice": str(slot),
    }
    if rt is not None:
        fields["rt_ms"] = str(rt)
    return fields


# -- a real server on loopback ---------------------------------------------------------------
import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import httpx  # noqa: E402

SRC = Path(__file__).resolve().parents[2] / "src"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``choiceaudit serve-human`` as a subprocess on 127.0.0.1 (started and stopped by the
    test)."""

    def __init__(self, items: Path, study: Path, study_toml: Path, *, rate: float = 1000.0) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "choiceaudit.cli",
                "serve-human",
                str(items),
                "--out",
                str(study),
                "--study",
                str(study_toml),
                "--port",
                str(self.port),
                "--rate",
                str(rate),
                "--burst",
                str(int(rate)),
                "--enrol-limit",  # every simulated participant comes from 127.0.0.1
                "1000",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read().decode()}")  # type: ignore[union-attr]
            try:
                httpx.get(self.url + "/", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        self.kill()
        raise RuntimeError("server did not start within 60 s")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


def run_participant(
    url: str,
    pid: str,
    acked: list[tuple[str, int, int]],
    *,
    pick: int = 0,
    stop_after: int | None = None,
    browsers: dict[str, httpx.Cookies] | None = None,
) -> str:
    """Take part as ``pid`` over HTTP; every answer the server acknowledged (the redirect to
    the next page arrived) is appended to ``acked`` as (panel id, position, slot). Returns the
    last page. ``browsers`` keeps each participant's cookies between calls, so a second call
    is the same browser coming back (the panel id alone resumes nothing)."""
    jar = browsers.get(pid) if browsers is not None else None
    with httpx.Client(base_url=url, follow_redirects=True, timeout=30, cookies=jar) as c:
        if browsers is not None:
            browsers[pid] = c.cookies
        page = c.get(f"/?PROLIFIC_PID={pid}").text
        if "consent" in page and 'name="panel_id"' in page:
            page = c.post(
                "/consent", data={"csrf": hidden(page, "csrf"), "panel_id": pid, "consent": "yes"}
            ).text
        if 'action="/start"' in page:
            page = c.post("/start", data={"csrf": hidden(page, "csrf")}).text
        n = 0
        while 'name="choice"' in page and (stop_after is None or n < stop_after):
            target = check_target(page)
            options = choices(page)
            slot = option_slot(page, target) if target else options[pick % len(options)]
            position = int(hidden(page, "position"))
            r = c.post("/answer", data=answer_fields(page, slot))
            assert r.status_code == 200, (pid, r.status_code, r.text)
            acked.append((pid, position, slot))
            page = r.text
            n += 1
        return page
