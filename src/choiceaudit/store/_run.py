"""Run directories: ``manifest.json`` plus ``decisions/part-*.parquet``, written atomically.

The store only reads and writes run directories; scoring into one is
:func:`choiceaudit.audit.run_scoring`. A part is written to a temporary file in the same
directory and renamed into place, so at any instant a part either exists whole or not at all. A
lock file keeps two processes from writing one run at once. :meth:`RunStore.load` returns the
typed :class:`Run`: the manifest as a :class:`Manifest` and the rows as :class:`RunRow`
``(index, Query, Decision)`` records rebuilt from the Parquet columns, each query's id checked
against its content hash.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from choiceaudit.errors import StoreError
from choiceaudit.files import atomic_write_bytes
from choiceaudit.store._rows import SCORE_PREFIX, rows_to_table
from choiceaudit.types import Arm, Decision, Query, parse_perm

__all__ = [
    "MANIFEST",
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
#: Where :meth:`RunStore.repair` moves parts it cannot read.
QUARANTINE = "quarantine"
#: Parquet schema metadata every part carries: who wrote it and under which configuration.
PART_IDENTITY_KEY = b"choiceaudit.scorer_identity"
PART_CONFIG_KEY = b"choiceaudit.config_hash"


@dataclass(frozen=True)
class PartStamp:
    """What a part records about its writer: the scorer identity (the fields of its description
    that its backend declares identify it, canonical JSON; the audit layer computes it with
    ``scorers.resume_identity``) and the sha256 of the run configuration."""

    scorer_identity: str
    config_hash: str


@dataclass(frozen=True)
class RepairReport:
    """What :meth:`RunStore.repair` did: parts moved aside (with the reason each was
    unreadable) and temporaries removed."""

    path: Path
    moved: tuple[tuple[str, str], ...]
    temporaries_removed: int


@dataclass(frozen=True)
class Manifest:
    """``manifest.json`` of a run: what made it (command, configuration, scorer description,
    versions) and what each scoring session did. Keys this version does not know are kept in
    ``extra`` and written back unchanged."""

    config: Mapping[str, Any] = field(default_factory=dict)
    scorer: Mapping[str, Any] = field(default_factory=dict)
    status: str | None = None
    rows: int | None = None
    parts: int | None = None
    sessions: tuple[Mapping[str, Any], ...] = ()
    command: tuple[str, ...] = ()
    created: str | None = None
    updated: str | None = None
    choiceaudit_version: str | None = None
    git_commit: str | None = None
    python: str | None = None
    platform: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: The keys the stored file had, so :meth:`to_dict` writes back a null it read.
    stored_keys: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Manifest:
        known = {f.name for f in fields(cls)} - {"extra", "stored_keys"}
        values: dict[str, Any] = {k: data[k] for k in known if k in data}
        values["sessions"] = tuple(values.get("sessions") or ())
        values["command"] = tuple(values.get("command") or ())
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**values, extra=extra, stored_keys=frozenset(data))

    def to_dict(self) -> dict[str, Any]:
        """The manifest as JSON data (what :meth:`RunStore.write_manifest` stores)."""
        out: dict[str, Any] = dict(self.extra)
        for f in fields(self):
            if f.name in ("extra", "stored_keys"):
                continue
            value = getattr(self, f.name)
            if f.name in ("sessions", "command"):
                value = [dict(v) if isinstance(v, Mapping) else v for v in value]
            elif isinstance(value, Mapping):
                value = dict(value)
            if value is not None or f.name in self.stored_keys:
                out[f.name] = value
        return out

    @property
    def instrument(self) -> str:
        """The instrument that made the run (``score`` for plain query files)."""
        return str(self.config.get("instrument", "score"))

    @property
    def model_label(self) -> str | None:
        """The scorer's model name, else its backend name (``None`` if neither is recorded)."""
        name = self.scorer.get("model") or self.scorer.get("name")
        return None if name is None else str(name)


