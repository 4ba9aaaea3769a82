"""Every answer of an ``openai`` server is checked before a row is kept: impossible
log-probabilities, another model answering, tokens that do not tile the text (each with its own
cause), errors that will recur, and an endpoint that never answered."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from choiceaudit.audit import run_scoring
from choiceaudit.scorers import ConformanceError, OpenAIScorer, PartialScoreError, ScorerError
from choiceaudit.store import RunStore
from choiceaudit.types import Query
from scorers.openai_fake_server import FakeServer


def queries(n: int) -> list[Query]:
    return [
        Query(
            state=f"The cat {i}", options=("yes", "no"), instruction="", template="{state}\nAnswer:"
        )
        for i in range(n)
    ]


class Tampering(FakeServer):
    """The toy server, with ``tamper(body, response json)`` applied to echo answers."""

    def __init__(self, tamper: Any) -> None:
        super().__init__()
        self.tamper = tamper

    def __call__(self, request: httpx.Request) -> httpx.Response:
        response = super().__call__(request)
        if request.method == "GET" or response.status_code != 200:
            return response
        data = response.json()
        out = self.tamper(json.loads(request.content), data)
        if isinstance(out, httpx.Response):
            return out
        # json.dumps writes NaN and Infinity, as Python servers do
        return httpx.Response(200, content=json.dumps(out).encode())


def scorer_for(server: FakeServer, **kwargs: Any) -> tuple[OpenAIScorer, list[float]]:
    sleeps: list[float] = []
    kwargs.setdefault("reorder_check", 0)
    kwargs.setdefault("probe", False)
    scorer = OpenAIScorer(
        "http://llama.test",
        "toy",
        transport=httpx.MockTransport(server),
        sleep=sleeps.append,
        **kwargs,
    )
    return scorer, sleeps


def poison(marker: str, value: float) -> Any:
    """Put ``value`` as the last token's log-probability of requests mentioning ``marker``."""

    def tamper(body: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        if marker in str(body["prompt"]):
            data["choices"][0]["logprobs"]["token_logprobs"][-1] = value
        return data

    return tamper


@pytest.mark.parametrize("value", [2.5, float("nan"), float("inf"), float("-inf")])
def test_an_impossible_log_probability_is_refused_without_retry(value: float) -> None:
    server = Tampering(poison("cat 1", value))
    scorer, sleeps = scorer_for(server)
    with pytest.raises(PartialScoreError) as info:
        scorer.score(queries(3))
    message = str(info.value)
    assert f"log-probability {value!r}" in message and "at most 0" in message
    # a server that answered the impossible once is not trusted for the rest of the batch
    assert [d is None for d in info.value.completed] == [True, True, True]
    assert info.value.distrust is not None
    assert sleeps == [] and len(server.requests) == 3


def test_rows_of_a_refused_request_are_not_committed_and_a_resume_rescores_them(
    tmp_path: Path,
) -> None:
    qs = queries(4)
    run = tmp_path / "run"
    bad, _ = scorer_for(Tampering(poison("cat 2", 2.5)))
    with pytest.raises(PartialScoreError, match="at most 0"):
        run_scoring(bad, qs, run, chunk_size=4)
    assert RunStore(run).done_ids() == set()  # none of that server's answers is kept
    good, _ = scorer_for(FakeServer())
    summary = run_scoring(good, qs, run, chunk_size=4)
    assert summary.scored == 4 and summary.already_done == 0
    rows = RunStore(run).load().rows
    assert sorted(r.query.id for r in rows) == sorted(q.id for q in qs)


def test_an_answer_from_another_model_is_refused_and_recorded() -> None:
    def other(body: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        if "cat 1" in str(body["prompt"]):
            data["model"] = "someone-else-7b"
        return data

    scorer, _ = scorer_for(Tampering(other))
    with pytest.raises(PartialScoreError) as info:
        scorer.score(queries(3))
    assert "asked for model 'toy', the server answered as 'someone-else-7b'" in str(info.value)
    assert [d is None for d in info.value.completed] == [True, True, True]
    server = scorer.describe()["server"]
    assert server["refused_models"] == {"someone-else-7b": 1}
    assert server["response_models"] == ["toy"]


def test_a_truncated_reply_to_the_order_check_is_called_truncated() -> None:
    def truncate_second(body: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        if truncate_second.calls == 1:  # type: ignore[attr-defined]
            for choice in data["choices"]:
                lp = choice["logprobs"]
                for key in ("tokens", "token_logprobs", "text_offset"):
                    lp[key] = lp[key][:-1]
        truncate_second.calls += 1  # type: ignore[attr-defined]
        return data

    truncate_second.calls = 0  # type: ignore[attr-defined]
    scorer, _ = scorer_for(Tampering(truncate_second), reorder_check=1, max_retries=0)
    with pytest.raises(ScorerError) as info:
        scorer.score(queries(1))
    message = str(info.value)
    assert "the prompt was truncated" in message
    assert "reversed order" not in message and "42019" not in message


def test_partial_utf8_tokens_in_a_row_are_not_blamed_on_truncation() -> None:
    server = FakeServer(faults=frozenset({"partial_utf8"}))
    scorer, _ = scorer_for(server, max_retries=0)
    q = Query(state="x", options=("日本", "語"), instruction="", template="{state} Answer:")
    with pytest.raises(PartialScoreError) as info:
        scorer.score([q])
    message = str(info.value)
    assert "as an empty string and never the character" in message and "truncated" not in message


def test_an_error_that_says_it_will_recur_fails_after_one_retry_with_its_message() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        if request.method == "GET":
            return httpx.Response(200, json={"data": [{"id": "toy"}]})
        calls += 1
        return httpx.Response(500, text="AssertionError: logprobs is not supported with n > 1")

    sleeps: list[float] = []
    scorer = OpenAIScorer(
        "http://x.test",
        "toy",
        transport=httpx.MockTransport(handler),
        sleep=sleeps.append,
        reorder_check=0,
        probe=False,
    )
    with pytest.raises(PartialScoreError) as info:
        scorer.score(queries(1))
    assert calls == 2 and len(sleeps) == 1
    message = str(info.value)
    assert "failed after 2 attempts" in message and "will recur" in message
    assert "logprobs is not supported" in message


def test_a_transient_500_still_gets_every_retry() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        if request.method == "GET":
            return httpx.Response(200, json={"data": [{"id": "toy"}]})
        calls += 1
        # a 500 whose answer changes (the same one twice is not transient: test_http_retries)
        return httpx.Response(500, text=f"worker {calls} overloaded, try later")

    scorer = OpenAIScorer(
        "http://x.test",
        "toy",
        transport=httpx.MockTransport(handler),
        sleep=lambda s: None,
        reorder_check=0,
        max_retries=3,
    )
    with pytest.raises(PartialScoreError, match="failed after 4 attempts; last error: HTTP 500"):
        scorer.score(queries(1))
    assert calls == 4


def test_a_dead_port_fails_fast_naming_the_base_url() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    with OpenAIScorer(url, "toy") as scorer:  # the default retry policy
        with pytest.raises(ScorerError) as info:
            scorer.score(queries(8))
        counts = scorer.counts()  # describe() itself needs the server
    elapsed = time.monotonic() - started
    message = str(info.value)
    assert f"openai endpoint {url} never answered in this session" in message
    assert "Connection refused on the first call and again on one probe" in message
    assert counts["http_calls"] == 2
    assert elapsed < 5.0


def test_tiling_is_a_partition_of_the_bytes() -> None:
    from choiceaudit.scorers._openai_wire import check_tiling

    text = "a 日本"  # 日 and 本 are three bytes each
    # byte tokens with a fast tokenizer's spans: " 日"'s first bytes, 日's last byte with 本's
    # first, then the rest of 本
    check_tiling("u", text, [], [(0, 1), (1, 3), (2, 4), (3, 4)])
    with pytest.raises(ConformanceError, match="covered by 2 tokens but has 1 byte"):
        check_tiling("u", text, [], [(0, 1), (0, 1), (1, 3), (3, 4)])  # "a" repeated
    with pytest.raises(ConformanceError, match="covered by 4 tokens but has 3"):
        check_tiling("u", text, [], [(0, 1), (1, 3), (2, 3), (2, 3), (2, 3), (3, 4)])
    with pytest.raises(ConformanceError, match=r"character 1 .* covered by 2 tokens"):
        check_tiling("u", text, [], [(0, 2), (1, 3), (3, 4)])  # overlaps an ASCII space
