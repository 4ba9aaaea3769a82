"""In-place tokenization: which tokens of a rendered string belong to the option.

The option is never tokenized standalone (a leading space changes the token count) and the
string is never cut at ``len(tokenize(context))`` (a token can cross the context/option join).
Instead the whole rendered string ``context + continuation`` is tokenized once with character
offsets, and the **scored tokens** are defined as:

    the first token whose character span ends after the last context character, and every
    token after it, up to the last token that covers any character.

So a token that crosses the join (it covers the last context characters and the first
continuation characters) is scored, and its log-probability is conditioned on the tokens
before it; the option's score then includes the probability of those few context characters
*inside that merged token*. That is the only definition under which the scored tokens
concatenate to a suffix of the string and the scores of different options are log-probabilities
of the model's own tokenization of each full string. Zero-width tokens before the context
(a BOS) are context; zero-width tokens after the continuation (an appended EOS) are dropped,
because they are not part of the option. See consistency-without-alignment §I-H ("Options are
tokenized in place within the rendered prompt and never standalone").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from choiceaudit.scorers._protocol import ScorerError

__all__ = ["InPlace", "encode_in_place"]


@dataclass(frozen=True)
class InPlace:
    """One rendered string tokenized in place.

    ``ids`` are the tokens of ``context + continuation`` (special tokens the tokenizer adds in
    front included, trailing zero-width tokens removed); ``first_scored`` is the index of the
    first scored token; ``crosses_join`` says that token also covers context characters.
    """

    ids: tuple[int, ...]
    first_scored: int
    crosses_join: bool

    @property
    def n_scored(self) -> int:
        return len(self.ids) - self.first_scored


def encode_in_place(
    tokenizer: Any,
    contexts: Sequence[str],
    continuations: Sequence[str],
    *,
    add_special_tokens: bool,
    labels: Sequence[str],
) -> list[InPlace]:
    """Tokenize each ``contexts[i] + continuations[i]`` once and locate its scored tokens.

    ``labels[i]`` names the string in errors (query id, option index and text). Raises
    :class:`ScorerError` when a continuation covers no token (an option that tokenizes to
    nothing) or when the first scored token has nothing before it to condition on.
    """
    if not (len(contexts) == len(continuations) == len(labels)):
        raise ValueError("contexts, continuations and labels must have the same length")
    if not contexts:
        return []
    texts = [c + o for c, o in zip(contexts, continuations, strict=True)]
    try:
        enc = tokenizer(
            texts,
            add_special_tokens=add_special_tokens,
            return_offsets_mapping=True,
            return_attention_mask=False,
        )
    except NotImplementedError:
        raise ScorerError(
            f"{type(tokenizer).__name__} cannot return character offsets; in-place scoring "
            "needs a fast (Rust `tokenizers`) tokenizer"
        ) from None
    out: list[InPlace] = []
    for i, (ids, offsets) in enumerate(zip(enc["input_ids"], enc["offset_mapping"], strict=True)):
        out.append(_locate(list(ids), [tuple(o) for o in offsets], len(contexts[i]), labels[i]))
    return out


def _locate(
    ids: list[int],
    offsets: list[tuple[int, int]],
    n_context: int,
    label: str,
    options: Sequence[Sequence[tuple[int, int]]] | None = None,
) -> InPlace:
    """The scored tokens of one string (the rule of this module's docstring). ``options``
    gives, where a server's token strings leave it open, every span each token can have
    (:mod:`._byte_align`); the rule must then pick the same tokens under all of them, or the
    string is refused."""
    spans: Sequence[Sequence[tuple[int, int]]] = options or [(o,) for o in offsets]

    def covers(j: int) -> tuple[bool, bool]:  # (can cover a character, must)
        flags = [e > s for s, e in spans[j]]
        return any(flags), all(flags)

    def scored(j: int) -> tuple[bool, bool]:
        flags = [e > s and e > n_context for s, e in spans[j]]
        return any(flags), all(flags)

    last = max((j for j in range(len(spans)) if covers(j)[0]), default=-1)
    first = next((j for j in range(len(spans)) if scored(j)[0]), None)
    if first is None or first > last:
        raise ScorerError(
            f"{label}: the option tokenizes to nothing inside the rendered prompt (no token "
            "covers any of its characters)"
        )
    starts = {s < n_context for s, e in spans[first] if e > s and e > n_context}
    if not (covers(last)[1] and scored(first)[1] and len(starts) == 1):
        raise ScorerError(
            f"{label}: the server's token strings leave open which tokens hold the option's "
            "first or last characters (tokens written as '' or U+FFFD where the prompt and "
            "the option meet inside a character run), so the option's score cannot be told; "
            "score the model in process or serve it with choiceaudit serve-model, which "
            "writes each token's characters whole"
        )
    if first == 0:
        raise ScorerError(
            f"{label}: the option starts at the first token, so there is no context to condition "
            "it on (an empty prompt with a tokenizer that adds no BOS token)"
        )
    return InPlace(ids=tuple(ids[: last + 1]), first_scored=first, crosses_join=starts.pop())
