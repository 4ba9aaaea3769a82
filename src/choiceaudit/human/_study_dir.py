"""The study directory: created from the items and the study file, or reopened and checked
against what it was started with (see ``_study`` for what it holds)."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from choiceaudit.errors import InputError, unreadable
from choiceaudit.files import atomic_write_bytes, make_dir
from choiceaudit.human._assign import block_pool, classification_items
from choiceaudit.human._study import (
    SECRET_FILE,
    STUDY_FILE,
    StudyItems,
    StudySpec,
    load_study_items,
)

__all__ = ["open_study", "read_study_record"]


def _write_json(path: Path, data: Any) -> None:
    blob = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    atomic_write_bytes(path, blob.encode("utf-8"))


def read_study_record(path: Path, *, keys: Sequence[str] = ("study", "items_hash")) -> Any:
    """A JSON object the study (or a run it reads) wrote, with ``keys``; anything else is an
    InputError naming the file."""
    fix = "restore the file, or start a new study directory (--out)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc, what="a study record", fix=fix) from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"not valid JSON ({exc}); {fix}", source=str(path)) from None
    if not isinstance(data, dict) or any(k not in data for k in keys):
        raise InputError(
            f"not a study record (a JSON object with {list(keys)}); {fix}", source=str(path)
        )
    return data


def open_study(
    items_source: Path | str, out: Path | str, spec: StudySpec | None = None
) -> tuple[StudySpec, StudyItems, bytes]:
    """Create or reopen the study directory ``out``: returns the spec, the items and the CSRF
    key. A new study copies the items into the directory; reopening needs the same items and
    the same study file (or none: the recorded one is used)."""
    root = Path(out)
    record_path = root / STUDY_FILE
    if record_path.is_file():
        record = read_study_record(record_path)
        recorded = StudySpec.from_dict(record["study"], source=str(record_path))
        if spec is not None and spec != recorded:
            raise InputError(
                "this study directory was started with another study file; use a new --out",
                source=str(root),
            )
        spec = recorded
        items = load_study_items(items_source, condition=spec.condition)
        if items.items_hash != record["items_hash"]:
            raise InputError(
                f"items hash {items.items_hash[:12]}… differs from the study's "
                f"{str(record['items_hash'])[:12]}…; serve a study with the items it started with",
                source=str(root),
            )
    else:
        if spec is None:
            raise InputError("a new study needs a study file (--study)", source=str(root))
        items = load_study_items(items_source, condition=spec.condition)
        _check_feasible(spec, items)
        make_dir(root)
        if items.frozen is not None:
            items.frozen.copy_to(root / "instrument")
        else:
            (root / "queries.jsonl").write_bytes(Path(items.source).read_bytes())
        _write_json(
            record_path,
            {
                "study": spec.to_dict(),
                "instrument": items.instrument,
                "items_hash": items.items_hash,
                "items_source": str(Path(items_source).resolve()),
                "source_config": dict(items.source_config),
                "format_version": 1,
            },
        )
    secret_path = root / SECRET_FILE
    if not secret_path.is_file():
        fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
            fh.flush()
            os.fsync(fh.fileno())
    _owner_only(root)
    return spec, items, secret_path.read_bytes()


def _owner_only(root: Path) -> None:
    """The study directory holds panel ids and the study key: the directory 0700 and every
    file in it 0600, so no other account on the machine can read them (checked on every
    open, so a directory copied with looser modes is tightened)."""
    root.chmod(0o700)
    for path in root.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o700 if path.is_dir() else 0o600)


def _check_feasible(spec: StudySpec, items: StudyItems) -> None:
    # the population block draws on what classification takes (its n_items items, the same
    # ones ``assign`` uses), not on the rest of the classification pool
    taken = [i.item_id for i in classification_items(spec, items)]
    for b in spec.blocks:
        pool = block_pool(b, items, [] if b.name == "classification" else taken)
        what = "conflict items of the analysis set" if b.name == "classification" else "items"
        if len(pool) < b.n_items:
            raise InputError(
                f"the {b.name} block asks for {b.n_items} {what} per participant; its pool has "
                f"{len(pool)} (an item is never shown twice)",
                field="blocks",
            )
