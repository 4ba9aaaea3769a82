"""The systemone HTTP client: request shape, contract checks, retries, concurrency, secrecy.

Most tests swap the network for ``httpx.MockTransport``; the last block starts a real
``ThreadingHTTPServer`` on 127.0.0.1 that serves a deterministic decision model and injects 429,
500, timeouts, malformed JSON and bad probability vectors.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import numpy as np
import pytest

from choiceaudit.scorers import PartialScoreError, ScorerError, SystemOneScorer, hashed_content
from choiceaudit.scorers._systemone import ENDPOINTS
from choiceaudit.types import Query

KEYS = ("A", "B", "C", "D")


def make_query(state: str = "অগ্নিবল", *, item_id: int = 1) -> Query:
    options = (f"{state} gold", f"{state} literal", f"{state} other one", f"{state} other two")
    return Query(
        state=state,
        options=options,
        instruction="What is the actual figurative meaning of this idiom?",
        keys=KEYS,
        answer_format="key",
        perm=(2, 0, 3, 1),
        meta={"item_id": item_id},
    )


def model_probs(criteria: dict[str, str]) -> dict[str, float]:
    """The deterministic decision model both the mock and the real server serve."""
    logits = np.array([3.0 * hashed_content(text) for text in criteria.values()])
    z = np.exp(logits - logits.max())
    return dict(zip(criteria, (z / z.sum()).tolist(), strict=True))


def expected_probs(query: Query) -> np.ndarray:
    probs = model_probs(dict(zip(query.keys, query.options, strict=True)))
    vec = np.array([probs[k] for k in query.keys])
    out: np.ndarray = vec / vec.sum()
    return out


def ok_body(body: dict[str, Any], **extra: Any) -> dict[str, Any]:
    probs = model_probs(body["questions"]["q"]["criteria"])
    choice = max(probs, key=lambda k: probs[k])
    answer = {"type": "choice", "choice": choice, "probabilities": probs, "confidence": 0.75}
    return {"answers": {"q": answer}, **extra}


def scorer_with(
    handler: Callable[[httpx.Request], httpx.Response], **kwargs: Any
) -> tuple[SystemOneScorer, list[float]]:
    sleeps: list[float] = []
    kwargs.setdefault("backoff", 0.5)
    scorer = SystemOneScorer(
        "http://decider.test/",
        "typesafe/jev-1.13",
        transport=httpx.MockTransport(handler),
        sleep=sleeps.append,
        **kwargs,
    )
    return scorer, sleeps


# -- request and response ---------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["systemone", "alpha"])
def test_request_body_and_path_follow_appendix_a(
    variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHOICEAUDIT_API_KEY", "sk-test-123")
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=ok_body(json.loads(request.content)))

    scorer, _ = scorer_with(handler, variant=variant)
    query = make_query()
    scorer.score([query])
    (request,) = seen
    assert request.url.path == ENDPOINTS[variant]
    assert request.headers["authorization"] == "Bearer sk-test-123"
    body = json.loads(request.content)
    assert body == {
        "model": "typesafe/jev-1.13",
        "state": "অগ্নিবল",
        "questions": {
            "q": {
                "type": "choice",
                "instructions": "What is the actual figurative meaning of this idiom?",
                "criteria": dict(zip(KEYS, query.options, strict=True)),
            }
        },
    }
    assert list(body["questions"]["q"]["criteria"]) == list(KEYS)  # display order kept


def test_vector_is_renormalised_and_raw_kept() -> None:
    raw = {"A": 0.10, "B": 0.795, "C": 0.10}  # sums to 0.995, D omitted (subset of sent keys)

    def handler(request: httpx.Request) -> httpx.Response:
        answer = {"choice": "B", "probabilities": raw, "confidence": 0.61}
        return httpx.Response(200, json={"answers": {"q": answer}})

    scorer, _ = scorer_with(handler)
    query = make_query()
    (decision,) = scorer.score([query])
    assert decision.query_id == query.id
    np.testing.assert_allclose(decision.scores["prob"], [0.10, 0.795, 0.10, 0.0])
    np.testing.assert_allclose(decision.probs, np.array([0.10, 0.795, 0.10, 0.0]) / 0.995)
    assert abs(decision.probs.sum() - 1.0) < 1e-12
    assert decision.aux["conf_head"] == 0.61  # the separate head, not max p
    assert decision.aux["reported_choice"] == "B"
    assert decision.choice() == (1,)


FLAT_ANSWER = {
    "type": "choice",
    "choice": "B",
    "confidence": 0.75,
    "probabilities": {"A": 0.00, "B": 0.84, "C": 0.16, "D": 0.00},
}


@pytest.mark.parametrize("variant", ["systemone", "alpha"])
@pytest.mark.parametrize("nested", [False, True])
def test_both_answer_shapes_are_accepted_under_either_variant(variant: str, nested: bool) -> None:
    """The flat answer of Appendix A and the nested answers.q shape are read
    under both endpoint variants (the old client refused the flat one on /v1/systemone)."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"answers": {"q": FLAT_ANSWER}} if nested else FLAT_ANSWER)

    scorer, sleeps = scorer_with(handler, variant=variant)
    (decision,) = scorer.score([make_query()])
    np.testing.assert_allclose(decision.probs, [0.0, 0.84, 0.16, 0.0])
    assert decision.aux["conf_head"] == 0.75 and decision.aux["choice_is_argmax"] is True
    assert sleeps == []


