"""The JSONL query format read by ``choiceaudit score`` (one JSON object per line).

Fields (only ``state`` and ``options`` are required)::

    {"state": "What is the capital of France?",      # the text the chooser reads
     "options": ["Paris", "London", "Berlin"],        # display order
     "instruction": "Answer with the city.",          # default ""
     "keys": ["A", "B", "C"],                         # default A, B, C, ...
     "neutral_state": "What is the capital?",         # for PMI; default null
     "template": "{instruction}\\n\\n{state}\\n\\nAnswer:",  # causal-LM prompt
     "answer_format": "text",                         # "text" or "key": what an LM continues with
     "perm": "201",                                   # slot i shows canonical option perm[i]
     "meta": {"item_id": "q1", "condition": "base"}}  # free JSON; item_id/condition/experiment
                                                      # are lifted into their own columns
Blank lines are ignored; every other line must be valid. Errors name the file, line and field
(a missing required field and an unknown field by name). :class:`ReadResult` keeps the line of
every query, so a scorer's error about one query can be given its input line
(:meth:`ReadResult.locate`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from choiceaudit.errors import InputError, ScorerError
from choiceaudit.files import atomic_write_text
from choiceaudit.types import DEFAULT_TEMPLATE, Query, parse_perm

__all__ = ["QueryFileError", "QueryLine", "ReadResult", "read_queries", "write_queries"]


class QueryLine(BaseModel):
    """Validated shape of one line; unknown fields are an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid", strict=True)

    state: str
    options: list[str]
    instruction: str = ""
    keys: list[str] | None = None
    neutral_state: str | None = None
    template: str = DEFAULT_TEMPLATE
    answer_format: Literal["text", "key"] = "text"
    perm: str | list[int] | None = None
    meta: dict[str, object] = {}  # open-ended JSON, carried into Query.meta as read
    id: str | None = None

    @field_validator("options")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("must list at least one option")
        return value


class QueryFileError(InputError):
    """One or more lines of a query file are invalid; ``errors`` lists (line, field, message)."""

    def __init__(self, path: Path, errors: list[tuple[int, str, str]]) -> None:
        self.path = path
        self.errors = errors
        shown = "\n".join(f"  {path}:{line}: {fld}: {msg}" for line, fld, msg in errors[:20])
        more = f"\n  … and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"{len(errors)} invalid line(s) in {path}:\n{shown}{more}")


@dataclass
class ReadResult:
    """The queries of a file, the invalid lines (when skipped), and where each query was read.

    ``lines`` maps a query id to the line it was first read from. The line is deliberately not
    put in ``Query.meta``: meta is part of the query's content hash, so the same query moved to
    another line of another file would get another id and a resumed run would score it again.
    """

    queries: list[Query]
    errors: list[tuple[int, str, str]] = field(default_factory=list)
    source: Path | None = None
    lines: dict[str, int] = field(default_factory=dict)

    def line_of(self, query_id: str) -> int | None:
        """The input line the query with this id was first read from."""
        return self.lines.get(query_id)

    def locate(self, exc: BaseException) -> None:
        """Put ``file:line`` in front of a :class:`ScorerError` about one of these queries (the
        error is changed in place, so the caller re-raises it with its type and payload)."""
        if isinstance(exc, ScorerError) and exc.query_id is not None:
            line = self.lines.get(exc.query_id)
            if line is not None and self.source is not None:
                exc.locate(str(self.source), line)


def _field_of(message: str) -> str:
    """The field a :class:`Query` validation message is about (they start ``Query.<field>``)."""
    match = re.search(r"Query\.(\w+)((?:\.\w+)?)", message)
    if match and match.group(1) in QueryLine.model_fields:
        return match.group(1) + match.group(2)
    return "perm" if "permutation" in message else "query"


def _to_query(line: QueryLine) -> Query:
    perm = line.perm
    return Query(
        state=line.state,
        options=tuple(line.options),
        instruction=line.instruction,
        keys=tuple(line.keys) if line.keys is not None else (),
        neutral_state=line.neutral_state,
        template=line.template,
        answer_format=line.answer_format,
        perm=parse_perm(perm)
        if isinstance(perm, str)
        else (tuple(perm) if perm is not None else None),
        meta=line.meta,
        id=line.id or "",
    )


def read_queries(path: Path | str, *, skip_invalid: bool = False) -> ReadResult:
    """Read a JSONL query file. Invalid lines raise :class:`QueryFileError` listing every one,
    unless ``skip_invalid``, in which case they are returned in ``errors`` (and must be counted)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QueryFileError(path, [(0, "file", "does not exist")]) from None
    except UnicodeDecodeError as exc:
        raise QueryFileError(path, [(0, "file", f"not UTF-8 ({exc})")]) from None
    except IsADirectoryError:
        raise QueryFileError(
            path, [(0, "file", "is a directory; give the JSONL query file inside it")]
        ) from None
    except OSError as exc:
        raise QueryFileError(path, [(0, "file", f"cannot be read ({exc.strerror})")]) from None
    queries: list[Query] = []
    errors: list[tuple[int, str, str]] = []
    lines: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            errors.append((number, "json", str(exc)))
            continue
        if not isinstance(data, dict):
            errors.append((number, "line", "must be a JSON object"))
            continue
        try:
            line = QueryLine.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(part) for part in err["loc"]) or "line"
                errors.append((number, loc, _message(err["type"], loc, err["msg"])))
            continue
        try:
            query = _to_query(line)
        except (ValueError, TypeError) as exc:
            errors.append((number, _field_of(str(exc)), str(exc)))
            continue
        queries.append(query)
        lines.setdefault(query.id, number)
    if errors and not skip_invalid:
        raise QueryFileError(path, errors)
    return ReadResult(queries=queries, errors=errors, source=path, lines=lines)


_REQUIRED = tuple(name for name, f in QueryLine.model_fields.items() if f.is_required())


def _message(kind: str, loc: str, message: str) -> str:
    """Pydantic's message, with the field named where it only says "Field required"."""
    if kind == "missing":
        return f"required field {loc!r} is missing (every line needs {list(_REQUIRED)})"
    if kind == "extra_forbidden":
        return f"unknown field {loc!r} (the fields are {list(QueryLine.model_fields)})"
    return message


def write_queries(path: Path | str, queries: Iterable[Query]) -> None:
    """Write queries in the same format (round-trips through :func:`read_queries`), atomically:
    the file holds the old list or the new one, never a mix."""
    lines = [json.dumps(q.to_dict(), ensure_ascii=False, sort_keys=True) + "\n" for q in queries]
    atomic_write_text(path, "".join(lines))
