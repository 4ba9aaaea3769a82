"""Scored rows with a gold option as columns, and the four confidence definitions a gate can use.

A row counts when its query meta carries a canonical ``gold`` index (``choiceaudit score``
query files, the meaning instrument and both importers all write one) and its menu has at least
two options. Correctness is the toolkit's tie credit: ``1/t`` when the gold option is among ``t``
exactly tied maxima (:func:`choiceaudit.stats.tie_credit`).

Confidence definitions (one number per row, higher = more sure):

* ``maxprob``   — ``max_o p(o)``, the top-label probability (the meaning paper, Appendix A: the
  one signal every arm defines identically);
* ``conf_head`` — the model's own confidence field (``aux["conf_head"]``; Appendix A: a separate
  head, not the maximum probability); defined only where every row has one;
* ``margin``    — ``p(1) − p(2)``, the top-two margin of the sorted probabilities;
* ``entropy``   — ``1 − H(p) / log k``, one minus the normalised entropy of Appendix H
  (1 = a point mass, 0 = uniform).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from choiceaudit import stats
from choiceaudit.types import Arm, ChoiceColumns, FloatArray, MetaRows

__all__ = [
    "CONFIDENCE_DEFINITIONS",
    "DEFINITION_TEXT",
    "GoldRows",
    "confidence_values",
    "gold_rows",
]


#: The confidence definitions, in the order the report shows them.
CONFIDENCE_DEFINITIONS = ("maxprob", "conf_head", "margin", "entropy")

#: One line per definition, written into the thresholds file so a service computes the same.
DEFINITION_TEXT = {
    "maxprob": "max_o p(o): the largest probability over the options",
    "conf_head": "the model's own confidence field (aux conf_head), not derived from p",
    "margin": "p(1) - p(2): largest minus second-largest probability",
    "entropy": "1 - H(p) / ln k: one minus the entropy of p normalised by its maximum ln k",
}


@dataclass(frozen=True)
class GoldRows:
    """The gold-bearing rows of one model (one or more runs with the same label), as columns.

    ``probs`` is (rows, largest menu) with each row's ``n_options`` probabilities first and
    zeros after; ``meta`` holds each row's query meta plus the pseudo-field ``run`` (the run
    directory's name), read when asked for; ``conf_head`` is NaN where the row has no head."""

    model: str
    sources: tuple[str, ...]
    item: npt.NDArray[np.str_]
    gold_slot: npt.NDArray[np.int64]
    correct: FloatArray
    probs: FloatArray
    n_options: npt.NDArray[np.int64]
    conf_head: FloatArray
    meta: MetaRows
    excluded: Mapping[str, int]

    def __len__(self) -> int:
        return int(self.correct.shape[0])

    def select(self, mask: npt.NDArray[np.bool_]) -> GoldRows:
        idx = np.flatnonzero(mask)
        return GoldRows(
            model=self.model,
            sources=self.sources,
            item=self.item[idx],
            gold_slot=self.gold_slot[idx],
            correct=self.correct[idx],
            probs=self.probs[idx],
            n_options=self.n_options[idx],
            conf_head=self.conf_head[idx],
            meta=self.meta.take(idx),
            excluded=self.excluded,
        )

    def field(self, key: str) -> list[str | None]:
        """``str(meta[key])`` per row for scalar values, ``None`` where absent or not scalar."""
        return [
            None if value is None or isinstance(value, dict | list) else str(value)
            for value in self.meta.values(key)
        ]

    def padded_probs(self) -> FloatArray:
        """The probabilities as one (n, k_max) matrix, shorter menus padded with zeros (exact
        for top-label ECE, Brier and NLL: a zero is never a maximum and adds nothing); k_max is
        the largest menu among these rows."""
        k = int(self.n_options.max()) if len(self) else 2
        out = np.zeros((len(self), k), dtype=np.float64)
        out[:, : min(k, self.probs.shape[1])] = self.probs[:, :k]
        return out

    def confidence(self, definition: str) -> FloatArray | None:
        """The rows' confidence under ``definition``; ``None`` when it is undefined for a row
        (``conf_head`` missing)."""
        return _confidence(definition, self.probs, self.n_options, self.conf_head)


def confidence_values(
    definition: str, probs: Sequence[FloatArray], conf_head: FloatArray | None = None
) -> FloatArray | None:
    """Per-row confidence under ``definition`` (see the module docstring); ``None`` for
    ``conf_head`` when a row lacks one."""
    sizes = np.array([p.size for p in probs], dtype=np.int64)
    matrix = np.zeros((len(probs), int(sizes.max()) if len(probs) else 0), dtype=np.float64)
    for i, p in enumerate(probs):
        matrix[i, : p.size] = p
    return _confidence(definition, matrix, sizes, conf_head)


