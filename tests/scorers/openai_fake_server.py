"""A toy OpenAI-compatible completions server (an ``httpx.MockTransport`` handler) over a
deterministic causal LM, and the faults real servers were seen to have: echoed
log-probabilities shifted by one position, tokens generated after ``max_tokens: 0``, one prompt
per request only, byte tokens of a multi-byte character decoded as ``""`` — llama-cpp-python's
server had all four.

The model: the vocabulary is :data:`WORDS`, the ASCII characters, and one token per UTF-8 byte;
``log P(token | text before it)`` is a log-softmax over the vocabulary of a hash of the last
characters of the context and the token, so every log-probability is conditional, at most 0
and differs between contexts.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import httpx

WORDS = [
    "The",
    " capital",
    " of",
    " France",
    " is",
    " Paris",
    " cat",
    " sat",
    " on",
    " the",
    "One",
    ",",
    " two",
    " three",
    " four",
    " five",
    "Answer",
    ":",
    " yes",
    " no",
    " ok",
    " café",
    " naïve",
    "本",
]
ASCII = [chr(c) for c in range(32, 127)] + ["\n"]
#: A token is a string, or one byte of a multi-byte character (an int).
VOCAB: list[str | int] = [*WORDS, *(c for c in ASCII if c not in WORDS), *range(128, 256)]


def tokenize(text: str) -> list[tuple[str | int, int, int]]:
    """Greedy longest match over the string tokens, UTF-8 bytes for anything else:
    ``(token, start, end)`` with the character span each token belongs to."""
    words = sorted((t for t in VOCAB if isinstance(t, str)), key=len, reverse=True)
    out: list[tuple[str | int, int, int]] = []
    i = 0
    while i < len(text):
        tok = next((w for w in words if text.startswith(w, i)), None)
        if tok is not None:
            out.append((tok, i, i + len(tok)))
            i += len(tok)
            continue
        for byte in text[i].encode("utf-8"):
            out.append((byte, i, i + 1))
        i += 1
    return out


def logprobs_after(context: str) -> list[float]:
    """``log P(v | context)`` for every ``v`` of the vocabulary."""
    tail = sum(ord(c) * (k + 1) for k, c in enumerate(context[-4:]))
    raw = [((tail * 31 + j * 17) % 101) / 12.0 for j in range(len(VOCAB))]
    top = max(raw)
    lse = top + math.log(sum(math.exp(r - top) for r in raw))
    return [r - lse for r in raw]


def _text(tok: str | int) -> str:
    return tok if isinstance(tok, str) else ""


@dataclass
class FakeServer:
    """Serves ``model`` at ``/v1/completions`` and ``/v1/models``. ``faults`` ⊆ {"shifted",
    "generates", "one_prompt", "partial_utf8", "unlimited", "no_echo", "ignores_echo",
    "shift_but_last", "merge", "duplicate", "nan", "positive", "swapped_model",
    "order_dependent"}; ``requests`` keeps every
    completions body. "unlimited" times out on an echo with ``max_tokens: 0`` (generating until
    the context is full, as llama-cpp-python's server does on a slow machine) and answers
    ``max_tokens: 1``; "no_echo" refuses every echo with llama.cpp's "Only no echo is supported";
    "ignores_echo" answers an echo as llama.cpp's ``llama-server`` was seen to: one generated
    token (even after ``max_tokens: 0``), its log-probability in the chat format's ``content``.
    "shift_but_last" echoes every log-probability but the last one position late; "merge" echoes
    the middle token and the next as one token with the first's log-probability; "duplicate"
    echoes the middle token twice (same span); "nan" and "positive" echo NaN or +0.5 for the
    middle token; "swapped_model" answers as another model; "order_dependent" echoes every
    second request's log-probabilities 0.001 lower. The echo faults start after
    ``fault_after`` echo requests. Echoes report ``usage`` as vLLM
    does, counting the prompt's real tokens."""

    model: str = "toy"
    faults: frozenset[str] = frozenset()
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: the echo faults start after this many echo requests (a server that goes wrong mid-run)
    fault_after: int = 0
    echoes: int = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"data": [{"id": self.model, "root": "/m/toy"}]})
        body = json.loads(request.content)
        self.requests.append(body)
        prompts = body["prompt"]
        if isinstance(prompts, list) and "one_prompt" in self.faults:
            message = "Traceback ... AssertionError: prompt must be a string"
            return httpx.Response(500, json={"error": {"message": message}})
        if body.get("echo") and "no_echo" in self.faults:
            error = {"code": 500, "message": "Only no echo is supported", "type": "server_error"}
            return httpx.Response(500, json={"error": error})
        if body.get("echo") and "ignores_echo" in self.faults:
            token, lp = self._greedy(prompts if isinstance(prompts, str) else prompts[0])
            content = [{"id": 0, "token": token, "logprob": lp, "top_logprobs": []}]
            choice = {"text": token, "index": 0, "logprobs": {"content": content}}
            return httpx.Response(200, json={"model": self.model, "choices": [choice]})
        if body.get("max_tokens") == 0 and "unlimited" in self.faults:
            raise httpx.ReadTimeout("timed out", request=request)
        texts = [prompts] if isinstance(prompts, str) else prompts
        if body.get("echo"):
            self.echoes += 1
            choices = [self._echo(i, t, body.get("max_tokens")) for i, t in enumerate(texts)]
        else:
            choices = [self._one_token(i, t) for i, t in enumerate(texts)]
        model = "other" if "swapped_model" in self.faults else self.model
        answer: dict[str, Any] = {"model": model, "choices": choices}
        if body.get("echo"):  # vLLM's usage: every prompt's tokens as the server tokenized them
            n = sum(len(tokenize(t)) for t in texts)
            answer["usage"] = {"prompt_tokens": n, "completion_tokens": 0, "total_tokens": n}
        # written with the json module's defaults, so an echoed NaN reaches the client as the
        # bare NaN some servers write (httpx's json= refuses it)
        return httpx.Response(
            200, content=json.dumps(answer).encode(), headers={"content-type": "application/json"}
        )

    def _greedy(self, context: str) -> tuple[str, float]:
        lps = logprobs_after(context)
        best = max((j for j in range(len(VOCAB)) if isinstance(VOCAB[j], str)), key=lps.__getitem__)
        return str(VOCAB[best]), lps[best]

    def _one_token(self, index: int, prompt: str) -> dict[str, Any]:
        token, lp = self._greedy(prompt)
        logprobs = {"tokens": [token], "token_logprobs": [lp], "text_offset": [len(prompt)]}
        return {"index": index, "text": token, "logprobs": logprobs}

    def _echo(self, index: int, text: str, max_tokens: Any) -> dict[str, Any]:
        toks = tokenize(text)
        values: list[float | None] = [None]
        for j in range(1, len(toks)):
            # the context of token j; a shifted server conditions on token j itself too
            upto = toks[j][2] if "shifted" in self.faults else toks[j][1]
            values.append(logprobs_after(text[:upto])[VOCAB.index(toks[j][0])])
        if "partial_utf8" in self.faults:
            strings = [_text(t) for t, _, _ in toks]
            offsets, run = [], 0
            for s in strings:  # llama-cpp-python: offsets are a running sum of decoded lengths
                offsets.append(run)
                run += len(s)
        else:  # each byte token is reported with its character's span, as a fast tokenizer does
            strings = [text[s:e] for _, s, e in toks]
            offsets = [s for _, s, _ in toks]
        if self.echoes > self.fault_after:
            strings, offsets, values = _fault(self.faults, strings, offsets, values)
            if "order_dependent" in self.faults:  # every second echo request a little off
                values = [None if v is None else v - 1e-3 * (self.echoes % 2) for v in values]
        echoed = text
        if max_tokens == 0 and "generates" in self.faults:  # 0 read as "no limit"
            for _ in range(3):
                token, lp = self._greedy(echoed)
                offsets.append(len(echoed))
                strings.append(token)
                values.append(lp)
                echoed += token
        logprobs = {"tokens": strings, "token_logprobs": values, "text_offset": offsets}
        return {"index": index, "text": echoed, "logprobs": logprobs}


def _fault(
    faults: frozenset[str], strings: list[str], offsets: list[int], values: list[float | None]
) -> tuple[list[str], list[int], list[float | None]]:
    """The echo's tokens with this server's echo faults applied."""
    mid = len(strings) // 2
    if "shift_but_last" in faults:
        values = [None, None, *values[1:-2], values[-1]]
    if "merge" in faults and mid + 1 < len(strings):
        strings = [*strings[:mid], strings[mid] + strings[mid + 1], *strings[mid + 2 :]]
        offsets = [*offsets[: mid + 1], *offsets[mid + 2 :]]
        values = [*values[: mid + 1], *values[mid + 2 :]]
    if "duplicate" in faults:
        strings = [*strings[: mid + 1], *strings[mid:]]
        offsets = [*offsets[: mid + 1], *offsets[mid:]]
        values = [*values[: mid + 1], *values[mid:]]
    if "nan" in faults or "positive" in faults:
        values = [*values[:mid], math.nan if "nan" in faults else 0.5, *values[mid + 1 :]]
    return strings, offsets, values
