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

Three wire formats (``api=``; bodies in :mod:`._openai_bodies`, parsing in :mod:`._openai_wire`):

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

**Checks on every answer.** The spans must tile the text (every character in exactly one
token: a byte token decoded as ``""`` and a truncated prompt are each refused with that cause),
every log-probability must be possible (finite, at most 0 within
:data:`~._openai_wire.LOGPROB_TOLERANCE`), nothing may be generated after an echo, and the
answer must come from the model asked for (the response's ``model``, where the server sends
one, must be ``model``; the refusal records the server's answer in
``describe()["server"]["refused_models"]``). A request that fails a check is not retried and
none of its rows is kept; a resumed run scores its queries again.

**The conformance probe** (:mod:`._probe`): before the first row the run loop calls
:meth:`OpenAIScorer.prepare`, which checks the server on built-in strings — echo
log-probabilities are conditional, nothing is generated after the echo, the tokens tile the
text, several prompts per request are taken (else the scorer sends one prompt per request) —
and refuses a server that fails, naming the check, the server's answer and what to do.
``probe=False`` skips it; either way ``describe()["probe"]`` records what happened.

**Order check** (:mod:`._openai_reorder`): the first ``reorder_check`` queries' strings are
sent again in reversed order and compared token by token.

Requests carry ``queries_per_request`` queries' strings (default 1: each context of the query,
its prompt and its neutral prompt, then goes in a request of its own with its options — the one
packed row ``hf`` runs for that context, so over ``serve-model`` the scores are the engine's own
floats) and at most ``concurrency`` requests are in flight. The transport (API key
from ``api_key_env``, redaction of everything the server reports, retries of 429/5xx/timeouts/
invalid bodies with jittered backoff, one retry for an error that says it will recur, one probe
for an endpoint that never answered) is :mod:`._http`'s, shared with ``systemone``. The
manifest records the server's model entry (``/v1/models``, or SGLang's ``/get_model_info``) as
it reports it, redacted: id, root, and where the server gives them, weights sha256, revision,
dtype and tokenizer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, NoReturn

import httpx

from choiceaudit.scorers._client_prompt import ClientPrompt
from choiceaudit.scorers._http import HTTPBackend, Retryable
from choiceaudit.scorers._openai_bodies import (
    InvalidBody,
    ServedModel,
    ServerReport,
    request_body,
)
from choiceaudit.scorers._openai_reorder import ReorderCheck
from choiceaudit.scorers._openai_rows import (
    decision_from_tokens,
    query_strings,
    requests_by_context,
)
from choiceaudit.scorers._openai_wire import (
    APIS,
    INFO,
    Parsed,
    Tokens,
    align_tokens,
    parse_body,
)
from choiceaudit.scorers._probe import ProbeResult, run_probe, skipped_probe
from choiceaudit.scorers._protocol import InconsistentServerError, PartialScoreError, ScorerError
from choiceaudit.types import Decision, Query

__all__ = ["APIS", "OpenAIScorer", "align_tokens"]


