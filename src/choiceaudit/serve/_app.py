"""An OpenAI-compatible ``/v1/completions`` over the local causal-LM engine (prompt scoring only).

``POST /v1/completions`` with ``echo: true``, ``logprobs: 0`` or ``1`` and ``max_tokens: 0``
returns, per prompt, the OpenAI completions ``logprobs`` object: ``tokens`` (each token's
characters in the prompt, ``""`` for a zero-width special token such as a BOS),
``text_offset`` (the token's first character, from the fast tokenizer's offset mapping, so
``prompt[text_offset[i]:text_offset[i] + len(tokens[i])] == tokens[i]`` always holds),
``token_logprobs`` (``null`` first, then the engine's float64 ``log P(token | before)``) and
``top_logprobs`` (the prompt token only). ``prompt_token_ids`` carries the ids, as vLLM's
``return_token_ids`` does. With ``echo`` nothing is generated (``max_tokens`` must be 0). The
one generation served is a greedy one-token completion (``echo: false``, ``max_tokens: 1``):
the next token and its log-probability, which the ``openai`` scorer's conformance probe
compares with the echo of the prompt plus that token. Anything else is refused (400), as is a
prompt longer than the context window (never truncated). ``add_special_tokens: false`` (as
vLLM takes it) scores the text without the tokenizer's special tokens: the ``openai`` scorer
sends it when it has applied a chat template itself.

The strings of one request run as one group of the engine (one token trie), so the ``openai``
scorer, which sends one query's option strings per request, makes the same packed row as the
``hf`` scorer in process. ``GET /v1/models`` reports the served model with its identity
(model id, weights sha256, revision, dtype, tokenizer) under ``choiceaudit``; the scorer records
it in the run's manifest. With ``api_key`` set, requests need ``Authorization: Bearer <key>``.
The app's ``state.engine_seconds`` is the time spent scoring prompts so far, so a benchmark can
tell the engine's time from the HTTP round trips'.
"""

from __future__ import annotations

import hmac
import math
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NotRequired

from starlette.applications import Starlette
from starlette.datastructures import State
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from typing_extensions import TypedDict

from choiceaudit.errors import ScorerError
from choiceaudit.scorers import HFScorer, NextToken, PromptLogprobs, next_token, prompt_logprobs

__all__ = [
    "Completion",
    "CompletionChoice",
    "CompletionRequest",
    "ServedIdentity",
    "TokenizerIdentity",
    "create_app",
]


#: The served tokenizer: its class, where it was loaded from, its size and its BOS.
TokenizerIdentity = TypedDict(
    "TokenizerIdentity",
    {"class": str, "name_or_path": str | None, "vocab_size": int, "bos_token": str | None},
)


class ServedIdentity(TypedDict):
    """The served model's identity under ``choiceaudit`` in ``/v1/models`` (the ``openai``
    scorer records it in the run's manifest)."""

    model: str
    model_id: str
    weights_sha256: str | None
    revision: str | None
    dtype: str
    device: str
    tokenizer: TokenizerIdentity
    libraries: dict[str, str]
    context_window: int | None


class CompletionLogprobs(TypedDict):
    """The OpenAI completions ``logprobs`` object of one prompt."""

    tokens: list[str]
    token_logprobs: list[float | None]
    text_offset: list[int]
    top_logprobs: list[dict[str, float] | None]


class CompletionChoice(TypedDict):
    index: int
    text: str
    logprobs: CompletionLogprobs
    finish_reason: str
    prompt_token_ids: NotRequired[list[int]]


class Usage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class Completion(TypedDict):
    """A ``/v1/completions`` response body."""

    id: str
    object: str
    created: int
    model: str
    system_fingerprint: str
    choices: list[CompletionChoice]
    usage: Usage


@dataclass(frozen=True)
class CompletionRequest:
    """A completions request this server takes: the prompts, whether it scores them (``echo``)
    or generates one greedy token, and whether the tokenizer's special tokens are added."""

    texts: tuple[str, ...]
    echo: bool
    add_special_tokens: bool


