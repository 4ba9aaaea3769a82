"""What a scoring session scores: the queries a run does not hold yet, cut into chunks.

:func:`plan` gives :func:`~._scoring.run_scoring` the chunks a session scores: from a list of
queries (duplicates counted and dropped, the ones stored skipped) cut into chunks all at once,
or from a :class:`QueryStream` (an import of a million rows) read one chunk at a time, so the
scoring loop never holds more than a window of chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence, Set
from dataclasses import dataclass

from choiceaudit.types import Query

__all__ = ["STREAM_WINDOW", "QueryStream", "plan"]

#: ``[(input index, query)]``, scored as one part
Chunk = list[tuple[int, Query]]


@dataclass(frozen=True)
class QueryStream:
    """Queries too many to hold at once (an import of a million rows), read when they are
    scored: ``total`` distinct queries, and ``pending(done)`` yielding ``(input index, query)``
    for each one whose id is not in ``done`` (the ids the run already holds), each once, in
    the order they are to be scored. The scoring loop pulls one chunk at a time, so memory
    stays bounded by a chunk."""

    total: int
    pending: Callable[[Set[str]], Iterable[tuple[int, Query]]]


#: chunks handed to an executor at a time when the queries come as a stream (an executor that
#: spreads chunks over workers needs several in hand; holding all would hold the stream)
STREAM_WINDOW = 64


def _pending(queries: Sequence[Query], done: set[str]) -> tuple[int, int, Chunk]:
    """``(unique queries, duplicates, the (input index, query) pairs not yet done)``."""
    unique: dict[str, tuple[int, Query]] = {}
    duplicates = 0
    for index, query in enumerate(queries):
        if query.id in unique:
            duplicates += 1
            continue
        unique[query.id] = (index, query)
    pending = [(i, q) for qid, (i, q) in unique.items() if qid not in done]
    return len(unique), duplicates, pending


def _chunked(pairs: Iterable[tuple[int, Query]], size: int) -> Iterator[Chunk]:
    chunk: Chunk = []
    for pair in pairs:
        chunk.append(pair)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _windows(chunks: Iterator[Chunk], size: int) -> Iterator[list[Chunk]]:
    while window := [c for _, c in zip(range(size), chunks, strict=False)]:
        yield window


def plan(
    queries: Sequence[Query] | QueryStream, done: set[str], chunk_size: int, streamed_window: int
) -> tuple[int, int, int, int, Iterator[list[Chunk]]]:
    """``(distinct queries, duplicates, requested, already stored, windows of chunks)``: a
    list's pending queries cut into chunks, all in one window; a stream's read a chunk at a
    time, ``streamed_window`` chunks to a window."""
    if isinstance(queries, QueryStream):
        # the run holds only this stream's queries (the stamps and configuration say so)
        chunks = _chunked(queries.pending(done), chunk_size)
        total = queries.total
        return total, 0, total, min(len(done), total), _windows(chunks, streamed_window)
    total, duplicates, listed = _pending(queries, done)
    cut = [listed[s : s + chunk_size] for s in range(0, len(listed), chunk_size)]
    return total, duplicates, len(queries), total - len(listed), iter([cut])
