"""A tiny random Llama with a character BPE whose merges cross the prompt/option join and a
BOS the tokenizer adds in front, saved and loaded as a user's local model would be, and the
``serve-model`` app over it running on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tiny_llama import save_tiny_llama, tiny_tokenizer

CONTEXT = 48


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