def test_a_body_with_no_answer_is_retried_then_fails() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"type": "choice"})

    strict, sleeps = scorer_with(handler, max_retries=1)
    with pytest.raises(ScorerError, match=r"neither answers\.q nor a top-level answer"):
        strict.score([make_query()])
    assert len(sleeps) == 1


def test_a_choice_that_is_not_the_argmax_is_kept_and_counted() -> None:
    """A deployed system acts on ``choice``: a server whose choice disagrees with its own vector
    is not refused, but every disagreement is recorded."""
    answers = iter(
        [
            ("C", {"A": 0.1, "B": 0.6, "C": 0.3, "D": 0.0}),
            ("B", {"A": 0.1, "B": 0.6, "C": 0.3, "D": 0.0}),
        ]
    )

    def handler(request: httpx.Request) -> httpx.Response:
        choice, probs = next(answers)
        return httpx.Response(
            200, json={"answers": {"q": {"choice": choice, "probabilities": probs}}}
        )

    scorer, _ = scorer_with(handler, concurrency=1)
    first, second = scorer.score([make_query("s1", item_id=1), make_query("s2", item_id=2)])
    assert first.aux["reported_choice"] == "C" and first.aux["choice_is_argmax"] is False
    assert first.choice() == (1,)  # the vector's argmax is untouched
    assert second.aux["choice_is_argmax"] is True
    assert scorer.describe()["counts"]["choice_not_argmax"] == 1


def test_integer_probabilities_are_numbers() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        answer = {"probabilities": {"A": 0, "B": 0, "C": 1, "D": 0}, "confidence": 1}
        return httpx.Response(200, json={"answers": {"q": answer}})

    scorer, _ = scorer_with(handler)
    (decision,) = scorer.score([make_query()])
    assert decision.probs.tolist() == [0.0, 0.0, 1.0, 0.0] and decision.aux["conf_head"] == 1.0


def test_usage_cost_and_resolved_build_are_recorded() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = ok_body(
            json.loads(request.content),
            model="typesafe/jev-1.13-20260917",
            usage={"input_tokens": 40, "output_tokens": 0},
            cost=0.0000017,
        )
        return httpx.Response(200, json=body)

    scorer, _ = scorer_with(handler)
    decisions = scorer.score([make_query(f"s{i}", item_id=i) for i in range(3)])
    assert [d.aux["resolved_model"] for d in decisions] == ["typesafe/jev-1.13-20260917"] * 3
    info = scorer.describe()
    assert info["resolved_builds"] == ["typesafe/jev-1.13-20260917"]
    assert info["usage"] == {"input_tokens": 120.0, "output_tokens": 0.0}
    assert info["cost"] == pytest.approx(3 * 0.0000017)
    assert info["counts"] == {
        "queries": 3,
        "http_calls": 3,
        "ok": 3,
        "retries": 0,
        "failed_queries": 0,
        "choice_not_argmax": 0,
    }


