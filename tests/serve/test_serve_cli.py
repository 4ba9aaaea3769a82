"""End to end: ``choiceaudit serve-model`` in its own process, ``choiceaudit score -m openai:…``
against it, and the run equals ``choiceaudit score -m hf:…`` in process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from choiceaudit.cli import app
from choiceaudit.store import RunStore, write_queries
from choiceaudit.types import Query


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_score_over_serve_model_equals_hf_in_process(tiny_dir: Path, tmp_path: Path) -> None:
    queries = [
        Query(
            state=f"the {i}", options=("yes", "no"), neutral_state="", template="{state}\nAnswer:"
        )
        for i in range(4)
    ]
    write_queries(tmp_path / "q.jsonl", queries)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "choiceaudit.cli",
            "serve-model",
            f"hf:{tiny_dir}",
            "--port",
            str(port),
            "--served-name",
            "tiny",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None, server.stdout.read().decode() if server.stdout else ""
            assert time.monotonic() < deadline, "serve-model did not come up"
            time.sleep(0.2)
        runner = CliRunner()
        remote: Any = runner.invoke(
            app,
            [
                "score",
                str(tmp_path / "q.jsonl"),
                "-m",
                "openai:tiny",
                "--out",
                str(tmp_path / "a"),
                "-o",
                f"base_url=http://127.0.0.1:{port}",
            ],
        )
        assert remote.exit_code == 0, remote.output
    finally:
        server.terminate()
        server.wait(timeout=30)
    local = CliRunner().invoke(
        app,
        ["score", str(tmp_path / "q.jsonl"), "-m", f"hf:{tiny_dir}", "--out", str(tmp_path / "b")],
    )
    assert local.exit_code == 0, local.output
    a, b = RunStore(tmp_path / "a").load(), RunStore(tmp_path / "b").load()
    for x, y in zip(a.rows, b.rows, strict=True):
        assert x.query.id == y.query.id
        for rule in ("sum", "mean", "pmi"):
            assert abs(x.decision.scores[rule] - y.decision.scores[rule]).max() <= 1e-5
    assert a.manifest.scorer["model_id"] == str(tiny_dir)
