"""Fixtures for the meaning instrument: the shared test data and small synthetic corpora."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shared_paths import require_shared_data


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``<repo root>/../shared/data``; tests using it skip when it is absent."""
    return require_shared_data("bagdhara")


@pytest.fixture(scope="session")
def task_contract(shared_data: Path) -> dict[str, Any]:
    return dict(json.loads((shared_data / "bagdhara" / "task_contract.json").read_text("utf-8")))


@pytest.fixture(scope="session")
def sample_rows(shared_data: Path) -> list[dict[str, Any]]:
    lines = (shared_data / "bagdhara" / "sample_3rows.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


COLOURS = ("red", "blue", "green", "amber", "violet")
NOUNS = ("river", "stone", "crown", "lamp", "bridge", "salt", "drum")


def synthetic_entries(n: int = 40, *, tagged: bool = True) -> list[Any]:
    """Entries whose surface and tag neighbourhoods are known: entry ``i``'s gold gloss shares a
    content word with every ``j`` of the same colour (i % 5) or noun (i % 7); its tag is i % 4."""
    from choiceaudit.instruments.meaning import IdiomEntry

    out = []
    for i in range(n):
        out.append(
            IdiomEntry(
                id=10 * i + 1,
                expression=f"idiom{i} has three words" if i % 3 else f"idiom{i}",
                gold=f"{COLOURS[i % 5]} {NOUNS[i % 7]} meaning{i}",
                literal=f"literal{i} reading (plain sense {i})",
                language="bn",
                tags=(f"t{i % 4}",) if tagged else (),
                alternatives=(f"idiom{i} variant",) if i % 2 else (),
                carriers=(f"a sentence using idiom{i} here",),
                gold_other=f"english gold {i}",
                literal_other=f"plain sense {i}" if i % 5 else None,
                equivalents_other=(f"english equivalent {i}",) if i % 6 else (),
            )
        )
    return out


def synthetic_corpus(n: int = 40, *, tagged: bool = True) -> Any:
    from choiceaudit.instruments.meaning import Corpus
    from choiceaudit.instruments.meaning._corpus import LoaderReport

    entries = synthetic_entries(n, tagged=tagged)
    return Corpus("synthetic", "bn", tuple(entries), LoaderReport("synthetic"), other_language="en")


@pytest.fixture(scope="session")
def synthetic() -> Any:
    return synthetic_corpus()


@pytest.fixture(scope="session")
def idioms_en_corpus() -> Any:
    from choiceaudit.instruments.meaning import load_idioms_en

    return load_idioms_en()


def bag_embed(texts: list[str]) -> Any:
    """A test embedder: hashed bag of words in 64 dimensions (deterministic, no model)."""
    import hashlib

    import numpy as np

    out = np.zeros((len(texts), 64))
    for i, text in enumerate(texts):
        for w in text.lower().split():
            out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 64] += 1.0
    return out


@pytest.fixture(scope="session")
def embed() -> Any:
    return bag_embed
