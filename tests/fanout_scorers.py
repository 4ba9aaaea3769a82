"""What the fan-out tests (worker processes, Ray actors) run in other processes: scorers that
fail in set ways, and a tiny causal LM saved to disk. Worker processes import them by name
(the test modules are not importable there); Ray ships this module by value. Also the queries
both test modules score and how they read a run's rows back."""

from __future__ import annotations

import os
import string
import sys
from pathlib import Path
from typing import Any

from choiceaudit import Query
from choiceaudit.scorers import FakeScorer, MissingBackendError, PartialScoreError
from choiceaudit.store import RunStore


def queries(n: int) -> list[Query]:
    return [
        Query(state=f"state {i}", options=(f"a{i}", f"b{i}", f"c{i}"), meta={"item_id": str(i)})
        for i in range(n)
    ]


def rows(run: Path) -> list[dict[str, Any]]:
    """A run's stored rows, in the order they read back."""
    out: list[dict[str, Any]] = RunStore(run).read_table().to_pylist()
    return out


def make_fake() -> FakeScorer:
    return FakeScorer()


def names_llama_if_preloaded() -> FakeScorer:
    """A fake scorer named by whether transformers' Llama module was already imported in the
    worker before its scorer was made (what the worker server preloads)."""
    loaded = "transformers.models.llama.modeling_llama" in sys.modules
    return FakeScorer(name="preloaded" if loaded else "imported-later")


def cannot_open() -> FakeScorer:
    raise MissingBackendError("the model package 'nothing' is not installed: pip install nothing")


class DiesOnce(FakeScorer):
    """Kills its own worker process the first time it scores the chunk holding ``victim``."""

    def __init__(self, marker: str, victim: str) -> None:
        super().__init__()
        self.marker = marker
        self.victim = victim

    def score(self, batch: Any) -> Any:
        if any(q.id == self.victim for q in batch) and not os.path.exists(self.marker):
            Path(self.marker).write_text("died", encoding="utf-8")
            os._exit(1)
        return super().score(batch)


class FailsChunk(FakeScorer):
    """Returns only the first query of the chunk holding ``victim``."""

    def __init__(self, victim: str) -> None:
        super().__init__()
        self.victim = victim

    def score(self, batch: Any) -> Any:
        decisions = super().score(batch)
        if any(q.id == self.victim for q in batch):
            kept = [decisions[0], *([None] * (len(batch) - 1))]
            raise PartialScoreError("the API gave up", kept, query_id=batch[1].id)
        return decisions


class Buggy(FakeScorer):
    """A scorer with a bug: any chunk holding ``victim`` raises a plain exception."""

    def __init__(self, victim: str) -> None:
        super().__init__()
        self.victim = victim

    def score(self, batch: Any) -> Any:
        if any(q.id == self.victim for q in batch):
            raise KeyError("a bug in the scorer")
        return super().score(batch)


def save_char_llama(directory: Path, *, positions: int, keys: str = "") -> Path:
    """A tiny random Llama (seeded) with a character tokenizer, saved as safetensors for
    ``hf:<directory>``; each of ``keys`` also gets ``" " + key`` as a token of its own (so
    ``lm-choice`` can tell its keys apart)."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models

    merges = [(" ", k) for k in keys]
    chars = ["<unk>", "<pad>", "\n", *string.printable[:95], *(a + b for a, b in merges)]
    tokenizer = transformers.PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]  # unannotated upstream
        tokenizer_object=Tokenizer(
            models.BPE(vocab={c: i for i, c in enumerate(chars)}, merges=merges)
        ),
        unk_token="<unk>",
        pad_token="<pad>",
    )
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=positions,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(3)
    transformers.LlamaForCausalLM(config).save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


class Slow(FakeScorer):
    """Takes ``seconds`` over every chunk (a model far larger than the machine), so a worker
    holding chunks is busy long after its driver could have been killed."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def score(self, queries: Any) -> Any:
        import time

        time.sleep(self.seconds)
        return super().score(queries)


def make_slow() -> Slow:
    return Slow(120.0)
