"""Fuzzing the files a user hands the command line: query lines (``score``), manifests
(``report`` and ``score`` resuming a run) and corpus rows (``run meaning --dry-run`` on a
Bagdhara file). Whatever the content, a command either succeeds or ends with exit code 1 and
exactly one ``error:`` line, never a traceback. Hypothesis runs a bounded, derandomized set of
examples so the suite stays fast and every run tries the same inputs; the ``_many`` variants,
marked slow, try the same properties on more examples."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from choiceaudit.cli import app

runner = CliRunner()

#: The Bagdhara corpus's 19 fields (the meaning paper's schema), in its own order.
BAGDHARA_FIELDS = (
    "id", "idiom", "alternative_idioms", "literal_meaning", "figurative_meaning_bn",
    "figurative_meaning_en", "similar_in_english", "example_sentences_in_bangla",
    "example_sentences_in_english", "usage_domain", "tags", "frequency", "sentiment",
    "historical_significance", "religious_significance", "cultural_significance", "scape",
    "note", "history",
)  # fmt: skip


def _fuzz(examples: int) -> settings:
    """Hypothesis settings for ``examples`` derandomized examples with no deadline (a CLI call
    takes as long as the machine's load makes it) and no example database."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


#: Examples per test in the default suite, and in the slow-marked runs of the same properties.
FEW, MANY = 10, 150

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def _holds_the_rule(args: list[str]) -> None:
    result = runner.invoke(app, args)
    text = result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        repr(result.exception),
    )
    assert "Traceback" not in text, text
    errors = sum(line.startswith("error:") for line in text.splitlines())
    if result.exit_code == 0:
        assert errors == 0, text
    else:
        assert result.exit_code == 1, (result.exit_code, text)
        assert errors == 1, text


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A fresh directory per test (examples make their own subdirectories in it)."""
    path = Path(tempfile.mkdtemp(prefix="choiceaudit-fuzz-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _fresh(scratch: Path) -> Path:
    return Path(tempfile.mkdtemp(dir=scratch))


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
_fuzzed_query = st.dictionaries(st.sampled_from(_QUERY_KEYS), _json, max_size=6)
_mutated_query = st.tuples(_good_query, st.sampled_from(_QUERY_KEYS), _json).map(
    lambda t: {**t[0], t[1]: t[2]}
)
_query_line = (
    _fuzzed_query.map(json.dumps)
    | _mutated_query.map(lambda q: json.dumps(q, allow_nan=True))
    | _json.map(json.dumps)
    | st.text(max_size=30)
    | st.binary(max_size=30).map(lambda b: b.decode("latin-1"))
)


_lines = st.lists(_query_line, min_size=1, max_size=4)


@_fuzz(FEW * 2)
@given(lines=_lines)
def test_query_lines(scratch: Path, lines: list[str]) -> None:
    _check_query_lines(scratch, lines)


@pytest.mark.slow
@_fuzz(MANY)
@given(lines=_lines)
def test_query_lines_many(scratch: Path, lines: list[str]) -> None:
    _check_query_lines(scratch, lines)


def _check_query_lines(scratch: Path, lines: list[str]) -> None:
    root = _fresh(scratch)
    qfile = root / "q.jsonl"
    qfile.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
    _holds_the_rule(["score", str(qfile), "-m", "fake", "--out", str(root / "run")])


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
    st.dictionaries(st.sampled_from(_MANIFEST_KEYS), _json, max_size=5)
    | _json
    | st.just({"config": {"instrument": "meaning"}})
    | st.just({"config": {"instrument": "signalling"}, "scorer": {"model": 1}})
)


@_fuzz(FEW)
@given(manifest=_manifest, raw=st.booleans())
def test_manifests(scratch: Path, scored_run: tuple[Path, Path], manifest: Any, raw: bool) -> None:
    _check_manifest(scratch, scored_run, manifest, raw)


@pytest.mark.slow
@_fuzz(MANY)
@given(manifest=_manifest, raw=st.booleans())
def test_manifests_many(
    scratch: Path, scored_run: tuple[Path, Path], manifest: Any, raw: bool
) -> None:
    _check_manifest(scratch, scored_run, manifest, raw)


def _check_manifest(scratch: Path, scored_run: tuple[Path, Path], manifest: Any, raw: bool) -> None:
    qfile, original = scored_run
    root = _fresh(scratch)
    run = root / "run"
    shutil.copytree(original, run)
    text = json.dumps(manifest) if raw else json.dumps(manifest)[:-1]  # whole, or cut short
    (run / "manifest.json").write_text(text, encoding="utf-8")
    _holds_the_rule(["report", str(run), "--out", str(root / "report")])
    _holds_the_rule(["score", str(qfile), "-m", "fake", "--out", str(run)])


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
_row_change = st.tuples(st.integers(0, 5), _field, _json, st.booleans())


_changes = st.lists(_row_change, min_size=1, max_size=3)


@_fuzz(FEW)
@given(changes=_changes, csv=st.booleans())
def test_corpus_rows(scratch: Path, changes: list[tuple[int, str, Any, bool]], csv: bool) -> None:
    _check_corpus_rows(scratch, changes, csv)


@pytest.mark.slow
@_fuzz(MANY)
@given(changes=_changes, csv=st.booleans())
def test_corpus_rows_many(
    scratch: Path, changes: list[tuple[int, str, Any, bool]], csv: bool
) -> None:
    _check_corpus_rows(scratch, changes, csv)


def _check_corpus_rows(scratch: Path, changes: list[tuple[int, str, Any, bool]], csv: bool) -> None:
    root = _fresh(scratch)
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
    _holds_the_rule([*args, "--data", str(corpus), "--dry-run"])
