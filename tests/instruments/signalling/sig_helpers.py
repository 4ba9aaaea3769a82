"""Shared helpers for the signalling tests: locating ``<repo>/../shared/data`` and a THINGS item
set built from it."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from choiceaudit.instruments.signalling._items import generate_candidates
from choiceaudit.instruments.signalling._pool import build_pool
from choiceaudit.instruments.signalling._selection import (
    build_item_set,
    select_items,
)
from choiceaudit.instruments.signalling._things import load_things
from choiceaudit.instruments.signalling._tiles import load_tiles
from choiceaudit.types import ItemSet
from shared_paths import require_shared_data


def shared_data() -> Path:
    """The shared test data directory, or skip the test with the reason."""
    return require_shared_data("things", "things_concepts.tsv")


@cache
def things_items(n_items: int, seed: int) -> ItemSet:
    """``n_items`` THINGS items selected from 8,000 generated candidates, all under ``seed``
    (built once per ``(n_items, seed)``)."""
    norms = load_things(shared_data())
    tiles = load_tiles("things", norms=norms)
    pool = build_pool(norms, dimensions=[t.dimension for t in tiles])
    blocks = generate_candidates(pool, tiles, n_candidates=8_000, seed=seed)
    return build_item_set(select_items(blocks, n_items=n_items, seed=seed), seed=seed)
