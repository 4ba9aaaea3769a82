"""The JSON bodies of the ``openai`` scorer's servers as typed values: the request bodies of
each wire format (:func:`request_body`), and each answer's per-string records parsed from the
decoded JSON in one place (:class:`EchoChoice`, :class:`PromptLogprobsChoice`,
:class:`SGLangResult`, the model entry's :class:`ServedModel`), so the checks in
:mod:`._openai_wire` read fields, never JSON. A body that breaks its format raises
:class:`InvalidBody` naming what is missing (retried, like a transient failure).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NotRequired

from typing_extensions import TypedDict

__all__ = [
    "CompletionsBody",
    "EchoChoice",
    "InvalidBody",
    "PromptLogprobsBody",
    "PromptLogprobsChoice",
    "RequestBody",
    "SGLangBody",
    "SGLangResult",
    "SGLangSampling",
    "ServedModel",
    "ServerReport",
    "request_body",
]


class InvalidBody(Exception):
    """The body broke the wire format; retried like a transient failure, never recorded."""


class CompletionsBody(TypedDict):
    """``POST /v1/completions`` scoring prompts: echo their tokens' log-probabilities, generate
    nothing. ``add_special_tokens`` is sent only as ``false`` (a client-side chat template wrote
    them)."""

    model: str
    prompt: str | list[str]
    echo: bool
    logprobs: int
    max_tokens: int
    temperature: float
    add_special_tokens: NotRequired[bool]


class PromptLogprobsBody(TypedDict):
    """vLLM's ``prompt_logprobs`` extension of ``/v1/completions`` (one token is generated, as
    vLLM will not take ``max_tokens: 0`` there, and ignored)."""

    model: str
    prompt: str | list[str]
    prompt_logprobs: int
    max_tokens: int
    temperature: float
    return_token_ids: bool
    add_special_tokens: NotRequired[bool]


class SGLangSampling(TypedDict):
    max_new_tokens: int
    temperature: float


class SGLangBody(TypedDict):
    """SGLang's native ``POST /generate`` returning the input tokens' log-probabilities."""

    text: str | list[str]
    sampling_params: SGLangSampling
    return_logprob: bool
    logprob_start_len: int
    return_text_in_logprobs: bool


RequestBody = CompletionsBody | PromptLogprobsBody | SGLangBody


def request_body(
    api: str, model: str, texts: list[str], *, as_list: bool = True, add_special_tokens: bool = True
) -> RequestBody:
    """The request body of ``api`` scoring ``texts`` (nothing generated, greedy); with
    ``as_list=False`` the one text is sent as a plain string, for a server that takes one
    prompt per request. ``add_special_tokens=False`` asks the server not to add the
    tokenizer's special tokens (SGLang's ``/generate`` has no such switch)."""
    if not as_list and len(texts) != 1:
        raise ValueError("one text per request when the prompt is not a list")
    prompt: str | list[str] = texts if as_list else texts[0]
    if api == "completions":
        completions: CompletionsBody = {
            "model": model,
            "prompt": prompt,
            "echo": True,
            "logprobs": 1,
            "max_tokens": 0,
            "temperature": 0.0,
        }
        if not add_special_tokens:
            completions["add_special_tokens"] = False
        return completions
    if api == "vllm-prompt-logprobs":
        vllm: PromptLogprobsBody = {
            "model": model,
            "prompt": prompt,
            "prompt_logprobs": 0,
            "max_tokens": 1,
            "temperature": 0.0,
            "return_token_ids": True,
        }
        if not add_special_tokens:
            vllm["add_special_tokens"] = False
        return vllm
    if not add_special_tokens:
        raise ValueError("SGLang's /generate cannot be asked to leave out special tokens")
    return {
        "text": prompt,
        "sampling_params": {"max_new_tokens": 0, "temperature": 0.0},
        "return_logprob": True,
        "logprob_start_len": 0,
        "return_text_in_logprobs": True,
    }


class ServerReport(TypedDict):
    """What the server said about the model (redacted, recorded in the manifest as it is):
    its model entry, or the error its model list answered with."""

    endpoint: str
    entry: NotRequired[object]
    error: NotRequired[str]


@dataclass(frozen=True)
class ServedModel:
    """The identity a server reports for its model, read from its model entry: ``serve-model``'s
    own ``choiceaudit`` record first, then vLLM's ``root`` / SGLang's ``model_path`` and
    ``tokenizer_path``. Each value is the server's JSON as sent (a ``serve-model`` tokenizer
    is an object), ``None`` where it sends none."""

    model_id: object = None
    weights_sha256: object = None
    revision: object = None
    dtype: object = None
    tokenizer: object = None

    @classmethod
    def from_entry(cls, entry: object) -> ServedModel:
        found: Mapping[str, object] = entry if isinstance(entry, dict) else {}
        mine = found.get("choiceaudit")
        own: Mapping[str, object] = mine if isinstance(mine, dict) else {}
        return cls(
            model_id=own.get("model_id") or found.get("root") or found.get("model_path"),
            weights_sha256=own.get("weights_sha256"),
            revision=own.get("revision"),
            dtype=own.get("dtype"),
            tokenizer=own.get("tokenizer") or found.get("tokenizer_path"),
        )


def _field(record: Mapping[str, object], key: str, where: str) -> object:
    if key not in record:
        raise InvalidBody(f"{where} has no {key}")
    return record[key]


def _list(value: object, what: str) -> list[object]:
    if not isinstance(value, list):
        raise InvalidBody(f"{what} is not a list")
    return value


def _strings(values: Sequence[object], what: str) -> tuple[str, ...]:
    out = tuple(v for v in values if isinstance(v, str))
    if len(out) != len(values):
        raise InvalidBody(f"{what} holds a value that is not a string")
    return out


def _ints(value: object, what: str) -> tuple[int, ...]:
    values = _list(value, what)
    out = tuple(v for v in values if isinstance(v, int) and not isinstance(v, bool))
    if len(out) != len(values):
        raise InvalidBody(f"{what} holds a value that is not an integer")
    return out


def _logprob_values(values: Sequence[object]) -> tuple[float | None, ...]:
    """Log-probabilities as numbers (``None`` where the server sends null: the first token has
    none); whether each is *possible* is :func:`_finish`'s check, which names the token."""
    out: list[float | None] = []
    for v in values:
        if v is None:
            out.append(None)
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out.append(float(v))
        else:
            raise InvalidBody(f"log-probability {v!r} is not a number")
    return tuple(out)


