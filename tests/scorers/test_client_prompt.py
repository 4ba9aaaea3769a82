"""``openai:`` takes ``hf``'s prompt options and applies them on the client: the server is sent
the text ``hf`` reads in process (template rendered, continuation without its leading space)
and is asked not to add special tokens the template already wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from choiceaudit.scorers import HFScorer, OpenAIScorer, ScorerError, load_scorer
from choiceaudit.types import Query


def chars_server(sent: list[dict[str, Any]], model: str = "m") -> httpx.MockTransport:
    """A server whose tokens are single characters, each at log-probability -0.1."""

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [{"id": model}]})
        body = json.loads(request.content)
        sent.append(body)
        choices = [
            {
                "index": i,
                "text": text,
                "logprobs": {
                    "tokens": list(text),
                    "token_logprobs": [None, *([-0.1] * (len(text) - 1))],
                    "text_offset": list(range(len(text))),
                },
            }
            for i, text in enumerate(body["prompt"])
        ]
        return httpx.Response(200, json={"model": model, "choices": choices})

    return httpx.MockTransport(handle)


def query() -> Query:
    return Query(
        state="the cat", options=("yes", "no"), neutral_state="", template="{state}\nAnswer:"
    )


def test_without_a_template_the_raw_prompt_is_sent_as_before() -> None:
    sent: list[dict[str, Any]] = []
    scorer = OpenAIScorer("http://x", "m", transport=chars_server(sent), reorder_check=0)
    scorer.score([query()])
    # one request per context: the prompt's options, then the neutral prompt's
    assert [body["prompt"] for body in sent] == [
        ["the cat\nAnswer: yes", "the cat\nAnswer: no"],
        ["\nAnswer: yes", "\nAnswer: no"],
    ]
    assert "add_special_tokens" not in sent[0]
    assert scorer.describe()["chat_template"] is None


def test_the_template_is_rendered_on_the_client_as_hf_renders_it(
    tiny_dirs: dict[str, Path], tiny_lms: dict[str, Any]
) -> None:
    chat = f"hf:{tiny_dirs['chat']}"
    sent: list[dict[str, Any]] = []
    scorer = load_scorer(
        f"openai:{chat}",
        base_url="http://x",
        chat_template="own",
        system_prompt="Be brief.",
        transport=chars_server(sent, chat),
        reorder_check=0,
    )
    assert isinstance(scorer, OpenAIScorer)
    scorer.score([query()])
    hf = HFScorer(tiny_lms["chat"], chat_template="own", system_prompt="Be brief.")
    context = hf.renderer.context("the cat\nAnswer:")
    assert context == "<|system|>Be brief.\n<|user|>the cat\nAnswer:\n<|assistant|>"
    assert sent[0]["prompt"][:2] == [context + "yes", context + "no"]
    assert sent[0]["add_special_tokens"] is False
    described = scorer.describe()
    assert described["chat_template"] == hf.describe()["chat_template"]
    assert described["system_prompt"] == "Be brief."
    assert described["chat_tokenizer"] == chat


def test_prompt_options_that_cannot_be_honoured_are_refused_before_any_request() -> None:
    with pytest.raises(ScorerError, match="system_prompt needs a chat_template"):
        OpenAIScorer("http://x", "m", system_prompt="Be brief.")
    with pytest.raises(ScorerError, match="api=sglang cannot take a chat_template"):
        OpenAIScorer("http://x", "m", api="sglang", chat_template="own")
    with pytest.raises(ScorerError, match="-o tokenizer=<local dir"):
        OpenAIScorer("http://x", "an-alias", chat_template="own")
