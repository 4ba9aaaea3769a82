"""The prompt an ``openai:`` client sends: the text ``hf`` would read in process.

A completions server with ``echo`` scores the text it is sent, so a chat template is applied
here, on the client, exactly as :mod:`._hf` applies it: the rendered user turn plus the
template's generation prompt is the context, and the continuation loses its leading space
(the assistant's reply starts there). A template writes its own special tokens, so the request
then asks the server not to add any (``add_special_tokens: false``, which vLLM and
``choiceaudit serve-model`` honour); SGLang's native ``/generate`` has no such switch, so a
template over ``api=sglang`` is refused rather than scored with a doubled BOS.

The template is rendered with a tokenizer loaded here (its special tokens are template
variables): the served model's own, named by the spec (``openai:smollm2`` → ``smollm2``), or
``tokenizer=`` (a local directory or hub id) when the served name is only an alias. No weights
are read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from typing_extensions import TypedDict

from choiceaudit.scorers._chat import (
    ChatTemplate,
    ChatTemplateRecord,
    _tokenizer_of,
    rendered_context,
    rendered_continuation,
    resolve_chat_template,
    template_record,
)
from choiceaudit.scorers._protocol import ScorerError

__all__ = ["ClientPrompt", "PromptDescription", "PromptFields"]


class PromptFields(TypedDict, total=False):
    """What a request body carries beyond its wire format's own fields: ``false`` when a
    template applied on the client wrote the special tokens, else nothing."""

    add_special_tokens: bool


class PromptDescription(TypedDict):
    """The manifest's record of the prompt options (the keys ``hf`` writes, and the tokenizer
    the template was rendered with)."""

    chat_template: ChatTemplateRecord | None
    system_prompt: str | None
    chat_tokenizer: str | None


@dataclass(frozen=True)
class ClientPrompt:
    """How an ``openai:`` client renders a query's prompt and continuations (no template:
    verbatim, and the server adds its own special tokens, as ``hf`` does without one)."""

    chat: ChatTemplate | None = None
    tokenizer: Any = None
    tokenizer_name: str | None = None

    @classmethod
    def resolve(
        cls,
        model: str,
        api: str,
        *,
        chat_template: str | None,
        system_prompt: str | None,
        tokenizer: str | None,
    ) -> ClientPrompt:
        """The prompt options of ``openai:<model>`` over ``api``, checked before any request."""
        if chat_template is None:
            if system_prompt is not None:
                raise ScorerError("system_prompt needs a chat_template")
            return cls()
        if api == "sglang":
            raise ScorerError(
                "openai api=sglang cannot take a chat_template: SGLang's /generate adds the "
                "tokenizer's special tokens to a prompt that already has the template's; use "
                "api=completions (SGLang's OpenAI API) or score without a template"
            )
        name = tokenizer or model
        try:
            loaded = _tokenizer_of(name)
        except ScorerError as exc:
            raise ScorerError(
                f"openai:{model} renders its chat template on the client with the served "
                f"model's tokenizer, and {name!r} could not be loaded here ({exc}); pass "
                "-o tokenizer=<local dir | hub id> naming the model the server serves"
            ) from None
        chat = resolve_chat_template(chat_template, loaded, system_prompt=system_prompt)
        return cls(chat, loaded, name)

    @property
    def add_special_tokens(self) -> bool:
        return self.chat is None

    def context(self, prompt: str) -> str:
        return rendered_context(self.chat, self.tokenizer, prompt)

    def continuation(self, text: str) -> str:
        return rendered_continuation(self.chat, text)

    def body_fields(self) -> PromptFields:
        """What the request body carries beyond the wire format's own fields."""
        return {} if self.add_special_tokens else {"add_special_tokens": False}

    def describe(self) -> PromptDescription:
        """The manifest's record of the prompt options (the same keys as ``hf`` writes)."""
        return {
            "chat_template": template_record(self.chat),
            "system_prompt": None if self.chat is None else self.chat.system_prompt,
            "chat_tokenizer": self.tokenizer_name,
        }
