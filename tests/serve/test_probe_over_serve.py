"""``choiceaudit serve-model`` passes the ``openai`` scorer's conformance probe: its echo is
conditional (equal to its own one-token completions), nothing is generated after the echo, its
tokens tile the text and it takes several prompts per request."""

from __future__ import annotations

from pathlib import Path

import httpx

from choiceaudit.audit import run_scoring
from choiceaudit.scorers import OpenAIScorer
from choiceaudit.store import RunStore
from choiceaudit.types import Query


def test_serve_model_passes_the_probe(tiny_url: str) -> None:
    result = OpenAIScorer(tiny_url, "tiny").prepare()
    assert result.status == "passed" and result.prompts_per_request == "several"
    assert result.compared >= 1
    assert result.max_abs_diff is not None and result.max_abs_diff < 1e-5


def test_serve_model_answers_a_one_token_completion(tiny_url: str) -> None:
    body = {"model": "tiny", "prompt": "the cat", "max_tokens": 1, "logprobs": 1, "echo": False}
    data = httpx.post(f"{tiny_url}/v1/completions", json=body, timeout=30).json()
    (choice,) = data["choices"]
    token, lp = choice["logprobs"]["tokens"][0], choice["logprobs"]["token_logprobs"][0]
    assert choice["text"] == token and lp < 0 and choice["logprobs"]["text_offset"] == [7]
    assert data["usage"]["completion_tokens"] == 1


def test_a_run_over_serve_model_records_the_probe(tiny_url: str, tmp_path: Path) -> None:
    qs = [
        Query(
            state=f"the {i} cat", options=("yes", "no"), instruction="", template="{state}\nAnswer:"
        )
        for i in range(2)
    ]
    run_scoring(OpenAIScorer(tiny_url, "tiny", reorder_check=0), qs, tmp_path / "run")
    probe = RunStore(tmp_path / "run").read_manifest()["scorer"]["probe"]
    assert probe["status"] == "passed"
