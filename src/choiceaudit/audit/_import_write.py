"""Writing an import in bounded memory: the files are read twice.

The first reading (:func:`check_rows`) maps every row, counts the refused ones and spools them
to a temporary file, and keeps a *ledger* of a few dozen bytes per mapped row: a digest of its
query's id, a digest of each field of its decision, a digest of its cell (a meaning row's
experiment, block, language, condition and item), where it was read, and the place it takes in
the run. From the ledger the rows that repeat another are found before anything is written: a
repeat that says the same (the same query, the same values) is dropped and counted; one that
says something else stops the import naming both rows, since keeping either would choose for
the user which one is true; so does a second row of one meaning cell.

The second reading (:func:`write_import`) maps the rows again and hands the kept ones, a chunk
at a time, to the ordinary scoring loop through a replay scorer that returns each one's
decision. Parts are written as the file is read, so a killed import resumes like a scoring run,
and memory holds the ledger and one chunk, never the rows. A file that changed between the two
readings (a row that now maps to another query) is refused by name.

Memory: the ledger holds 77 bytes per mapped row and the collector each item's canonical option
order (16 bytes per option); reading twice costs twice the parsing time.
"""

from __future__ import annotations

import hashlib
import struct
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from choiceaudit.audit._import import (
    FileRecord,
    ImportResult,
    Mapped,
    ReplayDescription,
    _Collector,
    capped_reasons,
)
from choiceaudit.audit._pending import QueryStream
from choiceaudit.audit._scoring import RunSummary, run_scoring
from choiceaudit.errors import InputError
from choiceaudit.files import sha256_file
from choiceaudit.instruments.scoring import ScoreConfig
from choiceaudit.store import RunStore
from choiceaudit.types import Decision, Query, RunConfig

__all__ = [
    "IDENTICAL_NOTE",
    "Ledger",
    "Reader",
    "check_rows",
    "import_result",
    "write_import",
    "write_rows",
]

#: reads the files once, in order, yielding each mapped row and giving each refused row to the
#: collector; called twice (the files are read again when written)
Reader = Callable[[_Collector], Iterator[Mapped]]

#: how the configuration's notes count the rows dropped as repeats
IDENTICAL_NOTE = "identical duplicate rows dropped (same item, condition and values)"

#: the decision's fields a repeated row is compared on, in the order a difference is named
_FIELDS = ("probs", "scores", "n_tokens", "aux")


