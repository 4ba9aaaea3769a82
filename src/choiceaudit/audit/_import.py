"""The shared half of ``choiceaudit import lm-eval|inspect``: per-item outputs of other
harnesses as run directories.

Both importers (``_import_lm_eval``, ``_import_inspect``) read the harness's files with the
standard library only (``json``, ``zipfile``), turn every multiple-choice row into a
:class:`~choiceaudit.types.Query` and a :class:`~choiceaudit.types.Decision` and store them with
the ordinary scoring loop (a replay scorer hands back the decisions), so every generic analysis
applies: accuracy with intervals, calibration, risk–coverage, the gate, and the order audit where
an item appears under several orderings. This module holds what both (and ``import decisions``)
share: the collector of rows, refusals and warnings, and the writer of the run.

What the manifest records (``config``): the source and its version, each file's name and
sha256, every field of the harness's rows that was *not* mapped (with the number of rows that
carried it), every row that could not be mapped (counted by reason, and listed with file and
row), warnings about the harness's files (a results file that could not be read), and how the
fields were mapped. The rows' own fields are described in the package's README
(``src/choiceaudit/instruments/scoring/README.md``, "Importers").

Identity across orderings: an item is its task, its prompt (state) and its *set* of options;
the first rendering read fixes the canonical option order and every rendering records its
permutation of it, so an item the harness showed under two orders is one item with two
renderings (``perm``), and its gold option keeps one canonical index.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from typing_extensions import TypedDict

from choiceaudit.audit._scoring import RunSummary, run_scoring
from choiceaudit.errors import InputError
from choiceaudit.files import json_lines, sha256_bytes, sha256_file
from choiceaudit.instruments.scoring import ScoreConfig
from choiceaudit.store import REFUSED, RunStore
from choiceaudit.types import Decision, Query, RunConfig

__all__ = [
    "FileRecord",
    "ImportResult",
    "MetaValue",
    "RefusedRow",
    "ReplayDescription",
    "capped_reasons",
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


class _Unmappable(Exception):
    """A row that cannot become a query and decision; the message is the reason."""


@dataclass
class _Collector:
    """Rows mapped so far, rows refused, fields seen but not mapped, notes on the mapping."""

    source: str
    rows: list[tuple[Query, Decision]] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)
    listed: list[RefusedRow] = field(default_factory=list)
    unmapped: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    canonical: dict[str, tuple[str, ...]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: query id -> (file, row, index in ``rows``) of the row that gave it first
    origins: dict[str, tuple[str, int | str, int]] = field(default_factory=dict)
    identical_duplicates: int = 0

    def add(self, file: str, row: int | str, query: Query, decision: Decision) -> None:
        """Keep one mapped row. A second row for the same query (same item, condition and
        rendering) that says the same is dropped and counted; one that says something else
        is refused by name, since keeping either would choose for the user which one is true
        (nothing is written: the import stops with both rows named)."""
        first = self.origins.get(query.id)
        if first is None:
            self.origins[query.id] = (file, row, len(self.rows))
            self.rows.append((query, decision))
            return
        first_file, first_row, index = first
        differs = _first_difference(self.rows[index][1], decision)
        if differs is None:
            self.identical_duplicates += 1
            self.note("identical duplicate rows dropped (same item, condition and values)")
            return
        item = query.meta.get("item_id", query.meta.get("doc_id", query.id))
        condition = query.meta.get("condition")
        what = f"item {item}" + (f" condition {condition}" if condition is not None else "")
        where = first_row if first_file == file else f"{first_row} of {first_file}"
        raise InputError(
            f"a second row for {what} (same rendering) with another {differs} than row "
            f"{where}; keep one of the two rows, or give them different conditions",
            source=file,
            row=row,
            field=differs,
        )

    def refuse(self, file: str, row: int | str, reason: str) -> None:
        self.refused[reason] = self.refused.get(reason, 0) + 1
        self.listed.append({"file": file, "row": row, "reason": reason})

    def refusals(self) -> tuple[dict[str, object], bytes]:
        """The configuration's record of the refused rows (counted by reason, the first few
        listed, all of them counted and digested) and the ``refused.jsonl`` that holds them."""
        data = json_lines(self.listed)
        record: dict[str, object] = {
            "unmappable_rows": capped_reasons(self.refused),
            "unmappable_listed": list(self.listed[:SHOWN_REFUSED]),
            "refused_rows": {
                "file": REFUSED,
                "count": len(self.listed),
                "sha256": sha256_bytes(data),
            },
        }
        return record, data

    def unmapped_field(self, name: str) -> None:
        self.unmapped[name] = self.unmapped.get(name, 0) + 1

    def warn(self, text: str) -> None:
        """A problem with the harness's files that did not stop the import (recorded in the
        manifest and printed by the CLI)."""
        if text not in self.warnings:
            self.warnings.append(text)

    def note(self, text: str) -> None:
        self.notes[text] = self.notes.get(text, 0) + 1

    def item(self, task: str, state: str, options: Sequence[str]) -> tuple[str, tuple[int, ...]]:
        """The item id of (task, state, option set) and this rendering's permutation of the
        item's canonical order (the order first read)."""
        key = json.dumps([task, state, sorted(options)], ensure_ascii=False)
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
        item_id = f"{task}:{digest}"
        canonical = self.canonical.setdefault(item_id, tuple(options))
        return item_id, tuple(canonical.index(o) for o in options)


