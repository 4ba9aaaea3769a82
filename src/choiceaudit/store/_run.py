"""Run directories: ``manifest.json`` plus ``decisions/part-*.parquet``, written atomically.

The store only reads and writes run directories; scoring into one is
:func:`choiceaudit.audit.run_scoring`. A part is written to a temporary file in the same
directory and renamed into place, so at any instant a part either exists whole or not at all. A
lock file keeps two processes from writing one run at once. :meth:`RunStore.load` returns the
typed :class:`Run`: the manifest as a :class:`Manifest` and the rows as :class:`RunRow`
``(index, Query, Decision)`` records rebuilt from the Parquet columns, each query's id checked
against its content hash.

Beside the parts: ``decisions/index.jsonl``, a cache of each part's writer and query ids that a
resume reads instead of every part (:mod:`._index`), and, in an imported run, ``refused.jsonl``,
every input row the import refused. Parts are numbered and read in the order of their number.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from choiceaudit.errors import StoreError
from choiceaudit.files import atomic_write_bytes, make_dir
from choiceaudit.store._index import IndexEntry, append_entry, entry_of, read_part, reconcile
from choiceaudit.store._loaded import QUERIES, Run, RunRow, row_of
from choiceaudit.store._queries import write_queries
from choiceaudit.store._rows import rows_to_table
from choiceaudit.types import Decision, Manifest, Query

__all__ = [
    "MANIFEST",
    "QUERIES",
    "REFUSED",
    "Manifest",
    "PartStamp",
    "RepairReport",
    "Run",
    "RunRow",
    "RunStore",
    "open_run",
]

MANIFEST = "manifest.json"
PARTS = "decisions"
#: Where :func:`~choiceaudit.store.repair_run_dir` moves parts it cannot read.
QUARANTINE = "quarantine"
#: every input row an import refused, one JSON object per line (file, row, reason)
REFUSED = "refused.jsonl"
#: Parquet schema metadata every part carries: who wrote it and under which configuration.
PART_IDENTITY_KEY = b"choiceaudit.scorer_identity"
PART_CONFIG_KEY = b"choiceaudit.config_hash"
#: The run configuration itself (canonical JSON), so ``repair --rebuild-manifest`` can restore a
#: lost manifest's configuration from the parts (parts written before it carry only the hash).
PART_CONFIG_JSON_KEY = b"choiceaudit.config"


@dataclass(frozen=True)
class PartStamp:
    """What a part records about its writer: the scorer identity (the fields of its description
    that its backend declares identify it, canonical JSON; the audit layer computes it with
    ``scorers.resume_identity``), the sha256 of the run configuration and, from parts written
    since it was added, the configuration itself as canonical JSON (``None`` before)."""

    scorer_identity: str
    config_hash: str
    config_json: str | None = None


@dataclass(frozen=True)
class RepairReport:
    """What :func:`~choiceaudit.store.repair_run_dir` did: parts moved aside (with the reason each was
    unreadable) and temporaries removed; why the manifest could not be read (``None``: it
    could), whether it was rebuilt from the parts, and what still blocks the run, each with
    what to do (empty: the run reads back and can be resumed)."""

    path: Path
    moved: tuple[tuple[str, str], ...]
    temporaries_removed: int
    manifest_problem: str | None = None
    manifest_rebuilt: bool = False
    blocked: tuple[str, ...] = ()


def part_index(path: Path) -> int:
    """The number of the part at ``path`` (``part-00042.parquet`` → 42)."""
    digits = path.name[len("part-") : -len(".parquet")]
    named = path.name.startswith("part-") and path.name.endswith(".parquet")
    if not (named and digits.isascii() and digits.isdigit()):
        raise StoreError(
            f"{path}: a file named like a part whose number cannot be read; the run's parts are "
            "inconsistent — move it out of decisions/"
        )
    return int(digits)


class RunStore:
    """A run directory: read it with :meth:`load`; writers hold :meth:`lock`."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.parts_dir = self.path / PARTS
        #: the next part's index while this object holds the lock (read once per lock)
        self._next_part: int | None = None

    # -- manifest -------------------------------------------------------------------------
    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    def exists(self) -> bool:
        return self.manifest_path.exists()

    def read_manifest(self) -> dict[str, Any]:
        """The manifest as stored (a plain dict, for writers that update it)."""
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StoreError(f"{self.path} is not a run directory (no {MANIFEST})") from None
        except IsADirectoryError:
            raise StoreError(f"{self.manifest_path} is a directory, not a manifest") from None
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise StoreError(
                f"{self.manifest_path}: not valid UTF-8 JSON ({exc}); {_RECOVER}"
            ) from None
        _check_manifest(self.manifest_path, data)
        return dict(data)

    def manifest(self) -> Manifest:
        return Manifest.from_json(self.read_manifest(), source=str(self.manifest_path))

    def write_planned_queries(self, queries: Sequence[Query]) -> Path:
        """Write the instrument's planned queries beside the decisions (:data:`QUERIES`)."""
        make_dir(self.path)
        write_queries(self.path / QUERIES, queries)
        return self.path / QUERIES

    def write_manifest(self, manifest: Mapping[str, Any] | Manifest) -> None:
        data = manifest.to_json() if isinstance(manifest, Manifest) else dict(manifest)
        make_dir(self.path)
        blob = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str)
        atomic_write_bytes(self.manifest_path, blob.encode("utf-8") + b"\n")

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive lock on the run; a second process fails at once rather than interleaving."""
        make_dir(self.path)
        with open(self.path / ".lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreError(f"{self.path} is being written by another process") from None
            self._next_part = None  # another process may have written since
            try:
                yield
            finally:
                self._next_part = None
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- parts ----------------------------------------------------------------------------
    def part_paths(self) -> list[Path]:
        """The parts in the order they were written: by their number, read as a number (a
        text sort puts ``part-100000`` before ``part-99999``). A file named like a part whose
        number cannot be read, or two files with one number, make the run inconsistent."""
        if not self.parts_dir.exists():
            return []
        numbered: dict[int, Path] = {}
        for path in self.parts_dir.glob("part-*.parquet"):
            index = part_index(path)
            if index in numbered:
                raise StoreError(
                    f"{self.path}: parts {numbered[index].name} and {path.name} carry the same "
                    "number; the run's parts are inconsistent (was a part copied in by hand?) — "
                    "move the one that does not belong out of decisions/"
                )
            numbered[index] = path
        return [numbered[i] for i in sorted(numbered)]

    def clean_partial(self) -> int:
        """Remove temporary files a killed writer left behind (part and manifest temporaries);
        they never count as rows. Call only while holding :meth:`lock`."""
        removed = 0
        patterns = [(self.parts_dir, ".part-*.tmp"), (self.path, f".{MANIFEST}.*.tmp")]
        for directory, pattern in patterns:
            if directory.exists():
                for tmp in directory.glob(pattern):
                    tmp.unlink()
                    removed += 1
        return removed

    def _unreadable(self, part: Path, exc: Exception) -> StoreError:
        return unreadable_part(self.path, part, exc)

    def done_ids(self) -> set[str]:
        """The query ids of every part (from the part index, :mod:`._index`)."""
        done: set[str] = set()
        for entry in self._indexed():
            done.update(entry.ids)
        return done

    def part_writers(self) -> dict[Path, tuple[str, str] | None]:
        """Each part's writer (scorer identity, configuration hash), from the part index;
        ``None`` for a part written before parts carried their writer."""
        return {
            self.parts_dir / e.part: None
            if e.identity is None
            else (e.identity, e.config_hash or "")
            for e in self._indexed()
        }

    def _indexed(self) -> list[IndexEntry]:
        def read(part: Path) -> IndexEntry:
            try:
                return read_part(part, PART_IDENTITY_KEY, PART_CONFIG_KEY)
            except (pa.ArrowInvalid, OSError) as exc:
                raise self._unreadable(part, exc) from None

        return reconcile(self.parts_dir, self.part_paths(), read)

    def part_stamps(self) -> dict[Path, PartStamp | None]:
        """Each part's writer stamp (``None`` for parts written before stamps existed)."""
        stamps: dict[Path, PartStamp | None] = {}
        for part in self.part_paths():
            try:
                meta = pq.read_schema(part).metadata or {}
            except (pa.ArrowInvalid, OSError) as exc:
                raise self._unreadable(part, exc) from None
            if PART_IDENTITY_KEY in meta:
                config_json = meta.get(PART_CONFIG_JSON_KEY)
                stamps[part] = PartStamp(
                    meta[PART_IDENTITY_KEY].decode("utf-8"),
                    meta.get(PART_CONFIG_KEY, b"").decode("utf-8"),
                    None if config_json is None else config_json.decode("utf-8"),
                )
            else:
                stamps[part] = None
        return stamps

    def write_refused(self, data: bytes | Iterable[bytes]) -> None:
        """Write the input rows an import refused (JSON lines: file, row, reason), once, beside
        the parts (``refused.jsonl``): the configuration counts and digests them, never copies
        them into every part or the manifest."""
        make_dir(self.path)
        atomic_write_bytes(self.path / REFUSED, data)

    def move_aside(self, path: Path) -> Path:
        """Move ``path`` into ``quarantine/`` under a name not yet taken there; return where
        it went. Never deletes: what was set aside can be read, compared or restored."""
        folder = self.path / QUARANTINE
        folder.mkdir(parents=True, exist_ok=True)
        target, n = folder / path.name, 0
        while target.exists():
            n += 1
            target = folder / f"{path.stem}.{n}{path.suffix}"
        path.replace(target)
        return target

    def write_part(
        self, rows: Sequence[tuple[int, Query, Decision]], *, stamp: PartStamp | None = None
    ) -> Path:
        """Write ``(input index, query, decision)`` rows as the next part, atomically, with the
        writer's ``stamp`` in the Parquet metadata."""
        table = rows_to_table(rows)
        if stamp is not None:
            metadata = {
                PART_IDENTITY_KEY: stamp.scorer_identity.encode("utf-8"),
                PART_CONFIG_KEY: stamp.config_hash.encode("utf-8"),
            }
            if stamp.config_json is not None:
                metadata[PART_CONFIG_JSON_KEY] = stamp.config_json.encode("utf-8")
            table = table.replace_schema_metadata(metadata)
        self.parts_dir.mkdir(parents=True, exist_ok=True)
        if self._next_part is None:  # once per lock: no listing of the parts per write
            existing = self.part_paths()
            self._next_part = part_index(existing[-1]) + 1 if existing else 0
        target = self.parts_dir / f"part-{self._next_part:05d}.parquet"
        if target.exists():
            raise StoreError(
                f"{target} exists already; a part is never written over (another writer "
                "without the run's lock?)"
            )
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        atomic_write_bytes(target, sink.getvalue().to_pybytes())
        self._next_part += 1
        ids = table.column("query_id").to_pylist()
        writer = (None, None) if stamp is None else (stamp.scorer_identity, stamp.config_hash)
        append_entry(self.parts_dir, entry_of(target, ids, *writer))
        return target

    def read_table(self) -> pa.Table:
        """All rows as one Arrow table, in input order, one per query (duplicates are an
        error)."""
        parts = self.part_paths()
        if not parts:
            raise StoreError(f"{self.path} has no decisions yet")
        tables = []
        for part in parts:
            try:
                tables.append(pq.read_table(part).replace_schema_metadata(None))
            except (pa.ArrowInvalid, OSError) as exc:
                raise self._unreadable(part, exc) from None
        table = pa.concat_tables(tables, promote_options="default")
        ids = table.column("query_id").to_pylist()
        if len(set(ids)) != len(ids):
            raise StoreError(f"{self.path}: a query id occurs in more than one row")
        return table.sort_by("row")

    def load(self, *, allow_empty: bool = False) -> Run:
        """The typed run (see the module docstring). A run with no parts yet is an error
        unless ``allow_empty``."""
        manifest = self.manifest()
        if allow_empty and not self.part_paths():
            return Run(self.path, manifest, ())
        table = self.read_table()
        rows: list[RunRow] = []
        # converted a batch at a time: the rows as Python dicts never all exist at once
        for batch in table.to_batches(max_chunksize=_LOAD_BATCH):
            rows.extend(row_of(self.path, r) for r in batch.to_pylist())
        return Run(self.path, manifest, tuple(rows))


