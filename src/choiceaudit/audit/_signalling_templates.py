"""The paper's scoring environment for a causal LM in the signalling instrument (§I-J): which
chat template a model is scored with when the caller names none, and why. The choice and its
reason are recorded in every model run's configuration (``chat_template_default``)."""

from __future__ import annotations

import json
from pathlib import Path

from choiceaudit.scorers import causal_lm_of

__all__ = ["BUILTIN_TEMPLATES", "default_chat_template"]


def _has_chat_template(directory: Path) -> bool:
    if (directory / "chat_template.jinja").is_file() or (
        directory / "chat_template.json"
    ).is_file():
        return True
    config = directory / "tokenizer_config.json"
    if not config.is_file():
        return False
    try:
        return bool(json.loads(config.read_text(encoding="utf-8")).get("chat_template"))
    except (json.JSONDecodeError, OSError):
        return False


#: §I-J for the built-in causal LMs: (chat_template option, why).
BUILTIN_TEMPLATES: dict[str, tuple[str | None, str]] = {
    "smollm2": ("own", "instruct model (SmolLM2-135M-Instruct): its own chat template"),
    "gemma3-270m": (
        None,
        "base model; its instruct sibling (gemma-3-270m-it) is not installed offline, so no "
        "template; pass -o chat_template=<sibling dir> to score with it (§I-J)",
    ),
}


def default_chat_template(spec: str) -> tuple[str | None, str]:
    """The paper's scoring environment (§I-J) for a local ``hf:<dir>`` model: an instruct
    model is scored with its own chat template (``"own"``); a base model (directory name ending
    ``-Base``) with its instruct sibling's, applied verbatim (the sibling directory beside it,
    name without ``-Base``). Returns ``(chat_template option or None, why)``; anything else
    (built-in GGUF models, hub ids, a base model without a sibling on disk) keeps no template,
    and the reason says so. Always recorded in the run's config. The built-in models:
    ``smollm2`` (SmolLM2-135M-Instruct) gets its own template, which its GGUF carries;
    ``gemma3-270m`` is a base model whose instruct sibling is not installed, so it is scored
    without a template (pass ``-o chat_template=<sibling dir>`` to follow §I-J). A model behind
    a server (``openai:smollm2``) gets the default of the model it serves (``smollm2``), which
    the client applies, so it reads the prompt it reads in process."""
    model = causal_lm_of(spec)
    if model is None:
        return None, f"{spec} is not a causal LM; no chat template"
    template, why = _default_for(model)
    return template, (why if model == spec else f"served model {model}: {why}")


def _default_for(spec: str) -> tuple[str | None, str]:
    if spec in BUILTIN_TEMPLATES:
        return BUILTIN_TEMPLATES[spec]
    if not spec.startswith("hf:"):
        return None, "not a local hf: directory; no template unless -o chat_template=… is given"
    path = Path(spec.removeprefix("hf:"))
    if not path.is_dir():
        return None, f"{path} is not a local directory; no template unless -o chat_template=…"
    if path.name.lower().endswith("-base"):
        sibling = path.with_name(path.name[: -len("-Base")])
        if sibling.is_dir() and _has_chat_template(sibling):
            return str(sibling), f"base model: its instruct sibling {sibling}'s template, verbatim"
        return None, f"base model without an instruct sibling with a template at {sibling}"
    if _has_chat_template(path):
        return "own", "instruct model: its own chat template"
    return None, f"{path} ships no chat template"
