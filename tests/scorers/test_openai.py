"""The ``openai`` scorer: wire formats (vLLM, SGLang, OpenAI), span recovery, retries, secrecy,
the order check, and equality with ``hf`` over a real ``choiceaudit serve-model`` server.

The fixtures imitate the servers' documented responses: vLLM's ``/v1/completions`` with
``echo`` + ``logprobs`` (``text_offset`` a running sum of per-token decoded lengths, so its BOS
``"<s>"`` shifts every offset by 3) and with ``prompt_logprobs`` (``[null, {"<id>": {logprob,
rank, decoded_token}}, …]``), and SGLang's native ``/generate`` with ``return_logprob``
(``meta_info.input_token_logprobs`` = ``[[logprob | null, id, text], …]``). Each is built from
one toy tokenization (greedy longest match, with a ``": y"`` token that crosses the join after
``"Answer:"``), so every format must give the same scores as the in-place rule on it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
import pytest

from choiceaudit.scorers import (
    OpenAIScorer,
    PartialScoreError,
    ScorerError,
    backend_of,
    load_scorer,
)
from choiceaudit.scorers._openai import align_tokens
from choiceaudit.types import Query

VOCAB = sorted(
    ["Answer", ":", ": y", "es", " no", " the", " capital", "?", "\n", " Paris", " Lond", "on"],
    key=len,
    reverse=True,
)


def toy_tokens(text: str) -> list[tuple[str, int, int]]:
    """Greedy longest match over VOCAB, single characters otherwise: (token, id, start)."""
    out, i = [], 0
    while i < len(text):
        tok = next((v for v in VOCAB if text.startswith(v, i)), text[i])
        out.append((tok, 100 + (VOCAB.index(tok) if tok in VOCAB else ord(tok)), i))
        i += len(tok)
    return out


def toy_logprob(prefix: str, tok: str) -> float:
    """A deterministic 'model': log P(tok | prefix)."""
    return -0.05 * (len(tok) + 1) - 1e-3 * (sum(map(ord, prefix)) % 97)


def query(i: int = 0, *, neutral: bool = True) -> Query:
    return Query(
        state=f"the capital {i}?",
        options=("yes", "no", "Paris"),
        instruction="",
        neutral_state="" if neutral else None,
        template="{state}\nAnswer:",
    )


def reference(q: Query) -> dict[str, np.ndarray]:
    """The in-place rule applied to the toy tokenization, independently of the scorer."""

    def option_sum(context: str, cont: str) -> tuple[float, int]:
        text = context + cont
        toks = toy_tokens(text)
        first = next(j for j, (t, _, s) in enumerate(toks) if s + len(t) > len(context))
        return sum(toy_logprob(text[:s], t) for t, _, s in toks[first:]), len(toks) - first

    conts = q.continuations()
    sums = np.array([option_sum(q.prompt(), c)[0] for c in conts])
    counts = np.array([option_sum(q.prompt(), c)[1] for c in conts])
    out = {"sum": sums, "mean": sums / counts}
    if q.neutral_state is not None:
        out["pmi"] = sums - np.array([option_sum(q.prompt(neutral=True), c)[0] for c in conts])
    return out


def _scored(text: str, bos: bool) -> list[tuple[str, int, int, float | None]]:
    toks: list[tuple[str, int, int, float | None]] = [
        (t, i, s, toy_logprob(text[:s], t)) for t, i, s in toy_tokens(text)
    ]
    if bos:
        toks = [("<s>", 1, 0, None), *toks]  # a BOS: the first real token is conditioned on it
    else:
        toks[0] = (*toks[0][:3], None)
    return toks


def vllm_echo(texts: list[str], *, bos: bool = True) -> dict[str, Any]:
    choices: list[dict[str, Any]] = []  # the response body as JSON
    for i, text in enumerate(texts):
        toks = _scored(text, bos)
        offsets, run = [], 0
        for tok, *_ in toks:  # vLLM: a running sum of decoded token lengths
            offsets.append(run)
            run += len(tok)
        choices.append(
            {
                "index": i,
                "text": text,
                "logprobs": {
                    "text_offset": offsets,
                    "token_logprobs": [lp for *_, lp in toks],
                    "tokens": [t for t, *_ in toks],
                    "top_logprobs": [None if lp is None else {t: lp} for t, _, _, lp in toks],
                },
                "finish_reason": "length",
                "stop_reason": None,
                "prompt_logprobs": None,
            }
        )
    n = sum(len(c["logprobs"]["tokens"]) for c in choices)
    return {
        "id": "cmpl-3f1b",
        "object": "text_completion",
        "created": 1764576000,
        "model": "toy",
        "choices": choices,
        "usage": {"prompt_tokens": n, "total_tokens": n, "completion_tokens": 0},
    }


def vllm_prompt_logprobs(texts: list[str], *, with_ids: bool) -> dict[str, Any]:
    choices = []
    for i, text in enumerate(texts):
        toks = _scored(text, bos=True)
        entries: list[Any] = [None]
        for tok, tid, _, lp in toks[1:]:
            entry = {str(tid): {"logprob": lp, "rank": 3, "decoded_token": tok}}
            if with_ids:  # with prompt_token_ids the server may list top candidates too
                entry[str(tid + 1)] = {"logprob": -0.01, "rank": 1, "decoded_token": "x"}
            entries.append(entry)
        choice: dict[str, Any] = {
            "index": i,
            "text": " the",
            "logprobs": None,
            "finish_reason": "length",
            "prompt_logprobs": entries,
        }
        if with_ids:
            choice["prompt_token_ids"] = [tid for _, tid, _, _ in toks]
        choices.append(choice)
    return {"id": "cmpl-9", "object": "text_completion", "model": "toy", "choices": choices}


def sglang_generate(texts: list[str]) -> list[dict[str, Any]]:
    out = []
    for text in texts:
        toks = _scored(text, bos=True)
        out.append(
            {
                "text": "",
                "meta_info": {
                    "id": "a1",
                    "prompt_tokens": len(toks),
                    "completion_tokens": 0,
                    "input_token_logprobs": [[lp, tid, tok] for tok, tid, _, lp in toks],
                    "output_token_logprobs": [],
                },
            }
        )
    return out


def models_body(**own: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": "toy", "object": "model", "root": "/models/toy"}
    if own:
        entry["choiceaudit"] = own
    return {"object": "list", "data": [entry]}


def mock(
    respond: Callable[[dict[str, Any]], Any], *, api: str = "completions", **kwargs: Any
) -> tuple[OpenAIScorer, list[httpx.Request], list[float]]:
    seen: list[httpx.Request] = []
    sleeps: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "GET":
            if request.url.path == "/get_model_info":
                return httpx.Response(200, json={"model_path": "/models/toy"})
            return httpx.Response(200, json=models_body(weights_sha256="ab" * 32, dtype="bfloat16"))
        out = respond(json.loads(request.content))
        return out if isinstance(out, httpx.Response) else httpx.Response(200, json=out)

    kwargs.setdefault("reorder_check", 0)
    scorer = OpenAIScorer(
        "http://server.test/",
        "toy",
        api=api,  # type: ignore[arg-type]
        transport=httpx.MockTransport(handler),
        sleep=sleeps.append,
        **kwargs,
    )
    return scorer, seen, sleeps


def assert_scores(decisions: list[Any], queries: list[Query]) -> None:
    for d, q in zip(decisions, queries, strict=True):
        ref = reference(q)
        assert set(d.scores) == set(ref)
        for rule, values in ref.items():
            np.testing.assert_allclose(d.scores[rule], values, rtol=0, atol=1e-12)


# -- the wire formats -------------------------------------------------------------------------


@pytest.mark.parametrize("bos", [True, False])
def test_vllm_echo_format_with_running_sum_offsets(bos: bool) -> None:
    scorer, seen, _ = mock(lambda body: vllm_echo(body["prompt"], bos=bos))
    queries = [query(0), query(1, neutral=False)]
    decisions = scorer.score(queries)
    assert_scores(decisions, queries)
    body = json.loads(seen[-1].content)
    assert body["echo"] is True and body["max_tokens"] == 0 and body["logprobs"] == 1
    # the option "yes" after "Answer:" is the token ": y" + "es": the first crosses the join
    assert decisions[0].aux["crosses_join"] == [True, False, False]
    assert decisions[0].n_tokens == (2, 1, 1)
    # with a BOS the running-sum offsets are not character offsets: the spans were aligned
    methods = scorer.describe()["spans_by_method"]
    expected = {"offsets": 0, "aligned": 9} if bos else {"offsets": 9, "aligned": 0}
    assert methods == {**expected, "partial": 0}


@pytest.mark.parametrize("with_ids", [True, False])
def test_vllm_prompt_logprobs_format(with_ids: bool) -> None:
    scorer, seen, _ = mock(
        lambda body: vllm_prompt_logprobs(body["prompt"], with_ids=with_ids),
        api="vllm-prompt-logprobs",
    )
    queries = [query(3)]
    assert_scores(scorer.score(queries), queries)
    body = json.loads(seen[-1].content)
    assert body["prompt_logprobs"] == 0 and "echo" not in body


def test_sglang_native_format() -> None:
    scorer, seen, _ = mock(lambda body: sglang_generate(body["text"]), api="sglang")
    queries = [query(4), query(5)]
    assert_scores(scorer.score(queries), queries)
    assert seen[-1].url.path == "/generate"
    body = json.loads(seen[-1].content)
    assert body["return_logprob"] is True and body["logprob_start_len"] == 0
    assert body["sampling_params"]["max_new_tokens"] == 0
    assert scorer.describe()["model_id"] == "/models/toy"


def test_manifest_records_the_server_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHOICEAUDIT_API_KEY", "sk-secret-42")
    scorer, seen, _ = mock(lambda body: vllm_echo(body["prompt"]))
    scorer.score([query()])
    described = scorer.describe()
    assert described["backend"] == "openai" and described["model"] == "openai:toy"
    assert described["model_id"] == "/models/toy"
    assert described["weights_sha256"] == "ab" * 32 and described["dtype"] == "bfloat16"
    assert described["server"]["response_models"] == ["toy"]
    assert described["api_key_present"] is True
    assert "sk-secret-42" not in json.dumps(described) + repr(scorer)
    assert all(r.headers["authorization"] == "Bearer sk-secret-42" for r in seen)


def test_a_server_that_does_not_serve_the_model_is_an_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"id": "other"}]})

    scorer = OpenAIScorer("http://s.test", "toy", transport=httpx.MockTransport(handler))
    with pytest.raises(ScorerError, match=r"does not serve model 'toy'.*other"):
        scorer.describe()


# -- span recovery ----------------------------------------------------------------------------


def test_align_tokens_places_leading_specials_and_unknown_first_tokens() -> None:
    text = "Answer: yes"
    assert align_tokens(text, ["<s>", "Answer", ": y", "es"]) == ((0, 0), (0, 6), (6, 9), (9, 11))
    assert align_tokens(text, [None, ": y", "es"]) == ((0, 6), (6, 9), (9, 11))
    assert align_tokens(text, [None, "Answer", ": y", "es"]) == ((0, 0), (0, 6), (6, 9), (9, 11))
    assert align_tokens(text, ["Answer", ": y", "es", "</s>"])[-1] == (11, 11)


@pytest.mark.parametrize(
    "tokens",
    [
        ["Answer", ":", "yes"],  # a SentencePiece token decoded without its leading space
        ["Answer", ":", " y\ufffd"],  # a byte token decoded as U+FFFD
        ["Answer", ":"],  # the prompt was truncated
    ],
)
def test_align_tokens_refuses_tokens_that_do_not_reproduce_the_text(tokens: list[str]) -> None:
    with pytest.raises(ValueError, match=r"does not match|cover"):
        align_tokens("Answer: yes", tokens)


def test_unplaceable_tokens_fail_with_a_clear_error_and_are_not_retried() -> None:
    def broken(body: dict[str, Any]) -> dict[str, Any]:
        out = vllm_echo(body["prompt"])
        for choice in out["choices"]:
            choice["logprobs"]["tokens"] = [t.lstrip(" ") for t in choice["logprobs"]["tokens"]]
        return out

    scorer, seen, _ = mock(broken, max_retries=3)
    with pytest.raises(PartialScoreError, match="cannot be located"):
        scorer.score([query()])
    assert len([r for r in seen if r.method == "POST"]) == 1


def test_a_truncated_prompt_is_an_error() -> None:
    def truncated(body: dict[str, Any]) -> dict[str, Any]:
        out = vllm_echo(body["prompt"], bos=False)
        for choice in out["choices"]:
            lp = choice["logprobs"]
            for key in ("text_offset", "token_logprobs", "tokens", "top_logprobs"):
                lp[key] = lp[key][:-1]
        return out

    scorer, _, _ = mock(truncated, max_retries=0)
    with pytest.raises(ScorerError, match=r"do not place the option|truncated"):
        scorer.score([query()])


def test_a_clamped_log_probability_is_an_error() -> None:
    def clamped(body: dict[str, Any]) -> dict[str, Any]:
        out = vllm_echo(body["prompt"])
        out["choices"][0]["logprobs"]["token_logprobs"][-1] = -9999.0
        return out

    scorer, _, _ = mock(clamped, max_retries=0)
    with pytest.raises(ScorerError, match="clamped"):
        scorer.score([query()])


# -- retries, failures, concurrency ----------------------------------------------------------


def test_transient_failures_are_retried_with_backoff_and_lose_nothing() -> None:
    script = iter(
        [
            httpx.Response(429, headers={"retry-after": "2"}),
            httpx.Response(503),
            httpx.Response(200, content=b"{not json"),
        ]
    )

    def respond(body: dict[str, Any]) -> Any:
        return next(script, None) or vllm_echo(body["prompt"])

    scorer, _, sleeps = mock(respond, backoff=0.5)
    queries = [query(7)]
    assert_scores(scorer.score(queries), queries)
    assert len(sleeps) == 3 and sleeps[0] >= 2.0  # Retry-After honoured
    counts = scorer.describe()["counts"]
    assert counts["retries"] == 3 and counts["failed"] == 0
    assert scorer.describe()["failures_by_kind"] == {
        "HTTP 429": 1,
        "HTTP 503": 1,
        "invalid response": 1,
    }


def test_client_errors_fail_at_once_and_keep_the_other_queries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CHOICEAUDIT_API_KEY", "sk-leak-check")

    def respond(body: dict[str, Any]) -> Any:
        if "capital 1?" in body["prompt"][0]:
            return httpx.Response(400, json={"error": {"message": "bad key sk-leak-check"}})
        return vllm_echo(body["prompt"])

    scorer, _, sleeps = mock(respond, max_retries=4)
    queries = [query(0), query(1), query(2)]
    with pytest.raises(PartialScoreError) as info:
        scorer.score(queries)
    assert "HTTP 400" in str(info.value) and "sk-leak-check" not in str(info.value)
    assert [d is None for d in info.value.completed] == [False, True, False]
    assert info.value.query_id == queries[1].id
    assert sleeps == []


def test_concurrency_limit_and_order() -> None:
    lock = threading.Lock()
    in_flight, peak = [0], [0]

    def respond(body: dict[str, Any]) -> Any:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.02)
        with lock:
            in_flight[0] -= 1
        return vllm_echo(body["prompt"])

    scorer, _, _ = mock(respond, concurrency=2, queries_per_request=2)
    queries = [query(i) for i in range(9)]
    decisions = scorer.score(queries)
    assert [d.query_id for d in decisions] == [q.id for q in queries]
    assert_scores(decisions, queries)
    assert peak[0] == 2
    assert scorer.describe()["counts"]["requests"] == 5


# -- the order check (vllm issue 42019) -------------------------------------------------------


def order_dependent(shift: float) -> Callable[[dict[str, Any]], Any]:
    """A server whose values depend on each string's place in the request, as vLLM's
    prefix-cached prompt_logprobs were reported to."""

    def respond(body: dict[str, Any]) -> Any:
        out = vllm_echo(body["prompt"])
        for place, choice in enumerate(out["choices"]):
            lps = choice["logprobs"]["token_logprobs"]
            choice["logprobs"]["token_logprobs"] = [
                None if v is None else v - shift * place for v in lps
            ]
        return out

    return respond


def test_reorder_check_passes_on_an_order_free_server() -> None:
    # one request in flight, so the re-sent strings directly follow the first request
    scorer, seen, _ = mock(lambda body: vllm_echo(body["prompt"]), reorder_check=2, concurrency=1)
    scorer.score([query(i) for i in range(4)])
    check = scorer.describe()["reorder_check"]
    assert check["queries_checked"] == 2 and check["mismatches"] == 0
    assert check["max_abs_diff"] == 0.0 and check["tokens_compared"] > 0
    bodies = [json.loads(r.content)["prompt"] for r in seen if r.method == "POST"]
    # one request per context (the prompt's options, then the neutral prompt's), then the same
    # two requests with their strings reversed
    prompt, neutral = bodies[0], bodies[1]
    assert all(t.startswith("the capital") for t in prompt)
    assert not any(t.startswith("the capital") for t in neutral)
    assert bodies[2:4] == [prompt[::-1], neutral[::-1]]


def test_reorder_check_stops_a_run_on_an_order_dependent_server() -> None:
    scorer, _, _ = mock(order_dependent(1e-3), reorder_check=1)
    with pytest.raises(ScorerError, match=r"reversed order.*42019"):
        scorer.score([query(0)])


def test_reorder_check_records_when_asked_to() -> None:
    scorer, _, _ = mock(order_dependent(1e-3), reorder_check=1, reorder_action="record")
    scorer.score([query(0), query(1)])
    check = scorer.describe()["reorder_check"]
    assert check["mismatches"] == 1 and check["queries_checked"] == 1
    # one request per context of 3 strings: places 0..2 come back at 2..0, at most 2 apart
    assert check["max_abs_diff"] == pytest.approx(1e-3 * 2, rel=1e-6)


# -- the registry -----------------------------------------------------------------------------


def test_registry_knows_the_openai_backend() -> None:
    assert backend_of("openai:Qwen/Qwen3-8B") == "openai"
    with pytest.raises(ScorerError, match="needs base_url"):
        load_scorer("openai:Qwen/Qwen3-8B")
    with pytest.raises(TypeError, match="accepts"):
        load_scorer("openai:x", base_url="http://x", batch_size=3)
    scorer = load_scorer("openai:Qwen/Qwen3-8B", base_url="http://x:8000/", api="sglang")
    assert isinstance(scorer, OpenAIScorer) and scorer.endpoint == "http://x:8000/generate"


def test_constructor_rejects_nonsense() -> None:
    for bad in (
        {"api": "chat"},
        {"concurrency": 0},
        {"queries_per_request": 0},
        {"reorder_action": "ignore"},
        {"reorder_tolerance": float("nan")},
    ):
        with pytest.raises(ScorerError):
            OpenAIScorer("http://x", "m", **bad)
