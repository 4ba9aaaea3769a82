"""HTTP client for typed decision models: ``POST /v1/systemone`` and ``/api/alpha/decisions``.

One query is one call carrying one typed ``choice`` question (the meaning paper, Appendix A)::

    {"model": <alias>, "state": <state>,
     "questions": {"q": {"type": "choice", "instructions": <instruction>,
                         "criteria": {"A": <option>, "B": <option>, ...}}}}

The answer is read from ``answers.q`` (``{choice, probabilities, confidence}``) or from that
answer object at the top level, as in the paper's Appendix A example; both shapes are accepted
under either endpoint variant. On every call we assert, as the paper does, that the returned keys
are a subset of the keys sent and that the probabilities sum to 1 within 1e-2. The vector is then
renormalised to the :class:`~choiceaudit.types.Decision` contract (Σ = 1 within 1e-6) — the only
reason it is renormalised; the raw vector is kept in ``scores["prob"]`` (keys the model omitted
are 0) and the meaning analysis reads that one. The separate confidence head is kept in
``aux["conf_head"]``, because ``confidence`` is not the maximum probability (Appendix A, "Two
confidence signals").

On every call the returned ``choice`` is checked against the argmax of the returned vector:
``aux["choice_is_argmax"]`` records it, and a disagreement is not refused (a deployed system acts
on ``choice``) but counted in ``describe()["counts"]["choice_not_argmax"]``; the meaning run
writes the count over all stored rows into the manifest.

429, 5xx, timeouts, transport errors and invalid bodies are retried with exponential backoff and
jitter up to a ceiling (Appendix R: "retried with exponential backoff to a 30 s ceiling; no call
was dropped"); nothing from an invalid body is recorded. Other 4xx statuses fail at once.

That retry policy is for an endpoint that has answered. Until the first HTTP response of the
client's life (any status), a failure to connect — connection refused, a name that does not
resolve, a connect timeout — is most likely a wrong ``base_url``: it is probed once more (one
call, after the first backoff delay) and, if that fails too, every query of the batch fails at
once with a :class:`ScorerError` that names the base URL and says it never answered (a wrong
address used to cost seven attempts per query). Once the endpoint has answered, connection
failures are retried like any transient failure.

What the model read is not knowable from outside: the API reports no token counts of the state,
so nothing is recorded about truncation (``aux`` has no ``truncated``/``tokens_seen`` fields for
this backend; a server-side limit is the API's to document). The API
key is read from an environment variable and sent as a bearer token; it never appears in
:meth:`SystemOneScorer.describe`, in ``repr`` or in an exception message.
"""

from __future__ import annotations

import math
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import httpx
import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from choiceaudit.scorers._protocol import PartialScoreError, ScorerError
from choiceaudit.scorers._retry import RetryBookkeeping
from choiceaudit.types import Decision, Query

__all__ = ["ENDPOINTS", "SUM_TOLERANCE", "PartialScoreError", "SystemOneScorer"]

#: Path of each API variant, relative to the base URL.
ENDPOINTS: dict[str, str] = {"systemone": "/v1/systemone", "alpha": "/api/alpha/decisions"}

#: The per-call contract check on the returned vector (Appendix A).
SUM_TOLERANCE = 1e-2

_QUESTION = "q"
_SNIPPET = 200


class _Answer(BaseModel):
    # strict: a probability sent as "0.5" or true is a contract violation, not a number
    model_config = ConfigDict(extra="allow", strict=True)

    type: str | None = None
    choice: str | None = None
    probabilities: dict[str, float]
    confidence: float | None = None


class _Response(BaseModel):
    model_config = ConfigDict(extra="allow")

    answers: dict[str, _Answer] | None = None
    model: str | None = None
    build: str | None = None
    usage: dict[str, Any] | None = None
    cost: float | None = None


class _InvalidResponse(Exception):
    """The body broke the contract; retried like a transient failure, never recorded."""


class _Retryable(Exception):
    def __init__(
        self,
        kind: str,
        retry_after: float | None = None,
        *,
        connect: bool = False,
        detail: str = "",
    ) -> None:
        super().__init__(kind)
        self.kind = kind
        self.retry_after = retry_after
        self.connect = connect  # no connection was made: the endpoint did not answer at all
        self.detail = detail