@dataclass(frozen=True)
class RunRow:
    """One stored row: the input index, the query exactly as the scorer saw it, and its
    decision."""

    index: int
    query: Query
    decision: Decision

    @property
    def meta(self) -> Mapping[str, Any]:
        return self.query.meta

    @property
    def choice_canonical(self) -> tuple[int, ...]:
        """Canonical options of the chosen (tied) display slots under ``probs``, sorted."""
        return tuple(sorted(self.query.canonical(s) for s in self.decision.choice()))

    @property
    def conf_head(self) -> float | None:
        value = self.decision.aux.get("conf_head")
        return None if value is None else float(value)


@dataclass(frozen=True)
class Run:
    """A run directory read back: its manifest and its rows in input order."""

    path: Path
    manifest: Manifest
    rows: tuple[RunRow, ...]

    @property
    def label(self) -> str:
        """Short name for tables: the scorer's model name, else the directory name."""
        return self.manifest.model_label or self.path.name

    @property
    def instrument(self) -> str:
        return self.manifest.instrument

    def pairs(self) -> list[tuple[Query, Decision]]:
        return [(r.query, r.decision) for r in self.rows]

    def arm(self, label: str | None = None) -> Arm:
        """The run as an analysis reads it (:class:`~choiceaudit.types.Arm`)."""
        return Arm(
            label=label or self.label,
            source=str(self.path),
            manifest=self.manifest.to_dict(),
            rows=tuple((r.query, r.decision) for r in self.rows),
        )

    def rules(self) -> list[str]:
        """Scoring rules every row holds, ``probs`` first, the others sorted."""
        if not self.rows:
            return ["probs"]
        common = set.intersection(*(set(r.decision.scores) for r in self.rows))
        return ["probs", *sorted(common)]


