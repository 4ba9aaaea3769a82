"""What the two in-process causal-LM scorers share (``hf``, ``lm-choice``): loading the model,
the prompt renderer (chat template or none), the engine's batching options, the context window,
and the manifest entries that describe them. A subclass writes only what it reads from the
model (:mod:`._hf`: option log-probabilities; :mod:`._lm_choice`: next-token logits of keys).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from typing_extensions import TypedDict

from choiceaudit.scorers._chat import (
    ChatTemplate,
    ChatTemplateRecord,
    rendered_context,
    rendered_continuation,
    resolve_chat_template,
    template_record,
)
from choiceaudit.scorers._engine import (
    DEFAULT_MAX_BATCH_TOKENS,
    DEFAULT_OUTPUT_GROUP_MB,
    context_window,
)
from choiceaudit.scorers._loading import LoadedLM, load_causal_lm
from choiceaudit.scorers._prefix_cache import DEFAULT_PREFIX_CACHE_MB, prefix_cache_for
from choiceaudit.scorers._tokenize import InPlace, encode_in_place
from choiceaudit.types import FloatArray

__all__ = [
    "CausalLMScorer",
    "ChatTemplateRecord",
    "EngineOptions",
    "EngineRecord",
    "PromptRenderer",
    "Prompting",
    "softmax",
]

S = TypeVar("S", bound="CausalLMScorer")


def softmax(scores: FloatArray) -> FloatArray:
    """Softmax in float64, shifted by the maximum so it never overflows."""
    z = np.exp(scores - scores.max())
    return z / z.sum()  # type: ignore[no-any-return]


class EngineRecord(TypedDict):
    """The engine's batching options as the manifest records them."""

    max_batch_tokens: int
    max_batch_rows: int
    pad_multiple: int
    prefix_cache_mb: float
    output_group_mb: float


class Prompting(TypedDict):
    """How an in-process causal LM renders and fits its prompts, as its manifest records it."""

    chat_template: ChatTemplateRecord | None
    system_prompt: str | None
    context_window: int | None


@dataclass(frozen=True)
class EngineOptions:
    """Batching knobs of the engine (they change speed, never the scores beyond fp noise)."""

    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    max_batch_rows: int = 64
    pad_multiple: int = 8
    #: megabytes of cross-query key/value states and rows' finished numbers
    #: (:mod:`._prefix_cache`); 0 turns it off (the scores are the same bits either way)
    prefix_cache_mb: float = DEFAULT_PREFIX_CACHE_MB
    #: megabytes of logits the CPU output projection holds while it streams its weight once per
    #: group of rows of few reads rather than once per row; 0 runs each row's head whole (the
    #: scores are the same bits either way on this project's machine: :mod:`._engine`)
    output_group_mb: float = DEFAULT_OUTPUT_GROUP_MB


class PromptRenderer:
    """Turns a query's prompt and continuations into the exact strings the model reads."""

    def __init__(self, tokenizer: Any, chat: ChatTemplate | None) -> None:
        self.tokenizer = tokenizer
        self.chat = chat

    @property
    def add_special_tokens(self) -> bool:
        # A template writes its own special tokens (e.g. Gemma's "{{ bos_token }}").
        return self.chat is None

    def context(self, prompt: str) -> str:
        return rendered_context(self.chat, self.tokenizer, prompt)

    def continuation(self, text: str) -> str:
        return rendered_continuation(self.chat, text)

    def encode(
        self, prompt: str, continuations: Sequence[str], labels: Sequence[str]
    ) -> list[InPlace]:
        context = self.context(prompt)
        return encode_in_place(
            self.tokenizer,
            [context] * len(continuations),
            [self.continuation(c) for c in continuations],
            add_special_tokens=self.add_special_tokens,
            labels=labels,
        )


class CausalLMScorer:
    """A causal LM loaded in process, with its renderer and engine options. ``load`` is the
    one loader of every such backend: the model options here, and a subclass's own options
    (listed in ``backend_options``, e.g. ``menu_line``) passed through to its constructor."""

    #: Constructor options a subclass adds to :meth:`load`'s (the registry lists them).
    backend_options: tuple[str, ...] = ()

    def __init__(
        self,
        lm: LoadedLM,
        *,
        chat_template: str | None = None,
        system_prompt: str | None = None,
        engine: EngineOptions | None = None,
    ) -> None:
        self.lm = lm
        self.chat = resolve_chat_template(chat_template, lm.tokenizer, system_prompt=system_prompt)
        self.renderer = PromptRenderer(lm.tokenizer, self.chat)
        self.engine = engine or EngineOptions()
        self.context_window = context_window(lm.model)
        self.prefix_cache = prefix_cache_for(lm.model, self.engine.prefix_cache_mb)

    @classmethod
    def load(
        cls: type[S],
        name: str,
        *,
        dtype: str = "float32",
        device: str = "cpu",
        trust_remote_code: bool = False,
        chat_template: str | None = None,
        system_prompt: str | None = None,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        max_batch_rows: int = 64,
        pad_multiple: int = 8,
        prefix_cache_mb: float = DEFAULT_PREFIX_CACHE_MB,
        output_group_mb: float = DEFAULT_OUTPUT_GROUP_MB,
        **backend_options: Any,
    ) -> S:
        """Load ``name`` (``smollm2``, ``gemma3-270m``, ``hf:<dir|gguf|hub id>``) for scoring."""
        lm = load_causal_lm(name, dtype=dtype, device=device, trust_remote_code=trust_remote_code)
        return cls(
            lm,
            chat_template=chat_template,
            system_prompt=system_prompt,
            engine=EngineOptions(
                max_batch_tokens, max_batch_rows, pad_multiple, prefix_cache_mb, output_group_mb
            ),
            **backend_options,
        )

    def describe_prompting(self) -> Prompting:
        """The manifest entries of how prompts are rendered and batched."""
        return {
            "chat_template": template_record(self.chat),
            "system_prompt": None if self.chat is None else self.chat.system_prompt,
            "context_window": self.context_window,
        }

    def describe_engine(self) -> EngineRecord:
        return {
            "max_batch_tokens": self.engine.max_batch_tokens,
            "max_batch_rows": self.engine.max_batch_rows,
            "pad_multiple": self.engine.pad_multiple,
            "prefix_cache_mb": self.engine.prefix_cache_mb,
            "output_group_mb": self.engine.output_group_mb,
        }
