"""The ``lm-choice`` scorer: a causal LM used as a typed, marker-based decision model.

The menu is rendered into the prompt with its keys (``A. …`` through ``D. …``, or the query's
own keys), and the answer is read from the **next-token logits of the key tokens** right after
the prompt: ``probs = softmax(logit(key_i))`` over the menu's keys only. Scores: ``prob`` (those
probabilities) and ``logit`` (the raw logits). ``aux["key_mass"]`` is the share of the full
next-token distribution that falls on the keys (how much the model answers with a key at all).

This is the design of the decision-model APIs the meaning instrument audits, and it inherits
their failure mode: a marker-based chooser carries a position and label bias (Zheng et al.,
ICLR 2024; consistency-without-alignment §IV-H4). :meth:`LMChoiceScorer.content_free_probs`
exposes the label/position prior directly (every option and the state replaced by ``N/A``, as
in "calibrate before use"); the 24-permutation order audit measures the rest.

A key is identified by the first token of ``" " + key`` tokenized in place after the prompt
(the key without the space under a chat template); keys whose first tokens coincide, or whose
first token would merge with the prompt's last characters, are refused with a clear error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from choiceaudit.scorers._causal import CausalLMScorer, EngineOptions, softmax
from choiceaudit.scorers._engine import next_token_logits
from choiceaudit.scorers._loading import LoadedLM
from choiceaudit.scorers._protocol import ScorerError
from choiceaudit.types import DEFAULT_TEMPLATE, Decision, FloatArray, Query

__all__ = ["DEFAULT_MENU_LINE", "LMChoiceScorer", "render_menu"]


#: One menu line; ``{key}`` and ``{option}`` are filled per option, in display order.
DEFAULT_MENU_LINE = "{key}. {option}"


def render_menu(keys: Sequence[str], options: Sequence[str], line: str = DEFAULT_MENU_LINE) -> str:
    """The keyed menu, one option per line, in display order."""
    return "\n".join(line.format(key=k, option=o) for k, o in zip(keys, options, strict=True))


class LMChoiceScorer(CausalLMScorer):
    """A causal LM answering with a key; see the module docstring.
    :meth:`~._causal.CausalLMScorer.load` loads it by the causal LM's name (``menu_line`` is
    this backend's own option)."""

    backend_options = ("menu_line",)

    def __init__(
        self,
        lm: LoadedLM,
        *,
        chat_template: str | None = None,
        system_prompt: str | None = None,
        menu_line: str = DEFAULT_MENU_LINE,
        engine: EngineOptions | None = None,
    ) -> None:
        if "{key}" not in menu_line or "{option}" not in menu_line:
            raise ScorerError(f"menu_line must contain {{key}} and {{option}}, got {menu_line!r}")
        super().__init__(
            lm, chat_template=chat_template, system_prompt=system_prompt, engine=engine
        )
        self.name = f"lm-choice:{lm.source.name}"
        self.menu_line = menu_line

    def describe(self) -> dict[str, Any]:
        return {
            **self.lm.describe(),
            "model": self.name,  # the decision model, not the bare causal LM
            "causal_lm": self.lm.source.name,
            "backend": "lm-choice",
            "rules": ["prob", "logit"],
            "probs": "softmax of the key tokens' next-token logits, restricted to the menu's keys",
            "menu_line": self.menu_line,
            **self.describe_prompting(),
            "prefix_cache_mb": self.engine.prefix_cache_mb,
            "output_group_mb": self.engine.output_group_mb,
        }

    def prompt(self, query: Query) -> str:
        """The prompt the model reads: the query's template with the keyed menu after the state."""
        menu = render_menu(query.keys, query.options, self.menu_line)
        return query.template.format(
            state=f"{query.state}\n\n{menu}", instruction=query.instruction
        )

    def _key_tokens(
        self, prompt: str, keys: Sequence[str], where: str
    ) -> tuple[list[int], list[int]]:
        """The rendered prompt's tokens (chat template applied, if any) and each key's first
        token, located in place after it."""
        labels = [f"{where} key {k!r}" for k in keys]
        encs = self.renderer.encode(prompt, [" " + k for k in keys], labels)
        context = list(encs[0].ids[: encs[0].first_scored])
        firsts: list[int] = []
        for key, enc in zip(keys, encs, strict=True):
            if enc.crosses_join or list(enc.ids[: enc.first_scored]) != context:
                raise ScorerError(
                    f"{where}: key {key!r} merges with the end of the prompt into one token, so "
                    "no next-token logit belongs to it; change the keys or the template's answer cue"
                )
            firsts.append(enc.ids[enc.first_scored])
        if len(set(firsts)) != len(firsts):
            dup = [k for k, t in zip(keys, firsts, strict=True) if firsts.count(t) > 1]
            raise ScorerError(
                f"{where}: keys {dup} begin with the same token and cannot be told apart"
            )
        # The answer is the next-token distribution after the prompt, so the prompt alone must
        # fit: a prompt of exactly the context window is read whole.
        if self.context_window is not None and len(context) > self.context_window:
            raise ScorerError(
                f"{where}: the prompt is {len(context)} tokens, beyond the model's context window "
                f"of {self.context_window} (choiceaudit never truncates a prompt)"
            )
        return context, firsts

    def _decide(
        self,
        prompts: Sequence[str],
        keysets: Sequence[Sequence[str]],
        where: Sequence[str],
        *,
        query_ids: Sequence[str | None] | None = None,
    ) -> list[tuple[FloatArray, float]]:
        ids = list(query_ids) if query_ids is not None else [None] * len(prompts)
        located = []
        for p, ks, w, qid in zip(prompts, keysets, where, ids, strict=True):
            try:
                located.append(self._key_tokens(p, ks, w))
            except ScorerError as exc:
                exc.query_id = exc.query_id or qid  # so a caller can name the input line
                raise
        return next_token_logits(
            self.lm.model,
            [c for c, _ in located],
            [f for _, f in located],
            max_batch_tokens=self.engine.max_batch_tokens,
            max_batch_rows=self.engine.max_batch_rows,
            pad_multiple=self.engine.pad_multiple,
            prefix_cache=self.prefix_cache,
            output_group_mb=self.engine.output_group_mb,
        )

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        raw = self._decide(
            [self.prompt(q) for q in queries],
            [q.keys for q in queries],
            [f"query {q.id}" for q in queries],
            query_ids=[q.id for q in queries],
        )
        out = []
        for q, (logits, lse) in zip(queries, raw, strict=True):
            probs = softmax(logits)
            key_mass = float(np.exp(logits - lse).sum())
            out.append(
                Decision(
                    query_id=q.id,
                    probs=probs,
                    scores={"prob": probs, "logit": logits},
                    aux={"key_mass": key_mass},
                )
            )
        return out

    def content_free_probs(
        self,
        keys: Sequence[str] = ("A", "B", "C", "D"),
        *,
        instruction: str = "",
        template: str = DEFAULT_TEMPLATE,
        filler: str = "N/A",
    ) -> FloatArray:
        """The label/position prior: probabilities over ``keys`` when the state and every option
        are ``filler``, so nothing but the keys and their positions can move the choice."""
        menu = render_menu(keys, [filler] * len(keys), self.menu_line)
        prompt = template.format(state=f"{filler}\n\n{menu}", instruction=instruction)
        ((logits, _),) = self._decide([prompt], [tuple(keys)], ["content-free menu"])
        return softmax(logits)