class RunStore:
    """A run directory: read it with :meth:`load`; writers hold :meth:`lock`."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.parts_dir = self.path / PARTS

    # -- manifest -------------------------------------------------------------------------
    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    def exists(self) -> bool:
        return self.manifest_path.exists()

    def read_manifest(self) -> dict[str, Any]:
        """The manifest as stored (a plain dict, for writers that update it)."""
        try:
            data: dict[str, Any] = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StoreError(f"{self.path} is not a run directory (no {MANIFEST})") from None
        except json.JSONDecodeError as exc:
            raise StoreError(f"{self.manifest_path}: invalid JSON ({exc})") from None
        return data

    def manifest(self) -> Manifest:
        return Manifest.from_dict(self.read_manifest())

    def write_manifest(self, manifest: Mapping[str, Any] | Manifest) -> None:
        data = manifest.to_dict() if isinstance(manifest, Manifest) else dict(manifest)
        self.path.mkdir(parents=True, exist_ok=True)
        blob = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str)
        atomic_write_bytes(self.manifest_path, blob.encode("utf-8") + b"\n")

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive lock on the run; a second process fails at once rather than interleaving."""
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / ".lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreError(f"{self.path} is being written by another process") from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- parts ----------------------------------------------------------------------------
    def part_paths(self) -> list[Path]:
        if not self.parts_dir.exists():
            return []
        return sorted(self.parts_dir.glob("part-*.parquet"))

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
        return StoreError(
            f"{part}: unreadable Parquet part ({exc}); run `choiceaudit repair {self.path}` to "
            "move it aside and re-score its queries on the next resume"
        )

    def done_ids(self) -> set[str]:
        done: set[str] = set()
        for part in self.part_paths():
            try:
                ids = pq.read_table(part, columns=["query_id"]).column("query_id").to_pylist()
            except (pa.ArrowInvalid, OSError) as exc:
                raise self._unreadable(part, exc) from None
            done.update(ids)
        return done

    def part_stamps(self) -> dict[Path, PartStamp | None]:
        """Each part's writer stamp (``None`` for parts written before stamps existed)."""
        stamps: dict[Path, PartStamp | None] = {}
        for part in self.part_paths():
            try:
                meta = pq.read_schema(part).metadata or {}
            except (pa.ArrowInvalid, OSError) as exc:
                raise self._unreadable(part, exc) from None
            if PART_IDENTITY_KEY in meta:
                stamps[part] = PartStamp(
                    meta[PART_IDENTITY_KEY].decode("utf-8"),
                    meta.get(PART_CONFIG_KEY, b"").decode("utf-8"),
                )
            else:
                stamps[part] = None
        return stamps

    def repair(self) -> RepairReport:
        """Move every part that cannot be read whole into ``quarantine/`` and record it in the
        manifest (``repairs``), so a resume re-scores its queries. Takes the lock."""
        moved: list[tuple[str, str]] = []
        with self.lock():
            removed = self.clean_partial()
            for part in self.part_paths():
                try:
                    pq.read_table(part)
                except (pa.ArrowInvalid, OSError) as exc:
                    target = self.path / QUARANTINE / part.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    n = 0
                    while target.exists():
                        n += 1
                        target = self.path / QUARANTINE / f"{part.stem}.{n}{part.suffix}"
                    part.replace(target)
                    moved.append((str(target.relative_to(self.path)), str(exc)))
            if self.exists() and (moved or removed):
                manifest = self.read_manifest()
                manifest.setdefault("repairs", []).append(
                    {
                        "moved": [{"part": p, "reason": r} for p, r in moved],
                        "temporaries_removed": removed,
                        "rows_after": len(self.done_ids()),
                    }
                )
                manifest["status"] = "incomplete" if moved else manifest.get("status")
                manifest["rows"] = len(self.done_ids())
                self.write_manifest(manifest)
        return RepairReport(self.path, tuple(moved), removed)

    def write_part(
        self, rows: Sequence[tuple[int, Query, Decision]], *, stamp: PartStamp | None = None
    ) -> Path:
        """Write ``(input index, query, decision)`` rows as the next part, atomically, with the
        writer's ``stamp`` in the Parquet metadata."""
        table = rows_to_table(rows)
        if stamp is not None:
            table = table.replace_schema_metadata(
                {
                    PART_IDENTITY_KEY: stamp.scorer_identity.encode("utf-8"),
                    PART_CONFIG_KEY: stamp.config_hash.encode("utf-8"),
                }
            )
        self.parts_dir.mkdir(parents=True, exist_ok=True)
        existing = self.part_paths()
        index = int(existing[-1].stem.split("-")[1]) + 1 if existing else 0
        target = self.parts_dir / f"part-{index:05d}.parquet"
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        atomic_write_bytes(target, sink.getvalue().to_pybytes())
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
        records = self.read_table().to_pylist()
        return Run(self.path, manifest, tuple(_row(self.path, r) for r in records))


def open_run(path: Path | str, *, allow_empty: bool = False) -> Run:
    """:meth:`RunStore.load` of the run directory at ``path``."""
    return RunStore(path).load(allow_empty=allow_empty)


def _row(path: Path, record: dict[str, Any]) -> RunRow:
    index = int(record["row"])
    try:
        query = Query(
            state=record["state"],
            options=tuple(record["options"]),
            instruction=record["instruction"] or "",
            keys=tuple(record["keys"]),
            neutral_state=record["neutral_state"],
            template=record["template"],
            answer_format=record["answer_format"],
            perm=parse_perm(record["perm"]) if record["perm"] is not None else None,
            meta=json.loads(record["meta"]) if record.get("meta") else {},
            id=record["query_id"],
        )
        scores = {
            key.removeprefix(SCORE_PREFIX): np.asarray(value, dtype=np.float64)
            for key, value in record.items()
            if key.startswith(SCORE_PREFIX) and value is not None
        }
        decision = Decision(
            query_id=query.id,
            probs=np.asarray(record["probs"], dtype=np.float64),
            scores=scores,
            n_tokens=tuple(record["n_tokens"]) if record.get("n_tokens") is not None else None,
            aux=json.loads(record["aux"]) if record.get("aux") else {},
        )
    except (ValueError, TypeError, KeyError) as exc:
        raise StoreError(
            f"{path}: row {index} (query {record.get('query_id')}): not a valid stored row ({exc})"
        ) from None
    return RunRow(index, query, decision)
