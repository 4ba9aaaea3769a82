"""Read run directories into the arrays analyses take (the report reads only the store)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from choiceaudit.store import SCORE_PREFIX, RunStore
from choiceaudit.types import parse_perm

__all__ = ["RunData", "load_run", "permutation_sweeps"]


@dataclass
class RunData:
    """A run's manifest and rows (as Python records, in input order)."""

    path: Path
    manifest: dict[str, Any]
    rows: list[dict[str, Any]]

    @property
    def label(self) -> str:
        """Short name for tables: the scorer's model name, else the directory name."""
        scorer = self.manifest.get("scorer", {})
        return str(scorer.get("model") or scorer.get("name") or self.path.name)

    @property
    def instrument(self) -> str:
        return str(self.manifest.get("config", {}).get("instrument", "score"))

    def rules(self) -> list[str]:
        """Scoring rules present in every row (``probs`` first)."""
        keys = set.intersection(*(set(r) for r in self.rows)) if self.rows else set()
        names = sorted(k.removeprefix(SCORE_PREFIX) for k in keys if k.startswith(SCORE_PREFIX))
        return [
            "probs",
            *[n for n in names if all(r[SCORE_PREFIX + n] is not None for r in self.rows)],
        ]

    def meta(self, row: dict[str, Any]) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(row["meta"]) if row.get("meta") else {}
        return value

    def scores(self, row: dict[str, Any], rule: str) -> npt.NDArray[np.float64]:
        key = "probs" if rule == "probs" else SCORE_PREFIX + rule
        return np.asarray(row[key], dtype=np.float64)


def load_run(path: Path | str) -> RunData:
    store = RunStore(path)
    table = store.read()
    return RunData(path=Path(path), manifest=store.manifest(), rows=table.to_pylist())


@dataclass
class Sweep:
    """Rows grouped into complete permutation sweeps of one option set per item."""

    item_ids: list[str]
    probs: npt.NDArray[np.float64]  # (items, perms, k), display order
    perms: npt.NDArray[np.int64]  # (items, perms, k)
    gold: npt.NDArray[np.int64] | None  # (items,) canonical gold index, if every item has one


def permutation_sweeps(run: RunData, rows: Sequence[dict[str, Any]] | None = None) -> Sweep | None:
    """Group rows by item into equal-sized permutation sweeps; ``None`` if the run has none.

    Only items rendered under at least two distinct orderings count, and all must have the same
    number of orderings (an order audit compares like with like); others are left out, and the
    caller reports how many.
    """
    rows = run.rows if rows is None else rows
    by_item: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("item_id") is not None and row.get("perm") is not None:
            by_item.setdefault(row["item_id"], []).append(row)
    groups = {k: v for k, v in by_item.items() if len({r["perm"] for r in v}) >= 2}
    if not groups:
        return None
    sizes = [len(v) for v in groups.values()]
    n_perm = max(set(sizes), key=sizes.count)
    groups = {k: sorted(v, key=lambda r: r["perm"]) for k, v in groups.items() if len(v) == n_perm}
    item_ids = sorted(groups)
    probs = np.array([[r["probs"] for r in groups[i]] for i in item_ids], dtype=np.float64)
    perms = np.array([[parse_perm(r["perm"]) for r in groups[i]] for i in item_ids], dtype=np.int64)
    golds = [run.meta(groups[i][0]).get("gold") for i in item_ids]
    gold = np.array(golds, dtype=np.int64) if all(g is not None for g in golds) else None
    return Sweep(item_ids=item_ids, probs=probs, perms=perms, gold=gold)
