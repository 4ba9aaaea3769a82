"""A run read as an analysis needs it, in memory that grows with its numbers, not its objects.

:func:`read_choice_columns` reads from each part only the columns the generic analyses use
(row, query id, permutation, probabilities, score rules, confidence head, meta, and the option
counts) into :class:`~choiceaudit.types.ChoiceColumns`, a group of parts at a time, and checks
what building a ``Query`` and a ``Decision`` per row would check of the columns it reads: a query
id once, probabilities finite, non-negative and summing to 1, one per option, a permutation of
the options, no NaN score, a meta of finite JSON whose gold is an index of the options. (Columns
no analysis reads — the option texts, keys, template — are not checked here; loading the rows
checks them.) :func:`stored_arm` is a run directory as an :class:`~choiceaudit.types.Arm` whose rows
are read as objects only if an analysis asks for them (the meaning and signalling analyses do;
the scoring analysis and the gate read the columns).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from choiceaudit.errors import StoreError
from choiceaudit.store._rows import SCORE_PREFIX
from choiceaudit.store._run import RunStore, unreadable_part
from choiceaudit.types import (
    PROB_TOLERANCE,
    Arm,
    BoolArray,
    ChoiceColumns,
    Decision,
    FloatArray,
    IntArray,
    MetaRows,
    Query,
    check_query_meta,
    parse_perm,
)

__all__ = ["read_choice_columns", "stored_arm"]

_COLUMNS = ("row", "query_id", "perm", "probs", "conf_head", "meta")


@dataclass
class _Piece:
    """One part's columns as arrays: a list column as its flat values and per-row lengths."""

    row: IntArray
    query_id: list[str]
    perm: list[str | None]
    meta: list[str | None]
    conf_head: FloatArray
    n_options: IntArray
    n_probs: IntArray
    probs: FloatArray
    scores: dict[str, tuple[IntArray, FloatArray]]


def _flat(column: pa.ChunkedArray) -> tuple[IntArray, FloatArray]:
    """Per-row lengths (0 where null) and the flat values of a list<double> column."""
    array = column.combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False)
    values = pc.list_flatten(array).to_numpy(zero_copy_only=False)
    return np.array(lengths, dtype=np.int64), np.array(values, dtype=np.float64)


def _read(store: RunStore, part: Path) -> pa.Table:
    """The columns an analysis reads of one part."""
    try:
        # one file's reader: pq.read_table sets up a dataset per call, which costs more than
        # a small part holds
        reader = pq.ParquetFile(part)
        rules = [n for n in reader.schema_arrow.names if n.startswith(SCORE_PREFIX)]
        return reader.read(columns=[*_COLUMNS, "options", *rules], use_threads=False)
    except (pa.ArrowInvalid, OSError) as exc:
        raise unreadable_part(store.path, part, exc) from None


def _piece(table: pa.Table) -> _Piece:
    """A group of parts' columns (one table) as arrays."""
    n_probs, probs = _flat(table.column("probs"))
    options = pc.fill_null(pc.list_value_length(table.column("options").combine_chunks()), 0)
    heads = pc.fill_null(table.column("conf_head").cast(pa.float64()), np.nan)
    rules = [n for n in table.column_names if n.startswith(SCORE_PREFIX)]
    return _Piece(
        row=np.array(table.column("row").to_numpy(), dtype=np.int64),
        query_id=table.column("query_id").to_pylist(),
        perm=table.column("perm").to_pylist(),
        meta=table.column("meta").to_pylist(),
        conf_head=np.array(heads.to_numpy(), dtype=np.float64),
        n_options=np.array(options.to_numpy(zero_copy_only=False), dtype=np.int64),
        n_probs=n_probs,
        probs=probs,
        scores={r.removeprefix(SCORE_PREFIX): _flat(table.column(r)) for r in rules},
    )


