"""The paper's three designs as plan presets (the meaning paper, Appendix R, Table 4, Appendix Q).

A design is a list of :class:`Block` s: one experiment, in one language, under one seed base,
over one item set. The item sets are named and resolved against the corpus by
:func:`block_items`:

* ``full`` — every usable entry (8,876 on the full corpus);
* ``subset10`` — Lod-lille's fixed subset, ``full.sample(frac=0.10, random_state=909)`` (888);
* ``english`` — entries with an English equivalent idiom and English gold gloss (8,761);
* ``pool`` — the capture-matrix pool (3,265; :func:`~._matrix.capture_pool`);
* ``subset10_english`` — the subset's entries that are also ``english`` (873, Appendix R: "the
  873 are exactly the intersection of the subset with the 8,761 items that do");
* ``order`` — E7's sample: ``n`` items drawn at random from ``within`` with
  ``random.Random(sample_seed).sample(sorted(ids), n)`` (992 / 299 / 300, drawn separately per
  arm; the paper does not publish the sample seed, so each design uses its own E7 seed base).

Blocks (Appendix R, "Seeds" and "Call volume"):

* ``laya`` — Bengali, full set: E1 (five families, 1000), E2 (2000), E3 (3000), E4 (4000),
  E6 (6000), E7 (7000, 992 items), and the matrix on the full pool (21000);
* ``lod`` — the same blocks on the 10% subset, E7 on 299 of its items, the matrix on the full
  pool ("Lod-lille ran the full pool here rather than its 10% subset");
* ``jev`` — the commercial arm's blocks: ``j1_order`` (English E7, 17000, 300 items),
  ``j2_lit_en`` (English d-rand, d-lit, d-hard on the pool, 12000), ``j3_ceiling_en`` (English
  d-rand, d-surf, d-sem on the English pool, 11000), ``j4_bn_control`` (Bengali d-rand on the
  English pool, 14000), ``j5_options_en`` (English E6 on the subset's 873, 16000) and the
  matrix (21000). E2 was not run on that arm (Appendix R, "Known gaps"), nor E3 or E4.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning._contract import (
    FAMILIES,
    MATRIX_SEED,
    SEEDS_BN,
    SEEDS_EN,
)
from choiceaudit.instruments.meaning._corpus import Corpus
from choiceaudit.instruments.meaning._matrix import capture_pool, subset10

__all__ = ["DESIGNS", "ITEM_SETS", "Block", "block_items", "design_blocks", "item_set"]

ITEM_SETS: tuple[str, ...] = ("full", "subset10", "english", "pool", "subset10_english")


@dataclass(frozen=True)
class Block:
    """One experiment in one language over one item set. ``language`` ``None`` is the corpus
    language; ``families`` the ladder families (E1 only); ``n_order`` the size of E7's random
    sample from ``items``, drawn with ``order_seed`` (default ``seed``)."""

    name: str
    experiment: str
    seed: int
    items: str
    language: str | None = None
    families: tuple[str, ...] | None = None
    n_order: int | None = None
    order_seed: int | None = None


def _open_arm(items: str, n_order: int) -> tuple[Block, ...]:
    return (
        Block("e1", "e1", SEEDS_BN["e1"], items, families=FAMILIES),
        Block("e2", "e2", SEEDS_BN["e2"], items),
        Block("e3", "e3", SEEDS_BN["e3"], items),
        Block("e4", "e4", SEEDS_BN["e4"], items),
        Block("e6", "e6", SEEDS_BN["e6"], items),
        Block("e7", "e7", SEEDS_BN["e7"], items, n_order=n_order),
        Block("matrix", "matrix", MATRIX_SEED, "pool"),
    )


DESIGNS: dict[str, tuple[Block, ...]] = {
    "laya": _open_arm("full", 992),
    "lod": _open_arm("subset10", 299),
    "jev": (
        Block("j1_order", "e7", SEEDS_EN["j1_order"], "english", language="en", n_order=300),
        Block(
            "j2_lit_en",
            "e1",
            SEEDS_EN["j2_lit_en"],
            "pool",
            language="en",
            families=("d-rand", "d-lit", "d-hard"),
        ),
        Block(
            "j3_ceiling_en",
            "e1",
            SEEDS_EN["j3_ceiling_en"],
            "english",
            language="en",
            families=("d-rand", "d-surf", "d-sem"),
        ),
        Block("j4_bn_control", "e1", SEEDS_EN["j4_bn_control"], "english", families=("d-rand",)),
        Block("j5_options_en", "e6", SEEDS_EN["j5_options_en"], "subset10_english", language="en"),
        Block("matrix", "matrix", MATRIX_SEED, "pool"),
    ),
}


def design_blocks(design: str) -> tuple[Block, ...]:
    if design not in DESIGNS:
        raise InputError(f"unknown design {design!r}; known: {sorted(DESIGNS)}")
    return DESIGNS[design]


def item_set(corpus: Corpus, name: str) -> list[int]:
    """The ids of item set ``name`` on ``corpus`` (see the module docstring), ascending."""
    if name == "full":
        return [e.id for e in corpus.entries]
    if name == "subset10":
        return sorted(subset10(corpus))
    english = {e.id for e in corpus.entries if e.equivalents_other and e.gold_other}
    if name == "english":
        return sorted(english)
    if name == "pool":
        return sorted(capture_pool(corpus)[0])
    if name == "subset10_english":
        return sorted(set(subset10(corpus)) & english)
    raise InputError(f"unknown item set {name!r}; known: {list(ITEM_SETS)}")


def block_items(corpus: Corpus, block: Block, *, n_items: int | None = None) -> list[int]:
    """The ids a block asks, ascending: its item set, E7's random sample of it, or (``n_items``,
    for a quick trial of a design) a random ``n_items`` of it drawn with the block's seed."""
    ids = item_set(corpus, block.items)
    if block.n_order is not None:
        ids = sample_ids(
            ids, block.n_order, block.seed if block.order_seed is None else block.order_seed
        )
    if n_items is not None:
        ids = sample_ids(ids, n_items, block.seed)
    return ids


def sample_ids(ids: Sequence[int], n: int | None, seed: int) -> list[int]:
    """``sorted(random.Random(seed).sample(sorted(ids), n))``; every id when ``n`` is ``None`` or
    at least ``len(ids)``."""
    ordered = sorted(ids)
    if n is None or n >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, n))
