"""No API key in any file a run writes, whatever a server echoes: both HTTP scorers run
against servers that put the bearer key into every position they report — the models list,
model and build names, fingerprints, usage, error bodies of 4xx and 5xx, a header reflected
into a body — and every byte of the run directory, the logs and the error is searched."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from choiceaudit.audit import run_scoring
from choiceaudit.scorers import OpenAIScorer, PartialScoreError, ScorerError, load_scorer
from choiceaudit.types import Query
from scorers.openai_fake_server import FakeServer

KEY = "sk-live-7c1e0f9a3b5d2468"


def _grep(run: Path, *texts: str) -> list[str]:
    """Every file under ``run`` and every text that contains the key."""
    found = [str(p) for p in run.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    return found + [f"text {i}" for i, t in enumerate(texts) if KEY in t]


class EchoingOpenAI(FakeServer):
    """The toy completions server, echoing the Authorization header everywhere it can."""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        auth = request.headers.get("authorization", "")
        if request.method == "GET":
            entry = {
                "id": "toy",
                "root": auth,
                "owned_by": KEY,
                "choiceaudit": {"model_id": auth, "tokenizer": {"name_or_path": KEY}},
            }
            return httpx.Response(200, json={"data": [entry, {"id": KEY, "root": auth}]})
        prompt = str(json.loads(request.content)["prompt"])
        if "cat 1" in prompt:
            return httpx.Response(400, json={"error": {"message": f"bad header {auth}"}})
        if "cat 2" in prompt and not getattr(self, "failed_once", False):
            self.failed_once = True
            return httpx.Response(503, text=f"overloaded for {auth}")
        data = super().__call__(request).json()
        data["system_fingerprint"] = f"fp-{auth}"
        data["usage"] = {**data.get("usage", {}), KEY: 1}
        if "cat 3" in prompt:
            data["model"] = auth
        return httpx.Response(200, json=data)


def queries(n: int) -> list[Query]:
    return [
        Query(
            state=f"The cat {i}", options=("yes", "no"), instruction="", template="{state}\nAnswer:"
        )
        for i in range(n)
    ]


def test_openai_writes_no_secret_anywhere(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CHOICEAUDIT_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    scorer = OpenAIScorer(
        "http://llama.test",
        "toy",
        transport=httpx.MockTransport(EchoingOpenAI()),
        sleep=lambda s: None,
        reorder_check=1,
    )
    run = tmp_path / "run"
    with pytest.raises(PartialScoreError) as info:
        run_scoring(scorer, queries(5), run, chunk_size=5)
    manifest = json.loads((run / "manifest.json").read_text())
    reported = manifest["scorer"]["server"]["reported"]["entry"]
    assert reported["root"] == "Bearer ***" and reported["owned_by"] == "***"
    assert manifest["scorer"]["server"]["refused_models"] == {"Bearer ***": 1}
    assert manifest["scorer"]["server"]["system_fingerprints"] == ["fp-Bearer ***"]
    assert manifest["scorer"]["probe"]["status"] == "passed"
    # the answer from "another model" (the key's echo, redacted) found the server
    # inconsistent, which is what the session records
    assert "answered as 'Bearer ***'" in manifest["sessions"][-1]["failed"]
    captured = capsys.readouterr()
    assert _grep(run, str(info.value), caplog.text, captured.out, captured.err) == []


def test_systemone_writes_no_secret_anywhere(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CHOICEAUDIT_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    failed: set[str] = set()

    def handler(request: httpx.Request) -> httpx.Response:
        auth = request.headers["authorization"]
        body = json.loads(request.content)
        state = body["state"]
        if state == "s1":
            return httpx.Response(401, text=f"invalid credentials: {auth}")
        if state == "s2" and state not in failed:
            failed.add(state)
            return httpx.Response(503, text=f"busy {auth}")
        keys = list(body["questions"]["q"]["criteria"])
        probs = {k: 1.0 / len(keys) for k in keys}
        answer = {"type": "choice", "choice": keys[0], "probabilities": probs}
        return httpx.Response(
            200,
            json={
                "answers": {"q": answer},
                "model": auth,
                "build": f"build-{KEY}",
                "usage": {KEY: 2},
            },
        )

    scorer = load_scorer(
        "systemone:decider",
        base_url="http://decider.test",
        transport=httpx.MockTransport(handler),
        sleep=lambda s: None,
    )
    qs = [
        Query(
            state=f"s{i}",
            options=("a", "b"),
            instruction="pick",
            keys=("A", "B"),
            answer_format="key",
        )
        for i in range(4)
    ]
    run = tmp_path / "run"
    with pytest.raises(PartialScoreError) as info:
        run_scoring(scorer, qs, run, chunk_size=4)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["scorer"]["resolved_builds"] == ["build-***"]
    assert "HTTP 401" in manifest["sessions"][-1]["failed"]
    captured = capsys.readouterr()
    assert _grep(run, str(info.value), caplog.text, captured.out, captured.err) == []
    assert len(list(run.rglob("*.parquet"))) >= 1  # rows were written, and searched


def test_redact_reaches_every_string_of_a_structure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K", KEY)
    scorer = OpenAIScorer("http://x.test", "m", api_key_env="K")
    nested: Any = {KEY: [f"a{KEY}b", (KEY, 3)], "n": {1, 2}, "x": None}
    assert scorer.redact(nested) == {"***": ["a***b", ("***", 3)], "n": {1, 2}, "x": None}


def _fragments(text: str, size: int = 6) -> list[str]:
    """Every piece of the key at least ``size`` characters long that ``text`` holds."""
    return [KEY[i : i + size] for i in range(len(KEY) - size + 1) if KEY[i : i + size] in text]


def _scorers(body: str) -> list[tuple[Any, list[Query]]]:
    """Both HTTP backends against a server whose every answer is a 400 carrying ``body``."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, text=body)

    openai = OpenAIScorer(
        "http://llama.test",
        "toy",
        transport=httpx.MockTransport(handler),
        sleep=lambda s: None,
        probe=False,
        reorder_check=0,
    )
    systemone = load_scorer(
        "systemone:decider",
        base_url="http://decider.test",
        transport=httpx.MockTransport(handler),
        sleep=lambda s: None,
    )
    keyed = [
        Query(
            state="s", options=("a", "b"), instruction="pick", keys=("A", "B"), answer_format="key"
        )
    ]
    return [(openai, queries(1)), (systemone, keyed)]


