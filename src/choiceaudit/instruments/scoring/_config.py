"""The configuration of a plain scoring run (``choiceaudit score``: ``kind="score"``) or of an
imported harness run (``kind="import"``: where the rows came from and how they were mapped).
These runs record no ``instrument``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from choiceaudit.types import RunConfig

__all__ = ["ScoreConfig"]


@dataclass(frozen=True)
class ScoreConfig(RunConfig):
    """``kind`` is ``score`` or ``import``; the other fields describe an import: the harness
    (``source``, ``source_version``), each file read (name and sha256), the field mapping, the
    fields left unmapped and the rows that could not be mapped (by reason, and listed), notes,
    and the tasks read."""

    kind: str | None = None
    source: str | None = None
    source_version: str | None = None
    files: tuple[Mapping[str, Any], ...] | None = None
    mapping: Mapping[str, str] | None = None
    unmapped_fields: Mapping[str, int] | None = None
    unmappable_rows: Mapping[str, int] | None = None
    unmappable_listed: tuple[Any, ...] | None = None
    notes: Mapping[str, Any] | None = None
    tasks: Mapping[str, Any] | None = None