class OpenAIScorer(HTTPBackend):
    """Causal LM option scorer over an inference server (rules ``sum``, ``mean``, ``pmi``); see
    the module docstring. ``transport`` replaces the network (``httpx.MockTransport`` in
    tests) and ``sleep`` replaces :func:`time.sleep` so retry schedules are testable."""

    label = "openai"
    failed_counter = "failed"
    snippet = 300

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
        probe: bool = True,
        probe_tolerance: float = 0.02,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        seed: int = 0,
    ) -> None:
        if api not in APIS:
            raise ScorerError(f"openai api must be one of {sorted(APIS)}, got {api!r}")
        if not model:
            raise ScorerError("openai needs a model name (openai:<model>)")
        if not isinstance(probe, bool):
            raise ScorerError(f"probe must be true or false, got {probe!r}")
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
            or not probe_tolerance >= 0
        ):
            raise ScorerError(
                "openai needs max_retries >= 0, concurrency >= 1, queries_per_request >= 1, "
                "timeout > 0, backoff >= 0, reorder_check >= 0, reorder_tolerance >= 0 and "
                "probe_tolerance >= 0"
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
            counters=("queries", "requests", "http_calls", "retries", "failed"),
        )
        self.prompt = ClientPrompt.resolve(
            model,
            api,
            chat_template=chat_template,
            system_prompt=system_prompt,
            tokenizer=tokenizer,
        )
        self.name = f"openai:{model}"
        self.model = model
        self.api = api
        self.endpoint = self.base_url + APIS[api]
        self.queries_per_request = queries_per_request
        self.concurrency = concurrency
        self.reorder_check = reorder_check
        self.reorder_tolerance = float(reorder_tolerance)
        self.reorder_action = reorder_action
        self.probe = bool(probe)
        self.probe_tolerance = float(probe_tolerance)
        #: False once the probe found that the server takes one prompt per request.
        self.several_prompts = True
        self._probe_result: ProbeResult | None = None if probe else skipped_probe()
        self._span_methods = {"offsets": 0, "aligned": 0, "partial": 0}
        self._fingerprints: set[str] = set()
        self._response_models: set[str] = set()
        self._refused_models: dict[str, int] = {}
        self._reorder = ReorderCheck(
            self.base_url, reorder_check, float(reorder_tolerance), reorder_action
        )
        self._info: ServerReport | None = None

    def __repr__(self) -> str:
        return f"OpenAIScorer(endpoint={self.endpoint!r}, model={self.model!r}, api={self.api!r})"

    def __enter__(self) -> OpenAIScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- before the first row ------------------------------------------------------------------

    def prepare(self) -> ProbeResult:
        """Run the conformance probe once (unless ``probe=False``) and return its result; a
        server that fails it raises :class:`~._probe.ProbeFailed` naming the check."""
        if self._probe_result is None:
            self.server_info()
            self._probe_result = run_probe(self)
        return self._probe_result

    # -- the manifest --------------------------------------------------------------------------

    def server_info(self) -> ServerReport:
        """The server's entry for the model, as it reports it (fetched once, redacted)."""
        if self._info is None:
            path = INFO[self.api]
            info: ServerReport
            try:
                body = self.exchange("GET", self.base_url + path, None, where="the model list")
            except ScorerError as exc:
                if "answered HTTP 4" not in str(exc):
                    raise
                info = {"endpoint": path, "error": str(exc)}
            else:
                info = {"endpoint": path, "entry": self.redact(self._model_entry(body))}
            self._info = info
        return info if self._info is None else self._info

    def _model_entry(self, body: object) -> object:
        if self.api == "sglang" or not isinstance(body, dict):
            return body
        data = body.get("data")
        if isinstance(data, list):
            for entry in data:
                if isinstance(entry, dict) and entry.get("id") == self.model:
                    return entry
            served = self.redact([e.get("id") for e in data if isinstance(e, dict)])
            raise ScorerError(
                f"openai server {self.base_url} does not serve model {self.model!r} "
                f"(it serves {served})"
            )
        return body

    def describe(self) -> dict[str, Any]:
        info = self.server_info()
        served = ServedModel.from_entry(info.get("entry"))
        probe = self._probe_result
        with self._lock:
            return {
                "backend": "openai",
                "name": self.name,
                "model": self.name,
                "model_id": served.model_id,
                "weights_sha256": served.weights_sha256,
                "revision": served.revision,
                "dtype": served.dtype,
                "tokenizer": served.tokenizer,
                **self.prompt.describe(),
                "server": {
                    "base_url": self.base_url,
                    "api": self.api,
                    "endpoint": self.endpoint,
                    "reported": info,
                    "system_fingerprints": sorted(self._fingerprints),
                    "response_models": sorted(self._response_models),
                    "refused_models": dict(sorted(self._refused_models.items())),
                },
                "probe": {"status": "not run"} if probe is None else probe.to_dict(),
                "prompts_per_request": "several" if self.several_prompts else "one",
                "rules": ["sum", "mean", "pmi"],
                "probs": "softmax of sum over the menu",
                "scored_tokens": "in place: first token ending after the prompt, to the end",
                "spans_by_method": dict(self._span_methods),
                "reorder_check": self._reorder.describe(),
                "queries_per_request": self.queries_per_request,
                "concurrency": self.concurrency,
                "max_retries": self.max_retries,
                "backoff": self.backoff,
                "backoff_ceiling": self.backoff_ceiling,
                "timeout": self.timeout,
                **self.secrecy(),
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
            return self._partial(queries, decisions, failures)
        return [d for d in decisions if d is not None]

    @staticmethod
    def _partial(
        queries: Sequence[Query], decisions: list[Decision | None], failures: list[ScorerError]
    ) -> NoReturn:
        """Raise the failure; one that found the server inconsistent keeps no decision."""
        distrust = next((f for f in failures if isinstance(f, InconsistentServerError)), None)
        if distrust is not None:
            raise PartialScoreError(
                f"{distrust} (no row of this scoring session from this server is kept)",
                [None] * len(queries),
                query_id=distrust.query_id,
                distrust=str(distrust),
            )
        n_failed = sum(d is None for d in decisions)
        raise PartialScoreError(
            f"{failures[0]} ({n_failed} of {len(queries)} queries failed; "
            f"{len(queries) - n_failed} completed)",
            decisions,
            query_id=failures[0].query_id,
        )

    def _score_batch_safe(self, batch: list[Query]) -> list[Decision] | ScorerError:
        try:
            return self._score_batch(batch)
        except ScorerError as exc:
            exc.query_id = exc.query_id or batch[0].id
            return exc

    def _score_batch(self, batch: list[Query]) -> list[Decision]:
        per_query = [query_strings(q, self.prompt.context, self.prompt.continuation) for q in batch]
        together = self.queries_per_request > 1
        requests = requests_by_context(per_query, together=together)
        with self._lock:
            self._counts["queries"] += len(batch)
        scored = [tok for texts in requests for tok in self._request(texts)]
        check = self._reorder.take(len(batch))
        if check:
            sample = requests_by_context(per_query[:check], together=together)
            self._reorder.compare(batch[0].id, sample, scored, self._request)
        out: list[Decision] = []
        start = 0
        for query, (strings, n_context, labels) in zip(batch, per_query, strict=True):
            tokens = scored[start : start + len(strings)]
            start += len(strings)
            out.append(decision_from_tokens(query, n_context, labels, tokens))
        return out

    # -- the wire ------------------------------------------------------------------------------

    def _request(self, texts: list[str]) -> list[Tokens]:
        """``texts`` scored: one request (retried as a whole), or one per string where the
        server takes one prompt per request."""
        if self.several_prompts or len(texts) == 1:
            return self.scored(texts, as_list=self.several_prompts).tokens
        return [tok for text in texts for tok in self.scored([text], as_list=False).tokens]

    def scored(self, texts: list[str], *, as_list: bool, **retries: int | None) -> Parsed:
        """One scoring request for ``texts``, parsed and checked (the probe uses it too, with
        its own ``max_retries`` / ``timeout_retries``: :meth:`exchange`)."""
        self._count("requests")
        body = request_body(
            self.api,
            self.model,
            texts,
            as_list=as_list,
            add_special_tokens=self.prompt.add_special_tokens,
        )
        parsed: Parsed = self.exchange(
            "POST",
            self.endpoint,
            body,
            where=f"a request of {len(texts)} strings",
            parse=lambda data: parse_body(self.api, self.base_url, texts, data),
            **retries,
        )
        self._check_model(parsed)
        with self._lock:
            if parsed.fingerprint is not None:
                self._fingerprints.add(self.redact(parsed.fingerprint))
            for tok in parsed.tokens:
                self._span_methods[tok.method] += 1
        return parsed

    def _check_model(self, parsed: Parsed) -> None:
        """Refuse an answer from another model than the one asked for (a proxy or a load
        balancer routing to several servers), recording what the server said."""
        if parsed.model is None:
            return
        answered = self.redact(parsed.model)
        with self._lock:
            if parsed.model == self.model:
                self._response_models.add(answered)
                return
            self._refused_models[answered] = self._refused_models.get(answered, 0) + 1
        raise InconsistentServerError(
            f"openai {self.base_url}: asked for model {self.model!r}, the server answered as "
            f"{answered!r}; no row of that request is kept (is base_url a proxy or balancer "
            "over servers of different models?)"
        )

    def exchange(
        self,
        method: str,
        url: str,
        body: Mapping[str, object] | None,
        *,
        where: str,
        parse: Callable[[Any], Any] = lambda data: data,
        **retries: int | None,
    ) -> Any:
        """One call under the retry policy (``max_retries``, ``timeout_retries``: see
        ``HTTPBackend._call``), its JSON handed to ``parse``; a body that is not JSON or breaks
        the format is retried, a :class:`ScorerError` from ``parse`` is not."""

        def attempt() -> Any:
            response = self._send(method, url, body)
            try:
                # redacted before it is read: a message quoting part of it cannot cut a key
                return parse(self.redact(response.json()))
            except (ValueError, InvalidBody, KeyError, TypeError, IndexError) as exc:
                message = self.redact(str(exc))  # the same one twice: the server's, not transient
                raise Retryable(
                    f"invalid response: {message[: self.snippet]}", answer=(200, message)
                ) from None

        def exhausted(last: str, attempts: int) -> ScorerError:
            return ScorerError(
                f"openai {url} (model {self.model!r}) failed after {attempts} attempts; "
                f"last error: {last}"
            )

        return self._call(attempt, exhausted, where, **retries)
