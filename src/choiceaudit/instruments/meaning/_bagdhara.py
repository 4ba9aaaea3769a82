"""The Bangla Bagdhara corpus (the meaning paper, §3): 19-field schema, JSONL or CSV.

Loading follows the released task contract (``task_contract.json``) step by step, and the
:class:`LoaderReport` holds the count after each:

1. ``loaded`` — every record parsed; a record missing one of the 19 fields, with an id that is not
   an integer, or with a field of the wrong type raises :class:`CorpusError` naming file, row
   and field (nothing is skipped silently).
2. ``normalised`` — every string (and every string inside a list) is Unicode NFC + strip.
3. ``deduplicated`` — rows sorted by id, duplicate ``idiom`` strings dropped keeping the lowest id
   (``sort_values('id'); drop_duplicates('idiom', keep='first')``). Rows with an empty idiom are
   dropped first (reason ``missing_idiom``); two rows with one id and different idioms are an
   error, since item ids must be unique.
4. ``usable`` — rows with a non-empty ``figurative_meaning_bn`` and ``literal_meaning``.

For the full corpus the contract records 10,359 loaded and 8,876 usable. The report also counts
``with_alt`` (non-empty ``alternative_idioms``), ``with_sim_en`` (non-empty
``similar_in_english``) and ``with_en_parenthetical`` (literal gloss carrying an English
parenthetical, Appendix J).

CSV cells holding list fields may be JSON arrays or Python list literals; any other non-empty
text is read as a one-element list. A CSV record with fewer or more cells than the header is a
:class:`CorpusError` naming the file, the row (the line the record ends on) and the first field
without its cell.
"""

from __future__ import annotations

import ast
import csv
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from choiceaudit.errors import unreadable
from choiceaudit.instruments.meaning._corpus import (
    Corpus,
    CorpusError,
    IdiomEntry,
    LoaderReport,
    normalise_text,
)
from choiceaudit.instruments.meaning._text import english_parenthetical

__all__ = ["BAGDHARA_FIELDS", "load_bagdhara"]

#: The corpus's 19-field schema, in its own order.
BAGDHARA_FIELDS: tuple[str, ...] = (
    "id",
    "idiom",
    "alternative_idioms",
    "literal_meaning",
    "figurative_meaning_bn",
    "figurative_meaning_en",
    "similar_in_english",
    "example_sentences_in_bangla",
    "example_sentences_in_english",
    "usage_domain",
    "tags",
    "frequency",
    "sentiment",
    "historical_significance",
    "religious_significance",
    "cultural_significance",
    "scape",
    "note",
    "history",
)

_LIST_FIELDS = frozenset(
    {
        "alternative_idioms",
        "similar_in_english",
        "example_sentences_in_bangla",
        "example_sentences_in_english",
        "usage_domain",
        "tags",
    }
)


@dataclass(frozen=True)
class _Row:
    """One record of the 19-field schema, checked and normalised: text fields NFC + strip
    (``""`` for a null), list fields lists of such strings (``[]`` for a null); the three
    significance fields are kept as the file gave them."""

    id: int
    idiom: str
    alternative_idioms: list[str]
    literal_meaning: str
    figurative_meaning_bn: str
    figurative_meaning_en: str
    similar_in_english: list[str]
    example_sentences_in_bangla: list[str]
    example_sentences_in_english: list[str]
    usage_domain: list[str]
    tags: list[str]
    frequency: str
    sentiment: str
    historical_significance: object
    religious_significance: object
    cultural_significance: object
    scape: str
    note: str
    history: str