#: rows converted from Arrow to Python per step of :meth:`RunStore.load`
_LOAD_BATCH = 8192

#: What to do about a manifest that cannot be read: parts written since they carry the
#: configuration can rebuild it; older ones carry only its hash, so it is restored instead.
_RECOVER = (
    "run `choiceaudit repair` on the run: it says whether the manifest can be rebuilt from the "
    "parts (`--rebuild-manifest`), else restore it from a backup or score into a new --out"
)

#: The JSON type each known manifest key must have (None is allowed for all).
_MANIFEST_TYPES: dict[str, tuple[type, ...]] = {
    "config": (dict,),
    "scorer": (dict,),
    "status": (str,),
    "rows": (int,),
    "parts": (int,),
    "sessions": (list,),
    "command": (list,),
    "created": (str,),
    "updated": (str,),
    "choiceaudit_version": (str,),
    "git_commit": (str,),
    "python": (str,),
    "platform": (str,),
}


def _check_manifest(path: Path, data: Any) -> None:
    """A manifest is a JSON object whose known keys have their types (a session a JSON
    object); anything else is a StoreError naming the file and the field."""
    if not isinstance(data, dict):
        raise StoreError(
            f"{path}: a manifest is a JSON object, this file holds a {type(data).__name__}; "
            f"{_RECOVER}"
        )
    for key, kinds in _MANIFEST_TYPES.items():
        value = data.get(key)
        bad = value is not None and (not isinstance(value, kinds) or isinstance(value, bool))
        if bad or (key == "sessions" and any(not isinstance(v, dict) for v in value or ())):
            raise StoreError(
                f"{path}: field {key!r}: expected {' or '.join(k.__name__ for k in kinds)}, "
                f"got {json.dumps(value)[:80]}; {_RECOVER}"
            )


def unreadable_part(run: Path, part: Path, exc: Exception) -> StoreError:
    """The error for a part Parquet cannot read, and what to do about it."""
    return StoreError(
        f"{part}: unreadable Parquet part ({exc}); run `choiceaudit repair {run}` to "
        "move it aside and re-score its queries on the next resume"
    )


def open_run(path: Path | str, *, allow_empty: bool = False) -> Run:
    """:meth:`RunStore.load` of the run directory at ``path``: its rows (query and decision,
    in input order) and its manifest.

    >>> import pathlib, tempfile
    >>> from choiceaudit.audit import score_file
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (tmp / "q.jsonl").write_text('{"state": "2 + 2 =", "options": ["4", "5"]}\\n')
    >>> run = open_run(score_file(tmp / "q.jsonl", "fake", out=tmp / "run").summary.path)
    >>> run.manifest.status, run.rows[0].query.options, len(run.rows[0].decision.probs)
    ('complete', ('4', '5'), 2)
    """
    return RunStore(path).load(allow_empty=allow_empty)
