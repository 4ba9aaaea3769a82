"""Rows of a typed run grouped into permutation sweeps (the order audit of plain scoring runs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from choiceaudit.store import Run, RunRow
from choiceaudit.types import format_perm

__all__ = ["Sweep", "permutation_sweeps"]


@dataclass
class Sweep:
    """Rows grouped into complete permutation sweeps of one option set per item."""

    item_ids: list[str]
    probs: npt.NDArray[np.float64]  # (items, perms, k), display order
    perms: npt.NDArray[np.int64]  # (items, perms, k)
    gold: npt.NDArray[np.int64] | None  # (items,) canonical gold index, if every item has one


def permutation_sweeps(run: Run, rows: Sequence[RunRow] | None = None) -> Sweep | None:
    """Group rows by item into equal-sized permutation sweeps; ``None`` if the run has none.

    Only items rendered under at least two distinct orderings count, and all must have the same
    number of orderings (an order audit compares like with like); others are left out, and the
    caller reports how many.
    """
    rows = run.rows if rows is None else rows
    by_item: dict[str, list[RunRow]] = {}
    for row in rows:
        item = row.meta.get("item_id")
        if item is not None and row.query.perm is not None:
            by_item.setdefault(str(item), []).append(row)
    groups = {
        k: v for k, v in by_item.items() if len({r.query.perm for r in v}) >= 2
    }
    if not groups:
        return None
    sizes = [len(v) for v in groups.values()]
    n_perm = max(set(sizes), key=sizes.count)
    groups = {
        k: sorted(v, key=lambda r: format_perm(r.query.perm or ()))
        for k, v in groups.items()
        if len(v) == n_perm
    }
    item_ids = sorted(groups)
    probs = np.array([[r.decision.probs for r in groups[i]] for i in item_ids], dtype=np.float64)
    perms = np.array([[r.query.perm for r in groups[i]] for i in item_ids], dtype=np.int64)
    golds = [groups[i][0].meta.get("gold") for i in item_ids]
    gold = np.array(golds, dtype=np.int64) if all(g is not None for g in golds) else None
    return Sweep(item_ids=item_ids, probs=probs, perms=perms, gold=gold)
