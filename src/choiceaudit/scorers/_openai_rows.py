"""From the tokens of a query's strings with their character spans and log-probabilities
(from an inference server, or from llama.cpp in process) to the query's
:class:`~choiceaudit.types.Decision`, by the in-place rule the ``hf`` scorer uses
(:mod:`._tokenize`), so that over ``serve-model`` the two give the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from choiceaudit.scorers._openai_wire import Tokens
from choiceaudit.scorers._protocol import ScorerError
from choiceaudit.scorers._tokenize import InPlace, _locate
from choiceaudit.types import Decision, FloatArray, Query

__all__ = ["QueryStrings", "decision_from_tokens", "query_strings", "requests_by_context"]


#: vLLM clamps a returned log-probability at this value (``max(logprob, -9999.0)``).
_CLAMP = -9999.0


def _softmax(scores: FloatArray) -> FloatArray:
    # the same shifted float64 softmax as hf's (kept here: importing _causal needs torch)
    z = np.exp(scores - scores.max())
    return z / z.sum()  # type: ignore[no-any-return]


def decision_from_tokens(
    query: Query,
    n_context: list[int],
    labels: list[str],
    tokens: list[Tokens],
) -> Decision:
    """The decision of ``query`` from the server's tokens of its strings (options after the
    prompt, then after the neutral prompt): the in-place scored tokens of each, their sums,
    means and PMI, and ``probs = softmax(sum)``."""
    located: list[InPlace] = []
    lps: list[FloatArray] = []
    # the spans tile each string (checked when the answer was parsed), so every string
    # was scored whole
    for n_ctx, label, tok in zip(n_context, labels, tokens, strict=True):
        try:
            enc = _locate(list(range(len(tok.spans))), list(tok.spans), n_ctx, label, tok.options)
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
    aux: dict[str, object] = {"crosses_join": [e.crosses_join for e in located[:k]]}
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


#: a query's strings, each one's context length in characters, and labels for errors
QueryStrings = tuple[list[str], list[int], list[str]]


def _same(text: str) -> str:
    return text


def query_strings(
    query: Query,
    context: Callable[[str], str] = _same,
    continuation: Callable[[str], str] = _same,
) -> QueryStrings:
    """The strings of a query (options after the prompt, then after the neutral prompt),
    each one's context length in characters, and labels for errors; ``context`` and
    ``continuation`` render the prompt and each option as the client sends them (a chat
    template rendered on the client)."""
    conts = [continuation(c) for c in query.continuations()]
    texts, n_context, labels = [], [], []
    contexts = [(context(query.prompt()), "")]
    if query.neutral_state is not None:
        contexts.append((context(query.prompt(neutral=True)), ", neutral prompt"))
    for text_of_context, where in contexts:
        for i, cont in enumerate(conts):
            texts.append(text_of_context + cont)
            n_context.append(len(text_of_context))
            labels.append(f"query {query.id} option {i} ({query.options[i]!r}){where}")
    return texts, n_context, labels


def requests_by_context(per_query: Sequence[QueryStrings], *, together: bool) -> list[list[str]]:
    """The strings of several queries as requests: ``together``, all in one; otherwise one
    request per context (a query's options after its prompt, then after its neutral prompt),
    which is the packed row ``hf`` runs for that context."""
    if together:
        return [[t for strings, _, _ in per_query for t in strings]]
    requests: list[list[str]] = []
    for strings, n_context, _ in per_query:
        for i, text in enumerate(strings):
            cut = n_context[i]
            if i and n_context[i - 1] == cut and strings[i - 1][:cut] == text[:cut]:
                requests[-1].append(text)
            else:
                requests.append([text])
    return requests
