"""File and hashing primitives every layer shares: atomic writes, file sha256, canonical JSON.

One implementation of each, so a run part, a manifest, a frozen item set and a model cache are
written and hashed the same way. Imports nothing from the package but its errors.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from choiceaudit.errors import InputError

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "canonical_hash",
    "canonical_json",
    "json_lines",
    "make_dir",
    "sha256_bytes",
    "sha256_file",
]


def make_dir(path: Path | str) -> Path:
    """Create the directory ``path`` (and its parents) if it is missing; a path that names a
    file, or runs through one, is an :class:`~choiceaudit.errors.InputError` naming it, so an
    output directory given as an existing file (``--out results.csv``) is one error line."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError(
            "is a file, not a directory; give a directory (it is created if missing)",
            source=str(path),
        ) from None
    except NotADirectoryError:
        blocking = next((p for p in path.parents if p.is_file()), None)
        raise InputError(
            f"cannot be created: {blocking or 'a part of the path'} is a file, not a "
            "directory; give a directory path",
            source=str(path),
        ) from None
    except PermissionError as exc:
        raise InputError(
            f"cannot be created ({exc.strerror}); give a directory you can write",
            source=str(path),
        ) from None
    return path


def atomic_write_bytes(path: Path | str, data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` (bytes, or blocks of bytes written one after another) to ``path``
    through a temporary file in the same directory, fsync, then rename: at any instant
    ``path`` holds the old content or the new, never a torn file. The temporary
    (``.<name>.*.tmp``) is removed if anything fails before the rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            for block in [data] if isinstance(data, bytes) else data:
                handle.write(block)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path | str, text: str) -> None:
    """:func:`atomic_write_bytes` of UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def sha256_file(path: Path | str, *, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def json_lines(rows: Iterable[Mapping[str, Any]]) -> bytes:
    """One JSON object per line, UTF-8 with non-ASCII text kept: how a run lists the input rows
    it left out (beside its parts, counted and digested in its manifest)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def canonical_json(payload: Any, *, allow_nan: bool = True) -> str:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 kept (``ensure_ascii=False``). With
    ``allow_nan=False`` a NaN or infinity is a ``ValueError`` (frozen item sets refuse them)."""
    return json.dumps(
        payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=allow_nan
    )


def canonical_hash(
    payload: Mapping[str, Any] | Any, *, length: int | None = None, allow_nan: bool = True
) -> str:
    """Hex sha256 of :func:`canonical_json` of ``payload``, cut to ``length`` characters when
    given: identical on any machine for equal content."""
    text = canonical_json(payload, allow_nan=allow_nan)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return digest if length is None else digest[:length]
