"""The wire formats of the ``openai`` scorer: responses parsed into each string's tokens with
their character spans and log-probabilities (:mod:`._openai` states the definitions, the
hazards and the client; :mod:`._openai_bodies` the request bodies and the typed records each
answer's JSON is read into).

Spans come from ``text_offset`` where those are true character offsets into the string
(``offsets``), else from aligning the token strings to it (``aligned``, :func:`align_tokens`).
Either way the spans must **tile** the text: every character covered by exactly one token, in
order (zero-width special tokens aside). A server that decodes each byte token of a multi-byte
character as ``""`` (llama-cpp-python does) leaves that character uncovered, and a prompt the
server truncated leaves the end uncovered; each is refused with its own cause
(:class:`ConformanceError` names the check), as are impossible log-probabilities (above
:data:`LOGPROB_TOLERANCE`, NaN, ±inf), tokens generated after an echo, and an echo with more
or fewer entries than the prompt tokens the server says it read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from choiceaudit.scorers._byte_align import (
    ALONE,
    EMPTY_THEN_WHOLE,
    align_partial_tokens,
    has_partial_tokens,
)
from choiceaudit.scorers._openai_bodies import (
    EchoChoice,
    InvalidBody,
    PromptLogprobsChoice,
    SGLangResult,
)
from choiceaudit.scorers._protocol import InconsistentServerError

__all__ = [
    "APIS",
    "COUNTED",
    "INFO",
    "LOGPROB_TOLERANCE",
    "ConformanceError",
    "Parsed",
    "Tokens",
    "align_tokens",
    "parse_body",
]

#: Endpoint of each wire format, relative to the base URL.
APIS: dict[str, str] = {
    "completions": "/v1/completions",
    "vllm-prompt-logprobs": "/v1/completions",
    "sglang": "/generate",
}
#: Where each server reports the model it serves.
INFO = {
    "completions": "/v1/models",
    "vllm-prompt-logprobs": "/v1/models",
    "sglang": "/get_model_info",
}


#: A log-probability above this is impossible (a float32 log-softmax rounds to at most ~1e-7).
LOGPROB_TOLERANCE = 1e-4

#: The names of the checks a server's answer must pass (the probe reports them by these names).
TILING = "tokens tile the text"
POSSIBLE = "log-probabilities are possible"
NO_GENERATION = "nothing generated after the echo"
COUNTED = "one log-probability per prompt token"


class ConformanceError(InconsistentServerError):
    """The server answered in format, with an answer that cannot be right: ``check`` names
    the property it broke. Not retried; no row of the request is kept, nor (the server having
    answered wrongly once) any row it gave earlier in the scoring session."""

    def __init__(self, check: str, message: str) -> None:
        super().__init__(message)
        self.check = check


@dataclass(frozen=True)
class Tokens:
    """One string as the server scored it: character spans and log-probabilities per token."""

    spans: tuple[tuple[int, int], ...]
    logprobs: tuple[float | None, ...]
    method: str  # "offsets", "aligned", or "partial" (:mod:`._byte_align`)
    #: with "partial": every span each token can have (``spans`` holds one of each)
    options: tuple[tuple[tuple[int, int], ...], ...] | None = None


@dataclass(frozen=True)
class Parsed:
    """A response: each string's tokens, and the server's fingerprint and model name if given."""

    tokens: list[Tokens]
    fingerprint: str | None = None
    model: str | None = None


def align_tokens(text: str, tokens: Sequence[str | None]) -> tuple[tuple[int, int], ...]:
    """Character spans of ``tokens`` in ``text`` when the token strings tile it left to right.

    ``""`` is zero-width; a token that does not match before any character is covered is a
    leading special token (zero-width at 0), and one after the last character a trailing one;
    ``None`` (allowed only first) is a token of unknown text that covers whatever the others
    leave in front. Raises ``ValueError`` when the strings do not reproduce ``text``.
    """
    if tokens and tokens[0] is None:
        rest = tokens[1:]
        if any(t is None for t in rest):
            raise ValueError("only the first token's text may be unknown")
        head = len(text) - sum(len(t) for t in rest if t is not None)
        if head < 0:
            raise ValueError("the tokens are longer than the text")
        tail = align_tokens(text[head:], rest)
        return ((0, head), *((s + head, e + head) for s, e in tail))
    spans: list[tuple[int, int]] = []
    cursor = 0
    for i, tok in enumerate(tokens):
        if tok is None:
            raise ValueError("only the first token's text may be unknown")
        if tok and text.startswith(tok, cursor):
            spans.append((cursor, cursor + len(tok)))
            cursor += len(tok)
        elif not tok or cursor == len(text) or (cursor == 0 and all(s == e for s, e in spans)):
            spans.append((cursor, cursor))  # a special token the text does not contain
        else:
            raise ValueError(
                f"token {i} ({tok!r}) does not match the text at character {cursor} "
                f"({text[cursor : cursor + 20]!r})"
            )
    if cursor != len(text):
        raise ValueError(f"the tokens cover {cursor} of the text's {len(text)} characters")
    return tuple(spans)


def _offset_spans(
    text: str, tokens: Sequence[str], offsets: Sequence[int]
) -> tuple[tuple[int, int], ...] | None:
    """The spans given by ``text_offset``, if they are true character offsets into ``text``."""
    spans = []
    for tok, off in zip(tokens, offsets, strict=True):
        if not isinstance(off, int) or off < 0 or text[off : off + len(tok)] != tok:
            return None
        spans.append((off, off + len(tok)))
    return tuple(spans)


def parse_body(api: str, base_url: str, texts: list[str], data: object) -> Parsed:
    """The tokens of each of ``texts`` in a response ``data`` of ``api`` (the decoded JSON).
    A body that breaks the format raises :class:`InvalidBody` (retried); tokens that cannot
    be placed in the text raise :class:`ScorerError` (not retried: the server is consistent,
    and wrong)."""
    if api == "sglang":
        items = data if isinstance(data, list) else [data]
        if len(items) != len(texts):
            raise InvalidBody(f"{len(items)} results for {len(texts)} prompts")
        parsed = [
            _sglang(base_url, t, SGLangResult.from_json(i))
            for t, i in zip(texts, items, strict=True)
        ]
        for item, tok in zip(items, parsed, strict=True):
            meta = item.get("meta_info") if isinstance(item, dict) else None
            if isinstance(meta, dict):  # SGLang counts each prompt's tokens here
                _check_count(base_url, meta, [tok])
        return Parsed(parsed)
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise InvalidBody("body has no choices")
    choices = sorted(data["choices"], key=_choice_index)
    if [_choice_index(c) for c in choices] != list(range(len(texts))):
        shown = [c.get("index") if isinstance(c, dict) else None for c in choices]
        raise InvalidBody(f"choices {shown} for {len(texts)} prompts")
    fingerprint = data.get("system_fingerprint")
    model = data.get("model")
    if api == "completions":
        tokens = [
            _echo(base_url, t, EchoChoice.from_json(c)) for t, c in zip(texts, choices, strict=True)
        ]
    else:
        tokens = [
            _prompt_logprobs(base_url, t, PromptLogprobsChoice.from_json(c))
            for t, c in zip(texts, choices, strict=True)
        ]
    _check_count(base_url, data.get("usage"), tokens)
    return Parsed(
        tokens,
        fingerprint if isinstance(fingerprint, str) else None,
        model if isinstance(model, str) else None,
    )


def _check_count(base_url: str, usage: object, tokens: list[Tokens]) -> None:
    """Where the server reports how many prompt tokens it read (``usage.prompt_tokens``, as
    vLLM, SGLang's OpenAI server and ``serve-model`` do; ``meta_info.prompt_tokens`` of
    SGLang's ``/generate``), the echo must hold one entry per
    token: a server that merged two tokens into one entry, dropped one or repeated one would
    otherwise be scored with a log-probability missing or counted twice."""
    if not isinstance(usage, dict):
        return
    counted = usage.get("prompt_tokens")
    if not isinstance(counted, int) or isinstance(counted, bool):
        return
    echoed = sum(len(t.logprobs) for t in tokens)
    if echoed != counted:
        raise ConformanceError(
            COUNTED,
            f"openai {base_url}: the server says it read {counted} prompt tokens "
            f"(usage.prompt_tokens) but echoed {echoed} with log-probabilities: it merged, "
            "dropped or repeated tokens in the echo, so an option's sum would miss a "
            "log-probability or count one twice",
        )


def _choice_index(choice: object) -> int:
    if not isinstance(choice, dict) or "index" not in choice:
        raise InvalidBody("a choice has no index")
    try:
        return int(choice["index"])
    except (TypeError, ValueError):
        raise InvalidBody(f"choice index {choice['index']!r} is not an integer") from None


def _spans(
    base_url: str, text: str, tokens: Sequence[str | None], offsets: Sequence[int] | None
) -> tuple[tuple[tuple[int, int], ...], str]:
    if offsets is not None and all(t is not None for t in tokens):
        spans = _offset_spans(text, [t or "" for t in tokens], offsets)
        if spans is not None:
            check_tiling(base_url, text, tokens, spans)
            return spans, "offsets"
    try:
        return align_tokens(text, tokens), "aligned"
    except ValueError as exc:
        if _byte_gaps(text, tokens):
            raise _partial_utf8(base_url, text) from None
        if str(exc).startswith("the tokens cover"):
            raise _truncated(base_url, text, str(exc)) from None
        raise ConformanceError(
            TILING,
            f"openai {base_url}: the server's tokens do not place the option in the "
            f"prompt ({exc}); its offsets are not character offsets and its token strings "
            f"do not reproduce the text, so the scored tokens cannot be located",
        ) from None


def _byte_gaps(text: str, tokens: Sequence[str | None]) -> bool:
    """Whether ``tokens`` tile ``text`` once each run of empty token strings is allowed to
    cover a run of non-ASCII characters: the signature of byte tokens decoded as ``""``."""
    cursor, pending, gap = 0, False, False
    for tok in tokens:
        if not tok:
            pending = pending or (tok == "" and cursor > 0)
            continue
        at = text.find(tok, cursor)
        if at < 0 or (at > cursor and not (pending and _non_ascii(text[cursor:at]))):
            return False
        gap = gap or at > cursor
        cursor, pending = at + len(tok), False
    if cursor < len(text):
        return pending and _non_ascii(text[cursor:])
    return gap


def _non_ascii(chars: str) -> bool:
    return all(ord(c) > 127 for c in chars)


def _partial_utf8(base_url: str, text: str) -> ConformanceError:
    return ConformanceError(
        TILING,
        f"openai {base_url}: the server's tokens do not tile {text[:60]!r}: it writes every "
        "byte token of a multi-byte character as an empty string and never the character "
        "itself (llama-cpp-python's server does), so no token covers that character and the "
        "option's tokens cannot be placed; score the model in process (hf:, or llama-cpp: "
        "for a GGUF file) or serve it with choiceaudit serve-model",
    )


def _truncated(base_url: str, text: str, detail: str) -> ConformanceError:
    return ConformanceError(
        TILING,
        f"openai {base_url}: the server's tokens stop before the end of {text[:60]!r} "
        f"({detail}): the prompt was truncated (a context limit or a truncation setting of "
        "the server); choiceaudit never scores a truncated prompt",
    )


def check_tiling(
    base_url: str,
    text: str,
    tokens: Sequence[str | None],
    spans: Sequence[tuple[int, int]],
) -> None:
    """Refuse spans that are not a partition of ``text``'s UTF-8 bytes read as characters,
    naming the cause: byte tokens decoded as ``""``, truncation, a repeated token, or a
    misplaced one. A fast tokenizer gives a byte token the span of every character its bytes
    touch, so a token may start in the character the previous one ended in, but no character
    is touched by more tokens than it has bytes (an ASCII character by one), and zero-width
    tokens (special tokens) cover nothing."""
    cursor = 0
    touched = [0] * len(text)
    for s, e in spans:
        if s == e:
            continue
        if s < cursor - 1:
            raise _overlap(base_url, text, s, cursor)
        if s > cursor:
            if _byte_gaps(text, tokens):
                raise _partial_utf8(base_url, text)
            raise ConformanceError(
                TILING,
                f"openai {base_url}: the server's tokens do not tile {text[:60]!r}: a token "
                f"starts at character {s} where the previous one ended at {cursor}",
            )
        for c in range(s, e):
            touched[c] += 1
            if touched[c] > _n_bytes(text[c]):
                raise ConformanceError(
                    TILING,
                    f"openai {base_url}: the server's tokens do not tile {text[:60]!r}: "
                    f"character {c} ({text[c]!r}) is covered by {touched[c]} tokens but has "
                    f"{_n_bytes(text[c])} byte(s): tokens hold the same bytes (a token "
                    "repeated, or overlapping its neighbour), so a log-probability would be "
                    "counted twice",
                )
        cursor = e
    if cursor != len(text):
        if _byte_gaps(text, tokens):
            raise _partial_utf8(base_url, text)
        raise _truncated(
            base_url, text, f"they cover {cursor} of the text's {len(text)} characters"
        )


def _overlap(base_url: str, text: str, start: int, cursor: int) -> ConformanceError:
    return ConformanceError(
        TILING,
        f"openai {base_url}: the server's tokens do not tile {text[:60]!r}: a token starts "
        f"at character {start}, inside characters the tokens before it already cover (up to "
        f"{cursor}): tokens hold the same characters (a token repeated, or overlapping its "
        "neighbour), so a log-probability would be counted twice",
    )


def _n_bytes(char: str) -> int:
    return len(char.encode("utf-8"))


def _finish(
    base_url: str,
    text: str,
    tokens: Sequence[str | None],
    offsets: Sequence[int] | None,
    logprobs: Sequence[float | None],
) -> Tokens:
    if len(tokens) != len(logprobs) or (offsets is not None and len(offsets) != len(tokens)):
        raise InvalidBody("tokens, logprobs and offsets differ in length")
    for i, v in enumerate(logprobs):
        if v is not None and not (math.isfinite(v) and v <= LOGPROB_TOLERANCE):
            raise ConformanceError(
                POSSIBLE,
                f"openai {base_url}: the server returned log-probability {v!r} for token {i} "
                f"({tokens[i]!r}) of {text[:60]!r}; a log-probability is finite and at most 0 "
                f"(tolerance {LOGPROB_TOLERANCE}), so this server's numbers are wrong and no "
                "row of this request is kept",
            )
    if has_partial_tokens(tokens):  # neither offsets nor whole strings place these
        return _partial(base_url, text, tokens, tuple(logprobs))
    spans, method = _spans(base_url, text, tokens, offsets)
    return Tokens(spans, tuple(logprobs), method)


def _partial(
    base_url: str, text: str, tokens: Sequence[str | None], logprobs: tuple[float | None, ...]
) -> Tokens:
    """Tokens of which some are written as ``""`` or with ``U+FFFD`` (:mod:`._byte_align`)."""
    try:
        options, _rules = align_partial_tokens(text, tokens)
    except ValueError as exc:
        if _byte_gaps(text, tokens):
            raise _partial_utf8(base_url, text) from None
        raise ConformanceError(
            TILING,
            f"openai {base_url}: the server's tokens do not reproduce {text[:60]!r} ({exc}) "
            f"under any rule servers are known to write tokens that hold part of a character "
            f"by ({EMPTY_THEN_WHOLE}; {ALONE}), so the scored tokens cannot be located",
        ) from None
    spans = tuple(o[0] for o in options)
    exact = all(len(o) == 1 for o in options)
    return Tokens(spans, logprobs, "partial", None if exact else options)


def _echo(base_url: str, text: str, choice: EchoChoice) -> Tokens:
    n_prompt = _prompt_count(base_url, text, choice)
    offsets = choice.text_offset
    return _finish(
        base_url,
        text,
        choice.tokens[:n_prompt],
        None if offsets is None else offsets[:n_prompt],
        choice.token_logprobs[:n_prompt],
    )


def _prompt_logprobs(base_url: str, text: str, choice: PromptLogprobsChoice) -> Tokens:
    return _finish(base_url, text, choice.tokens, None, choice.logprobs)


def _sglang(base_url: str, text: str, result: SGLangResult) -> Tokens:
    return _finish(base_url, text, result.tokens, None, result.logprobs)


def _prompt_count(base_url: str, text: str, choice: EchoChoice) -> int:
    """How many returned tokens are the prompt's: all of them with ``max_tokens: 0``, or as
    many as ``prompt_token_ids`` says. A server that generated anyway without saying how many
    tokens are the prompt's (the completion ``text`` continues the prompt) cannot be scored."""
    n_returned = len(choice.tokens)
    if choice.n_prompt_tokens is not None:
        return min(choice.n_prompt_tokens, n_returned)
    echoed = choice.text
    if echoed is not None and echoed != text and echoed.startswith(text):
        raise ConformanceError(
            NO_GENERATION,
            f"openai {base_url}: asked for max_tokens 0 with echo, the server generated "
            f"{echoed[len(text) :][:40]!r} after the prompt and did not say which tokens are "
            "the prompt's (llama-cpp-python's server reads max_tokens 0 as 'no limit'); "
            "use a server that scores prompts without generating (vLLM, SGLang, choiceaudit "
            "serve-model)",
        )
    return n_returned
