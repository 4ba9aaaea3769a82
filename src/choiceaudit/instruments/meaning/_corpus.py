"""What a meaning corpus is, whichever loader built it: idiom entries plus a loader report.

An :class:`IdiomEntry` carries everything the instrument builds from (the meaning paper, §3):
the expression, its gold figurative gloss, its expert literal gloss, semantic tags, alternative
surface forms certified as meaning-preserving, and gold carrier sentences. Fields in the *other*
language (Bagdhara's English figurative gloss, English equivalent idioms, the English
parenthetical of the literal gloss) feed E4, E6 o3 and the capture matrix. Nothing is annotated
by us: every field is copied (after normalisation) from the source.

A :class:`LoaderReport` records the count after each loading step and every dropped row with its
reason, so nothing is dropped silently (STYLE.md).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import TypedDict

from choiceaudit.errors import InputError

__all__ = [
    "Corpus",
    "CorpusError",
    "IdiomEntry",
    "LoaderRecord",
    "LoaderReport",
    "LoaderStep",
    "normalise_text",
]


class CorpusError(InputError):
    """Bad corpus input; the message names the file, the row and the field."""

    def __init__(self, path: str, row: int | None, field_name: str | None, message: str) -> None:
        where = path
        if row is not None:
            where += f", row {row}"
        if field_name is not None:
            where += f", field {field_name!r}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.row = row
        self.field_name = field_name


def normalise_text(text: str) -> str:
    """Unicode NFC, then strip (task_contract.json "normalisation")."""
    return unicodedata.normalize("NFC", text).strip()


@dataclass(frozen=True)
class IdiomEntry:
    """One usable corpus row. ``language`` is the language of ``expression``, ``gold`` and
    ``literal``; ``*_other`` fields are the other language's counterparts where the corpus has
    them (``None`` or empty otherwise)."""

    id: int
    expression: str
    gold: str
    literal: str
    language: str
    tags: tuple[str, ...] = ()
    alternatives: tuple[str, ...] = ()
    carriers: tuple[str, ...] = ()
    gold_other: str | None = None
    literal_other: str | None = None
    equivalents_other: tuple[str, ...] = ()
    carriers_other: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("expression", "gold", "literal"):
            if not getattr(self, name):
                raise ValueError(f"IdiomEntry {self.id}: {name} is empty")

    @property
    def n_words(self) -> int:
        """Whitespace words of the expression (the unit E3 counts, Appendix M)."""
        return len(self.expression.split())


class LoaderStep(TypedDict):
    """One membership step and the entries left after it, as the run's config stores it."""

    step: str
    count: int


class LoaderRecord(TypedDict):
    """A :class:`LoaderReport` as the run's config stores it (``loader``)."""

    source: str
    steps: list[LoaderStep]
    dropped: dict[str, int]
    examples: dict[str, list[int]]


@dataclass
class LoaderReport:
    """Counts after each step, in order, and dropped rows by reason (with a few row ids each)."""

    source: str
    steps: list[tuple[str, int]] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[int]] = field(default_factory=dict)

    def step(self, name: str, count: int) -> None:
        self.steps.append((name, count))

    def drop(self, reason: str, row_id: int) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1
        self.examples.setdefault(reason, [])
        if len(self.examples[reason]) < 5:
            self.examples[reason].append(row_id)

    def count(self, name: str) -> int:
        for step, n in self.steps:
            if step == name:
                return n
        raise KeyError(f"loader report for {self.source} has no step {name!r}")

    def to_dict(self) -> LoaderRecord:
        return {
            "source": self.source,
            "steps": [{"step": s, "count": n} for s, n in self.steps],
            "dropped": dict(sorted(self.dropped.items())),
            "examples": {k: list(v) for k, v in sorted(self.examples.items())},
        }


@dataclass(frozen=True)
class Corpus:
    """A loaded corpus: usable entries in ascending id order and the report that built them."""

    name: str
    language: str
    entries: tuple[IdiomEntry, ...]
    report: LoaderReport
    other_language: str | None = None

    def __post_init__(self) -> None:
        ids = [e.id for e in self.entries]
        if ids != sorted(set(ids)):
            raise ValueError(f"corpus {self.name}: entry ids must be unique and ascending")

    def __len__(self) -> int:
        return len(self.entries)

    def by_id(self) -> dict[int, IdiomEntry]:
        return {e.id: e for e in self.entries}

    @property
    def has_tags(self) -> bool:
        return any(e.tags for e in self.entries)
