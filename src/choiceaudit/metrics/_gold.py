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
from choiceaudit.types import Arm, FloatArray

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
    """The gold-bearing rows of one model (one or more runs with the same label).

    ``meta`` holds each row's query meta plus the pseudo-field ``run`` (the run directory's
    name); ``conf_head`` is NaN where the row has no head."""

    model: str
    sources: tuple[str, ...]
    item: npt.NDArray[np.str_]
    gold_slot: npt.NDArray[np.int64]
    correct: FloatArray
    probs: tuple[FloatArray, ...]
    conf_head: FloatArray
    meta: tuple[Mapping[str, Any], ...]
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
            probs=tuple(self.probs[i] for i in idx),
            conf_head=self.conf_head[idx],
            meta=tuple(self.meta[i] for i in idx),
            excluded=self.excluded,
        )

    def field(self, key: str) -> list[str | None]:
        """``str(meta[key])`` per row for scalar values, ``None`` where absent or not scalar."""
        out: list[str | None] = []
        for meta in self.meta:
            value = meta.get(key)
            out.append(None if value is None or isinstance(value, dict | list) else str(value))
        return out

    def padded_probs(self) -> FloatArray:
        """The probabilities as one (n, k_max) matrix, shorter menus padded with zeros (exact
        for top-label ECE, Brier and NLL: a zero is never a maximum and adds nothing)."""
        k = max((p.size for p in self.probs), default=2)
        out = np.zeros((len(self.probs), k), dtype=np.float64)
        for i, p in enumerate(self.probs):
            out[i, : p.size] = p
        return out

    def confidence(self, definition: str) -> FloatArray | None:
        """The rows' confidence under ``definition``; ``None`` when it is undefined for a row
        (``conf_head`` missing)."""
        return confidence_values(definition, self.probs, self.conf_head)


def confidence_values(
    definition: str, probs: Sequence[FloatArray], conf_head: FloatArray | None = None
) -> FloatArray | None:
    """Per-row confidence under ``definition`` (see the module docstring); ``None`` for
    ``conf_head`` when a row lacks one."""
    if definition == "conf_head":
        if conf_head is None or conf_head.size != len(probs) or np.isnan(conf_head).any():
            return None
        return np.asarray(conf_head, dtype=np.float64)
    if definition not in ("maxprob", "margin", "entropy"):
        raise ValueError(
            f"unknown confidence definition {definition!r} "
            f"(known: {', '.join(CONFIDENCE_DEFINITIONS)})"
        )
    out = np.empty(len(probs), dtype=np.float64)
    by_k: dict[int, list[int]] = {}
    for i, p in enumerate(probs):
        by_k.setdefault(int(p.size), []).append(i)
    for rows in by_k.values():  # one vectorised pass per menu size
        block = np.stack([probs[i] for i in rows])
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
    out = []
    for label, group in by_label.items():
        items: list[str] = []
        slots: list[int] = []
        correct: list[float] = []
        probs: list[FloatArray] = []
        heads: list[float] = []
        metas: list[Mapping[str, Any]] = []
        excluded = {"no gold option in meta": 0, "fewer than two options": 0}
        for arm in group:
            run_name = arm.source.rstrip("/").rsplit("/", 1)[-1]
            for query, decision in arm.rows:
                if decision.n_options < 2:
                    excluded["fewer than two options"] += 1
                    continue
                slot = _gold_slot(query.meta, query.perm, decision.n_options)
                if slot is None:
                    excluded["no gold option in meta"] += 1
                    continue
                credit = stats.tie_credit(decision.probs[None, :])[0]
                items.append(str(query.meta.get("item_id") or query.id))
                slots.append(slot)
                correct.append(float(credit[slot]))
                probs.append(np.asarray(decision.probs, dtype=np.float64))
                head = decision.aux.get("conf_head")
                heads.append(np.nan if head is None else float(head))
                metas.append({"run": run_name, **dict(query.meta)})
        out.append(
            GoldRows(
                model=label,
                sources=tuple(a.source for a in group),
                item=np.array(items, dtype=np.str_),
                gold_slot=np.array(slots, dtype=np.int64),
                correct=np.array(correct, dtype=np.float64),
                probs=tuple(probs),
                conf_head=np.array(heads, dtype=np.float64),
                meta=tuple(metas),
                excluded={k: v for k, v in excluded.items() if v},
            )
        )
    return out