_UNKNOWN, _ANSWERED, _UNREACHABLE = "unknown", "answered", "unreachable"


class SystemOneScorer(RetryBookkeeping):
    """A typed decision model behind an HTTP decisions API (see the module docstring).

    ``backoff`` is the first retry delay in seconds; attempt ``n`` waits
    ``min(backoff_ceiling, backoff * 2**n)`` scaled by a jitter factor in [0.5, 1] (or the
    server's ``Retry-After``, capped at the ceiling). ``concurrency`` bounds the calls in flight.
    ``transport`` replaces the network (``httpx.MockTransport`` in tests); ``sleep`` replaces
    :func:`time.sleep` so retry schedules are testable without waiting.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "CHOICEAUDIT_API_KEY",
        variant: Literal["systemone", "alpha"] = "systemone",
        max_retries: int = 6,
        backoff: float = 0.5,
        backoff_ceiling: float = 30.0,
        timeout: float = 30.0,
        concurrency: int = 4,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        seed: int = 0,
    ) -> None:
        if variant not in ENDPOINTS:
            raise ScorerError(
                f"systemone variant must be one of {sorted(ENDPOINTS)}, got {variant!r}"
            )
        if not model:
            raise ScorerError("systemone needs a model alias")
        if max_retries < 0 or concurrency < 1 or timeout <= 0 or backoff < 0:
            raise ScorerError(
                "systemone needs max_retries >= 0, concurrency >= 1, timeout > 0, backoff >= 0"
            )
        self.name = f"systemone:{model}"
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.variant = variant
        self.endpoint = self.base_url + ENDPOINTS[variant]
        self.api_key_env = api_key_env
        self.max_retries = max_retries
        self.backoff = backoff
        self.backoff_ceiling = backoff_ceiling
        self.timeout = timeout
        self.concurrency = concurrency
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        api_key = os.environ.get(api_key_env) or None
        self._api_key_present = api_key is not None
        headers = {"content-type": "application/json"}
        if api_key is not None:
            headers["authorization"] = f"Bearer {api_key}"
        # The key lives only in the client's headers and in this redaction closure.
        self._redact: Callable[[str], str] = (
            (lambda text: text.replace(api_key, "***")) if api_key else (lambda text: text)
        )
        self._client = httpx.Client(
            headers=headers, timeout=httpx.Timeout(timeout), transport=transport
        )
        self._counts: dict[str, int] = {
            "queries": 0,
            "http_calls": 0,
            "ok": 0,
            "retries": 0,
            "failed_queries": 0,
            "choice_not_argmax": 0,
        }
        self._failures: dict[str, int] = {}
        self._builds: set[str] = set()
        self._usage: dict[str, float] = {}
        self._cost = 0.0
        self._cost_seen = False
        # Whether the endpoint has ever answered; one thread at a time probes a silent endpoint.
        self._reach = _UNKNOWN
        self._silent_connects = 0
        self._unreachable_reason = ""
        self._probe_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SystemOneScorer(endpoint={self.endpoint!r}, model={self.model!r})"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> SystemOneScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the Scorer protocol -------------------------------------------------------------------

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        """One call per query, at most ``concurrency`` in flight; results in query order.

        Raises :class:`PartialScoreError` (a :class:`ScorerError`) naming the first query that
        still failed after its retries and carrying the decisions that succeeded.
        """
        if not queries:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(queries))) as pool:
            outcomes = list(pool.map(self._score_one_safe, queries))
        failures = [o for o in outcomes if isinstance(o, ScorerError)]
        if failures:
            completed = [o if isinstance(o, Decision) else None for o in outcomes]
            raise PartialScoreError(
                f"{failures[0]} ({len(failures)} of {len(queries)} queries failed; "
                f"{len(queries) - len(failures)} completed)",
                completed,
                query_id=failures[0].query_id,
            )
        return [o for o in outcomes if isinstance(o, Decision)]

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {
                "backend": "systemone",
                "endpoint": self.endpoint,
                "variant": self.variant,
                "model": self.model,
                "resolved_builds": sorted(self._builds),
                "api_key_env": self.api_key_env,
                "api_key_present": self._api_key_present,
                "counts": dict(self._counts),
                "failures_by_kind": dict(sorted(self._failures.items())),
                "usage": dict(sorted(self._usage.items())),
                "cost": self._cost if self._cost_seen else self._usage.get("cost"),
                "max_retries": self.max_retries,
                "backoff": self.backoff,
                "backoff_ceiling": self.backoff_ceiling,
                "timeout": self.timeout,
                "concurrency": self.concurrency,
                "httpx_version": httpx.__version__,
            }

    # -- one query -----------------------------------------------------------------------------

    def request_body(self, query: Query) -> dict[str, Any]:
        """The JSON body for ``query`` (Appendix A): criteria keyed in display order."""
        criteria = dict(zip(query.keys, query.options, strict=True))
        return {
            "model": self.model,
            "state": query.state,
            "questions": {
                _QUESTION: {
                    "type": "choice",
                    "instructions": query.instruction,
                    "criteria": criteria,
                }
            },
        }

    def _score_one_safe(self, query: Query) -> Decision | ScorerError:
        try:
            return self._score_one(query)
        except ScorerError as exc:
            return exc

    def _score_one(self, query: Query) -> Decision:
        body = self.request_body(query)
        with self._lock:
            self._counts["queries"] += 1
        last = "no attempt"
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._count("retries")
            try:
                if self._reach == _ANSWERED:
                    return self._attempt(query, body)
                return self._attempt_unproven(query, body)
            except _Retryable as exc:
                last = exc.kind
                self._failure(exc.kind)
                if attempt < self.max_retries:
                    self._sleep(self._delay(attempt, exc.retry_after))
        self._count("failed_queries")
        raise ScorerError(
            f"systemone {self.endpoint} (model {self.model!r}): query {query.id} "
            f"(item {query.meta.get('item_id', '?')}) failed after {self.max_retries + 1} "
            f"attempts; last error: {last}",
            query_id=query.id,
        )

    def _attempt_unproven(self, query: Query, body: dict[str, Any]) -> Decision:
        """An attempt while the endpoint has never answered. Such calls go one at a time, so
        the first failure to connect is followed by exactly one more call (the probe, whichever
        query makes it); when that cannot connect either, this query and every later one fail
        at once instead of each spending the whole retry policy."""
        with self._probe_lock:
            if self._reach == _UNREACHABLE:
                self._count("failed_queries")
                raise self._unreachable_error(query)
            if self._reach != _ANSWERED:
                try:
                    return self._attempt(query, body)
                except _Retryable as exc:
                    if not exc.connect:
                        raise
                    with self._lock:
                        self._silent_connects += 1
                        if self._silent_connects == 1:
                            detail = f": {exc.detail}" if exc.detail else ""
                            self._unreachable_reason = f"{exc.kind}{detail}"
                        elif self._reach != _ANSWERED:
                            self._reach = _UNREACHABLE
                    if self._reach != _UNREACHABLE:
                        raise
                    self._failure(exc.kind)
                    self._count("failed_queries")
                    raise self._unreachable_error(query) from None
        return self._attempt(query, body)

    def _unreachable_error(self, query: Query) -> ScorerError:
        return ScorerError(
            f"systemone endpoint {self.base_url} never answered in this session: "
            f"{self._unreachable_reason} on the first call and again on one probe, so nothing "
            f"more is sent (query {query.id}, item {query.meta.get('item_id', '?')}, and the "
            "rest of the batch); check base_url and that the server is running",
            query_id=query.id,
        )

    def _attempt(self, query: Query, body: dict[str, Any]) -> Decision:
        self._count("http_calls")
        try:
            response = self._client.post(self.endpoint, json=body)
        except httpx.ConnectTimeout as exc:
            raise _Retryable(
                "connect timeout", connect=True, detail=self._redact(str(exc))
            ) from None
        except httpx.TimeoutException:
            raise _Retryable("timeout") from None
        except httpx.ConnectError as exc:
            # connection refused, or a host name that does not resolve
            raise _Retryable(
                f"transport error ({type(exc).__name__})",
                connect=True,
                detail=self._redact(str(exc)),
            ) from None
        except httpx.TransportError as exc:
            raise _Retryable(f"transport error ({type(exc).__name__})") from None
        if self._reach != _ANSWERED:
            with self._lock:
                self._reach = _ANSWERED
        status = response.status_code
        if status == 429 or status >= 500:
            raise _Retryable(f"HTTP {status}", _retry_after(response))
        if status >= 400:
            self._failure(f"HTTP {status}")
            self._count("failed_queries")
            snippet = self._redact(response.text[:_SNIPPET])
            raise ScorerError(
                f"systemone {self.endpoint} answered HTTP {status} for query {query.id} "
                f"(not retried): {snippet!r}"
            )
        try:
            decision, parsed = self._parse(query, response)
        except _InvalidResponse as exc:
            raise _Retryable(f"invalid response: {self._redact(str(exc))}") from None
        self._record(parsed)
        return decision

    def _parse(self, query: Query, response: httpx.Response) -> tuple[Decision, _Response]:
        try:
            parsed = _Response.model_validate_json(response.content)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise _InvalidResponse(f"malformed body ({where}: {first.get('msg')})") from None
        answer = _pick_answer(parsed, response, self.variant)
        sent = list(query.keys)
        extra = sorted(set(answer.probabilities) - set(sent))
        if extra:
            raise _InvalidResponse(f"keys {extra} were not sent (sent {sent})")
        raw = np.array([answer.probabilities.get(k, 0.0) for k in sent], dtype=np.float64)
        if not np.all(np.isfinite(raw)) or np.any(raw < 0):
            raise _InvalidResponse(f"probabilities not finite and non-negative: {raw.tolist()}")
        total = float(raw.sum())
        if not math.isclose(total, 1.0, abs_tol=SUM_TOLERANCE):
            raise _InvalidResponse(
                f"probabilities sum to {total:.6f}, not 1 within {SUM_TOLERANCE}"
            )
        if answer.choice is not None and answer.choice not in sent:
            raise _InvalidResponse(f"choice {answer.choice!r} is not a key that was sent")
        aux: dict[str, Any] = {"raw_sum": total}
        if answer.confidence is not None:
            if not (math.isfinite(answer.confidence) and 0.0 <= answer.confidence <= 1.0):
                raise _InvalidResponse(f"confidence {answer.confidence!r} is not in [0, 1]")
            aux["conf_head"] = float(answer.confidence)
        if answer.choice is not None:
            aux["reported_choice"] = answer.choice
            is_argmax = bool(raw[sent.index(answer.choice)] == raw.max())
            aux["choice_is_argmax"] = is_argmax
            if not is_argmax:
                self._count("choice_not_argmax")
        build = parsed.build or parsed.model
        if build is not None:
            aux["resolved_model"] = build
        decision = Decision(query_id=query.id, probs=raw / total, scores={"prob": raw}, aux=aux)
        return decision, parsed

    # -- bookkeeping -----------------------------------------------------------------------------

    def _record(self, parsed: _Response) -> None:
        with self._lock:
            self._counts["ok"] += 1
            build = parsed.build or parsed.model
            if build is not None:
                self._builds.add(build)
            for key, value in (parsed.usage or {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    self._usage[key] = self._usage.get(key, 0.0) + float(value)
            if parsed.cost is not None:
                self._cost += float(parsed.cost)
                self._cost_seen = True


def _pick_answer(parsed: _Response, response: httpx.Response, variant: str) -> _Answer:
    """``answers.q``, or the answer object at the top level, whichever the body holds (both
    variants serve both shapes in practice; ``variant`` only names the endpoint)."""
    if parsed.answers is not None:
        if _QUESTION not in parsed.answers:
            raise _InvalidResponse(f"answers has no {_QUESTION!r} (got {sorted(parsed.answers)})")
        return parsed.answers[_QUESTION]
    try:
        return _Answer.model_validate_json(response.content)
    except ValidationError:
        pass
    raise _InvalidResponse("body has neither answers.q nor a top-level answer object")


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
