"""Parts are numbered by an integer read as a number: a run past part 99,999 keeps every row
across resumes (a text sort put ``part-100000`` before ``part-99999`` and the next part was
written over it), a part is never written over, and parts whose numbers cannot be read or
collide make the run refuse with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from choiceaudit.audit import run_scoring
from choiceaudit.errors import StoreError
from choiceaudit.scorers import FakeScorer
from choiceaudit.store import RunStore
from choiceaudit.types import Query


def _queries(n: int) -> list[Query]:
    return [Query(state=f"item {i}", options=("a", "b"), instruction="") for i in range(n)]


def test_a_run_past_part_99999_keeps_every_row_across_resumes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    queries = _queries(12)
    run_scoring(FakeScorer(), queries[:3], run, chunk_size=1)
    # the run reached part 99,999 (named, not scored: three parts renumbered)
    parts = RunStore(run).part_paths()
    for path, number in zip(parts, (99_997, 99_998, 99_999), strict=True):
        path.rename(path.with_name(f"part-{number:05d}.parquet"))
    counts = [len(RunStore(run).done_ids())]
    for upto in (6, 9, 12):  # three resumes, each writing parts 100000 and on
        run_scoring(FakeScorer(), queries[:upto], run, chunk_size=1)
        counts.append(len(RunStore(run).done_ids()))
    assert counts == [3, 6, 9, 12]  # rows never decrease
    names = [p.name for p in RunStore(run).part_paths()]
    assert names[:4] == [
        "part-99997.parquet",
        "part-99998.parquet",
        "part-99999.parquet",
        "part-100000.parquet",
    ]
    assert names[-1] == "part-100008.parquet"
    rows = RunStore(run).load().rows
    assert [r.query.id for r in rows] == [q.id for q in queries]
    assert RunStore(run).manifest().rows == 12


def test_a_part_is_never_written_over(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    run_scoring(FakeScorer(), _queries(2), store, chunk_size=1)
    with store.lock():
        store.write_part([])  # the next number, read once
        (store.parts_dir / "part-00003.parquet").write_bytes(b"another writer's part")
        with pytest.raises(StoreError, match="never written over"):
            store.write_part([])


@pytest.mark.parametrize(
    ("names", "says"),
    [
        (["part-00001.parquet", "part-1.parquet"], "carry the same number"),
        (["part-x1.parquet"], "number cannot be read"),
    ],
)
def test_parts_whose_numbers_are_inconsistent_are_refused(
    names: list[str], says: str, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run_scoring(FakeScorer(), _queries(2), run, chunk_size=1)
    source = RunStore(run).part_paths()[0]
    for name in names:
        (source.parent / name).write_bytes(source.read_bytes())
    with pytest.raises(StoreError, match=says):
        run_scoring(FakeScorer(), _queries(3), run, chunk_size=1)