# -- contract violations and retries ----------------------------------------------------------


BAD_ANSWERS: dict[str, tuple[Any, str]] = {
    "sum": ({"A": 0.5, "B": 0.2, "C": 0.2, "D": 0.0}, "sum to 0.9"),
    "extra key": ({"A": 0.5, "B": 0.2, "C": 0.2, "E": 0.1}, r"keys \['E'\] were not sent"),
    "negative": ({"A": 1.2, "B": -0.2, "C": 0.0, "D": 0.0}, "non-negative"),
    "not a number": ({"A": "lots", "B": 0.0}, "malformed body"),
    "number as text": ({"A": "0.5", "B": 0.5}, "malformed body"),
    "boolean": ({"A": True, "B": 0.0}, "malformed body"),
}


@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
def test_bad_vectors_are_retried_then_raise_and_record_nothing(case: str) -> None:
    probabilities, message = BAD_ANSWERS[case]
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(200, json={"answers": {"q": {"probabilities": probabilities}}})

    scorer, sleeps = scorer_with(handler, max_retries=3)
    with pytest.raises(ScorerError, match=message) as info:
        scorer.score([make_query(item_id=77)])
    assert "item 77" in str(info.value) and "4 attempts" in str(info.value)
    assert calls == 4 and len(sleeps) == 3
    counts = scorer.describe()["counts"]
    assert counts["ok"] == 0 and counts["failed_queries"] == 1 and counts["retries"] == 3


def test_transient_failures_then_success_lose_nothing() -> None:
    plan = ["429", "503", "timeout", "malformed", "connect"]

    def handler(request: httpx.Request) -> httpx.Response:
        if plan:
            fault = plan.pop(0)
            if fault == "429":
                return httpx.Response(429, headers={"retry-after": "2"})
            if fault == "503":
                return httpx.Response(503, text="busy")
            if fault == "timeout":
                raise httpx.ReadTimeout("slow", request=request)
            if fault == "connect":
                raise httpx.ConnectError("refused", request=request)
            return httpx.Response(200, content=b'{"answers": {"q": {"probabilities": ')
        return httpx.Response(200, json=ok_body(json.loads(request.content)))

    scorer, sleeps = scorer_with(handler, max_retries=5, backoff=0.5, backoff_ceiling=3.0)
    query = make_query()
    (decision,) = scorer.score([query])
    np.testing.assert_allclose(decision.probs, expected_probs(query), atol=1e-12)
    # attempt n waits min(ceiling, backoff * 2**n) * jitter, jitter in [0.5, 1]; Retry-After wins
    assert sleeps[0] == 2.0
    bounds = [min(3.0, 0.5 * 2**n) for n in range(len(sleeps))]
    for delay, bound in zip(sleeps[1:], bounds[1:], strict=True):
        assert 0.5 * bound <= delay <= bound
    info = scorer.describe()
    assert info["counts"]["retries"] == 5 and info["counts"]["ok"] == 1
    assert info["failures_by_kind"] == {
        "HTTP 429": 1,
        "HTTP 503": 1,
        "invalid response": 1,
        "timeout": 1,
        "transport error (ConnectError)": 1,
    }


