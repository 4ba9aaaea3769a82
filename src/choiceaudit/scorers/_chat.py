"""Chat templates for causal-LM scoring: resolved once, applied verbatim.

A template is a Jinja string as tokenizers ship it. ``"own"`` takes the scored model's own
template; a model name (``"smollm2"``, ``"hf:/models/qwen-instruct"``) takes that model's, so a
base model can be scored under its instruct sibling's template (docs/architecture.md, "Chat templates").
The rendered text already contains whatever special tokens the template writes (a BOS, turn
markers), so a templated prompt is tokenized without adding special tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from typing_extensions import TypedDict

from choiceaudit.scorers._loading import (
    HF_EXTRA,
    _hub_offline,
    _materialise_gguf,
    convert_gguf,
    require,
    resolve_causal_lm,
)
from choiceaudit.scorers._protocol import ScorerError

__all__ = [
    "ChatTemplate",
    "ChatTemplateRecord",
    "rendered_context",
    "rendered_continuation",
    "resolve_chat_template",
    "template_record",
]


class ChatTemplateRecord(TypedDict):
    """Which chat template renders the prompts and its text."""

    source: str
    template: str


@dataclass(frozen=True)
class ChatTemplate:
    """A Jinja chat template and where it came from (for the manifest)."""

    source: str
    template: str
    system_prompt: str | None = None

    def render(self, tokenizer: Any, prompt: str) -> str:
        """The prompt as the user turn, followed by the template's generation prompt."""
        messages = []
        if self.system_prompt is not None:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": prompt})
        try:
            text = tokenizer.apply_chat_template(
                messages, chat_template=self.template, tokenize=False, add_generation_prompt=True
            )
        except Exception as exc:  # jinja raises its own error types
            raise ScorerError(f"chat template from {self.source} failed to render: {exc}") from None
        if not isinstance(text, str):
            raise ScorerError(f"chat template from {self.source} did not render to a string")
        return text


def template_record(chat: ChatTemplate | None) -> ChatTemplateRecord | None:
    """The manifest's record of ``chat`` (``None`` without a template), the same in process
    and on an ``openai:`` client."""
    return None if chat is None else {"source": chat.source, "template": chat.template}


def _looks_like_jinja(text: str) -> bool:
    return "{{" in text or "{%" in text


def _tokenizer_of(name: str) -> Any:
    """Load only the tokenizer of a causal LM name (no weights are read)."""
    transformers = require("transformers", HF_EXTRA)
    source = resolve_causal_lm(name)
    offline = False
    if source.kind in ("gguf-package", "gguf-file"):
        gguf, sha = _materialise_gguf(source)
        location = str(convert_gguf(gguf, sha))
    else:
        location = source.location
        offline = source.kind == "hub" and _hub_offline()
    try:
        if offline:
            return transformers.AutoTokenizer.from_pretrained(location, local_files_only=True)
        return transformers.AutoTokenizer.from_pretrained(location)
    except OSError as exc:
        raise ScorerError(
            f"could not load the tokenizer of {name!r} for its chat template: {exc}"
        ) from None


def resolve_chat_template(
    spec: str | None, tokenizer: Any, *, system_prompt: str | None = None
) -> ChatTemplate | None:
    """``None`` (no template), ``"own"``, a Jinja string, or a model name whose template to use."""
    if spec is None:
        if system_prompt is not None:
            raise ScorerError("system_prompt needs a chat_template")
        return None
    if _looks_like_jinja(spec):
        return ChatTemplate("given string", spec, system_prompt)
    if spec == "own":
        source, template = "the scored model", getattr(tokenizer, "chat_template", None)
    else:
        source, template = spec, getattr(_tokenizer_of(spec), "chat_template", None)
    if not template or not isinstance(template, str):
        raise ScorerError(f"{source} has no chat template (pass a Jinja string or another model)")
    return ChatTemplate(source, template, system_prompt)


def rendered_context(chat: ChatTemplate | None, tokenizer: Any, prompt: str) -> str:
    """The text the model reads before the options: the prompt, or the prompt in ``chat``'s
    template. One rule for ``hf``/``lm-choice`` in process and ``openai:`` on the client, so
    a model is asked the same text either way."""
    return prompt if chat is None else chat.render(tokenizer, prompt)


def rendered_continuation(chat: ChatTemplate | None, text: str) -> str:
    """An option as it follows the context: a template's assistant turn starts the answer
    itself, so the option's leading space (a plain prompt's word break) is dropped."""
    return text if chat is None else text.lstrip(" ")
