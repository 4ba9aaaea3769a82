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

The transport is :mod:`._http`'s, shared with the ``openai`` scorer: 429, 5xx, timeouts,
transport errors and invalid bodies are retried with exponential backoff and jitter up to a
ceiling (Appendix R: "retried with exponential backoff to a 30 s ceiling; no call was
dropped"); nothing from an invalid body is recorded; other 4xx statuses fail at once, a 5xx
that says it will recur fails after one retry, and an endpoint that never answered fails after
one probe, naming the base URL. This module writes only the request and the parsing.

What the model read is not knowable from outside: the API reports no token counts of the state,
so nothing is recorded about truncation (``aux`` has no ``truncated``/``tokens_seen`` fields for
this backend; a server-side limit is the API's to document). The API key is read from an
environment variable and sent as a bearer token; it never appears in
:meth:`SystemOneScorer.describe`, in ``repr``, in a row or in an exception message (every
string the server reported is redacted before it is kept).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import httpx
import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from typing_extensions import TypedDict

from choiceaudit.scorers._http import HTTPBackend, Retryable
from choiceaudit.scorers._protocol import PartialScoreError, ScorerError
from choiceaudit.types import Decision, Query

__all__ = [
    "ENDPOINTS",
    "SUM_TOLERANCE",
    "ChoiceQuestion",
    "DecisionRequest",
    "PartialScoreError",
    "SystemOneScorer",
]

#: Path of each API variant, relative to the base URL.
ENDPOINTS: dict[str, str] = {"systemone": "/v1/systemone", "alpha": "/api/alpha/decisions"}

#: The per-call contract check on the returned vector (Appendix A).
SUM_TOLERANCE = 1e-2

_QUESTION = "q"


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
    usage: dict[str, float] | None = None
    cost: float | None = None

    @field_validator("usage", mode="before")
    @classmethod
    def _numeric_usage(cls, value: object) -> object:
        """Keep the numeric entries of ``usage`` (what the manifest sums per key): a server's
        nested or textual usage fields are no count, and a boolean is not a number."""
        if not isinstance(value, dict):
            return value  # None passes; anything else fails validation as a malformed body
        return {
            key: number
            for key, number in value.items()
            if isinstance(number, int | float) and not isinstance(number, bool)
        }


class ChoiceQuestion(TypedDict):
    """One question of a decisions request: the options keyed in display order."""

    type: str
    instructions: str
    criteria: dict[str, str]


class DecisionRequest(TypedDict):
    """The JSON body of a decisions request (Appendix A)."""

    model: str
    state: str
    questions: dict[str, ChoiceQuestion]


class _InvalidResponse(Exception):
    """The body broke the contract; retried like a transient failure, never recorded."""


class SystemOneScorer(HTTPBackend):
    """A typed decision model behind an HTTP decisions API (see the module docstring).

    ``backoff`` is the first retry delay in seconds; attempt ``n`` waits
    ``min(backoff_ceiling, backoff * 2**n)`` scaled by a jitter factor in [0.5, 1] (or the
    server's ``Retry-After``, capped at the ceiling). ``concurrency`` bounds the calls in flight.
    ``transport`` replaces the network (``httpx.MockTransport`` in tests); ``sleep`` replaces
    :func:`time.sleep` so retry schedules are testable without waiting.
    """

    label = "systemone"
    failed_counter = "failed_queries"
    snippet = 200

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
        super().__init__(
            base_url,
            api_key_env=api_key_env,
            max_retries=max_retries,
            backoff=backoff,
            backoff_ceiling=backoff_ceiling,
            timeout=timeout,
            transport=transport,
            sleep=sleep,
            seed=seed,
            counters=(
                "queries",
                "http_calls",
                "ok",
                "retries",
                "failed_queries",
                "choice_not_argmax",
            ),
        )
        self.name = f"systemone:{model}"
        self.model = model
        self.variant = variant
        self.endpoint = self.base_url + ENDPOINTS[variant]
        self.concurrency = concurrency
        self._builds: set[str] = set()
        self._usage: dict[str, float] = {}
        self._cost = 0.0
        self._cost_seen = False

    def __repr__(self) -> str:
        return f"SystemOneScorer(endpoint={self.endpoint!r}, model={self.model!r})"

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
                "resolved_builds": sorted(self.redact(self._builds)),
                **self.secrecy(),
                "counts": dict(self._counts),
                "failures_by_kind": dict(sorted(self._failures.items())),
                "usage": self.redact(dict(sorted(self._usage.items()))),
                "cost": self._cost if self._cost_seen else self._usage.get("cost"),
                "max_retries": self.max_retries,
                "backoff": self.backoff,
                "backoff_ceiling": self.backoff_ceiling,
                "timeout": self.timeout,
                "concurrency": self.concurrency,
                "httpx_version": httpx.__version__,
            }

    # -- one query -----------------------------------------------------------------------------

    def request_body(self, query: Query) -> DecisionRequest:
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
            exc.query_id = exc.query_id or query.id
            return exc

    def _score_one(self, query: Query) -> Decision:
        body = self.request_body(query)
        self._count("queries")
        item = query.meta.get("item_id", "?")

        def exhausted(last: str, attempts: int) -> ScorerError:
            return ScorerError(
                f"systemone {self.endpoint} (model {self.model!r}): query {query.id} "
                f"(item {item}) failed after {attempts} attempts; last error: {last}",
                query_id=query.id,
            )

        return self._call(
            lambda: self._attempt(query, body),
            exhausted,
            f"query {query.id}, item {item}, and the rest of the batch",
        )

    def _attempt(self, query: Query, body: DecisionRequest) -> Decision:
        response = self._send("POST", self.endpoint, body, where=f" for query {query.id}")
        try:
            decision, parsed = self._parse(query, response)
        except _InvalidResponse as exc:
            raise Retryable(f"invalid response: {self.redact(str(exc))}") from None
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
        aux: dict[str, object] = {"raw_sum": total}
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
            aux["resolved_model"] = self.redact(build)
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
                self._usage[key] = self._usage.get(key, 0.0) + value
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
