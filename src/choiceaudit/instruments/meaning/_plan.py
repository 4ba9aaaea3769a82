"""A meaning run as a list of item builds: what ``choiceaudit run meaning`` scores.

The default plan (issue 6, item 6) is the ladder (E1), the option ablation (E6), the order audit
(E7) and, where the corpus has two languages, the capture matrix. Item samples are drawn once from
``sample_seed`` over ascending ids, so every model given the same plan answers byte-identical
questions and two runs pair row for row. ``n_items=None`` uses every item.

A corpus without tags has d-sem and d-hard only when an embedder is given (for example the
MiniLM default of :func:`choiceaudit.scorers.load_embedder`); without one those two families are left out
and the plan's config says so; E2, which the paper runs under d-hard, then runs under d-lit
(the other literal-bearing family).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning._contract import FAMILIES, MATRIX_SEED, SEEDS_BN
from choiceaudit.instruments.meaning._corpus import Corpus
from choiceaudit.instruments.meaning._interventions import build_e2, build_e3, build_e4, build_e7
from choiceaudit.instruments.meaning._items import ItemBuild, build_ladder
from choiceaudit.instruments.meaning._matrix import build_matrix, capture_pool
from choiceaudit.instruments.meaning._options import build_e6
from choiceaudit.instruments.meaning._pools import Pools
from choiceaudit.scorers import Embedder
from choiceaudit.types import Query

__all__ = ["DEFAULT_EXPERIMENTS", "EXPERIMENTS", "MeaningPlan", "plan_meaning"]

EXPERIMENTS: tuple[str, ...] = ("e1", "e2", "e3", "e4", "e6", "e7", "matrix")
DEFAULT_EXPERIMENTS: tuple[str, ...] = ("e1", "e6", "e7", "matrix")


@dataclass(frozen=True)
class MeaningPlan:
    """Item builds per experiment, in run order, and the configuration that made them."""

    builds: dict[str, ItemBuild]
    config: dict[str, Any]

    def queries(self) -> list[Query]:
        return [q for build in self.builds.values() for q in build.queries]

    def reports(self) -> dict[str, Any]:
        return {name: build.report for name, build in self.builds.items()}


def _sample(ids: Sequence[int], n: int | None, seed: int) -> list[int]:
    ordered = sorted(ids)
    if n is None or n >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, n))


def plan_meaning(
    corpus: Corpus,
    *,
    experiments: Sequence[str] = DEFAULT_EXPERIMENTS,
    n_items: int | None = None,
    n_order_items: int = 50,
    sample_seed: int = 0,
    embed: Embedder | None = None,
) -> MeaningPlan:
    """Build every requested experiment over one item sample (see the module docstring)."""
    unknown = sorted(set(experiments) - set(EXPERIMENTS))
    if unknown:
        raise InputError(f"unknown experiments {unknown}; known: {list(EXPERIMENTS)}")
    pools = Pools(corpus, embed=embed)
    families = tuple(FAMILIES)
    left_out: list[str] = []
    if pools.sem_source == "none":
        families = tuple(f for f in FAMILIES if f not in ("d-sem", "d-hard"))
        left_out = ["d-sem", "d-hard"]
    items = _sample([e.id for e in corpus.entries], n_items, sample_seed)
    two_languages = corpus.other_language is not None
    builds: dict[str, ItemBuild] = {}
    for name in experiments:
        if name == "e1":
            builds[name] = build_ladder(pools, families=families, item_ids=items)
        elif name == "e2":
            family = "d-hard" if "d-hard" in families else "d-lit"
            builds[name] = build_e2(pools, family=family, item_ids=items)
        elif name == "e3":
            builds[name] = build_e3(pools, item_ids=items)
        elif name == "e4" and two_languages:
            builds[name] = build_e4(pools, item_ids=items)
        elif name == "e6":
            builds[name] = build_e6(pools, item_ids=items)
        elif name == "e7":
            builds[name] = build_e7(pools, item_ids=items[:n_order_items])
        elif name == "matrix" and two_languages:
            pool_ids, _ = capture_pool(corpus)
            chosen = _sample(pool_ids, n_items, sample_seed)
            builds[name] = build_matrix(pools, item_ids=chosen)
    config = {
        "corpus": corpus.name,
        "loader": corpus.report.to_dict(),
        "experiments": list(builds),
        "skipped_experiments": [e for e in experiments if e not in builds],
        "n_items": len(items),
        "n_order_items": min(n_order_items, len(items)),
        "sample_seed": sample_seed,
        "families": list(families),
        "families_left_out": left_out,
        "sem_source": pools.sem_source,
        "seeds": {**SEEDS_BN, "matrix": MATRIX_SEED},
    }
    return MeaningPlan(builds, config)
