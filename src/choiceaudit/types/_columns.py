"""A run's rows as columns: what the generic analyses (accuracy, slot shares, the order audit,
calibration) read, without a :class:`~choiceaudit.types.Query` and a
:class:`~choiceaudit.types.Decision` per row.

A million rows as objects take gigabytes; as columns they take what their numbers take. The
store fills :class:`ChoiceColumns` from the Parquet parts, reading only these columns; an arm
built from rows in memory gets the same columns from :meth:`ChoiceColumns.from_rows`, so the
analyses have one path whatever the arm came from. Each row's query meta stays as the JSON
text the store holds and is read key by key (:class:`MetaRows`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from choiceaudit.types._choice import BoolArray, Decision, FloatArray, IntArray, Query

__all__ = ["ChoiceColumns", "MetaRows"]


class MetaRows(Sequence[Mapping[str, Any]]):
    """Each row's query meta, read when asked for: from the JSON text the store keeps (one
    string per row) or from mappings already in memory, with ``extra`` keys added to every row
    (the report's pseudo-field ``run``). :meth:`values` reads one key of every row, once."""

    def __init__(
        self,
        texts: Sequence[str | None] | None = None,
        mappings: Sequence[Mapping[str, Any]] | None = None,
        extra: Mapping[str, Any] | None = None,
        index: IntArray | None = None,
        known: Mapping[str, list[Any]] | None = None,
    ) -> None:
        self._texts = texts
        self._mappings = mappings
        self._extra = dict(extra or {})
        size = len(texts) if texts is not None else len(mappings or ())
        self._index = np.arange(size, dtype=np.int64) if index is None else index
        #: key -> every row's value, once read (``known``: keys a reader has already read)
        self._cache: dict[str, list[Any]] = dict(known or {})

    def _at(self, position: int) -> Mapping[str, Any]:
        if self._mappings is not None:
            meta = self._mappings[position]
        else:
            text = self._texts[position] if self._texts is not None else None
            meta = json.loads(text) if text else {}
        return {**self._extra, **meta} if self._extra else meta

    def __len__(self) -> int:
        return int(self._index.size)

    def __getitem__(self, i: int) -> Mapping[str, Any]:  # type: ignore[override]
        return self._at(int(self._index[i]))

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        for position in self._index:
            yield self._at(int(position))

    def values(self, key: str) -> list[Any]:
        """``meta.get(key)`` of every row, in order (read once per key)."""
        if key not in self._cache:
            self._cache[key] = [meta.get(key) for meta in self]
        return self._cache[key]

    def take(self, index: npt.NDArray[np.int64]) -> MetaRows:
        """The rows at ``index`` (positions in this sequence), still read when asked for."""
        return MetaRows(self._texts, self._mappings, self._extra, self._index[index])

    def with_extra(self, extra: Mapping[str, Any]) -> MetaRows:
        return MetaRows(self._texts, self._mappings, {**self._extra, **extra}, self._index)


@dataclass(frozen=True)
class ChoiceColumns:
    """One entry per row, in input order: the query id, the number of options, the
    probabilities (``probs[i, :n_options[i]]``; zero beyond), the display permutation
    (``perm[i, :n_options[i]]``; ``has_perm`` false where the row has none), each stored score
    rule (NaN where a row lacks it: ``has_score``), the model's own confidence head (NaN where
    none) and the query meta."""

    query_id: Sequence[str]
    n_options: IntArray
    probs: FloatArray
    perm: IntArray
    has_perm: BoolArray
    scores: Mapping[str, FloatArray]
    has_score: Mapping[str, BoolArray]
    conf_head: FloatArray
    meta: MetaRows
    _by_k: dict[int, IntArray] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return int(self.n_options.size)

    def rows_with(self, k: int) -> IntArray:
        """The positions of the rows with ``k`` options, in order."""
        if k not in self._by_k:
            self._by_k[k] = np.flatnonzero(self.n_options == k)
        return self._by_k[k]

    def row_probs(self, i: int) -> FloatArray:
        return np.asarray(self.probs[i, : self.n_options[i]], dtype=np.float64)

    def row_perm(self, i: int) -> tuple[int, ...] | None:
        if not self.has_perm[i]:
            return None
        return tuple(int(v) for v in self.perm[i, : self.n_options[i]])

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[Query, Decision]]) -> ChoiceColumns:
        """The columns of rows held as objects (an arm built in memory)."""
        n = len(rows)
        k_max = max((d.n_options for _, d in rows), default=0)
        ks = np.array([d.n_options for _, d in rows], dtype=np.int64)
        probs = np.zeros((n, k_max), dtype=np.float64)
        perm = np.full((n, k_max), -1, dtype=np.int64)
        has_perm = np.zeros(n, dtype=bool)
        rules = sorted({r for _, d in rows for r in d.scores})
        scores = {r: np.full((n, k_max), np.nan) for r in rules}
        has_score = {r: np.zeros(n, dtype=bool) for r in rules}
        heads = np.full(n, np.nan)
        for i, (query, decision) in enumerate(rows):
            k = decision.n_options
            probs[i, :k] = decision.probs
            if query.perm is not None:
                perm[i, :k] = query.perm
                has_perm[i] = True
            for rule, values in decision.scores.items():
                scores[rule][i, :k] = values
                has_score[rule][i] = True
            head = decision.aux.get("conf_head")
            if head is not None:
                heads[i] = float(head)
        return cls(
            query_id=[q.id for q, _ in rows],
            n_options=ks,
            probs=probs,
            perm=perm,
            has_perm=has_perm,
            scores=scores,
            has_score=has_score,
            conf_head=heads,
            meta=MetaRows(mappings=[q.meta for q, _ in rows]),
        )
