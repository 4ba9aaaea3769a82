"""Reading the cells of a norms file: text that must be UTF-8, tables whose rows must match
their header, and numeric cells that must be finite numbers or an explicit "not rated" marker.

A non-finite number (``NaN``, ``inf``, ``1e999``) in a cell is an error naming the file, row and
column rather than a missing rating: read as NaN it would drop the concept from every tile that
reads that column, visible only as a smaller pool. A file that states a cell was not rated says
so with an empty cell or ``NA`` (:data:`MISSING`).
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Sequence
from pathlib import Path

from choiceaudit.errors import unreadable
from choiceaudit.instruments.signalling._norms import NormsFormatError

__all__ = ["MISSING", "REFETCH", "fold", "number", "read_rows", "read_text", "require"]


def fold(name: str) -> str:
    """A header name folded for matching: lower case, runs of other characters as ``_``."""
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")


#: The cells a norms table uses for "not rated": read as missing (NaN), so the concept is out of
#: that source's coverage. A number written out as NaN or infinite is not one of them.
MISSING = ("", "NA", "N/A", "#N/A")
REFETCH = "re-fetch it (`choiceaudit data fetch things --dest DIR`) or fix the file"


def read_text(path: Path) -> str:
    """A norms file's text; unreadable or non-UTF-8 is an InputError naming the file."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc, what="a norms file", fix=REFETCH) from None


def number(path: Path, row: int, field: str, text: str | None, *, missing: bool = True) -> float:
    """A numeric cell: a missing marker (:data:`MISSING`, where ``missing``) is NaN; a cell that
    is not a finite number (``NaN``, ``inf``, ``1e999``, text) is an error naming the cell, since
    it would silently drop the concept from every tile that reads it."""
    if text is None:
        raise NormsFormatError(path, "row is shorter than the header", row=row, field=field)
    text = text.strip()
    if missing and text in MISSING:
        return math.nan
    try:
        value = float(text)
    except ValueError:
        raise NormsFormatError(path, f"not a number: {text!r}", row=row, field=field) from None
    if not math.isfinite(value):
        raise NormsFormatError(
            path,
            f"not a finite number: {text!r}; leave the cell empty (or NA) if it was not rated, "
            "else correct it",
            row=row,
            field=field,
        )
    return value


def read_rows(path: Path, delimiter: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of a delimited norms file; a row with more cells than the header
    is an error naming it."""
    # newline="" lets the csv module own line endings, so CRLF files parse like LF ones.
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh, delimiter=delimiter)
            if reader.fieldnames is None:
                raise NormsFormatError(path, "file is empty (no header)")
            header = [h.strip() for h in reader.fieldnames]
            reader.fieldnames = header
            rows = list(reader)
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc, what="a norms file", fix=REFETCH) from None
    for i, row in enumerate(rows, start=2):
        if None in row:  # DictReader files the cells beyond the header under the key None
            raise NormsFormatError(
                path, f"row has more cells than the header's {len(header)} columns", row=i
            )
    return header, rows


def require(path: Path, header: Sequence[str], names: Sequence[str]) -> None:
    missing = [n for n in names if n not in header]
    if missing:
        raise NormsFormatError(path, f"missing column(s) {missing}; header is {list(header)}")
