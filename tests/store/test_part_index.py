"""A resume reads the part index, not every part, and the index is never trusted over the parts:
a part with no entry, a part changed on disk, a part gone, a torn last line and a run written
before the index existed all give the ids and writers the parts themselves give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from choiceaudit.audit import run_scoring
from choiceaudit.scorers import FakeScorer
from choiceaudit.store import RunStore
from choiceaudit.types import Query

INDEX = "decisions/index.jsonl"


def _queries(n: int) -> list[Query]:
    return [Query(state=f"item {i}", options=("a", "b"), instruction="") for i in range(n)]


def _from_parts(store: RunStore) -> set[str]:
    return {i for p in store.part_paths() for i in pq.read_table(p).column("query_id").to_pylist()}


def _run(tmp_path: Path, n: int = 6) -> RunStore:
    store = RunStore(tmp_path / "run")
    run_scoring(FakeScorer(), _queries(n), store, chunk_size=2)
    return store


def test_a_no_op_resume_opens_no_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(tmp_path)
    opened: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> None:
        opened.append(args)
        raise AssertionError("a part was opened")

    monkeypatch.setattr(pq, "read_table", spy)
    monkeypatch.setattr(pq, "read_schema", spy)
    summary = run_scoring(FakeScorer(), _queries(6), tmp_path / "run", chunk_size=2)
    assert summary.scored == 0 and summary.already_done == 6
    assert opened == []


@pytest.mark.parametrize("damage", ["no index", "torn line", "part gone", "part rewritten"])
def test_the_index_gives_what_the_parts_give_whatever_happened(damage: str, tmp_path: Path) -> None:
    store = _run(tmp_path)
    index = store.path / INDEX
    parts = store.part_paths()
    if damage == "no index":  # a run written before the index existed
        index.unlink()
    elif damage == "torn line":  # a writer killed while appending
        text = index.read_text(encoding="utf-8")
        index.write_text(text[: len(text) - 30], encoding="utf-8")
    elif damage == "part gone":  # moved to quarantine by a repair or a distrusted server
        store.move_aside(parts[1])
    else:  # the same part number written again with other rows
        table = pq.read_table(parts[2])
        pq.write_table(table.slice(0, 1), parts[2])
    assert store.done_ids() == _from_parts(store)
    assert set(store.part_writers()) == set(store.part_paths())
    # and a resume after it ends with every query scored once
    run_scoring(FakeScorer(), _queries(8), store, chunk_size=2)
    assert store.done_ids() == _from_parts(store) == {q.id for q in _queries(8)}
    assert len(store.load().rows) == 8


def test_a_resume_by_another_scorer_is_refused_from_the_index(tmp_path: Path) -> None:
    store = _run(tmp_path)
    store.manifest_path.unlink()  # only the parts (through the index) can tell
    with pytest.raises(Exception, match="was written by scorer"):
        run_scoring(
            FakeScorer(name="other", temperature=2.0),
            _queries(8),
            RunStore(tmp_path / "run"),
            chunk_size=2,
        )


def test_a_read_only_run_is_read_from_its_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import choiceaudit.store._index as index

    store = _run(tmp_path)
    (store.path / INDEX).unlink()

    def refuse(*args: Any) -> None:
        raise PermissionError("read-only file system")

    monkeypatch.setattr(index, "atomic_write_bytes", refuse)
    assert store.done_ids() == _from_parts(store)
    assert not (store.path / INDEX).exists()
