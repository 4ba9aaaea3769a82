"""The ``openai`` scorer: option log-probabilities from an inference server's prompt scoring.

For every option ``o`` of a query the rendered string ``prompt + continuation`` (and, for PMI,
``neutral prompt + continuation``) is sent to the server, which returns the log-probability of
every prompt token. The **scored tokens** are then located exactly as the ``hf`` scorer locates
them (:mod:`._tokenize`): the first token whose character span ends after the last prompt
character, through the last token covering any character, so a token that crosses the join is
scored. ``sum``, ``mean`` and ``pmi`` and ``probs = softmax(sum)`` follow as in :mod:`._hf`.
The prompt options are ``hf``'s (``chat_template``, ``system_prompt``) and are applied on the
client (:mod:`._client_prompt`): the server is sent the text ``hf`` would read in process, so
``openai:X`` is asked what ``X`` is asked. Without a template the server adds its own special
tokens, as ``hf`` does; with one it is asked not to (the template writes them).

Three wire formats (``api=``; bodies and parsing in :mod:`._openai_wire`):

* ``completions`` — OpenAI ``POST /v1/completions`` with ``echo: true``, ``logprobs: 1``,
  ``max_tokens: 0``: ``choices[i].logprobs`` gives ``tokens``, ``token_logprobs`` and
  ``text_offset`` (vLLM, SGLang's OpenAI API, ``choiceaudit serve-model``);
* ``vllm-prompt-logprobs`` — vLLM's ``prompt_logprobs: 0`` extension: ``choices[i].prompt_logprobs``
  is ``[null, {"<id>": {"logprob", "rank", "decoded_token"}}, …]`` (``prompt_token_ids`` too
  when the server returns them); vLLM does not serve prompt log-probabilities from its prefix
  cache (it recomputes them), so this costs a full prefill per string;
* ``sglang`` — SGLang's native ``POST /generate`` with ``return_logprob``,
  ``logprob_start_len: 0``, ``return_text_in_logprobs``: ``meta_info.input_token_logprobs`` is
  ``[[logprob | null, token_id, token_text], …]``.

**Spans.** Where the returned ``text_offset`` are true character offsets
(``text[off:off + len(token)] == token`` for every token), they are used as they are
(``offsets``). vLLM computes ``text_offset`` as a running sum of per-token decoded lengths,
which a BOS decoded as ``"<s>"`` shifts; then, and for the two formats without offsets, the
spans are recovered by aligning the token strings to the prompt text (``aligned``): tokens tile
the text left to right, a leading special token that is not in the text is zero-width, a
first token of unknown text (vLLM's ``prompt_logprobs`` entry 0) takes whatever precedes the
rest. Alignment fails loudly when per-token decoding does not reproduce the text (a
SentencePiece token decoded without its leading space, a byte token decoded as U+FFFD): such a
server's offsets cannot place the option, and the error says so. Either way the spans must
reach the last character of the text; a server that truncated the prompt is an error.

**Order check.** Prompt log-probabilities have been reported to depend on request order on
vLLM with prefix caching on (vllm issue 42019: cached prefix positions returned stale values).
For the first ``reorder_check`` queries the scorer scores, the same strings are sent again in
reversed order and every token's log-probability is compared; the largest difference, the
number of queries checked and the mismatches (over ``reorder_tolerance``) are recorded in the
manifest (``describe()["reorder_check"]``), and with ``reorder_action="error"`` (the default)
a mismatch stops the run: fix the server (``--no-enable-prefix-caching``) or accept the
recorded noise with ``reorder_action=record``.

Requests carry ``queries_per_request`` queries' strings (default 1: one query's strings are
then the one group — one token trie — that ``hf`` builds, so over ``serve-model`` the scores are
the engine's own), at most ``concurrency`` requests are in flight, and 429, 5xx, timeouts,
transport errors and invalid bodies are retried with exponential backoff and jitter; other 4xx
fail at once. The API key is read from ``api_key_env`` and sent as a bearer token; it never
appears in :meth:`OpenAIScorer.describe`, ``repr`` or an error message. The manifest records the
server's model entry (``/v1/models``, or SGLang's ``/get_model_info``) as it reports it: id,
root, and where the server gives them, weights sha256, revision, dtype and tokenizer.
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

from choiceaudit.scorers._client_prompt import ClientPrompt
from choiceaudit.scorers._openai_wire import (
    APIS,
    INFO,
    InvalidBody,
    Parsed,
    Tokens,
    align_tokens,
    parse_body,
    request_body,
)
from choiceaudit.scorers._protocol import PartialScoreError, ScorerError
from choiceaudit.scorers._retry import RetryBookkeeping
from choiceaudit.scorers._tokenize import InPlace, _locate
from choiceaudit.types import Decision, FloatArray, Query

__all__ = ["APIS", "OpenAIScorer", "align_tokens"]


_SNIPPET = 300
#: vLLM clamps a returned log-probability at this value (``max(logprob, -9999.0)``).
_CLAMP = -9999.0


class _Retryable(Exception):
    def __init__(self, kind: str, retry_after: float | None = None) -> None:
        super().__init__(kind)
        self.kind = kind
        self.retry_after = retry_after


def _softmax(scores: FloatArray) -> FloatArray:
    # the same shifted float64 softmax as hf's (kept here: importing _hf needs torch)
    z = np.exp(scores - scores.max())
    return z / z.sum()  # type: ignore[no-any-return]


class OpenAIScorer(RetryBookkeeping):
    """Causal LM option scorer over an inference server (rules ``sum``, ``mean``, ``pmi``); see
    the module docstring. ``transport`` replaces the network (``httpx.MockTransport`` in
    tests) and ``sleep`` replaces :func:`time.sleep` so retry schedules are testable."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api: Literal["completions", "vllm-prompt-logprobs", "sglang"] = "completions",
        chat_template: str | None = None,
        system_prompt: str | None = None,
        tokenizer: str | None = None,
        api_key_env: str = "CHOICEAUDIT_API_KEY",
        queries_per_request: int = 1,
        concurrency: int = 4,
        max_retries: int = 6,
        backoff: float = 0.5,
        backoff_ceiling: float = 30.0,
        timeout: float = 120.0,
        reorder_check: int = 8,
        reorder_tolerance: float = 1e-4,
        reorder_action: Literal["error", "record"] = "error",
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        seed: int = 0,
    ) -> None:
        if api not in APIS:
            raise ScorerError(f"openai api must be one of {sorted(APIS)}, got {api!r}")
        if not model:
            raise ScorerError("openai needs a model name (openai:<model>)")
        if reorder_action not in ("error", "record"):
            raise ScorerError(f"reorder_action must be 'error' or 'record', got {reorder_action!r}")
        if (
            max_retries < 0
            or concurrency < 1
            or queries_per_request < 1
            or timeout <= 0
            or backoff < 0
            or reorder_check < 0
            or not reorder_tolerance >= 0
        ):
            raise ScorerError(
                "openai needs max_retries >= 0, concurrency >= 1, queries_per_request >= 1, "
                "timeout > 0, backoff >= 0, reorder_check >= 0 and reorder_tolerance >= 0"
            )
        self.prompt = ClientPrompt.resolve(
            model, api, chat_template=chat_template, system_prompt=system_prompt, tokenizer=tokenizer
        )
        self.name = f"openai:{model}"
        self.model = model
        self.api = api
        self.base_url = base_url.rstrip("/")
        self.endpoint = self.base_url + APIS[api]
        self.api_key_env = api_key_env
        self.queries_per_request = queries_per_request
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff = backoff
        self.backoff_ceiling = backoff_ceiling
        self.timeout = timeout
        self.reorder_check = reorder_check
        self.reorder_tolerance = float(reorder_tolerance)
        self.reorder_action = reorder_action
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
        self._counts = {"queries": 0, "requests": 0, "http_calls": 0, "retries": 0, "failed": 0}
        self._failures: dict[str, int] = {}
        self._span_methods = {"offsets": 0, "aligned": 0}
        self._fingerprints: set[str] = set()
        self._response_models: set[str] = set()
        self._reorder = {"queries_checked": 0, "tokens_compared": 0, "mismatches": 0}
        self._reorder_max = 0.0
        self._info: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"OpenAIScorer(endpoint={self.endpoint!r}, model={self.model!r}, api={self.api!r})"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the manifest --------------------------------------------------------------------------

    def server_info(self) -> dict[str, Any]:
        """The server's entry for the model, as it reports it (fetched once)."""
        if self._info is None:
            path = INFO[self.api]
            try:
                body = self._call("GET", self.base_url + path, None)
            except ScorerError as exc:
                if "answered HTTP 4" not in str(exc):
                    raise
                self._info = {"endpoint": path, "error": str(exc)}
            else:
                self._info = {"endpoint": path, "entry": self._model_entry(body)}
        return self._info

    def _model_entry(self, body: Any) -> Any:
        if self.api == "sglang" or not isinstance(body, dict):
            return body
        data = body.get("data")
        if isinstance(data, list):
            for entry in data:
                if isinstance(entry, dict) and entry.get("id") == self.model:
                    return entry
            served = [e.get("id") for e in data if isinstance(e, dict)]
            raise ScorerError(
                f"openai server {self.base_url} does not serve model {self.model!r} "
                f"(it serves {served})"
            )
        return body

    def describe(self) -> dict[str, Any]:
        info = self.server_info()
        found = info.get("entry")
        entry: dict[str, Any] = found if isinstance(found, dict) else {}
        mine = entry.get("choiceaudit")
        own: dict[str, Any] = mine if isinstance(mine, dict) else {}
        model_id = own.get("model_id") or entry.get("root") or entry.get("model_path")
        with self._lock:
            return {
                "backend": "openai",
                "name": self.name,
                "model": self.name,
                "model_id": model_id,
                "weights_sha256": own.get("weights_sha256"),
                "revision": own.get("revision"),
                "dtype": own.get("dtype"),
                "tokenizer": own.get("tokenizer") or entry.get("tokenizer_path"),
                **self.prompt.describe(),
                "server": {
                    "base_url": self.base_url,
                    "api": self.api,
                    "endpoint": self.endpoint,
                    "reported": info,
                    "system_fingerprints": sorted(self._fingerprints),
                    "response_models": sorted(self._response_models),
                },
                "rules": ["sum", "mean", "pmi"],
                "probs": "softmax of sum over the menu",
                "scored_tokens": "in place: first token ending after the prompt, to the end",
                "spans_by_method": dict(self._span_methods),
                "reorder_check": {
                    "sample": self.reorder_check,
                    **self._reorder,
                    "max_abs_diff": self._reorder_max,
                    "tolerance": self.reorder_tolerance,
                    "action": self.reorder_action,
                },
                "queries_per_request": self.queries_per_request,
                "concurrency": self.concurrency,
                "max_retries": self.max_retries,
                "backoff": self.backoff,
                "backoff_ceiling": self.backoff_ceiling,
                "timeout": self.timeout,
                "api_key_env": self.api_key_env,
                "api_key_present": self._api_key_present,
                "counts": dict(self._counts),
                "failures_by_kind": dict(sorted(self._failures.items())),
                "httpx_version": httpx.__version__,
            }

    # -- the Scorer protocol -------------------------------------------------------------------

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        """Decisions in query order; :class:`PartialScoreError` (with what came back) when a
        request still failed after its retries."""
        if not queries:
            return []
        self.server_info()
        step = self.queries_per_request
        batches = [list(queries[i : i + step]) for i in range(0, len(queries), step)]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches))) as pool:
            outcomes = list(pool.map(self._score_batch_safe, batches))
        decisions: list[Decision | None] = []
        failures: list[ScorerError] = []
        for batch, outcome in zip(batches, outcomes, strict=True):
            if isinstance(outcome, ScorerError):
                failures.append(outcome)
                decisions.extend([None] * len(batch))
            else:
                decisions.extend(outcome)
        if failures:
            n_failed = sum(d is None for d in decisions)
            raise PartialScoreError(
                f"{failures[0]} ({n_failed} of {len(queries)} queries failed; "
                f"{len(queries) - n_failed} completed)",
                decisions,
                query_id=failures[0].query_id,
            )
        return [d for d in decisions if d is not None]

    def _score_batch_safe(self, batch: list[Query]) -> list[Decision] | ScorerError:
        try:
            return self._score_batch(batch)
        except ScorerError as exc:
            exc.query_id = exc.query_id or batch[0].id
            return exc

    def _strings(self, query: Query) -> tuple[list[str], list[int], list[str]]:
        """The strings of a query (options after the prompt, then after the neutral prompt),
        each one's context length, and labels for errors."""
        conts = [self.prompt.continuation(c) for c in query.continuations()]
        texts, n_context, labels = [], [], []
        contexts = [(self.prompt.context(query.prompt()), "")]
        if query.neutral_state is not None:
            contexts.append((self.prompt.context(query.prompt(neutral=True)), ", neutral prompt"))
        for context, where in contexts:
            for i, cont in enumerate(conts):
                texts.append(context + cont)
                n_context.append(len(context))
                labels.append(f"query {query.id} option {i} ({query.options[i]!r}){where}")
        return texts, n_context, labels

    def _score_batch(self, batch: list[Query]) -> list[Decision]:
        per_query = [self._strings(q) for q in batch]
        texts = [t for strings, _, _ in per_query for t in strings]
        with self._lock:
            self._counts["queries"] += len(batch)
        scored = self._request(texts)
        check = self._take_reorder_sample(len(batch))
        if check:
            sample = [t for strings, _, _ in per_query[:check] for t in strings]
            self._reorder_compare(batch[0].id, sample, scored[: len(sample)])
        out: list[Decision] = []
        start = 0
        for query, (strings, n_context, labels) in zip(batch, per_query, strict=True):
            tokens = scored[start : start + len(strings)]
            start += len(strings)
            out.append(self._decision(query, strings, n_context, labels, tokens))
        return out

    def _decision(
        self,
        query: Query,
        strings: list[str],
        n_context: list[int],
        labels: list[str],
        tokens: list[Tokens],
    ) -> Decision:
        located: list[InPlace] = []
        lps: list[FloatArray] = []
        for text, n_ctx, label, tok in zip(strings, n_context, labels, tokens, strict=True):
            if max((e for s, e in tok.spans if e > s), default=0) != len(text):
                raise ScorerError(
                    f"{label}: the server's tokens end before the end of the string (was the "
                    "prompt truncated?); choiceaudit never scores a truncated prompt",
                    query_id=query.id,
                )
            try:
                enc = _locate(list(range(len(tok.spans))), list(tok.spans), n_ctx, label)
            except ScorerError as exc:
                exc.query_id = query.id
                raise
            values = tok.logprobs[enc.first_scored : len(enc.ids)]
            if any(v is None for v in values):
                raise ScorerError(
                    f"{label}: the server returned no log-probability for a scored token",
                    query_id=query.id,
                )
            if any(v is not None and v <= _CLAMP for v in values):
                raise ScorerError(
                    f"{label}: the server returned {_CLAMP} for a scored token, the value vLLM "
                    "writes for a log-probability it clamped (-inf); the score would be wrong",
                    query_id=query.id,
                )
            located.append(enc)
            lps.append(np.asarray(values, dtype=np.float64))
        k = len(query.options)
        sums = np.array([x.sum() for x in lps[:k]], dtype=np.float64)
        n_tokens = np.array([e.n_scored for e in located[:k]], dtype=np.float64)
        scores = {"sum": sums, "mean": sums / n_tokens}
        aux: dict[str, Any] = {"crosses_join": [e.crosses_join for e in located[:k]]}
        if len(located) > k:
            scores["pmi"] = sums - np.array([x.sum() for x in lps[k:]], dtype=np.float64)
            aux["n_tokens_neutral"] = [e.n_scored for e in located[k:]]
        return Decision(
            query_id=query.id,
            probs=_softmax(sums),
            scores=scores,
            n_tokens=tuple(e.n_scored for e in located[:k]),
            aux=aux,
        )

    # -- the order check -----------------------------------------------------------------------

    def _take_reorder_sample(self, n_queries: int) -> int:
        with self._lock:
            left = self.reorder_check - self._reorder["queries_checked"]
            take = max(0, min(left, n_queries))
            self._reorder["queries_checked"] += take
            return take

    def _reorder_compare(self, first_id: str, texts: list[str], first: list[Tokens]) -> None:
        again = self._request(texts[::-1])[::-1]
        worst, compared = 0.0, 0
        for a, b in zip(first, again, strict=True):
            if a.spans != b.spans:
                worst = math.inf
                continue
            for x, y in zip(a.logprobs, b.logprobs, strict=True):
                if x is not None and y is not None:
                    worst = max(worst, abs(x - y))
                    compared += 1
                elif (x is None) != (y is None):
                    worst = math.inf
        with self._lock:
            self._reorder["tokens_compared"] += compared
            self._reorder_max = max(self._reorder_max, worst)
            mismatch = worst > self.reorder_tolerance
            if mismatch:
                self._reorder["mismatches"] += 1
        if mismatch and self.reorder_action == "error":
            raise ScorerError(
                f"openai {self.base_url}: the same strings sent in reversed order got "
                f"log-probabilities up to {worst:.3g} apart (tolerance {self.reorder_tolerance}) "
                f"at query {first_id}; the server's scores depend on request order (vLLM with "
                "prefix caching: vllm issue 42019; run it with --no-enable-prefix-caching), or "
                "pass -o reorder_action=record to keep going and record the difference",
                query_id=first_id,
            )

    # -- the wire ------------------------------------------------------------------------------

    def _request(self, texts: list[str]) -> list[Tokens]:
        """One request for ``texts`` (retried as a whole), parsed into tokens per string."""
        with self._lock:
            self._counts["requests"] += 1
        body = {**request_body(self.api, self.model, texts), **self.prompt.body_fields()}
        parsed: Parsed = self._call(
            "POST",
            self.endpoint,
            body,
            parse=lambda data: parse_body(self.api, self.base_url, texts, data),
        )
        with self._lock:
            if parsed.fingerprint is not None:
                self._fingerprints.add(parsed.fingerprint)
            if parsed.model is not None:
                self._response_models.add(parsed.model)
            for tok in parsed.tokens:
                self._span_methods[tok.method] += 1
        return parsed.tokens

    def _call(
        self,
        method: str,
        url: str,
        body: dict[str, Any] | None,
        parse: Callable[[Any], Any] = lambda data: data,
    ) -> Any:
        last = "no attempt"
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._count("retries")
            try:
                return self._attempt(method, url, body, parse)
            except _Retryable as exc:
                last = exc.kind
                self._failure(exc.kind)
                if attempt < self.max_retries:
                    self._sleep(self._delay(attempt, exc.retry_after))
        self._count("failed")
        raise ScorerError(
            f"openai {url} (model {self.model!r}) failed after {self.max_retries + 1} attempts; "
            f"last error: {last}"
        )

    def _attempt(
        self, method: str, url: str, body: dict[str, Any] | None, parse: Callable[[Any], Any]
    ) -> Any:
        self._count("http_calls")
        try:
            response = self._client.request(method, url, json=body)
        except httpx.TimeoutException:
            raise _Retryable("timeout") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"transport error ({type(exc).__name__})") from None
        status = response.status_code
        if status == 429 or status >= 500:
            raise _Retryable(f"HTTP {status}", _retry_after(response))
        if status >= 400:
            self._failure(f"HTTP {status}")
            snippet = self._redact(response.text[:_SNIPPET])
            raise ScorerError(f"openai {url} answered HTTP {status} (not retried): {snippet!r}")
        try:
            data = response.json()
            return parse(data)
        except (ValueError, InvalidBody, KeyError, TypeError, IndexError) as exc:
            raise _Retryable(f"invalid response: {self._redact(str(exc))[:_SNIPPET]}") from None

    # -- bookkeeping ---------------------------------------------------------------------------


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
