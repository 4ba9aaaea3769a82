"""``meta.gold`` is validated where a query is built: a file line names its line and field, and
no invalid gold reaches an analysis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from choiceaudit.store import QueryFileError, read_queries
from choiceaudit.types import Query

BAD_GOLDS = ["NaN", "Infinity", "-Infinity", "1e999", "7", "-1", '"0"', "0.5", "true", "2"]


@pytest.mark.parametrize("gold", BAD_GOLDS)
def test_a_bad_gold_in_a_query_file_names_line_and_field(tmp_path: Path, gold: str) -> None:
    good = json.dumps({"state": "s", "options": ["a", "b"], "meta": {"gold": 1}})
    bad = '{"state": "s", "options": ["a", "b"], "meta": {"gold": ' + gold + "}}"
    path = tmp_path / "q.jsonl"
    path.write_text(good + "\n" + bad + "\n", encoding="utf-8")
    with pytest.raises(QueryFileError) as info:
        read_queries(path)
    assert info.value.errors[0][:2] == (2, "meta.gold")
    assert "gold" in info.value.errors[0][2]


def test_skipped_bad_gold_lines_are_counted_and_good_ones_kept(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    lines = [
        json.dumps({"state": "s", "options": ["a", "b"], "meta": {"gold": 0}}),
        '{"state": "t", "options": ["a", "b"], "meta": {"gold": NaN}}',
        json.dumps({"state": "u", "options": ["a", "b"], "meta": {"gold": None}}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = read_queries(path, skip_invalid=True)
    assert [q.state for q in result.queries] == ["s", "u"]
    assert [(line, fld) for line, fld, _ in result.errors] == [(2, "meta.gold")]


@pytest.mark.parametrize("gold", [0, 1, 2])
def test_an_integer_gold_of_the_options_is_accepted(gold: object) -> None:
    query = Query(state="s", options=("a", "b", "c"), meta={"gold": gold})
    assert int(query.meta["gold"]) == int(gold)  # type: ignore[call-overload]


@pytest.mark.parametrize("gold", [float("nan"), 1.0, True, "1", 3, -1])
def test_the_python_api_refuses_what_the_file_refuses(gold: object) -> None:
    with pytest.raises(ValueError, match=r"meta\.gold"):
        Query(state="s", options=("a", "b", "c"), meta={"gold": gold})