def _first_difference(a: Decision, b: Decision) -> str | None:
    """The first field in which two decisions for one query differ (``None``: none does)."""
    if not np.array_equal(a.probs, b.probs):
        return "probs"
    if sorted(a.scores) != sorted(b.scores) or any(
        not np.array_equal(a.scores[k], b.scores[k]) for k in a.scores
    ):
        return "scores"
    if a.n_tokens != b.n_tokens:
        return "n_tokens"
    if dict(a.aux) != dict(b.aux):
        return "aux"
    return None


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


class _Replay:
    """A scorer that returns the imported decisions (so imports use the one scoring loop)."""

    def __init__(self, decisions: Mapping[str, Decision], description: ReplayDescription) -> None:
        self._decisions = decisions
        self._description = description
        self.name = description["model"]

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        return [self._decisions[q.id] for q in queries]

    def describe(self) -> dict[str, Any]:
        return dict(self._description)


def _write(
    collector: _Collector,
    out: Path | str,
    *,
    model: str,
    version: str | None,
    files: Sequence[Path],
    mapping: Mapping[str, str],
    extra: Mapping[str, object],
    command: Sequence[str] | None,
    config_type: type[RunConfig] = ScoreConfig,
) -> ImportResult:
    """Store the collected rows as the run ``out`` (through the scoring loop, a replay scorer
    handing back the decisions), its configuration what the import did plus ``extra``, read
    as ``config_type`` (a plain scoring run's, or an instrument's)."""
    if not collector.rows:
        reasons = "; ".join(f"{n} × {r}" for r, n in sorted(collector.refused.items()))
        raise InputError(
            f"no row of {', '.join(str(f) for f in files)} could be imported"
            + (f" ({reasons})" if reasons else " (the files hold no rows)")
        )
    decisions = {q.id: d for q, d in collector.rows}
    refusals, refused_data = collector.refusals()
    description: ReplayDescription = {
        "backend": f"import:{collector.source}",
        "model": model,
        "source": collector.source,
        "source_version": version,
    }
    config: dict[str, object] = {
        "kind": "import",
        "source": collector.source,
        "source_version": version,
        "files": [FileRecord(name=f.name, sha256=sha256_file(f)) for f in files],
        "mapping": dict(mapping),
        "unmapped_fields": dict(sorted(collector.unmapped.items())),
        **refusals,
        "notes": dict(sorted(collector.notes.items())),
        "warnings": list(collector.warnings),
        **dict(extra),
    }
    summary = run_scoring(
        _Replay(decisions, description),
        [q for q, _ in collector.rows],
        out,
        chunk_size=1000,
        command=command,
        config=config_type.from_json(config),
        skipped=capped_reasons(collector.refused),
        on_accepted=lambda directory: RunStore(directory).write_refused(refused_data),
    )
    return ImportResult(
        summary=summary,
        source=collector.source,
        version=version,
        model=model,
        mapped=len(decisions),
        unmappable=dict(collector.refused),
        unmapped_fields=dict(collector.unmapped),
        warnings=tuple(collector.warnings),
        identical_duplicates=collector.identical_duplicates,
    )


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
