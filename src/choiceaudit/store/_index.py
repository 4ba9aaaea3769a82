"""The run's part index: per part, its file size and modification time, its writer's stamp
(scorer identity and configuration hash) and its query ids, one JSON line per part in
``decisions/index.jsonl``, appended as each part is written.

A resume needs which queries are done and who wrote every part; without the index that is two
reads of every part (a no-op resume of a 100,000-row run opened 3,000 files twice). The index is
a cache of what the parts say, never the truth: an entry whose part is gone, or whose file has
another size or modification time than recorded, is dropped and that part read again; a part
with no entry is read and added; a torn last line (a writer killed while appending) is ignored.
So a run written before the index existed, a part moved to ``quarantine/`` and a part number
used again after it all read right, and the index is rewritten whenever it was stale.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from choiceaudit.files import atomic_write_bytes

__all__ = ["INDEX", "IndexEntry", "append_entry", "entry_of", "read_part", "reconcile"]

INDEX = "index.jsonl"


@dataclass(frozen=True)
class IndexEntry:
    """One part as the index records it (``identity``/``config_hash`` ``None``: an unstamped
    part, written before parts carried their writer)."""

    part: str
    size: int
    mtime_ns: int
    identity: str | None
    config_hash: str | None
    ids: tuple[str, ...]

    def to_line(self) -> str:
        return (
            json.dumps(
                {
                    "part": self.part,
                    "size": self.size,
                    "mtime_ns": self.mtime_ns,
                    "identity": self.identity,
                    "config_hash": self.config_hash,
                    "ids": list(self.ids),
                },
                ensure_ascii=False,
            )
            + "\n"
        )


def entry_of(
    path: Path, ids: Iterable[str], identity: str | None, config_hash: str | None
) -> IndexEntry:
    stat = path.stat()
    return IndexEntry(path.name, stat.st_size, stat.st_mtime_ns, identity, config_hash, tuple(ids))


def append_entry(parts_dir: Path, entry: IndexEntry) -> None:
    """Record a part just written (under the run's lock)."""
    with open(parts_dir / INDEX, "a", encoding="utf-8") as handle:
        handle.write(entry.to_line())


def _load(path: Path) -> dict[str, IndexEntry]:
    """The entries the index holds, the last one per part; unreadable lines are skipped."""
    entries: dict[str, IndexEntry] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return entries
    for line in text.splitlines():
        try:
            raw = json.loads(line)
            entry = IndexEntry(
                str(raw["part"]),
                int(raw["size"]),
                int(raw["mtime_ns"]),
                None if raw["identity"] is None else str(raw["identity"]),
                None if raw["config_hash"] is None else str(raw["config_hash"]),
                tuple(str(i) for i in raw["ids"]),
            )
        except (ValueError, KeyError, TypeError):
            continue  # a torn line: the part it was for is read again
        entries[entry.part] = entry
    return entries


def read_part(path: Path, identity_key: bytes, config_key: bytes) -> IndexEntry:
    """A part's entry read from the part itself (raises what pyarrow raises)."""
    meta = pq.read_schema(path).metadata or {}
    ids = pq.read_table(path, columns=["query_id"]).column("query_id").to_pylist()
    identity = meta[identity_key].decode("utf-8") if identity_key in meta else None
    config_hash = meta.get(config_key, b"").decode("utf-8") if identity is not None else None
    return entry_of(path, ids, identity, config_hash)


def reconcile(
    parts_dir: Path,
    parts: list[Path],
    read: Callable[[Path], IndexEntry],
) -> list[IndexEntry]:
    """The entries of ``parts`` (in their order): from the index where it still describes the
    file, else read with ``read``; the index is rewritten when anything was stale."""
    path = parts_dir / INDEX
    stored = _load(path)
    out: list[IndexEntry] = []
    stale = set(stored) - {p.name for p in parts}
    for part in parts:
        stat = os.stat(part)
        entry = stored.get(part.name)
        if entry is None or (entry.size, entry.mtime_ns) != (stat.st_size, stat.st_mtime_ns):
            entry = read(part)
            stale.add(part.name)
        out.append(entry)
    if stale or (parts and not path.exists()):
        # a cache: a run on read-only storage is read from its parts each time
        with contextlib.suppress(OSError):
            atomic_write_bytes(path, "".join(e.to_line() for e in out).encode("utf-8"))
    return out
