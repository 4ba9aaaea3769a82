"""Servers that write prompt tokens as vLLM and SGLang do: a proxy in front of ``serve-model``
that takes its answer (token ids and log-probabilities) and rewrites each token's text by one
project's own detokenization rule, read from that project's source:

* ``vllm`` — current vLLM: ``LogprobsProcessor._verify_tokens`` and ``_correct_decoded_token``
  in ``vllm/v1/engine/logprobs.py`` (the same rule as ``_correct_decoded_token`` in
  ``vllm/entrypoints/openai/completion/serving.py``). A token whose own decoding ends in
  U+FFFD is decoded again after 1, 2, 3 or 4 preceding ids until the result stops ending in
  U+FFFD; the text of the preceding ids that themselves end in U+FFFD is given to it, and a
  token no context completes is ``""``. ``text_offset`` is a running sum of the token lengths
  (``_create_completion_logprobs``).
* ``vllm-old`` — vLLM before that correction: each id decoded on its own, U+FFFD for every
  incomplete piece of a character; offsets a running sum as above.
* ``sglang`` — SGLang's native ``/generate`` with ``return_text_in_logprobs``:
  ``detokenize_logprob_tokens`` in ``python/sglang/srt/managers/tokenizer_manager.py`` decodes
  each id alone, and ``input_token_logprobs`` is ``[logprob, id, text]`` per token (first
  log-probability ``null``).
* ``vllm-prompt-logprobs`` — vLLM's ``prompt_logprobs`` body (``decoded_token`` by the current
  rule, ``prompt_token_ids`` returned), the ``vllm-prompt-logprobs`` API of the scorer.

``serve-model``'s one-token completion (the probe's) is passed through unchanged.
"""

from __future__ import annotations

from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

REPLACEMENT = "\ufffd"
RULES = ("vllm", "vllm-old", "sglang", "vllm-prompt-logprobs")


def decoded_alone(tokenizer: Any, ids: list[int]) -> list[str]:
    return [tokenizer.decode([i]) for i in ids]


def vllm_current(tokenizer: Any, ids: list[int]) -> list[str]:
    out = []
    for k, token_id in enumerate(ids):
        text = tokenizer.decode([token_id])
        if text.endswith(REPLACEMENT):
            text = _correct(tokenizer, token_id, ids[:k])
        out.append(text)
    return out


def _correct(tokenizer: Any, token_id: int, before: list[int]) -> str:
    for n_ctx in range(1, min(len(before), 4) + 1):
        context = before[-n_ctx:]
        full = tokenizer.decode([*context, token_id])
        if full.endswith(REPLACEMENT):
            continue
        clean_end = len(context)
        for j in range(len(context) - 1, -1, -1):
            if not tokenizer.decode([context[j]]).endswith(REPLACEMENT):
                break
            clean_end = j
        prefix = tokenizer.decode(context[:clean_end]) if clean_end else ""
        if full.startswith(prefix):
            return str(full[len(prefix) :])
        common = 0
        for a, b in zip(prefix, full, strict=False):
            if a != b:
                break
            common += 1
        return str(full[common:])
    return ""


def _running_offsets(tokens: list[str]) -> list[int]:
    offsets, run = [], 0
    for tok in tokens:
        offsets.append(run)
        run += len(tok)
    return offsets


def proxy_app(upstream: str, tokenizer: Any, rule: str) -> Starlette:
    """A server at which the ``openai`` scorer sees the behaviour ``rule`` of :data:`RULES`."""
    assert rule in RULES
    write = decoded_alone if rule in ("vllm-old", "sglang") else vllm_current
    client = httpx.Client(base_url=upstream, timeout=120)

    def served() -> str:
        return str(client.get("/v1/models").json()["data"][0]["id"])

    def echo(prompts: list[str], add_special_tokens: bool) -> list[dict[str, Any]]:
        body: dict[str, Any] = {
            "model": served(),
            "prompt": prompts,
            "echo": True,
            "logprobs": 1,
            "max_tokens": 0,
            "temperature": 0.0,
        }
        if not add_special_tokens:
            body["add_special_tokens"] = False
        answer = client.post("/v1/completions", json=body)
        answer.raise_for_status()
        return list(answer.json()["choices"])

    async def models(request: Request) -> JSONResponse:
        return JSONResponse(client.get("/v1/models").json())

    async def model_info(request: Request) -> JSONResponse:
        return JSONResponse({"model_path": served()})

    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        if not body.get("echo") and "prompt_logprobs" not in body:
            return JSONResponse(client.post("/v1/completions", json=body).json())
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        choices = echo(prompts, body.get("add_special_tokens", True))
        out = []
        for choice in choices:
            ids = choice["prompt_token_ids"]
            tokens = write(tokenizer, ids)
            lps = choice["logprobs"]["token_logprobs"]
            if rule == "vllm-prompt-logprobs":
                entries = [None] + [
                    {str(i): {"logprob": lp, "rank": 1, "decoded_token": t}}
                    for i, t, lp in zip(ids[1:], tokens[1:], lps[1:], strict=True)
                ]
                out.append(
                    {
                        "index": choice["index"],
                        "text": "",
                        "prompt_logprobs": entries,
                        "prompt_token_ids": ids,
                        "finish_reason": "length",
                    }
                )
                continue
            out.append(
                {
                    "index": choice["index"],
                    "text": choice["text"],
                    "logprobs": {
                        "tokens": tokens,
                        "token_logprobs": lps,
                        "text_offset": _running_offsets(tokens),
                        "top_logprobs": [
                            None if lp is None else {t: lp}
                            for t, lp in zip(tokens, lps, strict=True)
                        ],
                    },
                    "finish_reason": "length",
                }
            )
        return JSONResponse(
            {
                "id": "cmpl-proxy",
                "object": "text_completion",
                "model": body["model"],
                "choices": out,
            }
        )

    async def generate(request: Request) -> JSONResponse:
        body = await request.json()
        texts = body["text"] if isinstance(body["text"], list) else [body["text"]]
        if body["sampling_params"].get("max_new_tokens", 0):  # the probe's one-token completion
            one = {
                "model": served(),
                "prompt": texts[0],
                "max_tokens": 1,
                "logprobs": 1,
                "echo": False,
                "temperature": 0.0,
            }
            block = client.post("/v1/completions", json=one).json()["choices"][0]["logprobs"]
            entry = [block["token_logprobs"][0], -1, block["tokens"][0]]
            return JSONResponse(
                {"text": block["tokens"][0], "meta_info": {"output_token_logprobs": [entry]}}
            )
        results = []
        for choice in echo(texts, True):
            ids = choice["prompt_token_ids"]
            lps = choice["logprobs"]["token_logprobs"]
            entries = [[lp, i, t] for lp, i, t in zip(lps, ids, write(tokenizer, ids), strict=True)]
            results.append({"text": "", "meta_info": {"input_token_logprobs": entries}})
        return JSONResponse(results if isinstance(body["text"], list) else results[0])

    return Starlette(
        routes=[
            Route("/v1/models", models),
            Route("/get_model_info", model_info),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/generate", generate, methods=["POST"]),
        ]
    )