@dataclass(frozen=True)
class EchoChoice:
    """One choice of a completions response with ``echo``: the ``logprobs`` object's tokens
    (``None`` for a token the server gives no text), their log-probabilities and character
    offsets, the echoed ``text`` and, where the server sends ``prompt_token_ids`` (vLLM's
    ``return_token_ids``, ``serve-model``), how many of the tokens are the prompt's."""

    tokens: tuple[str | None, ...]
    token_logprobs: tuple[float | None, ...]
    text_offset: tuple[int, ...] | None
    text: str | None
    n_prompt_tokens: int | None

    @classmethod
    def from_json(cls, choice: object) -> EchoChoice:
        if not isinstance(choice, dict):
            raise InvalidBody("a choice is not an object")
        lp = _field(choice, "logprobs", "a choice")
        if not isinstance(lp, dict):
            raise InvalidBody(
                "choice has no logprobs (does the server support echo with logprobs?)"
            )
        offsets = lp.get("text_offset")
        ids = choice.get("prompt_token_ids")
        text = choice.get("text")
        return cls(
            tokens=_token_texts(_list(_field(lp, "tokens", "logprobs"), "tokens")),
            token_logprobs=_logprob_values(
                _list(_field(lp, "token_logprobs", "logprobs"), "token_logprobs")
            ),
            text_offset=None if offsets is None else _offsets(offsets),
            text=text if isinstance(text, str) else None,
            n_prompt_tokens=len(ids) if isinstance(ids, list) else None,
        )