_OVERFLOW_HINT = (
    "the model's activations leave the range of this precision (Gemma models overflow in "
    "float16); serve it in float32 or bfloat16"
)


def _non_finite(choices: list[CompletionChoice]) -> str | None:
    """Where the engine computed a log-probability that is not a finite number, in words: such
    a number cannot be written as JSON, and is never a score."""
    for choice in choices:
        for j, value in enumerate(choice["logprobs"]["token_logprobs"]):
            if value is not None and not math.isfinite(value):
                return (
                    f"the model computed log-probability {value} for token {j} of prompt "
                    f"{choice['index']}"
                )
    return None


def _error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status)


def _served_identity(scorer: HFScorer) -> ServedIdentity:
    """What ``/v1/models`` reports about the served model under ``choiceaudit``."""
    lm = scorer.lm
    described = lm.describe()
    identity: ServedIdentity = {
        "model": described["model"],
        "model_id": described["model_id"],
        "weights_sha256": described["weights_sha256"],
        "revision": described["revision"],
        "dtype": described["dtype"],
        "device": described["device"],
        "tokenizer": {
            "class": type(lm.tokenizer).__name__,
            "name_or_path": getattr(lm.tokenizer, "name_or_path", None),
            "vocab_size": len(lm.tokenizer),
            "bos_token": getattr(lm.tokenizer, "bos_token", None),
        },
        "libraries": described["libraries"],
        "context_window": scorer.context_window,
    }
    return identity


