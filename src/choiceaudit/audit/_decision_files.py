"""Reading per-item decision files (CSV, JSONL, Parquet) and mapping their columns to fields.

``choiceaudit import decisions`` reads files with one row per item per condition (the meaning
paper's released per-item outputs, Appendix R, or anyone's). :data:`FIELDS` names what a row can
carry; a mapping says which column holds each field. The default mapping is the identity on the
field names; ``--map field=column`` (repeatable) or a mapping file overrides it. A mapping file
is TOML (``.toml``) or JSON: ``{"map": {"gold_position": "gold_pos", "probs": ["pA", "pB",
"pC", "pD"]}, "values": {"experiment": {"ladder": "e1"}}}`` — ``map`` as the flags, ``values``
renaming a field's values (applied before the built-in case folding of experiment and family).

Cells that hold a list (``probs``, ``options``, ``keys``, ``perm``) may be a list (JSONL,
Parquet), a JSON list in a CSV cell, or several columns named in the mapping (``probs=pA,pB,…``).
"""

from __future__ import annotations

import csv
import json
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from choiceaudit.errors import InputError

__all__ = [
    "FIELDS",
    "LIST_FIELDS",
    "DecisionMapping",
    "as_list",
    "cell",
    "iter_rows",
    "load_mapping",
]

#: Every field a decision row can carry, with what it means (the manifest records the mapping).
FIELDS: dict[str, str] = {
    "item_id": "the item's id (pairs the rows with other runs on the same items)",
    "experiment": "e1 … e7 or matrix (case folded: E1 → e1)",
    "condition": "the condition within the experiment (d-rand …, canonical/alt1, v0 …, o0 …, "
    "p0123 …, or the language for e4 and the matrix); default the family",
    "family": "the distractor family (case folded: D-rand → d-rand); default the condition on "
    "e1, else the experiment's family (e2 d-hard, e3 and the matrix d-lit, others d-rand)",
    "language": "the test language of the row (default --language)",
    "block": "the plan block (default the experiment)",
    "state": "the text the model read (the idiom); default the item id",
    "options": "option texts in display order (a list, or one column per slot)",
    "keys": "option keys in display order (default A, B, C, D)",
    "probs": "the probability vector in display order, as returned (a list, or one column per "
    "slot)",
    "predicted_key": "the key the model returned as its choice (checked against the vector's "
    "argmax by the analysis)",
    "gold_key": "the key of the gold option",
    "gold_position": "the display slot of the gold option (0-based unless --position-base 1)",
    "literal_key": "the key of the literal option, where the list carries one",
    "literal_position": "the display slot of the literal option",
    "perm": "the display order: per slot, the canonical index of the option shown there "
    "('2031' or a list)",
    "conf_head": "a separate confidence head, where the model has one",
    "frequency": "the corpus frequency label (Appendix G strata)",
    "identity_perturbation": "true where an E3 / E6 o2 perturbation returned the intact string "
    "(the analysis excludes and counts such rows)",
}

#: Fields whose value is a list (a list cell, a JSON list in a CSV cell, or several columns).
LIST_FIELDS = (
    "probs",
    "options",
    "keys",
    "perm",
    "display_order",
    "option_order",
    "chosen",
    "score_pmi",
    "score_sum",
    "score_mean",
    "means_ids",
    "clues_ids",
)

DecisionMapping = dict[str, str | list[str]]


def _parse_map_value(field: str, column: str) -> str | list[str]:
    if field in LIST_FIELDS and "," in column:
        return [c.strip() for c in column.split(",") if c.strip()]
    return column


