"""``choiceaudit serve-model``: the completions API over the local engine, on a real server.

The response must be the OpenAI completions ``logprobs`` object with true character offsets
and the engine's float64 log-probabilities (checked against one plain float64 forward per
prompt); anything the server cannot honour (generation, token-id prompts, alternatives, a
prompt beyond the context window, another model's name, a missing key) is refused with the
OpenAI error body and the right status.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from choiceaudit.scorers import OpenAIScorer
from choiceaudit.types import Query

CONTEXT = 48  # the tiny model's max_position_embeddings (conftest.CONTEXT)


def naive_float64(model: Any, ids: list[int]) -> np.ndarray:
    """log P(ids[t] | ids[:t]) for t >= 1 from one plain forward in float64."""
    import copy

    import torch

    wide = copy.deepcopy(model).double()
    with torch.inference_mode():
        logits = wide(torch.tensor([ids])).logits[0]
    logp = torch.log_softmax(logits, dim=-1)
    return logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].numpy()  # type: ignore[no-any-return]


def complete(url: str, **body: Any) -> httpx.Response:
    payload = {"model": "tiny", "echo": True, "logprobs": 1, "max_tokens": 0, **body}
    return httpx.post(f"{url}/v1/completions", json=payload, timeout=30)


def test_echo_logprobs_have_true_offsets_and_float64_values(
    tiny_url: str, tiny_scorer: Any
) -> None:
    texts = ["the cat\nAnswer: yes", "Answer: no"]
    response = complete(tiny_url, prompt=texts)
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "text_completion" and body["model"] == "tiny"
    tokenizer = tiny_scorer.lm.tokenizer
    for text, choice in zip(texts, body["choices"], strict=True):
        lp = choice["logprobs"]
        ids = tokenizer(text)["input_ids"]
        assert choice["prompt_token_ids"] == ids and choice["text"] == text
        assert lp["tokens"][0] == "" and lp["text_offset"][0] == 0  # the BOS is zero-width
        for tok, off in zip(lp["tokens"], lp["text_offset"], strict=True):
            assert text[off : off + len(tok)] == tok
        assert "".join(lp["tokens"]) == text
        assert lp["token_logprobs"][0] is None
        values = np.array(lp["token_logprobs"][1:])
        # the engine is a plain fp32 forward: as close to float64 as fp32 gets
        np.testing.assert_allclose(values, naive_float64(tiny_scorer.lm.model, ids), atol=1e-5)
    assert body["usage"]["completion_tokens"] == 0


@pytest.mark.parametrize(
    ("change", "status", "message"),
    [
        ({"max_tokens": 1}, 400, "max_tokens=0"),
        ({"echo": False}, 400, "echo=true"),
        ({"logprobs": 5}, 400, "logprobs must be 0 or 1"),
        ({"prompt": [[1, 2, 3]]}, 400, "list of strings"),
        ({"model": "gpt-4"}, 404, "not served here"),
        ({"prompt": "x" * (CONTEXT + 5)}, 400, "context window"),
        ({"prompt": ""}, 400, "at least two"),
    ],
)
def test_requests_it_cannot_honour_are_refused(
    tiny_url: str, change: dict[str, Any], status: int, message: str
) -> None:
    response = complete(tiny_url, **{"prompt": "Answer: yes", **change})
    assert response.status_code == status
    assert message in response.json()["error"]["message"]


def test_a_prompt_with_a_lone_surrogate_is_refused_with_a_400_naming_it(tiny_url: str) -> None:
    # JSON may carry "\ud800"; the client must send the escaped bytes itself (httpx's json=
    # would refuse to encode them), which is what a hostile or broken client does.
    payload = {"model": "tiny", "echo": True, "logprobs": 1, "max_tokens": 0}
    payload["prompt"] = ["fine", "lone \ud800 surrogate"]
    body = json.dumps(payload, ensure_ascii=True).encode("ascii")
    response = httpx.post(
        f"{tiny_url}/v1/completions",
        content=body,
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 400
    assert "prompt[1] is not valid Unicode" in response.json()["error"]["message"]


def test_models_endpoint_reports_the_identity(tiny_url: str, tiny_dir: Path) -> None:
    (entry,) = httpx.get(f"{tiny_url}/v1/models", timeout=10).json()["data"]
    assert entry["id"] == "tiny" and entry["max_model_len"] == CONTEXT
    own = entry["choiceaudit"]
    assert own["model_id"] == str(tiny_dir) and own["dtype"] == "float32"
    assert len(own["weights_sha256"]) == 64
    assert own["tokenizer"]["bos_token"] == "<s>"


def test_api_key_is_required_when_set(tiny_scorer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from choiceaudit.serve import ServerThread, create_app

    with ServerThread(create_app(tiny_scorer, served_name="tiny", api_key="k-123")) as url:
        assert complete(url, prompt="Answer: yes").status_code == 401
        monkeypatch.setenv("TINY_KEY", "k-123")
        scorer = OpenAIScorer(url, "tiny", api_key_env="TINY_KEY", reorder_check=0)
        query = Query(state="the", options=("yes", "no"), template="{state}\nAnswer:")
        assert len(scorer.score([query])) == 1


def test_the_app_counts_the_engines_time_within_the_round_trips(tiny_scorer: Any) -> None:
    import time

    from choiceaudit.serve import ServerThread, create_app

    app = create_app(tiny_scorer, served_name="tiny")
    with ServerThread(app) as url:
        assert app.state.engine_seconds == 0.0  # nothing scored yet
        generated = complete(url, prompt="Answer: no", echo=False, max_tokens=1)
        assert generated.status_code == 200  # a greedy token: generated, not scored
        assert app.state.engine_seconds == 0.0
        start = time.perf_counter()
        for _ in range(2):
            assert complete(url, prompt="Answer: yes").status_code == 200
        wall = time.perf_counter() - start
    assert 0.0 < app.state.engine_seconds < wall


def test_add_special_tokens_false_scores_the_text_without_the_bos(tiny_url: str) -> None:
    # the openai scorer sends it after applying a chat template, which writes its own
    with_bos = complete(tiny_url, prompt="the cat").json()["choices"][0]
    without = complete(tiny_url, prompt="the cat", add_special_tokens=False).json()["choices"][0]
    assert with_bos["logprobs"]["tokens"][0] == "" and with_bos["prompt_token_ids"][0] == 2
    assert without["prompt_token_ids"] == with_bos["prompt_token_ids"][1:]
    assert "".join(without["logprobs"]["tokens"]) == "the cat"
    refused = complete(tiny_url, prompt="the cat", add_special_tokens="no")
    assert refused.status_code == 400
    assert "add_special_tokens must be true or false" in refused.json()["error"]["message"]


def test_a_non_finite_log_probability_is_a_named_server_error_not_a_crash() -> None:
    from choiceaudit.serve._app import _non_finite

    choice: Any = {"index": 1, "logprobs": {"token_logprobs": [None, -1.5, float("nan")]}}
    assert _non_finite([choice]) == "the model computed log-probability nan for token 2 of prompt 1"
    choice["logprobs"]["token_logprobs"][2] = -0.25
    assert _non_finite([choice]) is None
