"""Prompt log-probabilities of whole strings from the local engine, with character offsets.

This is what an inference server returns for a completions request with ``echo`` and
``logprobs`` and no generated token: every token of the prompt, its character span in the
prompt and ``log P(token | tokens before it)`` (``None`` for the first token, which nothing
conditions). ``choiceaudit serve-model`` serves it (:mod:`choiceaudit.serve`), and the
``openai`` scorer recovers the scored tokens of an option from the spans by the in-place rule
of :mod:`._tokenize`, so scoring over the server equals the ``hf`` scorer in process.

The strings of one call run as one group of the engine (one token trie: the shared prompt of a
query's options runs once), so a request carrying one query's option strings is the same packed
row the ``hf`` scorer builds for that query. Log-probabilities are the engine's float64 values.

:func:`next_token` is the one generation a scoring server needs: the greedy next token after
a prompt and its log-probability, which a client compares with the echo of the prompt plus
that token (the ``openai`` scorer's conformance probe).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from choiceaudit.scorers._causal import EngineOptions
from choiceaudit.scorers._engine import (
    ScoreSpec,
    context_window,
    next_token_logits,
    sequence_logprobs,
)
from choiceaudit.scorers._loading import LoadedLM
from choiceaudit.scorers._protocol import ScorerError

__all__ = ["NextToken", "PromptLogprobs", "next_token", "prompt_logprobs"]


@dataclass(frozen=True)
class PromptLogprobs:
    """One string's tokens: ids, ``(start, end)`` character spans (the fast tokenizer's offset
    mapping; special tokens are zero-width) and per-token log-probabilities."""

    text: str
    ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]
    logprobs: tuple[float | None, ...]


def prompt_logprobs(
    lm: LoadedLM,
    texts: Sequence[str],
    *,
    engine: EngineOptions | None = None,
    add_special_tokens: bool = True,
) -> list[PromptLogprobs]:
    """Tokenize each text once (with offsets) and score every token after the first.

    Raises :class:`ScorerError` for a text that tokenizes to fewer than two tokens (nothing to
    condition on) or is longer than the model's context window (nothing is truncated).
    """
    if not texts:
        return []
    engine = engine or EngineOptions()
    try:
        enc = lm.tokenizer(
            list(texts),
            add_special_tokens=add_special_tokens,
            return_offsets_mapping=True,
            return_attention_mask=False,
        )
    except NotImplementedError:
        raise ScorerError(
            f"{type(lm.tokenizer).__name__} cannot return character offsets; serving prompt "
            "log-probabilities needs a fast (Rust `tokenizers`) tokenizer"
        ) from None
    window = context_window(lm.model)
    specs: list[ScoreSpec] = []
    for i, ids in enumerate(enc["input_ids"]):
        if len(ids) < 2:
            raise ScorerError(
                f"prompt {i} tokenizes to {len(ids)} token(s): at least two are needed, since "
                "the first token has no context"
            )
        if window is not None and len(ids) > window:
            raise ScorerError(
                f"prompt {i} is {len(ids)} tokens, longer than the model's context window of "
                f"{window} (nothing is truncated)"
            )
        specs.append(ScoreSpec(tuple(int(t) for t in ids), 1))
    (scored,) = sequence_logprobs(
        lm.model,
        [specs],
        max_batch_tokens=engine.max_batch_tokens,
        max_batch_rows=engine.max_batch_rows,
        pad_multiple=engine.pad_multiple,
    )
    out: list[PromptLogprobs] = []
    for text, spec, offsets, lp in zip(texts, specs, enc["offset_mapping"], scored, strict=True):
        out.append(
            PromptLogprobs(
                text=text,
                ids=spec.ids,
                offsets=tuple((int(s), int(e)) for s, e in offsets),
                logprobs=(None, *(float(x) for x in lp)),
            )
        )
    return out


@dataclass(frozen=True)
class NextToken:
    """The greedy next token after a prompt: its id, its text and ``log P(token | prompt)``."""

    id: int
    text: str
    logprob: float


def next_token(
    lm: LoadedLM,
    text: str,
    *,
    engine: EngineOptions | None = None,
    add_special_tokens: bool = True,
) -> NextToken:
    """The most probable next token after ``text`` over the tokenizer's vocabulary (the
    lowest id on a tie), with its log-probability from the same engine as
    :func:`prompt_logprobs`."""
    engine = engine or EngineOptions()
    ids = [int(t) for t in lm.tokenizer(text, add_special_tokens=add_special_tokens)["input_ids"]]
    if not ids:
        raise ScorerError("the prompt tokenizes to no token: nothing to condition on")
    window = context_window(lm.model)
    if window is not None and len(ids) >= window:
        raise ScorerError(f"the prompt is {len(ids)} tokens: no room left in the context window")
    n_vocab = min(len(lm.tokenizer), int(lm.model.config.vocab_size))
    ((logits, lse),) = next_token_logits(
        lm.model,
        [ids],
        [list(range(n_vocab))],
        max_batch_tokens=engine.max_batch_tokens,
        max_batch_rows=engine.max_batch_rows,
        pad_multiple=engine.pad_multiple,
    )
    best = int(np.argmax(logits))
    return NextToken(best, lm.tokenizer.decode([best]), float(logits[best] - lse))