def load_mapping(
    pairs: Sequence[str],
    file: Path | str | None = None,
    *,
    fields: Mapping[str, str] = FIELDS,
) -> tuple[DecisionMapping, dict[str, dict[str, str]]]:
    """(field → column(s), field → {value → value}) from a mapping file and ``field=column``
    flags (flags win); a field not in ``fields`` (an instrument's; default the meaning and
    scoring import's) is an :class:`InputError` naming it."""
    mapping: DecisionMapping = {}
    values: dict[str, dict[str, str]] = {}
    if file is not None:
        path = Path(file)
        try:
            text = path.read_text(encoding="utf-8")
            data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
            raise InputError(f"{path}: not a readable mapping file ({e})") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}: a mapping file holds a table with 'map' and 'values'")
        _check_mapping_file(path, data)
        for field, column in dict(data.get("map") or {}).items():
            mapping[str(field)] = list(column) if isinstance(column, list) else column
        for field, renames in dict(data.get("values") or {}).items():
            values[str(field)] = dict(renames)
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise InputError(f"--map {pair!r}: give field=column (e.g. gold_position=gold_pos)")
        mapping[field.strip()] = _parse_map_value(field.strip(), column.strip())
    unknown = sorted((set(mapping) | set(values)) - set(fields))
    if unknown:
        raise InputError(
            f"unknown field(s) in the mapping: {', '.join(unknown)} (known: {', '.join(fields)})"
        )
    return mapping, values


def _check_mapping_file(path: Path, data: Mapping[str, Any]) -> None:
    """A mapping file's ``map`` is a table of field = column name (or a list of column names),
    ``values`` a table of field = {value = value}, all text; nothing else is read as one."""
    unknown = sorted(set(data) - {"map", "values"})
    if unknown:
        raise InputError(
            f"unknown key(s) {unknown}; a mapping file holds 'map' and 'values'", source=str(path)
        )
    columns = data.get("map", {})
    if not isinstance(columns, dict):
        raise InputError("is not a table of field = column", source=str(path), field="map")
    for field, column in columns.items():
        ok = isinstance(column, str) or (
            isinstance(column, list) and column and all(isinstance(c, str) for c in column)
        )
        if not ok:
            raise InputError(
                f"{column!r:.60} is not a column name or a list of column names",
                source=str(path),
                field=f"map.{field}",
            )
    renames = data.get("values", {})
    if not isinstance(renames, dict):
        raise InputError(
            "is not a table of field = {value = value}", source=str(path), field="values"
        )
    for field, table in renames.items():
        if not isinstance(table, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in table.items()
        ):
            raise InputError(
                f"{table!r:.60} is not a table of text = text",
                source=str(path),
                field=f"values.{field}",
            )


def _csv_rows(path: Path) -> Iterator[tuple[int, Mapping[str, object]]]:
    # utf-8-sig: Excel's "CSV UTF-8" starts with a byte-order mark, which would otherwise
    # become part of the first column's name
    with path.open(encoding="utf-8-sig", newline="") as fh:
        for number, row in enumerate(csv.DictReader(fh), start=2):
            yield number, {k: (None if v == "" else v) for k, v in row.items() if k is not None}


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Mapping[str, object] | str]]:
    with path.open(encoding="utf-8-sig") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, f"invalid JSON ({exc.msg})"
                continue
            yield number, value if isinstance(value, dict) else "the line is not a JSON object"


def _parquet_rows(path: Path) -> Iterator[tuple[int, Mapping[str, object]]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for an unreadable file
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    yield from enumerate(table.to_pylist(), start=1)


def iter_rows(path: Path) -> Iterator[tuple[int, Mapping[str, object] | str]]:
    """``(row number, row)`` for every row of a CSV (rows numbered from 2, after the header),
    JSONL or Parquet file; a row that cannot be read at all is its reason as a string."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            yield from _csv_rows(path)
        elif suffix in (".jsonl", ".ndjson"):
            yield from _jsonl_rows(path)
        elif suffix == ".parquet":
            yield from _parquet_rows(path)
        else:
            raise InputError(f"{path}: not a .csv, .jsonl or .parquet file")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 ({exc})") from None


def cell(row: Mapping[str, Any], mapping: DecisionMapping, field: str) -> Any:
    """The row's value of ``field`` through the mapping (a list for a several-column field);
    ``None`` where the row lacks it."""
    column = mapping.get(field, field)
    if isinstance(column, list):
        cells = [row.get(c) for c in column]
        return None if all(c is None for c in cells) else cells
    return row.get(column)


def as_list(value: Any) -> list[Any] | None:
    """A list cell: a list/tuple (also numpy arrays from Parquet), or a JSON list in text."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text.startswith("["):
            return None
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, list) else None
    if hasattr(value, "tolist"):
        value = value.tolist()
    return list(value) if isinstance(value, list | tuple) else None