def create_app(
    scorer: HFScorer, *, served_name: str | None = None, api_key: str | None = None
) -> Starlette:
    """The ASGI app serving ``scorer``'s model (an ``hf`` scorer: its model, tokenizer and
    engine options). ``served_name`` is the model name clients send (default: the spec)."""
    name = served_name or scorer.name
    lm = scorer.lm
    identity = _served_identity(scorer)
    fingerprint = f"choiceaudit-{(identity['weights_sha256'] or 'unhashed')[:16]}"
    created = int(time.time())
    engine_lock = threading.Lock()  # one forward at a time; the model is not re-entrant

    def authorised(request: Request) -> bool:
        if api_key is None:
            return True
        sent = request.headers.get("authorization", "")
        return hmac.compare_digest(sent.encode(), f"Bearer {api_key}".encode())

    async def models(request: Request) -> JSONResponse:
        if not authorised(request):
            return _error(401, "missing or wrong API key", "authentication_error")
        entry = {
            "id": name,
            "object": "model",
            "created": created,
            "owned_by": "choiceaudit",
            "root": identity["model_id"],
            "max_model_len": scorer.context_window,
            "choiceaudit": identity,
        }
        return JSONResponse({"object": "list", "data": [entry]})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "model": name})

    def score(texts: list[str], add_special_tokens: bool) -> list[PromptLogprobs]:
        with engine_lock, _engine_clock(app.state):
            return prompt_logprobs(
                lm, texts, engine=scorer.engine, add_special_tokens=add_special_tokens
            )

    def generate(texts: list[str], add_special_tokens: bool) -> list[NextToken]:
        with engine_lock:
            return [
                next_token(lm, t, engine=scorer.engine, add_special_tokens=add_special_tokens)
                for t in texts
            ]

    async def completions(request: Request) -> JSONResponse:
        if not authorised(request):
            return _error(401, "missing or wrong API key", "authentication_error")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object")
        asked = _check_request(body, name)
        if isinstance(asked, str):
            return _error(404 if asked.startswith("model") else 400, asked)
        from starlette.concurrency import run_in_threadpool

        texts, specials = list(asked.texts), asked.add_special_tokens
        choices: list[CompletionChoice]
        try:
            if not asked.echo:
                tokens = await run_in_threadpool(generate, texts, specials)
                choices = [
                    _generated(i, t, n) for i, (t, n) in enumerate(zip(texts, tokens, strict=True))
                ]
                n_tokens, n_generated = 0, len(tokens)
            else:
                results = await run_in_threadpool(score, texts, specials)
                choices = [_choice(i, r) for i, r in enumerate(results)]
                n_tokens, n_generated = sum(len(r.ids) for r in results), 0
        except ScorerError as exc:
            return _error(400, str(exc))
        broken = _non_finite(choices)
        if broken is not None:
            message = f"{broken} in {identity['dtype']}; {_OVERFLOW_HINT}"
            return _error(500, message, "server_error")
        return JSONResponse(_completion(name, fingerprint, choices, n_tokens, n_generated))

    routes = [
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.state.engine_seconds = 0.0
    return app


@contextmanager
def _engine_clock(state: State) -> Iterator[None]:
    """Add the block's time to ``state.engine_seconds``: the seconds the engine spent scoring
    prompts, which a benchmark takes from the client's time to see the HTTP and JSON cost."""
    start = time.perf_counter()
    try:
        yield
    finally:
        state.engine_seconds += time.perf_counter() - start


def _check_request(body: Mapping[str, object], name: str) -> CompletionRequest | str:
    """A completions request (the decoded JSON body) as this scoring-only server takes it, or
    what is wrong with it."""
    model = body.get("model")
    if model is not None and model != name:
        return f"model {model!r} is not served here (this server serves {name!r})"
    prompts = body.get("prompt")
    listed = prompts if isinstance(prompts, list) else []
    texts = (
        (prompts,) if isinstance(prompts, str) else tuple(p for p in listed if isinstance(p, str))
    )
    if not texts or (isinstance(prompts, list) and len(texts) != len(prompts)):
        return "prompt must be a string or a non-empty list of strings (token-id prompts are not served)"
    for index, text in enumerate(texts):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate (JSON allows "\ud800")
            return (
                f"prompt[{index}] is not valid Unicode text (a lone surrogate at character "
                f"{exc.start}); send UTF-8 text"
            )
    if body.get("echo") is True and body.get("max_tokens") != 0:
        return "with echo this server scores prompts only: send max_tokens=0"
    if body.get("echo") is not True and body.get("max_tokens") != 1:
        return (
            "this server scores prompts (echo=true, max_tokens=0) or generates one greedy "
            "token (echo=false, max_tokens=1)"
        )
    logprobs = body.get("logprobs")
    if isinstance(logprobs, bool) or logprobs not in (0, 1):
        return "logprobs must be 0 or 1 (the prompt token's log-probability; no alternatives are served)"
    specials = body.get("add_special_tokens", True)
    if not isinstance(specials, bool):
        return "add_special_tokens must be true or false"
    if body.get("n", 1) != 1 or body.get("stream", False):
        return "n must be 1 and stream false"
    return CompletionRequest(texts, body.get("echo") is True, specials)


def _completion(
    name: str, fingerprint: str, choices: list[CompletionChoice], n_prompt: int, n_generated: int
) -> Completion:
    return {
        "id": f"cmpl-{uuid.uuid4().hex}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": name,
        "system_fingerprint": fingerprint,
        "choices": choices,
        "usage": {
            "prompt_tokens": n_prompt,
            "completion_tokens": n_generated,
            "total_tokens": n_prompt + n_generated,
        },
    }


def _generated(index: int, prompt: str, token: NextToken) -> CompletionChoice:
    return {
        "index": index,
        "text": token.text,
        "logprobs": {
            "tokens": [token.text],
            "token_logprobs": [token.logprob],
            "text_offset": [len(prompt)],
            "top_logprobs": [{token.text: token.logprob}],
        },
        "finish_reason": "length",
    }


def _choice(index: int, result: PromptLogprobs) -> CompletionChoice:
    text = result.text
    tokens = [text[s:e] for s, e in result.offsets]
    top: list[dict[str, float] | None] = [
        None if lp is None else {tok: lp} for tok, lp in zip(tokens, result.logprobs, strict=True)
    ]
    return {
        "index": index,
        "text": text,
        "logprobs": {
            "tokens": tokens,
            "token_logprobs": list(result.logprobs),
            "text_offset": [s for s, _ in result.offsets],
            "top_logprobs": top,
        },
        "finish_reason": "length",
        "prompt_token_ids": list(result.ids),
    }
