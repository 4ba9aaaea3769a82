"""The ``hf`` scorer: a causal LM scored by the log-probability of each option.

For every option ``o`` of a query, from one pass of the engine (:mod:`._engine`):

* ``sum``  — ``log P(o | prompt)``: the unnormalised sum of the option's token log-probabilities;
* ``mean`` — that sum divided by the option's token count (per-token mean);
* ``pmi``  — ``log P(o | prompt) − log P(o | neutral prompt)``, where the neutral prompt is the
  same rendering with the item content stripped (``Query.neutral_state``); absent when the query
  has no neutral state.

``Decision.probs`` is the softmax of ``sum`` over the menu; the raw rule scores are kept and
each rule's choice is its own argmax (consistency-without-alignment §I-H: the three rules come
from the same pass and every finding is reported under all three). The option is the query's
continuation (``" " + option`` or ``" " + key``) tokenized in place inside the rendered prompt
(:mod:`._tokenize` defines exactly which tokens are scored when one crosses the join). With a
chat template the prompt is the user turn followed by the generation prompt, and the
continuation is the option without the leading space, since the assistant's reply starts there.

Nothing is truncated: a prompt plus option longer than the model's context window is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from choiceaudit.scorers._causal import CausalLMScorer, EngineOptions, PromptRenderer, softmax
from choiceaudit.scorers._engine import ScoreSpec, sequence_logprobs
from choiceaudit.scorers._loading import LoadedLM
from choiceaudit.scorers._protocol import ScorerError
from choiceaudit.scorers._tokenize import InPlace
from choiceaudit.types import Decision, FloatArray, Query

__all__ = ["EngineOptions", "HFScorer", "PromptRenderer", "softmax"]


class HFScorer(CausalLMScorer):
    """Causal LM option scorer (rules ``sum``, ``mean``, ``pmi``); see the module docstring.
    :meth:`~._causal.CausalLMScorer.load` loads a model by name."""

    def __init__(
        self,
        lm: LoadedLM,
        *,
        chat_template: str | None = None,
        system_prompt: str | None = None,
        engine: EngineOptions | None = None,
    ) -> None:
        super().__init__(
            lm, chat_template=chat_template, system_prompt=system_prompt, engine=engine
        )
        self.name = lm.source.name

    def describe(self) -> dict[str, Any]:
        return {
            **self.lm.describe(),
            "backend": "hf",
            "rules": ["sum", "mean", "pmi"],
            "probs": "softmax of sum over the menu",
            "scored_tokens": "in place: first token ending after the prompt, to the end",
            **self.describe_prompting(),
            "engine": self.describe_engine(),
        }

    def _encode(self, query: Query) -> tuple[list[InPlace], list[InPlace]]:
        try:
            return self._encode_checked(query)
        except ScorerError as exc:
            exc.query_id = exc.query_id or query.id  # so a caller can name the input line
            raise

    def _encode_checked(self, query: Query) -> tuple[list[InPlace], list[InPlace]]:
        conts = query.continuations()
        labels = [f"query {query.id} option {i} ({query.options[i]!r})" for i in range(len(conts))]
        prompt = self.renderer.encode(query.prompt(), conts, labels)
        neutral: list[InPlace] = []
        if query.neutral_state is not None:
            labels_n = [f"{label}, neutral prompt" for label in labels]
            neutral = self.renderer.encode(query.prompt(neutral=True), conts, labels_n)
        for i, enc in enumerate([*prompt, *neutral]):
            if self.context_window is not None and len(enc.ids) > self.context_window:
                which = "prompt" if i < len(prompt) else "neutral prompt"
                raise ScorerError(
                    f"query {query.id}: the {which} plus option {i % len(conts)} is "
                    f"{len(enc.ids)} tokens, longer than the model's context window of "
                    f"{self.context_window}; shorten the state or instruction (choiceaudit never "
                    "truncates a prompt)"
                )
        return prompt, neutral

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        encoded = [self._encode(q) for q in queries]
        groups = [[ScoreSpec(e.ids, e.first_scored) for e in p + n] for p, n in encoded]
        logprobs = sequence_logprobs(
            self.lm.model,
            groups,
            max_batch_tokens=self.engine.max_batch_tokens,
            max_batch_rows=self.engine.max_batch_rows,
            pad_multiple=self.engine.pad_multiple,
            prefix_cache=self.prefix_cache,
            output_group_mb=self.engine.output_group_mb,
        )
        for q, lp in zip(queries, logprobs, strict=True):
            if not all(np.isfinite(x).all() for x in lp):
                # a reduced precision's overflow (Gemma 3 in float16): no choice can be read
                raise ScorerError(
                    f"{self.lm.source.name} in {self.lm.dtype}: a log-probability of this query "
                    "is not finite (the model overflows this precision); score it in float32 "
                    "or bfloat16",
                    query_id=q.id,
                )
        return [
            _decision(q, p, n, lp) for q, (p, n), lp in zip(queries, encoded, logprobs, strict=True)
        ]


def _decision(
    query: Query, prompt: list[InPlace], neutral: list[InPlace], lp: list[FloatArray]
) -> Decision:
    k = len(prompt)
    sums = np.array([x.sum() for x in lp[:k]], dtype=np.float64)
    n_tokens = np.array([e.n_scored for e in prompt], dtype=np.float64)
    scores = {"sum": sums, "mean": sums / n_tokens}
    aux: dict[str, object] = {"crosses_join": [e.crosses_join for e in prompt]}
    if neutral:
        scores["pmi"] = sums - np.array([x.sum() for x in lp[k:]], dtype=np.float64)
        aux["n_tokens_neutral"] = [e.n_scored for e in neutral]
    return Decision(
        query_id=query.id,
        probs=softmax(sums),
        scores=scores,
        n_tokens=tuple(e.n_scored for e in prompt),
        aux=aux,
    )