def test_client_errors_are_not_retried_and_never_leak_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-live-do-not-print-9f8e7d"
    monkeypatch.setenv("MY_DECIDER_KEY", secret)

    def handler(request: httpx.Request) -> httpx.Response:
        echoed = request.headers["authorization"]
        return httpx.Response(401, text=f"invalid credentials: {echoed}")

    scorer, sleeps = scorer_with(handler, api_key_env="MY_DECIDER_KEY")
    with pytest.raises(ScorerError, match="HTTP 401") as info:
        scorer.score([make_query()])
    assert sleeps == []
    assert secret not in str(info.value) and "***" in str(info.value)
    assert secret not in json.dumps(scorer.describe()) and secret not in repr(scorer)
    assert scorer.describe()["api_key_env"] == "MY_DECIDER_KEY"
    assert scorer.describe()["api_key_present"] is True


def test_without_a_key_no_authorization_header_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHOICEAUDIT_API_KEY", raising=False)
    headers: list[httpx.Headers] = []

    def handler(request: httpx.Request) -> httpx.Response:
        headers.append(request.headers)
        return httpx.Response(200, json=ok_body(json.loads(request.content)))

    scorer, _ = scorer_with(handler)
    scorer.score([make_query()])
    assert "authorization" not in headers[0]
    assert scorer.describe()["api_key_present"] is False


def test_concurrency_limit_is_respected_and_order_kept() -> None:
    lock = threading.Lock()
    in_flight = 0
    peak = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.02)
        with lock:
            in_flight -= 1
        return httpx.Response(200, json=ok_body(json.loads(request.content)))

    scorer, _ = scorer_with(handler, concurrency=3)
    queries = [make_query(f"state {i}", item_id=i) for i in range(12)]
    decisions = scorer.score(queries)
    assert [d.query_id for d in decisions] == [q.id for q in queries]
    assert 2 <= peak <= 3
    for query, decision in zip(queries, decisions, strict=True):
        np.testing.assert_allclose(decision.probs, expected_probs(query), atol=1e-12)


def test_constructor_rejects_nonsense() -> None:
    with pytest.raises(ScorerError, match="variant"):
        SystemOneScorer("http://x", "m", variant="beta")  # type: ignore[arg-type]
    with pytest.raises(ScorerError, match="concurrency"):
        SystemOneScorer("http://x", "m", concurrency=0)


# -- a real local server ----------------------------------------------------------------------


class _Server:
    """A decision model on 127.0.0.1 with a per-state fault plan, consumed one fault per request."""

    def __init__(self, faults: dict[str, list[str]], *, slow_s: float) -> None:
        self.faults = {k: list(v) for k, v in faults.items()}
        self.requests: dict[str, int] = {}
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                state = body["state"]
                with server.lock:
                    server.requests[state] = server.requests.get(state, 0) + 1
                    plan = server.faults.get(state, [])
                    fault = plan.pop(0) if plan else "ok"
                if fault == "timeout":
                    time.sleep(slow_s)
                    fault = "ok"
                payload = ok_body(body, model="local/decider-build-7", usage={"input_tokens": 9})
                probs = payload["answers"]["q"]["probabilities"]
                if fault in ("429", "500", "503"):
                    self._send(int(fault), b'{"error": "try later"}')
                    return
                if fault == "malformed":
                    self._send(200, b'{"answers": {"q": {"probabilities": {"A": 0.3,')
                    return
                if fault == "badsum":
                    probs["A"] += 0.2
                elif fault == "badkey":
                    probs["Z"] = probs.pop("D")
                self._send(200, json.dumps(payload).encode())

            def _send(self, status: int, data: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the timeout fault)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server_factory() -> Iterator[Callable[[dict[str, list[str]]], _Server]]:
    servers: list[_Server] = []

    def make(faults: dict[str, list[str]]) -> _Server:
        server = _Server(faults, slow_s=3.0).__enter__()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.__exit__()