def load_bagdhara(path: str | Path) -> Corpus:
    """Load a Bagdhara JSONL (``.jsonl``/``.json``) or CSV (``.csv``) file into a :class:`Corpus`."""
    path = Path(path)
    if not path.exists():
        raise CorpusError(str(path), None, None, "file not found")
    suffix = path.suffix.lower()
    try:
        if suffix in (".jsonl", ".json", ".ndjson"):
            raw = list(_read_jsonl(path))
        elif suffix == ".csv":
            raw = list(_read_csv(path))
        else:
            raise CorpusError(
                str(path), None, None, f"unknown format {suffix!r} (use .jsonl or .csv)"
            )
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc, what="the Bagdhara corpus file") from None
    report = LoaderReport(source=str(path))
    rows = [_normalise_row(str(path), row_no, rec) for row_no, rec in raw]
    report.step("loaded", len(rows))
    report.step("normalised", len(rows))

    rows.sort(key=lambda r: (r[1].id, r[0]))
    seen_idiom: dict[str, tuple[int, int]] = {}
    seen_id: dict[int, tuple[int, str]] = {}
    kept: list[tuple[int, _Row]] = []
    for row_no, rec in rows:
        rid = rec.id
        if not rec.idiom:
            report.drop("missing_idiom", rid)
            continue
        if rid in seen_id and seen_id[rid][1] != rec.idiom:
            raise CorpusError(
                str(path),
                row_no,
                "id",
                f"id {rid} is also used by row {seen_id[rid][0]} with a different idiom",
            )
        seen_id.setdefault(rid, (row_no, rec.idiom))
        if rec.idiom in seen_idiom:
            report.drop("duplicate_idiom", rid)
            continue
        seen_idiom[rec.idiom] = (rid, row_no)
        kept.append((row_no, rec))
    report.step("deduplicated", len(kept))

    entries: list[IdiomEntry] = []
    for _, rec in kept:
        if not rec.figurative_meaning_bn:
            report.drop("missing_figurative_meaning_bn", rec.id)
            continue
        if not rec.literal_meaning:
            report.drop("missing_literal_meaning", rec.id)
            continue
        entries.append(_entry(rec))
    report.step("usable", len(entries))
    report.step("with_alt", sum(1 for e in entries if e.alternatives))
    report.step("with_sim_en", sum(1 for e in entries if e.equivalents_other))
    report.step("with_en_parenthetical", sum(1 for e in entries if e.literal_other))
    return Corpus("bagdhara", "bn", tuple(entries), report, other_language="en")


def _entry(rec: _Row) -> IdiomEntry:
    idiom = rec.idiom
    alternatives = tuple(dict.fromkeys(a for a in rec.alternative_idioms if a and a != idiom))
    extra = {
        "usage_domain": rec.usage_domain,
        "frequency": rec.frequency,
        "sentiment": rec.sentiment,
        "historical_significance": rec.historical_significance,
        "religious_significance": rec.religious_significance,
        "cultural_significance": rec.cultural_significance,
        "scape": rec.scape,
    }
    return IdiomEntry(
        id=rec.id,
        expression=idiom,
        gold=rec.figurative_meaning_bn,
        literal=rec.literal_meaning,
        language="bn",
        tags=tuple(t for t in rec.tags if t),
        alternatives=alternatives,
        carriers=tuple(s for s in rec.example_sentences_in_bangla if s),
        gold_other=rec.figurative_meaning_en or None,
        literal_other=english_parenthetical(rec.literal_meaning),
        equivalents_other=tuple(s for s in rec.similar_in_english if s),
        carriers_other=tuple(s for s in rec.example_sentences_in_english if s),
        extra=extra,
    )


