"""A tiny random Llama saved beside its tokenizer, as a user's local model directory is: the
model the serving tests score through ``serve-model`` and in process alike."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any


def save_tiny_llama(
    directory: Path,
    tokenizer: Any,
    *,
    seed: int,
    context: int,
    chat_template: str | None = None,
    **config: Any,
) -> Path:
    """Two layers of width 32 over ``tokenizer``'s vocabulary, weights drawn with ``seed``,
    saved (safetensors) with the tokenizer into ``directory``; ``chat_template`` is saved with
    the tokenizer, and ``config`` sets further ``LlamaConfig`` fields."""
    import torch
    import transformers

    llama = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=context,
        initializer_range=0.3,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        **config,
    )
    torch.manual_seed(seed)
    transformers.LlamaForCausalLM(llama).save_pretrained(directory, safe_serialization=True)
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(directory)
    return directory


def tiny_tokenizer() -> Any:
    """A character BPE over printable ASCII whose merges cross the prompt/option join
    (``": yes"``), with a BOS the tokenizer adds in front."""
    import transformers
    from tokenizers import Tokenizer, models, processors

    specials = ["<unk>", "<pad>", "<s>"]
    chars = ["\n", *string.printable[:95]]
    merges = [(":", " "), (": ", "y"), ("e", "s"), (": y", "es"), ("t", "h"), ("th", "e")]
    vocab = {t: i for i, t in enumerate([*specials, *chars, *(a + b for a, b in merges)])}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>"))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", vocab["<s>"])]
    )
    return transformers.PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]  # unannotated upstream
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<s>"
    )