#: parts read into one table before it is turned into arrays: many small arrays kept between
#: reads would scatter the heap (a million rows in 32-row parts are 31,250 parts)
_GROUP = 256


def _pieces(store: RunStore, parts: Sequence[Path]) -> list[_Piece]:
    pieces = []
    for start in range(0, len(parts), _GROUP):
        tables = [_read(store, part) for part in parts[start : start + _GROUP]]
        pieces.append(_piece(pa.concat_tables(tables, promote_options="default")))
    return pieces


def _padded(lengths: IntArray, values: FloatArray, width: int, fill: float) -> FloatArray:
    """Ragged rows (``lengths``, flat ``values``) as a (rows, width) matrix."""
    out = np.full((lengths.size, width), fill, dtype=np.float64)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    rows = np.repeat(np.arange(lengths.size), lengths)
    out[rows, np.arange(values.size) - starts] = values
    return out


def _check(store: RunStore, columns: ChoiceColumns, row: IntArray) -> None:
    """What building each row's ``Query`` and ``Decision`` would refuse, refused by row."""
    probs = columns.probs
    bad = ~np.isfinite(probs).all(axis=1) | (probs < 0).any(axis=1)
    bad |= np.abs(probs.sum(axis=1) - 1.0) > PROB_TOLERANCE
    for rule, values in columns.scores.items():
        inside = np.arange(values.shape[1])[None, :] < columns.n_options[:, None]
        bad |= columns.has_score[rule] & (np.isnan(values) & inside).any(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise StoreError(
            f"{store.path}: row {int(row[i])} (query {columns.query_id[i]}): not a valid stored "
            "row (its probabilities are not finite, non-negative values summing to 1, or a "
            "score is NaN)"
        )


def _perms(
    store: RunStore, texts: Sequence[str | None], row: IntArray, n_options: IntArray, width: int
) -> tuple[IntArray, BoolArray]:
    """Each row's permutation (``-1`` beyond its options) and whether it has one."""
    perm = np.full((len(texts), width), -1, dtype=np.int64)
    has = np.zeros(len(texts), dtype=bool)
    for i, text in enumerate(texts):
        if text is None:
            continue
        try:
            values = parse_perm(text)
            if len(values) != n_options[i]:
                raise ValueError(f"permutation {text!r} does not order {n_options[i]} options")
        except ValueError as exc:
            raise StoreError(
                f"{store.path}: row {int(row[i])}: not a valid stored row ({exc})"
            ) from None
        perm[i, : len(values)] = values
        has[i] = True
    return perm, has


def _meta_rows(
    store: RunStore,
    texts: list[str | None],
    row: IntArray,
    query_id: list[str],
    n_options: IntArray,
) -> MetaRows:
    """Each row's meta, checked as building its query would check it (a gold index of its
    options, finite JSON); the two keys every generic analysis reads are kept from the check."""
    golds, items = [], []
    for i, text in enumerate(texts):
        try:
            meta = json.loads(text) if text else {}
            check_query_meta(meta, int(n_options[i]))
        except (ValueError, TypeError) as exc:
            raise StoreError(
                f"{store.path}: row {int(row[i])} (query {query_id[i]}): not a valid stored "
                f"row ({exc})"
            ) from None
        golds.append(meta.get("gold"))
        items.append(meta.get("item_id"))
    return MetaRows(texts=texts, known={"gold": golds, "item_id": items})


def _rule(pieces: Sequence[_Piece], rule: str) -> tuple[IntArray, FloatArray]:
    """One score rule's per-row lengths (0 where a row lacks it) and flat values."""
    lengths, values = [], []
    for piece in pieces:
        n, flat = piece.scores.get(rule, (np.zeros(piece.row.size, np.int64), np.zeros(0)))
        lengths.append(n)
        values.append(flat)
    return np.concatenate(lengths), np.concatenate(values)


def read_choice_columns(store: RunStore) -> ChoiceColumns:
    """The run's rows as :class:`~choiceaudit.types.ChoiceColumns`, in input order (see the
    module docstring); a query id stored twice, or a row that is not valid, is a
    :class:`~choiceaudit.errors.StoreError`."""
    parts = store.part_paths()
    if not parts:
        raise StoreError(f"{store.path} has no decisions yet")
    pieces = _pieces(store, parts)
    row = np.concatenate([p.row for p in pieces])
    order = np.argsort(row, kind="stable")
    row = row[order]
    query_id = [q for p in pieces for q in p.query_id]
    query_id = [query_id[i] for i in order]
    if len(set(query_id)) != len(query_id):
        raise StoreError(f"{store.path}: a query id occurs in more than one row")
    n_probs = np.concatenate([p.n_probs for p in pieces])
    n_options = np.concatenate([p.n_options for p in pieces])
    rules = {r: _rule(pieces, r) for r in sorted({r for p in pieces for r in p.scores})}
    wrong = (n_probs != n_options) | (n_probs == 0)
    for n_rule, _ in rules.values():
        wrong |= (n_rule > 0) & (n_rule != n_probs)
    if wrong.any():
        first = int(np.flatnonzero(wrong[order])[0])
        raise StoreError(
            f"{store.path}: row {int(row[first])}: not a valid stored row (its options, "
            "probabilities and scores differ in length)"
        )
    width = int(n_probs.max()) if n_probs.size else 0
    probs = _padded(n_probs, np.concatenate([p.probs for p in pieces]), width, 0.0)[order]
    n_options = n_options[order]
    scores = {r: _padded(n, v, width, np.nan)[order] for r, (n, v) in rules.items()}
    has_score = {r: (n > 0)[order] for r, (n, _) in rules.items()}
    texts = [t for p in pieces for t in p.perm]
    perm, has_perm = _perms(store, [texts[i] for i in order], row, n_options, width)
    metas = [m for p in pieces for m in p.meta]
    texts_in_order = [metas[i] for i in order]
    columns = ChoiceColumns(
        query_id=query_id,
        n_options=n_options,
        probs=probs,
        perm=perm,
        has_perm=has_perm,
        scores=scores,
        has_score=has_score,
        conf_head=np.concatenate([p.conf_head for p in pieces])[order],
        meta=_meta_rows(store, texts_in_order, row, query_id, n_options),
    )
    _check(store, columns, row)
    return columns


class _StoredRows(Sequence[tuple[Query, Decision]]):
    """A run's rows as objects, read from its parts the first time they are asked for."""

    def __init__(self, store: RunStore) -> None:
        self._store = store
        self._rows: tuple[tuple[Query, Decision], ...] | None = None

    def _loaded(self) -> tuple[tuple[Query, Decision], ...]:
        if self._rows is None:
            self._rows = tuple((r.query, r.decision) for r in self._store.load().rows)
        return self._rows

    def __len__(self) -> int:
        return len(self._loaded())

    @overload
    def __getitem__(self, i: int) -> tuple[Query, Decision]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[tuple[Query, Decision]]: ...
    def __getitem__(
        self, i: int | slice
    ) -> tuple[Query, Decision] | Sequence[tuple[Query, Decision]]:
        return self._loaded()[i]

    def __iter__(self) -> Iterator[tuple[Query, Decision]]:
        return iter(self._loaded())


def stored_arm(path: Path | str, label: str | None = None) -> Arm:
    """The run directory ``path`` as an arm whose columns and rows are read when first asked
    for (see the module docstring); labelled as :attr:`~choiceaudit.store.Run.label` is."""
    store = RunStore(path)
    manifest = store.manifest()
    if not store.part_paths():
        raise StoreError(f"{store.path} has no decisions yet")
    return Arm(
        label=label or manifest.model_label or store.path.name,
        source=str(store.path),
        manifest=manifest,
        rows=_StoredRows(store),
        read_columns=lambda: read_choice_columns(store),
    )