def test_real_server_with_injected_faults_records_every_query_once(
    server_factory: Callable[[dict[str, list[str]]], _Server],
) -> None:
    faults = {
        "s1": ["429"],
        # a 500 and then a 503: the same 500 twice would not be transient
        "s2": ["500", "503"],
        "s3": ["timeout"],
        "s4": ["malformed"],
        "s5": ["badsum"],
        "s6": ["badkey"],
        "s7": ["429", "malformed", "badsum"],
    }
    server = server_factory(faults)
    scorer = SystemOneScorer(
        server.url, "local/decider", max_retries=4, backoff=0.01, timeout=1.0, concurrency=4
    )
    queries = [make_query(f"s{i}", item_id=i) for i in range(9)]
    decisions = scorer.score(queries)
    scorer.close()
    assert [d.query_id for d in decisions] == [q.id for q in queries]
    for query, decision in zip(queries, decisions, strict=True):
        np.testing.assert_allclose(decision.probs, expected_probs(query), atol=1e-12)
        assert decision.aux["resolved_model"] == "local/decider-build-7"
    n_faults = sum(len(v) for v in faults.values())
    assert server.requests == {q.state: 1 + len(faults.get(q.state, [])) for q in queries}
    info = scorer.describe()
    assert info["counts"] == {
        "queries": 9,
        "http_calls": 9 + n_faults,
        "ok": 9,
        "retries": n_faults,
        "failed_queries": 0,
        "choice_not_argmax": 0,
    }
    assert info["usage"] == {"input_tokens": 81.0}  # only accepted responses are counted
    assert info["failures_by_kind"] == {
        "HTTP 429": 2,
        "HTTP 500": 1,
        "HTTP 503": 1,
        "invalid response": 5,
        "timeout": 1,
    }


def test_real_server_exhausted_retries_raise_a_clear_error(
    server_factory: Callable[[dict[str, list[str]]], _Server],
) -> None:
    server = server_factory({"s1": ["badsum"] * 10})
    queries = [make_query("s0", item_id=0), make_query("s1", item_id=1)]
    with SystemOneScorer(server.url, "local/decider", max_retries=2, backoff=0.001) as scorer:
        with pytest.raises(ScorerError, match=r"item 1\) failed after 3 attempts.*sum to 1\.2"):
            scorer.score(queries)
        assert scorer.describe()["counts"]["ok"] == 1
    assert server.requests == {"s0": 1, "s1": 3}
    with (
        SystemOneScorer(server.url, "local/decider", max_retries=0) as scorer,
        pytest.raises(PartialScoreError, match="1 of 2 queries failed") as info,
    ):
        scorer.score(queries)
    done, failed = info.value.completed
    assert failed is None and done is not None and done.query_id == queries[0].id
    np.testing.assert_allclose(done.probs, expected_probs(queries[0]), atol=1e-12)


# -- a real decision model behind its own /v1/systemone server ----------------------------------


