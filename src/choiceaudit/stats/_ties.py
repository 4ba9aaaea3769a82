"""The toolkit's tie rule and the grouping of renderings into permutation sweeps.

Exact ties among options are a tied *set*, never broken by array order: a choice over ``t``
tied maxima gives each of them credit ``1/t`` (the expected score of a chooser that breaks the
tie at random). :func:`tie_credit` is the one implementation every accuracy, LAR, slot share and
calibration measure uses.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from choiceaudit.stats._validate import FloatArray, as_finite

__all__ = ["PermutationSweeps", "permutation_sweeps", "tie_credit"]


def tie_credit(scores: Any) -> FloatArray:
    """Per row and option, the share of the choice the option receives: ``1/t`` on each of the
    ``t`` options attaining the row maximum exactly, 0 elsewhere. ``scores`` is (n, k); no rows
    give no credit (an empty cell is the caller's to report)."""
    raw = np.asarray(scores, dtype=np.float64)
    if raw.ndim == 2 and raw.shape[0] == 0:
        return np.zeros(raw.shape, dtype=np.float64)
    s = as_finite(scores, "scores", ndim=2)
    top = s == s.max(axis=1, keepdims=True)
    return np.asarray(top / top.sum(axis=1, keepdims=True), dtype=np.float64)


@dataclass(frozen=True)
class PermutationSweeps:
    """Items whose renderings form a complete sweep: ``index[i]`` lists the input positions of
    item ``items[i]``'s renderings, sorted by permutation; ``n_excluded`` items did not."""

    items: tuple[str, ...]
    index: tuple[tuple[int, ...], ...]
    n_excluded: int

    @property
    def n_orderings(self) -> int:
        return len(self.index[0]) if self.index else 0


def permutation_sweeps(
    item_ids: Sequence[Hashable],
    perms: Sequence[Sequence[int] | None],
    *,
    n_orderings: int | Literal["mode"] = "mode",
) -> PermutationSweeps | None:
    """Group renderings by item into equal-sized sweeps over distinct orderings.

    With an integer ``n_orderings`` (the meaning paper's E7: all ``k!``), an item counts when it
    has exactly that many renderings, all under distinct permutations. With ``"mode"`` (plain
    scoring runs, whose sweeps are whatever the user rendered), items seen under at least two
    distinct orderings count, and only those with the most common number of renderings are kept,
    so an audit compares like with like. Rows without a permutation are ignored. Returns
    ``None`` when no item qualifies.
    """
    if len(item_ids) != len(perms):
        raise ValueError(f"{len(item_ids)} item ids but {len(perms)} permutations")
    by_item: dict[str, list[int]] = {}
    for i, (item, perm) in enumerate(zip(item_ids, perms, strict=True)):
        if perm is not None:
            by_item.setdefault(str(item), []).append(i)

    def distinct(idx: list[int]) -> int:
        return len({tuple(perms[j] or ()) for j in idx})

    if n_orderings == "mode":
        groups = {k: v for k, v in by_item.items() if distinct(v) >= 2}
        if not groups:
            return None
        sizes = [len(v) for v in groups.values()]
        size = max(set(sizes), key=sizes.count)
    else:
        groups = {k: v for k, v in by_item.items() if distinct(v) == len(v)}
        size = int(n_orderings)
    kept = {k: v for k, v in groups.items() if len(v) == size}
    if not kept:
        return None
    items = tuple(sorted(kept))
    index = tuple(tuple(sorted(kept[item], key=lambda j: tuple(perms[j] or ()))) for item in items)
    return PermutationSweeps(items=items, index=index, n_excluded=len(by_item) - len(kept))
