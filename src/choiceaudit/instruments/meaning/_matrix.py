"""The capture matrix's item pool and its two language cells (the meaning paper, Appendix I, J, R).

Pool (Appendix J, "Where the glosses come from"), counted step by step:

1. ``with_en_parenthetical`` — the literal gloss carries an English parenthetical (≥3 ASCII
   letters, ≥60% ASCII alphabetic; :func:`english_parenthetical`);
2. ``with_equivalent`` — the row also carries an English equivalent idiom and English gold;
3. ``distinct`` — the English literal gloss is lexically distinct from the English gold gloss,
   word-set Jaccard < 0.34.

The paper's counts on the full corpus are 3,391 → 3,352 → 3,265. Both cells come from one
``d-lit`` draw per item under seed 21000 and are shuffled independently from the same generator
(Appendix R, "The matrix run"). The Bengali cell uses the literal field as written (parenthetical
included, asymmetry (ii)); the English cell's state is the first English equivalent idiom and its
literal option the parenthetical alone.

:func:`subset10` reproduces the fixed 10% subset (``full.sample(frac=0.10, random_state=909)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning._build_report import (
    count_item,
    new_report,
)
from choiceaudit.instruments.meaning._contract import MATRIX_SEED, SUBSET_FRAC, SUBSET_SEED
from choiceaudit.instruments.meaning._corpus import Corpus, IdiomEntry
from choiceaudit.instruments.meaning._items import (
    ItemBuild,
    ItemDraw,
    as_pools,
    draw_slate,
    make_query,
)
from choiceaudit.instruments.meaning._pools import Pools, View
from choiceaudit.instruments.meaning._text import jaccard, words
from choiceaudit.types import Query

__all__ = ["JACCARD_MAX", "build_matrix", "capture_pool", "subset10"]

JACCARD_MAX = 0.34


def capture_pool(
    corpus: Corpus,
    *,
    jaccard_max: float = JACCARD_MAX,
    tokenize: Callable[[str], list[str]] = words,
) -> tuple[list[int], dict[str, int]]:
    """Ids of the entries in the capture-matrix pool, and the count after each step.

    The distinctness cut keeps entries whose English literal and English gold glosses have a
    word-set Jaccard below ``jaccard_max`` (the paper's 0.34); words are ``tokenize``'s
    (default :func:`~choiceaudit.instruments.meaning._text.words`, case-folded), a choice the
    paper does not state."""
    step1 = [e for e in corpus.entries if e.literal_other]
    step2 = [e for e in step1 if e.equivalents_other and e.gold_other]
    step3 = [e for e in step2 if _distinct(e, jaccard_max, tokenize)]
    counts = {
        "usable": len(corpus),
        "with_en_parenthetical": len(step1),
        "with_equivalent": len(step2),
        "distinct": len(step3),
    }
    return [e.id for e in step3], counts


def _distinct(entry: IdiomEntry, jaccard_max: float, tokenize: Callable[[str], list[str]]) -> bool:
    assert entry.literal_other is not None and entry.gold_other is not None
    return jaccard(entry.literal_other, entry.gold_other, tokenize=tokenize) < jaccard_max


def build_matrix(
    corpus: Corpus | Pools,
    *,
    seed_base: int = MATRIX_SEED,
    family: str = "d-lit",
    item_ids: Sequence[int] | None = None,
) -> ItemBuild:
    """Both language cells of the capture matrix for every pool item (or ``item_ids`` of it)."""
    pools = as_pools(corpus)
    if pools.corpus.other_language is None:
        raise InputError(f"corpus {pools.corpus.name} has one language; the matrix needs two")
    pool_ids, counts = capture_pool(pools.corpus)
    if item_ids is not None:
        outside = sorted(set(item_ids) - set(pool_ids))
        if outside:
            raise ValueError(f"items not in the capture pool: {outside[:10]}")
        pool_ids = [i for i in pool_ids if i in set(item_ids)]
    report = new_report(pools, [family], seed_base, "matrix")
    report["pool"] = counts
    queries: list[Query] = []
    for item_id in pool_ids:
        index = pools.index_of[item_id]
        draw = draw_slate(pools, index, seed_base, family, report, views=("own", "other"))
        if draw is None:
            continue
        perm_other = list(range(len(draw.perm)))
        draw.rng.shuffle(perm_other)
        queries += language_cells(
            pools, draw, family, perm_other, experiment="matrix", seed_base=seed_base
        )
        count_item(report, family, draw.slates[family].topped_up)
    return ItemBuild(tuple(queries), report)


def language_cells(
    pools: Pools,
    draw: ItemDraw,
    family: str,
    perm_other: Sequence[int],
    *,
    experiment: str,
    seed_base: int,
) -> list[Query]:
    """The two language cells of one draw (the capture matrix, E4), condition = the language:
    the expression under ``draw.perm`` in the corpus language, and its first other-language
    equivalent idiom under ``perm_other`` in the other language."""
    entry = pools.entries[draw.entry_index]
    cells: tuple[tuple[View, str | None, str, tuple[int, ...]], ...] = (
        ("own", pools.corpus.language, entry.expression, draw.perm),
        ("other", pools.corpus.other_language, entry.equivalents_other[0], tuple(perm_other)),
    )
    return [
        make_query(
            pools,
            draw,
            family,
            state=state,
            experiment=experiment,
            condition=str(language),
            seed_base=seed_base,
            view=view,
            perm=perm,
            block=experiment,
        )
        for view, language, state, perm in cells
    ]


def subset10(
    corpus: Corpus, *, frac: float = SUBSET_FRAC, random_state: int = SUBSET_SEED
) -> list[int]:
    """Ids of ``full.sample(frac, random_state)`` with rows in ascending-id order, as pandas
    draws it (``RandomState(seed).choice(n, round(frac * n), replace=False)``), in draw order."""
    n = len(corpus)
    size = round(frac * n)
    picks = np.random.RandomState(random_state).choice(n, size=size, replace=False)
    return [corpus.entries[int(i)].id for i in picks]