def _token_texts(values: Sequence[object]) -> tuple[str | None, ...]:
    out = tuple(v for v in values if v is None or isinstance(v, str))
    if len(out) != len(values):
        raise InvalidBody("tokens holds a value that is neither a string nor null")
    return out


def _offsets(value: object) -> tuple[int, ...]:
    """``text_offset`` as sent; an entry that is not a non-negative integer is kept as ``-1``,
    so :func:`_offset_spans` rejects the offsets (and the tokens are aligned instead) rather
    than the body."""
    return tuple(
        v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else -1
        for v in _list(value, "text_offset")
    )


@dataclass(frozen=True)
class PromptLogprobsChoice:
    """One choice of vLLM's ``prompt_logprobs`` answer: per prompt token its text
    (``decoded_token``; ``None`` for the first, which has no entry) and log-probability."""

    tokens: tuple[str | None, ...]
    logprobs: tuple[float | None, ...]

    @classmethod
    def from_json(cls, choice: object) -> PromptLogprobsChoice:
        if not isinstance(choice, dict):
            raise InvalidBody("a choice is not an object")
        entries = choice.get("prompt_logprobs")
        raw_ids = choice.get("prompt_token_ids")
        if not isinstance(entries, list) or not entries:
            raise InvalidBody("choice has no prompt_logprobs (is this a vLLM server?)")
        ids = None if raw_ids is None else _ints(raw_ids, "prompt_token_ids")
        if ids is not None and len(ids) != len(entries):
            raise InvalidBody("prompt_token_ids and prompt_logprobs differ in length")
        tokens: list[str | None] = []
        values: list[object] = []
        for j, entry in enumerate(entries):
            if entry is None:
                if j:
                    raise InvalidBody(f"prompt_logprobs[{j}] is null after the first token")
                tokens.append(None)
                values.append(None)
                continue
            if not isinstance(entry, dict):
                raise InvalidBody(f"prompt_logprobs[{j}] is not an object")
            if ids is not None:
                picked = _field(entry, str(ids[j]), f"prompt_logprobs[{j}]")
            elif len(entry) == 1:
                (picked,) = entry.values()
            else:
                raise InvalidBody("several candidates per prompt token and no prompt_token_ids")
            if not isinstance(picked, dict):
                raise InvalidBody(f"prompt_logprobs[{j}] holds a candidate that is not an object")
            token = _field(picked, "decoded_token", f"prompt_logprobs[{j}]")
            if not isinstance(token, str):
                raise InvalidBody(f"prompt_logprobs[{j}].decoded_token is not a string")
            tokens.append(token)
            values.append(_field(picked, "logprob", f"prompt_logprobs[{j}]"))
        return cls(tuple(tokens), _logprob_values(values))


@dataclass(frozen=True)
class SGLangResult:
    """One result of SGLang's ``/generate``: ``meta_info.input_token_logprobs`` as token texts
    and log-probabilities (each entry is ``[logprob | null, token_id, token_text]``)."""

    tokens: tuple[str, ...]
    logprobs: tuple[float | None, ...]

    @classmethod
    def from_json(cls, item: object) -> SGLangResult:
        meta = _field(item, "meta_info", "a result") if isinstance(item, dict) else None
        if not isinstance(meta, dict):
            raise InvalidBody("a result has no meta_info")
        entries = _list(_field(meta, "input_token_logprobs", "meta_info"), "input_token_logprobs")
        if any(not isinstance(e, list) or len(e) < 3 for e in entries):
            raise InvalidBody("input_token_logprobs entries are not [logprob, id, text]")
        rows = [e for e in entries if isinstance(e, list)]
        tokens = [e[2] for e in rows]
        if any(not isinstance(t, str) for t in tokens):
            raise InvalidBody(
                "input_token_logprobs has no token text (send return_text_in_logprobs)"
            )
        return cls(_strings(tokens, "input_token_logprobs"), _logprob_values([e[0] for e in rows]))
