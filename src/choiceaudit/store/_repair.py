"""``choiceaudit repair``: unblock a run directory, or say exactly what blocks it.

Three things can block a run: a part that cannot be read (moved to ``quarantine/``, so a resume
re-scores its queries), a manifest that cannot be read or is missing, and parts that disagree
with each other or with the manifest about who wrote them. The manifest records the run's
configuration, scorer and history; a part records its writer's scorer identity and the
configuration's hash and, since parts carry it, the configuration itself. So a lost manifest can
be rebuilt from the parts when every part carries the same identity and configuration (the
configuration checked against its hash): the rebuilt manifest has the configuration and the
scorer identity, the row and part counts and a ``rebuilt_from_parts`` record, but not the
sessions, command or timings, which only the old manifest held. It is rebuilt only on request
(``rebuild_manifest``), and the unreadable manifest is moved to ``quarantine/``, never deleted.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from typing_extensions import TypedDict

from choiceaudit.errors import StoreError
from choiceaudit.files import canonical_hash
from choiceaudit.store._run import MANIFEST, QUARANTINE, PartStamp, RepairReport, RunStore

__all__ = ["repair_run_dir"]


def _quarantine_unreadable_parts(store: RunStore) -> list[tuple[str, str]]:
    moved: list[tuple[str, str]] = []
    for part in store.part_paths():
        try:
            pq.read_table(part)
        except (pa.ArrowInvalid, OSError) as exc:
            target = store.move_aside(part)
            moved.append((str(target.relative_to(store.path)), str(exc)))
    return moved


def _manifest_problem(store: RunStore) -> str | None:
    """Why the manifest cannot be read (``None``: it can)."""
    if not store.manifest_path.exists():
        return f"{store.manifest_path} is missing"
    try:
        store.read_manifest()
    except StoreError as exc:
        return str(exc).split("; run `choiceaudit repair`")[0]
    return None


def _writers(stamps: dict[Path, PartStamp | None]) -> dict[tuple[str, str], list[Path]]:
    groups: dict[tuple[str, str], list[Path]] = {}
    for part, stamp in stamps.items():
        if stamp is not None:
            groups.setdefault((stamp.scorer_identity, stamp.config_hash), []).append(part)
    return groups


def _why_not_rebuildable(stamps: dict[Path, PartStamp | None]) -> str | None:
    """Why the parts cannot rebuild the manifest (``None``: they can)."""
    if not stamps:
        return "the run has no readable part to rebuild it from"
    unstamped = [p.name for p, s in stamps.items() if s is None or s.config_json is None]
    if unstamped:
        return (
            f"{len(unstamped)} part(s) ({', '.join(unstamped[:3])}"
            f"{', …' if len(unstamped) > 3 else ''}) were written before parts carried the "
            "run's configuration"
        )
    if len(_writers(stamps)) > 1:
        return "the parts were written by different scorers or configurations"
    first = next(s for s in stamps.values() if s is not None)
    assert first.config_json is not None
    if canonical_hash(json.loads(first.config_json)) != first.config_hash:
        return "the configuration the parts carry does not match their configuration hash"
    return None


class Rebuild(TypedDict):
    """Why and from what a manifest was rebuilt, and what it lost."""

    at: str
    because: str
    previous_manifest: str | None
    parts: int
    rows: int
    lost: str


class RebuiltManifest(TypedDict):
    """A manifest written from the parts alone: the configuration and scorer identity they
    carry, the rows they hold, and the record of the rebuild (no sessions survive)."""

    config: object
    scorer: object
    status: str
    rows: int
    parts: int
    sessions: list[object]
    rebuilt_from_parts: Rebuild


def _rebuild(store: RunStore, stamps: dict[Path, PartStamp | None], problem: str) -> None:
    """Write a manifest from the parts (the unreadable one, if any, moved to quarantine)."""
    stamp = next(s for s in stamps.values() if s is not None)
    assert stamp.config_json is not None
    previous = None
    if store.manifest_path.exists():
        previous = str(store.move_aside(store.manifest_path).relative_to(store.path))
    rows = len(store.done_ids())
    manifest: RebuiltManifest = {
        "config": json.loads(stamp.config_json),
        "scorer": json.loads(stamp.scorer_identity),
        "status": "incomplete",
        "rows": rows,
        "parts": len(stamps),
        "sessions": [],
        "rebuilt_from_parts": {
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "because": problem,
            "previous_manifest": previous,
            "parts": len(stamps),
            "rows": rows,
            "lost": "the sessions, command, platform and timings the old manifest recorded",
        },
    }
    store.write_manifest(manifest)


def _blockers(store: RunStore, stamps: dict[Path, PartStamp | None]) -> list[str]:
    """What still keeps the run from being read back or resumed, each with what to do."""
    found: list[str] = []
    groups = _writers(stamps)
    if len(groups) > 1:
        sizes = sorted(groups.values(), key=len, reverse=True)
        odd = [p.name for group in sizes[1:] for p in group]
        found.append(
            f"{store.path}: the parts were written by {len(groups)} different scorers or "
            f"configurations (the odd ones out: {', '.join(odd[:5])}"
            f"{', …' if len(odd) > 5 else ''}); move the parts that do not belong to this run "
            "out of decisions/ and resume"
        )
    problem = _manifest_problem(store)
    if problem is None and groups:
        manifest = store.read_manifest()
        config_hash = canonical_hash(manifest.get("config") or {})
        if all(h != config_hash for _, h in groups):
            found.append(
                f"{store.manifest_path}: its configuration is not the one the parts were "
                "written under; restore the run's own manifest from a backup, or score into "
                "a new --out"
            )
    if problem is None:
        try:
            store.load(allow_empty=True)
        except StoreError as exc:
            found.append(str(exc))
    return found


def _manifest_blocker(store: RunStore, problem: str, why_not: str | None) -> str:
    if why_not is None:
        return (
            f"{problem}; it can be rebuilt from the parts, which carry the scorer identity and "
            f"the configuration: run `choiceaudit repair {store.path} --rebuild-manifest` "
            "(the sessions and command it recorded are lost; the old file is kept in "
            f"{QUARANTINE}/)"
        )
    stamped = all(s is not None for s in store.part_stamps().values())
    resume = (
        " or resume the run with the command that made it (each part's stamp checks the scorer "
        "and configuration),"
        if not store.manifest_path.exists() and stamped
        else ""
    )
    return (
        f"{problem}; it cannot be rebuilt from the parts: {why_not}. Restore {MANIFEST} from a "
        f"backup,{resume} or score into a new --out"
    )


def repair_run_dir(store: RunStore, *, rebuild_manifest: bool = False) -> RepairReport:
    """Quarantine unreadable parts, remove temporaries, rebuild the manifest when asked and
    possible, and report what still blocks the run (see the module docstring)."""
    with store.lock():
        removed = store.clean_partial()
        moved = _quarantine_unreadable_parts(store)
        stamps = store.part_stamps()
        problem = _manifest_problem(store)
        rebuilt = False
        why_not = _why_not_rebuildable(stamps) if problem is not None else None
        if problem is not None and rebuild_manifest and why_not is None:
            _rebuild(store, stamps, problem)
            rebuilt = True
        if store.exists() and _manifest_problem(store) is None and (moved or removed or rebuilt):
            manifest = store.read_manifest()
            manifest.setdefault("repairs", []).append(
                {
                    "moved": [{"part": p, "reason": r} for p, r in moved],
                    "temporaries_removed": removed,
                    "manifest_rebuilt": rebuilt,
                    "rows_after": len(store.done_ids()),
                }
            )
            manifest["status"] = "incomplete" if moved else manifest.get("status")
            manifest["rows"] = len(store.done_ids())
            store.write_manifest(manifest)
        blocked = _blockers(store, stamps)
        if problem is not None and not rebuilt:
            blocked.insert(0, _manifest_blocker(store, problem, why_not))
    return RepairReport(
        store.path,
        tuple(moved),
        removed,
        manifest_problem=problem,
        manifest_rebuilt=rebuilt,
        blocked=tuple(blocked),
    )
