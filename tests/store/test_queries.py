"""The JSONL query reader: every bad line named by file, line and field; lines kept per query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from choiceaudit.errors import ScorerError
from choiceaudit.store import QueryFileError, read_queries


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def test_a_missing_or_unknown_column_is_named(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "q.jsonl",
        [
            json.dumps({"options": ["a", "b"]}),
            json.dumps({"state": "s"}),
            json.dumps({"State": "s", "options": ["a", "b"]}),
        ],
    )
    with pytest.raises(QueryFileError) as info:
        read_queries(path)
    errors = info.value.errors
    assert errors[0] == (
        1,
        "state",
        "required field 'state' is missing (every line needs ['state', 'options'])",
    )
    assert errors[1][:2] == (2, "options") and "required field 'options' is missing" in errors[1][2]
    assert (3, "state") in [e[:2] for e in errors]
    unknown = next(e for e in errors if e[1] == "State")
    assert unknown[0] == 3 and unknown[2].startswith("unknown field 'State' (the fields are [")
    assert f"{path}:1: state: required field 'state' is missing" in str(info.value)


def test_each_query_keeps_the_line_it_was_read_from(tmp_path: Path) -> None:
    good = {"state": "s", "options": ["a", "b"]}
    path = _write(
        tmp_path / "q.jsonl",
        [json.dumps(good), "", "{oops", json.dumps({**good, "state": "t"}), json.dumps(good)],
    )
    result = read_queries(path, skip_invalid=True)
    first, second, again = result.queries
    assert again.id == first.id  # a duplicate keeps the line it was first read from
    assert [result.line_of(q.id) for q in result.queries] == [1, 4, 1]
    assert result.source == path and result.errors[0][:2] == (3, "json")
    # the line is not part of the query: meta (and so the id) is what the file says
    assert dict(second.meta) == {}


def test_locate_prefixes_only_errors_about_a_known_query(tmp_path: Path) -> None:
    path = _write(tmp_path / "q.jsonl", ["", json.dumps({"state": "s", "options": ["a", "b"]})])
    result = read_queries(path)
    (query,) = result.queries
    about = ScorerError(f"query {query.id}: too long", query_id=query.id)
    result.locate(about)
    assert str(about) == f"{path}:2: query {query.id}: too long"
    other = ScorerError("query elsewhere: too long", query_id="0" * 24)
    general = ScorerError("the model failed to load")
    result.locate(other)
    result.locate(general)
    result.locate(ValueError("not a scorer error"))
    assert str(other) == "query elsewhere: too long" and str(general) == "the model failed to load"
