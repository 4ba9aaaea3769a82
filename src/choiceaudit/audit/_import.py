"""The shared half of ``choiceaudit import lm-eval|inspect``: per-item outputs of other
harnesses as run directories.

Both importers (``_import_lm_eval``, ``_import_inspect``) read the harness's files with the
standard library only (``json``, ``zipfile``), turn every multiple-choice row into a
:class:`~choiceaudit.types.Query` and a :class:`~choiceaudit.types.Decision` and store them with
the ordinary scoring loop (a replay scorer hands back the decisions), so every generic analysis
applies: accuracy with intervals, calibration, risk–coverage, the gate, and the order audit where
an item appears under several orderings. This module holds what both (and ``import decisions``)
share: the mapped row, the collector of refusals, unmapped fields and warnings, and the reading
helpers; ``_import_write`` checks the rows and writes the run in bounded memory.

What the manifest records (``config``): the source and its version, each file's name and
sha256, every field of the harness's rows that was *not* mapped (with the number of rows that
carried it), every row that could not be mapped (counted by reason, and listed with file and
row), warnings about the harness's files (a results file that could not be read), and how the
fields were mapped. The rows' own fields are described in
``docs/reference/import-formats.md``.

Identity across orderings: an item is its task, its prompt (state) and its *set* of options;
the first rendering read fixes the canonical option order and every rendering records its
permutation of it, so an item the harness showed under two orders is one item with two
renderings (``perm``), and its gold option keeps one canonical index.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple, TypeVar

import numpy as np
from typing_extensions import TypedDict

from choiceaudit.audit._scoring import RunSummary
from choiceaudit.errors import InputError
from choiceaudit.files import json_lines
from choiceaudit.store import REFUSED
from choiceaudit.types import Decision, Query

__all__ = [
    "FileRecord",
    "ImportResult",
    "Mapped",
    "MetaValue",
    "RefusedRow",
    "ReplayDescription",
    "capped_reasons",
    "text_digest",
]

#: refused rows the configuration lists for a reader of the manifest; every one is in the
#: run's ``refused.jsonl``
SHOWN_REFUSED = 20
#: distinct refusal reasons the configuration and the manifest count by name; the rest are
#: counted together, so neither grows with the input (a reason can quote a row's value)
MAX_REASONS = 50
OTHER_REASONS = "(other reasons)"
#: Scalar fields of a document / sample metadata lifted into the query meta (longer text is not).
MAX_META_TEXT = 200
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class ImportResult:
    """What one import did: the scoring session's summary, the source and its version, the rows
    mapped, the rows that could not be (reason → count), and the warnings about the harness's
    files (also in the manifest's ``config.warnings``)."""

    summary: RunSummary
    source: str
    version: str | None
    model: str
    mapped: int
    unmappable: Mapping[str, int]
    unmapped_fields: Mapping[str, int]
    warnings: tuple[str, ...] = ()
    #: rows that repeated an earlier row exactly (same query, same values) and were dropped
    identical_duplicates: int = 0


#: A JSON scalar: what an importer lifts from a harness's row into the query meta.
MetaValue = str | int | float | bool | None


class RefusedRow(TypedDict):
    """A row that could not be imported, as the manifest lists it (``unmappable_listed``)."""

    file: str
    row: int | str
    reason: str


class FileRecord(TypedDict):
    """A file an import read, as the run's config records it: its name and sha256."""

    name: str
    sha256: str


class ReplayDescription(TypedDict):
    """What an import records as its scorer: the harness, the model it ran and its version."""

    backend: str
    model: str
    source: str
    source_version: str | None


_T = TypeVar("_T")


class _Unmappable(Exception):
    """A row that cannot become a query and decision; the message is the reason."""


class Mapped(NamedTuple):
    """One row of a harness's file mapped to a query and its decision, where it was read, and
    for rows that must be unique by something besides their query (a meaning row's
    experiment, block, language, condition and item) that key."""

    file: str
    row: int | str
    query: Query
    decision: Decision
    cell: tuple[str, ...] | None = None


@dataclass
class _Collector:
    """What reading the files found besides the mapped rows: rows refused (counted by reason,
    the first few kept, every one spooled to a temporary file when ``spool`` is set), fields
    seen but not mapped, notes on the mapping, warnings about the files, and each item's
    canonical option order. Holds nothing per mapped row beyond that order (the rows
    themselves go to the ledger and are read again when written)."""

    source: str
    spool: bool = False
    refused: dict[str, int] = field(default_factory=dict)
    listed: list[RefusedRow] = field(default_factory=list)
    n_refused: int = 0
    unmapped: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    #: sha256 of (task, state, sorted options) -> the item's options' digests in its
    #: canonical order (16 bytes each: what a rendering's permutation is read from)
    canonical: dict[bytes, bytes] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    _file: IO[bytes] | None = None
    _digest: Any = field(default_factory=hashlib.sha256)

    def mapped_or_refused(
        self, file: str, row: int | str, build: Callable[[], _T], *, what: str = "query"
    ) -> _T | None:
        """``build()``, the mapping of one row; ``None`` where the row is refused: one that cannot
        be mapped (the reason is :class:`_Unmappable`'s message), or whose mapped values a
        ``what`` refused (a ``ValueError`` from the query or decision). An :class:`InputError`
        refuses the whole import, and passes through."""
        try:
            return build()
        except _Unmappable as exc:
            self.refuse(file, row, str(exc))
        except InputError:
            raise
        except ValueError as exc:
            self.refuse(file, row, f"not a valid {what} ({exc})")
        return None

    def refuse(self, file: str, row: int | str, reason: str) -> None:
        self.refused[reason] = self.refused.get(reason, 0) + 1
        self.n_refused += 1
        entry: RefusedRow = {"file": file, "row": row, "reason": reason}
        if len(self.listed) < SHOWN_REFUSED:
            self.listed.append(entry)
        if self.spool:
            if self._file is None:
                self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
            line = json_lines([entry])
            self._file.write(line)
            self._digest.update(line)

    def refusals(self) -> dict[str, object]:
        """The configuration's record of the refused rows: counted by reason, the first few
        listed, all of them counted and digested (they are in :meth:`refused_lines`)."""
        return {
            "unmappable_rows": capped_reasons(self.refused),
            "unmappable_listed": list(self.listed),
            "refused_rows": {
                "file": REFUSED,
                "count": self.n_refused,
                "sha256": self._digest.hexdigest(),
            },
        }

    def refused_lines(self) -> Iterator[bytes]:
        """The refused rows as ``refused.jsonl`` holds them, read back from the spool."""
        if self._file is None:
            return
        self._file.seek(0)
        while block := self._file.read(1 << 20):
            yield block

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def unmapped_field(self, name: str) -> None:
        self.unmapped[name] = self.unmapped.get(name, 0) + 1

    def warn(self, text: str) -> None:
        """A problem with the harness's files that did not stop the import (recorded in the
        manifest and printed by the CLI)."""
        if text not in self.warnings:
            self.warnings.append(text)

    def note(self, text: str, count: int = 1) -> None:
        self.notes[text] = self.notes.get(text, 0) + count

    def item(self, task: str, state: str, options: Sequence[str]) -> tuple[str, tuple[int, ...]]:
        """The item id of (task, state, option set) and this rendering's permutation of the
        item's canonical order (the order first read)."""
        key = json.dumps([task, state, sorted(options)], ensure_ascii=False)
        digest = hashlib.sha256(key.encode("utf-8")).digest()
        item_id = f"{task}:{digest.hex()[:12]}"
        mine = [text_digest(o) for o in options]
        canonical = self.canonical.setdefault(digest, b"".join(mine))
        order = [canonical[i : i + 16] for i in range(0, len(canonical), 16)]
        return item_id, tuple(order.index(o) for o in mine)


def text_digest(text: str) -> bytes:
    """A 16-byte digest of a text: what the importers keep of an option in place of its text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _scalar_meta(
    prefix: str, data: Mapping[str, object], collector: _Collector
) -> dict[str, MetaValue]:
    """Short scalar fields as ``<prefix>.<name>`` meta; the rest recorded as unmapped."""
    out: dict[str, MetaValue] = {}
    for key, value in data.items():
        short = isinstance(value, bool | int | float) or (
            isinstance(value, str) and len(value) <= MAX_META_TEXT
        )
        if value is None or (
            isinstance(value, bool | int | float | str)
            and short
            and not (isinstance(value, float) and not math.isfinite(value))
        ):
            out[f"{prefix}.{key}"] = value
        else:
            collector.unmapped_field(f"{prefix}.{key}")
    return out


def _softmax(values: Sequence[float]) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    z = np.exp(v - v.max())
    return np.asarray(z / z.sum(), dtype=np.float64)


def _dict(value: object) -> Mapping[str, object]:
    """``value`` when it is a JSON object, else an empty one (harness files vary by version)."""
    return value if isinstance(value, dict) else {}


def capped_reasons(counts: Mapping[str, int]) -> dict[str, int]:
    """``counts`` (reason → rows) with at most :data:`MAX_REASONS` reasons by name, the most
    frequent, and the rest summed under :data:`OTHER_REASONS`."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    out = dict(sorted(ranked[:MAX_REASONS]))
    rest = sum(n for _, n in ranked[MAX_REASONS:])
    if rest:
        out[OTHER_REASONS] = rest
    return out


def _expand(paths: Iterable[Path | str], patterns: Sequence[str]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted({p for pattern in patterns for p in path.rglob(pattern)})
            if not found:
                raise InputError(f"{path}: no file matching {' or '.join(patterns)}")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"{path}: no such file or directory")
    if not files:
        raise InputError("give at least one file")
    return files


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSON-lines file, parsed, read one line at a time (a samples file
    is not held in memory whole). Lines end at newlines only: a U+2028 inside a JSON string,
    which JSON allows, does not split its line; a line that is not UTF-8 is named."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not UTF-8 ({exc})", source=str(path), row=number) from None
            if text.strip():
                try:
                    yield number, json.loads(text)
                except json.JSONDecodeError as exc:
                    yield number, _Unmappable(f"invalid JSON ({exc.msg})")
