"""Fuzzing the files a user hands the command line: query lines (``score``), manifests
(``report`` and ``score`` resuming a run) and corpus rows (``run meaning --dry-run`` on a
Bagdhara file). Whatever the content, a command either succeeds or ends with exit code 1 and
exactly one ``error:`` line, never a traceback. Hypothesis runs a bounded, derandomized set of
examples so the suite stays fast and every run tries the same inputs; the ``_many`` variants,
marked slow, try the same properties on more examples."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from choiceaudit.cli import app
from cli.fuzz_helpers import FEW, MANY, fresh, fuzz, holds_the_rule, json_values, runner

#: The Bagdhara corpus's 19 fields (the meaning paper's schema), in its own order.
BAGDHARA_FIELDS = (
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


_QUERY_KEYS = [
    "state",
    "options",
    "keys",
    "meta",
    "template",
    "instruction",
    "perm",
    "answer_format",
    "neutral_state",
    "id",
]
_good_query = st.fixed_dictionaries(
    {
        "state": st.text(min_size=1, max_size=8),
        "options": st.lists(st.text(min_size=1, max_size=5), min_size=2, max_size=4, unique=True),
    }
)
_fuzzed_query = st.dictionaries(st.sampled_from(_QUERY_KEYS), json_values, max_size=6)
_mutated_query = st.tuples(_good_query, st.sampled_from(_QUERY_KEYS), json_values).map(
    lambda t: {**t[0], t[1]: t[2]}
)
_query_line = (
    _fuzzed_query.map(json.dumps)
    | _mutated_query.map(lambda q: json.dumps(q, allow_nan=True))
    | json_values.map(json.dumps)
    | st.text(max_size=30)
    | st.binary(max_size=30).map(lambda b: b.decode("latin-1"))
)


_lines = st.lists(_query_line, min_size=1, max_size=4)


@fuzz(FEW * 2)
@given(lines=_lines)
def test_query_lines(scratch: Path, lines: list[str]) -> None:
    _check_query_lines(scratch, lines)


@pytest.mark.slow
@fuzz(MANY)
@given(lines=_lines)
def test_query_lines_many(scratch: Path, lines: list[str]) -> None:
    _check_query_lines(scratch, lines)


def _check_query_lines(scratch: Path, lines: list[str]) -> None:
    root = fresh(scratch)
    qfile = root / "q.jsonl"
    qfile.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
    holds_the_rule(["score", str(qfile), "-m", "fake", "--out", str(root / "run")])


_MANIFEST_KEYS = ["config", "scorer", "status", "rows", "parts", "sessions", "command", "created"]


@pytest.fixture
def scored_run(scratch: Path) -> tuple[Path, Path]:
    qfile = scratch / "q.jsonl"
    line = {"state": "s", "options": ["a", "b"], "meta": {"item_id": "1", "gold": 0}}
    qfile.write_text(json.dumps(line) + "\n", encoding="utf-8")
    run = scratch / "run"
    result = runner.invoke(app, ["score", str(qfile), "-m", "fake", "--out", str(run)])
    assert result.exit_code == 0, result.output
    return qfile, run


_manifest = (
    st.dictionaries(st.sampled_from(_MANIFEST_KEYS), json_values, max_size=5)
    | json_values
    | st.just({"config": {"instrument": "meaning"}})
    | st.just({"config": {"instrument": "signalling"}, "scorer": {"model": 1}})
)


@fuzz(FEW)
@given(manifest=_manifest, raw=st.booleans())
def test_manifests(scratch: Path, scored_run: tuple[Path, Path], manifest: Any, raw: bool) -> None:
    _check_manifest(scratch, scored_run, manifest, raw)


@pytest.mark.slow
@fuzz(MANY)
@given(manifest=_manifest, raw=st.booleans())
def test_manifests_many(
    scratch: Path, scored_run: tuple[Path, Path], manifest: Any, raw: bool
) -> None:
    _check_manifest(scratch, scored_run, manifest, raw)


def _check_manifest(scratch: Path, scored_run: tuple[Path, Path], manifest: Any, raw: bool) -> None:
    qfile, original = scored_run
    root = fresh(scratch)
    run = root / "run"
    shutil.copytree(original, run)
    text = json.dumps(manifest) if raw else json.dumps(manifest)[:-1]  # whole, or cut short
    (run / "manifest.json").write_text(text, encoding="utf-8")
    holds_the_rule(["report", str(run), "--out", str(root / "report")])
    holds_the_rule(["score", str(qfile), "-m", "fake", "--out", str(run)])


def _corpus_row(i: int) -> dict[str, Any]:
    row: dict[str, Any] = {name: None for name in BAGDHARA_FIELDS}
    row.update(
        id=i,
        idiom=f"idiom {i}",
        literal_meaning=f"literal {i}",
        figurative_meaning_bn=f"figurative {i}",
        figurative_meaning_en=f"figurative en {i}",
        alternative_idioms=[],
        similar_in_english=[],
        historical_significance=0,
        religious_significance=0,
        cultural_significance=0,
    )
    return row


_field = st.sampled_from(list(BAGDHARA_FIELDS))
_row_change = st.tuples(st.integers(0, 5), _field, json_values, st.booleans())


_changes = st.lists(_row_change, min_size=1, max_size=3)


@fuzz(FEW)
@given(changes=_changes, csv=st.booleans())
def test_corpus_rows(scratch: Path, changes: list[tuple[int, str, Any, bool]], csv: bool) -> None:
    _check_corpus_rows(scratch, changes, csv)


@pytest.mark.slow
@fuzz(MANY)
@given(changes=_changes, csv=st.booleans())
def test_corpus_rows_many(
    scratch: Path, changes: list[tuple[int, str, Any, bool]], csv: bool
) -> None:
    _check_corpus_rows(scratch, changes, csv)


def _check_corpus_rows(scratch: Path, changes: list[tuple[int, str, Any, bool]], csv: bool) -> None:
    root = fresh(scratch)
    rows = [_corpus_row(i) for i in range(1, 7)]
    for index, name, value, delete in changes:
        if delete:
            rows[index].pop(name, None)
        else:
            rows[index][name] = value
    if csv:
        import csv as csv_module

        corpus = root / "bagdhara.csv"
        with corpus.open("w", encoding="utf-8", newline="") as handle:
            writer = csv_module.writer(handle)
            writer.writerow(BAGDHARA_FIELDS)
            for row in rows:
                writer.writerow(
                    [
                        json.dumps(row[f])
                        if isinstance(row.get(f), list | dict)
                        else row.get(f, "")
                        for f in BAGDHARA_FIELDS
                    ]
                )
    else:
        corpus = root / "bagdhara.jsonl"
        corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    args = ["run", "meaning", "-m", "fake", "--out", str(root / "m"), "--corpus", "bagdhara"]
    holds_the_rule([*args, "--data", str(corpus), "--dry-run"])