def _read_jsonl(path: Path) -> Iterator[tuple[int, Mapping[str, object]]]:
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(str(path), line_no, None, f"not valid JSON ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise CorpusError(str(path), line_no, None, "a record must be a JSON object")
            yield line_no, rec


def _read_csv(path: Path) -> Iterator[tuple[int, Mapping[str, object]]]:
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [f for f in BAGDHARA_FIELDS if f not in (reader.fieldnames or [])]
        if missing:
            raise CorpusError(str(path), 1, missing[0], f"header lacks columns {missing}")
        header = list(reader.fieldnames or [])
        for rec in reader:
            row_no = reader.line_num
            _check_cell_count(str(path), row_no, header, rec)
            out: dict[str, object] = {}
            for name in BAGDHARA_FIELDS:
                cell = rec[name]
                out[name] = None if cell is None or cell.strip() == "" else cell
                if name in _LIST_FIELDS and out[name] is not None:
                    out[name] = _parse_list_cell(str(path), row_no, name, cell)
            yield row_no, out


def _check_cell_count(path: str, row_no: int, header: list[str], rec: dict[Any, Any]) -> None:
    """A record with fewer cells than the header would load its trailing fields as empty, and
    one with more would lose its extra cells (``csv.DictReader`` pads with ``None`` and files the
    overflow under the key ``None``); both are errors naming the first field without its cell."""
    extra = rec.get(None)
    if extra:
        raise CorpusError(
            path,
            row_no,
            header[-1],
            f"row has {len(header) + len(extra)} cells but the header has {len(header)} columns; "
            f"cells beyond the last column {header[-1]!r}: {[str(c)[:40] for c in extra[:3]]}",
        )
    short = [name for name in header if rec.get(name) is None]
    if short:
        raise CorpusError(
            path,
            row_no,
            short[0],
            f"row has {len(header) - len(short)} cells but the header has {len(header)} columns; "
            f"no cell for {short[0]!r}"
            + (f" or the {len(short) - 1} field(s) after it" if len(short) > 1 else ""),
        )


def _parse_list_cell(path: str, row_no: int, name: str, cell: str) -> list[Any]:
    text = cell.strip()
    if not text.startswith("["):
        return [text]
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, list):
            return value
    raise CorpusError(path, row_no, name, f"cannot parse list cell {text[:60]!r}")


def _normalise_row(path: str, row_no: int, rec: Mapping[str, object]) -> tuple[int, _Row]:
    """The record as a checked, normalised :class:`_Row`; the first field (in schema order)
    that is missing or of the wrong type raises, naming file, row and field."""
    missing = [f for f in BAGDHARA_FIELDS if f not in rec]
    if missing:
        raise CorpusError(path, row_no, missing[0], f"missing field (schema has 19: {missing})")

    def strings(name: str) -> list[str]:
        value = rec[name]
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CorpusError(path, row_no, name, f"expected a list of strings, got {value!r}")
        return [normalise_text(v) for v in value]

    def text(name: str) -> str:
        value = rec[name]
        if value is not None and not isinstance(value, str):
            raise CorpusError(path, row_no, name, f"expected text, got {value!r}")
        return normalise_text(value) if value is not None else ""

    # keyword arguments are evaluated in schema order, so the first bad field is the one named
    row = _Row(
        id=_parse_id(path, row_no, rec["id"]),
        idiom=text("idiom"),
        alternative_idioms=strings("alternative_idioms"),
        literal_meaning=text("literal_meaning"),
        figurative_meaning_bn=text("figurative_meaning_bn"),
        figurative_meaning_en=text("figurative_meaning_en"),
        similar_in_english=strings("similar_in_english"),
        example_sentences_in_bangla=strings("example_sentences_in_bangla"),
        example_sentences_in_english=strings("example_sentences_in_english"),
        usage_domain=strings("usage_domain"),
        tags=strings("tags"),
        frequency=text("frequency"),
        sentiment=text("sentiment"),
        historical_significance=rec["historical_significance"],
        religious_significance=rec["religious_significance"],
        cultural_significance=rec["cultural_significance"],
        scape=text("scape"),
        note=text("note"),
        history=text("history"),
    )
    return row_no, row


def _parse_id(path: str, row_no: int, value: object) -> int:
    if isinstance(value, bool):
        raise CorpusError(path, row_no, "id", f"id must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise CorpusError(path, row_no, "id", f"id must be an integer, got {value!r}")
