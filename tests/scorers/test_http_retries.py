"""What the HTTP backends retry: an error whose status says "later" (429, 502, 503, 504) is
retried under the backoff however often it repeats; any other server error that comes back
the same — status and whole body, an empty body included — is not transient, and the call
fails after one retry (llama-cpp-python's server answers a request it cannot serve with a 500
and an empty body, and was asked 224 times)."""

from __future__ import annotations

import itertools

import httpx
import pytest

from choiceaudit.scorers import OpenAIScorer, ScorerError, load_scorer
from choiceaudit.types import Query


def _openai(handler: object) -> OpenAIScorer:
    return OpenAIScorer(
        "http://llama.test",
        "toy",
        transport=httpx.MockTransport(handler),  # type: ignore[arg-type]
        sleep=lambda s: None,
        probe=False,
        reorder_check=0,
        max_retries=6,
    )


def _systemone(handler: object) -> object:
    return load_scorer(
        "systemone:decider",
        base_url="http://decider.test",
        transport=httpx.MockTransport(handler),  # type: ignore[arg-type]
        sleep=lambda s: None,
    )


QUERY = Query(
    state="s", options=("a", "b"), instruction="pick", keys=("A", "B"), answer_format="key"
)


@pytest.mark.parametrize("make", [_openai, _systemone], ids=["openai", "systemone"])
@pytest.mark.parametrize("body", ["", "Internal Server Error"])
def test_the_same_server_error_twice_is_not_retried_further(make: object, body: str) -> None:
    calls = itertools.count()

    def handler(request: httpx.Request) -> httpx.Response:
        next(calls)
        return httpx.Response(500, text=body)

    scorer = make(handler)  # type: ignore[operator]
    with pytest.raises(ScorerError, match="twice with the same answer"):
        scorer.score([QUERY])
    assert next(calls) == 2  # the first call and one retry


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_a_status_that_says_later_is_retried_whatever_its_body(status: int) -> None:
    calls = itertools.count()

    def handler(request: httpx.Request) -> httpx.Response:
        next(calls)
        return httpx.Response(status, text="busy")

    with pytest.raises(ScorerError):
        _openai(handler).score([QUERY])
    assert next(calls) == 7  # the first call and six retries


def test_a_server_error_that_changes_is_retried() -> None:
    calls = itertools.count()

    def handler(request: httpx.Request) -> httpx.Response:
        n = next(calls)
        return httpx.Response(500, text=f"worker {n} crashed")

    with pytest.raises(ScorerError):
        _openai(handler).score([QUERY])
    assert next(calls) == 7