def _digest(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def _pair(text: str) -> tuple[int, int]:
    """A 16-byte digest of ``text`` as two integers (what the ledger keeps of an id or key)."""
    hi, lo = struct.unpack("<QQ", hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest())
    return hi, lo


def _values(values: object) -> bytes:
    # +0.0 makes a negative zero positive: the comparison is by value, as before the ledger
    array_ = np.ascontiguousarray(np.asarray(values, dtype=np.float64)) + 0.0
    return str(array_.shape).encode() + array_.tobytes()


def _prints(decision: Decision) -> tuple[int, int, int, int]:
    """One digest per compared field (:data:`_FIELDS`)."""
    scores = b"".join(
        name.encode("utf-8") + b"\0" + _values(value) + b"\1"
        for name, value in sorted(decision.scores.items())
    )
    return (
        _digest(_values(decision.probs)),
        _digest(scores),
        _digest(repr(decision.n_tokens).encode()),
        _digest(repr(sorted(decision.aux.items())).encode("utf-8")),
    )


class _Clash(NamedTuple):
    """Two rows that cannot both be imported: ``later`` (ledger position) repeats ``first``
    with another value of ``field`` (``None``: a second row of one meaning cell)."""

    later: int
    first: int
    field: str | None


@dataclass
class Ledger:
    """What the first reading keeps of each mapped row, in reading order (see the module
    docstring); :meth:`settle` finds the repeats and the run's order of the rows kept."""

    keys: array[int] = field(default_factory=lambda: array("Q"))
    prints: array[int] = field(default_factory=lambda: array("Q"))
    cells: array[int] = field(default_factory=lambda: array("Q"))
    has_cell: bytearray = field(default_factory=bytearray)
    file_index: array[int] = field(default_factory=lambda: array("I"))
    rows: array[int] = field(default_factory=lambda: array("q"))
    order: array[int] = field(default_factory=lambda: array("q"))
    #: rows named by text rather than number (an inspect sample), by ledger position
    named_rows: dict[int, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    #: per ledger position: kept (the first of its query), and its index in the run
    kept: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    identical: int = 0
    _files: dict[str, int] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def n_kept(self) -> int:
        return int(self.kept.sum())

    def add(self, mapped: Mapped, order: int) -> None:
        self.keys.extend(_pair(mapped.query.id))
        self.prints.extend(_prints(mapped.decision))
        self.cells.extend((0, 0) if mapped.cell is None else _pair("\0".join(mapped.cell)))
        self.has_cell.append(mapped.cell is not None)
        self.file_index.append(self._files.setdefault(mapped.file, len(self._files)))
        if len(self._files) > len(self.files):
            self.files.append(mapped.file)
        if isinstance(mapped.row, str):
            self.named_rows[self.n] = mapped.row
            self.rows.append(-1)
        else:
            self.rows.append(mapped.row)
        self.order.append(order)

    def key(self, position: int) -> tuple[int, int]:
        return self.keys[2 * position], self.keys[2 * position + 1]

    def where(self, position: int) -> tuple[str, int | str]:
        row = self.named_rows.get(position, self.rows[position])
        return self.files[self.file_index[position]], row

    def settle(self) -> _Clash | None:
        """Mark the first row of each query kept, count the identical repeats, give the kept
        rows their index in the run (by ``order``, ties in reading order), and return the clash
        met first in reading order, if any."""
        n = self.n
        keys = np.frombuffer(self.keys, dtype=np.uint64).reshape(n, 2)
        prints = np.frombuffer(self.prints, dtype=np.uint64).reshape(n, len(_FIELDS))
        clashes: list[_Clash] = []
        self.kept = np.ones(n, dtype=bool)
        for later, first in _repeats(keys, np.arange(n)):
            differs = np.flatnonzero(prints[later] != prints[first])
            if differs.size:
                clashes.append(_Clash(int(later), int(first), _FIELDS[int(differs[0])]))
            self.kept[later] = False
        self.identical = n - int(self.kept.sum()) - len(clashes)
        cells = np.frombuffer(self.cells, dtype=np.uint64).reshape(n, 2)
        among = np.flatnonzero(self.kept & np.frombuffer(self.has_cell, dtype=bool))
        clashes += [_Clash(int(b), int(a), None) for b, a in _repeats(cells[among], among)]
        kept = np.flatnonzero(self.kept)
        ranked = kept[np.argsort(np.frombuffer(self.order, dtype=np.int64)[kept], kind="stable")]
        self.index = np.full(n, -1, dtype=np.int64)
        self.index[ranked] = np.arange(ranked.size)
        return min(clashes, default=None)


def _repeats(keys: np.ndarray, positions: np.ndarray) -> Iterator[tuple[int, int]]:
    """``(later, first)`` for each row of ``keys`` (two columns) whose key an earlier row has:
    its position and the earliest row's (``positions`` in reading order)."""
    if not len(keys):
        return
    by_key = np.lexsort((keys[:, 1], keys[:, 0]))  # stable: equal keys stay in reading order
    ordered = keys[by_key]
    starts = np.r_[True, np.any(ordered[1:] != ordered[:-1], axis=1)]
    first = by_key[starts][np.cumsum(starts) - 1]
    for s in np.flatnonzero(~starts):
        yield int(positions[by_key[s]]), int(positions[first[s]])


def _mapped_at(reader: Reader, source: str, position: int) -> Mapped:
    """The ``position``-th mapped row, read again (for a message naming a clash)."""
    for i, mapped in enumerate(reader(_Collector(source))):
        if i == position:
            return mapped
    raise InputError("the files changed while they were imported; import again")


def check_rows(
    reader: Reader,
    collector: _Collector,
    *,
    order: Callable[[Query], int] | None = None,
    cell_clash: Callable[[Mapped, str | int], InputError] | None = None,
) -> Ledger:
    """The first reading: every row mapped or refused into ``collector``, the mapped ones in a
    :class:`Ledger`; an import that cannot be written (two rows for one query that say
    different things, two rows of one meaning cell: ``cell_clash`` words that) is refused
    here, naming both rows. ``order(query)`` places a row in the run (default: reading
    order)."""
    ledger = Ledger()
    for mapped in reader(collector):
        ledger.add(mapped, 0 if order is None else order(mapped.query))
    clash = ledger.settle()
    if ledger.identical:
        collector.note(IDENTICAL_NOTE, ledger.identical)
    if clash is None:
        return ledger
    mapped = _mapped_at(reader, collector.source, clash.later)
    first_file, first_row = ledger.where(clash.first)
    where = first_row if first_file == mapped.file else f"{first_row} of {first_file}"
    if clash.field is None:
        if cell_clash is None:  # only a reader that gives cells can clash on one
            raise AssertionError("a cell clash without a cell_clash message")
        raise cell_clash(mapped, where)
    meta = mapped.query.meta
    item = meta.get("item_id", meta.get("doc_id", mapped.query.id))
    condition = meta.get("condition")
    what = f"item {item}" + (f" condition {condition}" if condition is not None else "")
    raise InputError(
        f"a second row for {what} (same rendering) with another {clash.field} than row "
        f"{where}; keep one of the two rows, or give them different conditions",
        source=mapped.file,
        row=mapped.row,
        field=clash.field,
    )


class _Replay:
    """A scorer that returns the imported decisions (so imports use the one scoring loop):
    each is handed over by the second reading just before its chunk is scored."""

    def __init__(self, description: ReplayDescription) -> None:
        self.waiting: dict[str, Decision] = {}
        self._description = description
        self.name = description["model"]

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        return [self.waiting.pop(q.id) for q in queries]

    def describe(self) -> dict[str, object]:
        return dict(self._description)


def _stream(reader: Reader, ledger: Ledger, replay: _Replay, source: str) -> QueryStream:
    def changed(mapped: Mapped | None) -> InputError:
        where = {} if mapped is None else {"source": mapped.file, "row": mapped.row}
        return InputError(
            "the files changed while they were imported (a row maps to another query than "
            "when the files were checked); import again",
            **where,  # type: ignore[arg-type]
        )

    def pending(done: Set[str]) -> Iterable[tuple[int, Query]]:
        count = 0
        for position, mapped in enumerate(reader(_Collector(source))):
            count += 1
            if position >= ledger.n or _pair(mapped.query.id) != ledger.key(position):
                raise changed(mapped)
            if ledger.kept[position] and mapped.query.id not in done:
                replay.waiting[mapped.query.id] = mapped.decision
                yield int(ledger.index[position]), mapped.query
        if count != ledger.n:
            raise changed(None)

    return QueryStream(total=ledger.n_kept, pending=pending)


def write_import(
    reader: Reader,
    collector: _Collector,
    ledger: Ledger,
    out: Path | str,
    *,
    description: ReplayDescription,
    config: RunConfig | Mapping[str, object],
    command: Sequence[str] | None,
    on_accepted: Callable[[Path], object] | None = None,
) -> RunSummary:
    """The second reading: the rows :func:`check_rows` kept, stored as the run ``out``
    through the scoring loop, with the refused rows written once beside the parts
    (``refused.jsonl``) and ``on_accepted`` called for anything else that belongs there."""
    replay = _Replay(description)

    def accepted(directory: Path) -> None:
        RunStore(directory).write_refused(collector.refused_lines())
        if on_accepted is not None:
            on_accepted(directory)

    try:
        return run_scoring(
            replay,
            _stream(reader, ledger, replay, collector.source),
            out,
            chunk_size=1000,
            command=command,
            config=config,
            skipped=capped_reasons(collector.refused),
            on_accepted=accepted,
        )
    finally:
        collector.close()


def write_rows(
    reader: Reader,
    collector: _Collector,
    ledger: Ledger,
    out: Path | str,
    *,
    model: str,
    version: str | None,
    files: Sequence[Path],
    mapping: Mapping[str, str],
    extra: Mapping[str, object],
    command: Sequence[str] | None,
    config_type: type[RunConfig] = ScoreConfig,
) -> ImportResult:
    """Store the rows :func:`check_rows` kept as the run ``out``, its configuration what the
    import did plus ``extra``, read as ``config_type`` (a plain scoring run's, or an
    instrument's)."""
    if not ledger.n_kept:
        reasons = "; ".join(f"{n} × {r}" for r, n in sorted(collector.refused.items()))
        raise InputError(
            f"no row of {', '.join(str(f) for f in files)} could be imported"
            + (f" ({reasons})" if reasons else " (the files hold no rows)")
        )
    description: ReplayDescription = {
        "backend": f"import:{collector.source}",
        "model": model,
        "source": collector.source,
        "source_version": version,
    }
    config: dict[str, object] = {
        "kind": "import",
        "source": collector.source,
        "source_version": version,
        "files": [FileRecord(name=f.name, sha256=sha256_file(f)) for f in files],
        "mapping": dict(mapping),
        "unmapped_fields": dict(sorted(collector.unmapped.items())),
        **collector.refusals(),
        "notes": dict(sorted(collector.notes.items())),
        "warnings": list(collector.warnings),
        **dict(extra),
    }
    summary = write_import(
        reader,
        collector,
        ledger,
        out,
        description=description,
        config=config_type.from_json(config),
        command=command,
    )
    return import_result(summary, collector, ledger, version=version, model=model)


def import_result(
    summary: RunSummary, collector: _Collector, ledger: Ledger, *, version: str | None, model: str
) -> ImportResult:
    """What an import returns: the written run, and what reading its files found."""
    return ImportResult(
        summary=summary,
        source=collector.source,
        version=version,
        model=model,
        mapped=ledger.n_kept,
        unmappable=dict(collector.refused),
        unmapped_fields=dict(collector.unmapped),
        warnings=tuple(collector.warnings),
        identical_duplicates=ledger.identical,
    )