@pytest.mark.models
def test_against_sparrow_deciders_own_systemone_server() -> None:
    """``sparrow-decider serve`` is a real /v1/systemone implementation: the HTTP client must
    return what the in-process model returns (up to the server's 4-decimal rounding)."""
    import socket
    import subprocess
    import sys

    pytest.importorskip("sparrow_decider")
    from choiceaudit.scorers import load_scorer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparrow_decider.cli", "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(url, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.fail("sparrow-decider serve did not come up")
            time.sleep(0.1)
        queries = [make_query(f"state number {i}", item_id=i) for i in range(20)]
        with SystemOneScorer(url, "sparrow", concurrency=4) as scorer:
            over_http = scorer.score(queries)
            info = scorer.describe()
        in_process = load_scorer("sparrow").score(queries)
        for a, b in zip(over_http, in_process, strict=True):
            np.testing.assert_allclose(a.probs, b.probs, atol=3e-4)
            assert a.aux["conf_head"] == pytest.approx(b.aux["conf_head"], abs=1e-4)
        assert info["resolved_builds"] == ["sparrow-nano-general-v1.1"]
        assert info["counts"]["ok"] == 20 and info["counts"]["retries"] == 0
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# -- an endpoint that never answered fails fast ------------------------------


def _refused_url() -> str:
    """A loopback port nothing listens on: bind it, then close it."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_refused_port_fails_fast_with_one_probe_naming_the_base_url() -> None:
    url = _refused_url()
    queries = [make_query(f"s{i}", item_id=i) for i in range(24)]
    started = time.monotonic()
    with SystemOneScorer(url, "local/decider", concurrency=4) as scorer:  # default retry policy
        with pytest.raises(PartialScoreError) as info:
            scorer.score(queries)
        counts = scorer.describe()["counts"]
    elapsed = time.monotonic() - started
    message = str(info.value)
    assert f"systemone endpoint {url} never answered in this session" in message
    assert "ConnectError): [Errno 111] Connection refused on the first call" in message
    assert "24 of 24 queries failed" in message
    # one call and one probe in all, instead of 7 attempts for each of the 24 queries
    assert counts["http_calls"] == 2 and counts["failed_queries"] == 24 and counts["ok"] == 0
    assert info.value.completed == [None] * 24
    assert info.value.query_id in {q.id for q in queries}
    assert elapsed < 5.0


def test_a_name_that_does_not_resolve_fails_fast_too() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        raise httpx.ConnectError("[Errno -2] Name or service not known", request=request)

    scorer, sleeps = scorer_with(handler, max_retries=6)
    with pytest.raises(ScorerError, match=r"http://decider\.test never answered") as info:
        scorer.score([make_query(item_id=5), make_query("other", item_id=6)])
    assert calls == 2 and len(sleeps) == 1  # the first call, one backoff, one probe
    assert "item 5" in str(info.value) or "item 6" in str(info.value)


def test_an_endpoint_that_answers_on_the_probe_keeps_the_full_policy() -> None:
    plan = ["connect", "ok", "connect", "connect", "ok"]

    def handler(request: httpx.Request) -> httpx.Response:
        if plan.pop(0) == "connect":
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json=ok_body(json.loads(request.content)))

    scorer, sleeps = scorer_with(handler, max_retries=3, concurrency=1)
    first, second = make_query("one", item_id=1), make_query("two", item_id=2)
    decisions = scorer.score([first, second])
    np.testing.assert_allclose(decisions[1].probs, expected_probs(second), atol=1e-12)
    # after the endpoint answered, two refused connections were retried, not fatal
    assert plan == [] and len(sleeps) == 3
    assert scorer.describe()["counts"]["retries"] == 3


def test_an_endpoint_that_answered_then_went_away_gets_every_retry(
    server_factory: Callable[[dict[str, list[str]]], _Server],
) -> None:
    server = server_factory({})
    with SystemOneScorer(server.url, "local/decider", max_retries=2, backoff=0.001) as scorer:
        (decision,) = scorer.score([make_query("s0", item_id=0)])
        assert decision.aux["resolved_model"] == "local/decider-build-7"
        server.__exit__()  # the server goes away: its port now refuses connections
        with pytest.raises(
            ScorerError, match=r"item 1\) failed after 3 attempts; last error: transport error"
        ) as info:
            scorer.score([make_query("s1", item_id=1)])
        counts = scorer.describe()["counts"]
    assert "never answered" not in str(info.value)
    assert counts["http_calls"] == 1 + 3 and counts["retries"] == 2


def test_usage_keeps_only_numeric_entries() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        usage = {"input_tokens": 7, "cached": True, "detail": {"x": 1}, "note": "n", "ms": 2.5}
        return httpx.Response(200, json=ok_body(json.loads(request.content), usage=usage))

    scorer, _ = scorer_with(handler)
    scorer.score([make_query("s0", item_id=0), make_query("s1", item_id=1)])
    assert scorer.describe()["usage"] == {"input_tokens": 14.0, "ms": 5.0}


def test_a_usage_that_is_not_an_object_is_a_malformed_body() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=ok_body(json.loads(request.content), usage=[1, 2]))

    scorer, _ = scorer_with(handler, max_retries=0)
    with pytest.raises(PartialScoreError, match=r"malformed body \(usage"):
        scorer.score([make_query()])