def _confidence(
    definition: str,
    probs: FloatArray,
    n_options: npt.NDArray[np.int64],
    conf_head: FloatArray | None,
) -> FloatArray | None:
    """:func:`confidence_values` of rows given as a padded matrix and their menu sizes."""
    if definition == "conf_head":
        if conf_head is None or conf_head.size != len(n_options) or np.isnan(conf_head).any():
            return None
        return np.asarray(conf_head, dtype=np.float64)
    if definition not in ("maxprob", "margin", "entropy"):
        raise ValueError(
            f"unknown confidence definition {definition!r} "
            f"(known: {', '.join(CONFIDENCE_DEFINITIONS)})"
        )
    out = np.empty(len(n_options), dtype=np.float64)
    for k in np.unique(n_options):  # one vectorised pass per menu size
        rows = np.flatnonzero(n_options == k)
        block = probs[rows, : int(k)]
        if definition == "maxprob":
            values = block.max(axis=1)
        elif definition == "margin":
            top = np.sort(block, axis=1)
            values = top[:, -1] - top[:, -2]
        else:
            values = 1.0 - np.asarray(stats.normalized_entropy(block), dtype=np.float64)
        out[rows] = values
    return out


def _gold_slot(meta: Mapping[str, Any], perm: tuple[int, ...] | None, k: int) -> int | None:
    gold = meta.get("gold")
    if gold is None or isinstance(gold, bool):
        return None
    try:
        canonical = int(gold)
    except (TypeError, ValueError):
        return None
    if not 0 <= canonical < k:
        return None
    return perm.index(canonical) if perm is not None else canonical


def gold_rows(arms: Sequence[Arm]) -> list[GoldRows]:
    """One :class:`GoldRows` per model label, runs with the same label pooled, in first-seen
    order; rows without a usable gold or with fewer than two options are counted in
    ``excluded`` by reason."""
    by_label: dict[str, list[Arm]] = {}
    for arm in arms:
        by_label.setdefault(arm.label, []).append(arm)
    return [_gold_rows(label, group) for label, group in by_label.items()]


def _gold_rows(label: str, group: Sequence[Arm]) -> GoldRows:
    parts: list[tuple[ChoiceColumns, npt.NDArray[np.int64], npt.NDArray[np.int64], str]] = []
    excluded = {"no gold option in meta": 0, "fewer than two options": 0}
    for arm in group:
        columns = arm.columns()
        golds = columns.meta.values("gold")
        kept: list[int] = []
        kept_slots: list[int] = []
        for i in range(len(columns)):
            k = int(columns.n_options[i])
            if k < 2:
                excluded["fewer than two options"] += 1
                continue
            slot = _gold_slot({"gold": golds[i]}, columns.row_perm(i), k)
            if slot is None:
                excluded["no gold option in meta"] += 1
                continue
            kept.append(i)
            kept_slots.append(slot)
        run_name = arm.source.rstrip("/").rsplit("/", 1)[-1]
        parts.append(
            (
                columns,
                np.array(kept, dtype=np.int64),
                np.array(kept_slots, dtype=np.int64),
                run_name,
            )
        )
    k_max = max((int(c.n_options[rows].max()) for c, rows, _, _ in parts if rows.size), default=0)
    probs = np.zeros((sum(rows.size for _, rows, _, _ in parts), k_max), dtype=np.float64)
    items: list[str] = []
    at = 0
    for columns, rows, _, _ in parts:
        width = min(k_max, columns.probs.shape[1])
        probs[at : at + rows.size, :width] = columns.probs[rows, :width]
        ids = columns.meta.values("item_id")
        items.extend(str(ids[i] or columns.query_id[i]) for i in rows)
        at += rows.size
    n_options = np.concatenate([c.n_options[r] for c, r, _, _ in parts] or [np.zeros(0, np.int64)])
    slots = np.concatenate([s for _, _, s, _ in parts] or [np.zeros(0, np.int64)])
    correct = np.empty(len(slots), dtype=np.float64)
    for k in np.unique(n_options):
        rows_k = np.flatnonzero(n_options == k)
        credit = stats.tie_credit(probs[rows_k, : int(k)])
        correct[rows_k] = credit[np.arange(rows_k.size), slots[rows_k]]
    metas = [c.meta.with_extra({"run": name}).take(r) for c, r, _, name in parts]
    return GoldRows(
        model=label,
        sources=tuple(a.source for a in group),
        item=np.array(items, dtype=np.str_),
        gold_slot=slots,
        correct=correct,
        probs=probs,
        n_options=n_options,
        conf_head=np.concatenate([c.conf_head[r] for c, r, _, _ in parts] or [np.zeros(0)]),
        meta=metas[0] if len(metas) == 1 else MetaRows(mappings=[m for p in metas for m in p]),
        excluded={k: v for k, v in excluded.items() if v},
    )
