"""A run directory read back: :class:`Run`, its manifest and its rows in input order, each a
:class:`RunRow` rebuilt from the stored columns (:func:`row_of`); the store that writes and
reads the directory is :mod:`._run`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from choiceaudit.errors import StoreError
from choiceaudit.store._queries import read_queries
from choiceaudit.store._rows import SCORE_PREFIX
from choiceaudit.types import Arm, Decision, Manifest, Query, parse_perm

__all__ = ["QUERIES", "Run", "RunRow", "row_of"]

#: The queries an instrument planned for the run, written beside the decisions (a meaning run's
#: whole plan, scored or not), so a study or a resume reads them without the instrument.
QUERIES = "queries.jsonl"


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
        """The run as an analysis reads it (:class:`~choiceaudit.types.Arm`; its configuration
        as the base :class:`~choiceaudit.types.RunConfig`: ``Arm.with_config`` types it)."""
        return Arm(
            label=label or self.label,
            source=str(self.path),
            manifest=self.manifest,
            rows=tuple((r.query, r.decision) for r in self.rows),
        )

    def planned_queries(self) -> list[Query]:
        """The queries the instrument planned for this run (:data:`QUERIES`), scored or not."""
        path = self.path / QUERIES
        if not path.is_file():
            raise StoreError(f"{self.path} holds no planned queries ({QUERIES})")
        return list(read_queries(path).queries)

    def rules(self) -> list[str]:
        """Scoring rules every row holds, ``probs`` first, the others sorted."""
        if not self.rows:
            return ["probs"]
        common = set.intersection(*(set(r.decision.scores) for r in self.rows))
        return ["probs", *sorted(common)]


def row_of(path: Path, record: dict[str, Any]) -> RunRow:
    """The stored record ``record`` of a part file at ``path`` as a :class:`RunRow`; a record
    that does not make one is a :class:`StoreError` naming the part and the row."""
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
