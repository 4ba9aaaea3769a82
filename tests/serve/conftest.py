"""A tiny random Llama with a character BPE whose merges cross the prompt/option join and a
BOS the tokenizer adds in front, saved and loaded as a user's local model would be, and the
``serve-model`` app over it running on 127.0.0.1."""

from __future__ import annotations

import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tiny_llama import save_tiny_llama

CONTEXT = 48


def tiny_tokenizer() -> Any:
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


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")

    return save_tiny_llama(
        tmp_path_factory.mktemp("serve") / "tiny", tiny_tokenizer(), seed=7, context=CONTEXT
    )


@pytest.fixture(scope="session")
def tiny_scorer(tiny_dir: Path) -> Any:
    from choiceaudit.scorers import load_scorer

    return load_scorer(f"hf:{tiny_dir}")


@pytest.fixture(scope="session")
def tiny_url(tiny_scorer: Any) -> Iterator[str]:
    from choiceaudit.serve import ServerThread, create_app

    with ServerThread(create_app(tiny_scorer, served_name="tiny", api_key=None)) as url:
        yield url