def test_no_piece_of_the_key_survives_a_cut_error_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The key at every offset of an error body longer than either backend's snippet: the
    body is redacted whole before it is cut, so no fragment of the key is left by the cut."""
    monkeypatch.setenv("CHOICEAUDIT_API_KEY", KEY)
    longest = max(OpenAIScorer.snippet, 200) + len(KEY) + 2
    for offset in range(longest):
        body = "x" * offset + KEY + "y" * 400
        for scorer, qs in _scorers(body):
            with pytest.raises(ScorerError) as info:
                scorer.score(qs)
            assert _fragments(str(info.value)) == [], (type(scorer).__name__, offset)
    # a whole run with the key split by the openai snippet's cut: nothing on disk or printed
    for name, (scorer, qs) in zip(("openai", "systemone"), _scorers("x" * 290 + KEY), strict=True):
        run = tmp_path / name
        with pytest.raises(ScorerError) as info:
            run_scoring(scorer, qs, run)
        captured = capsys.readouterr()
        texts = [str(info.value), captured.out, captured.err]
        texts += [p.read_text("utf-8", "replace") for p in run.rglob("*") if p.is_file()]
        assert [f for t in texts for f in _fragments(t)] == [], name


class GeneratesTheKey(FakeServer):
    """Echoes, then 'generates' 30 characters and the key after the prompt: the message that
    quotes the first 40 characters after the prompt would cut the key."""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        response = super().__call__(request)
        if request.method == "GET":
            return response
        data = response.json()
        for choice in data["choices"]:
            choice["text"] = str(choice.get("text", "")) + "x" * 30 + KEY
        return httpx.Response(200, json=data)


def test_a_server_text_quoted_in_part_holds_no_piece_of_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CHOICEAUDIT_API_KEY", KEY)
    scorer = OpenAIScorer(
        "http://llama.test",
        "toy",
        transport=httpx.MockTransport(GeneratesTheKey()),
        sleep=lambda s: None,
        probe=False,
        reorder_check=0,
    )
    with pytest.raises(ScorerError) as info:
        scorer.score(queries(1))
    assert "after the prompt" in str(info.value)  # the message that quotes the text
    assert _fragments(str(info.value)) == []
