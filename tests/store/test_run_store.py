from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from choiceaudit import Decision, Query
from choiceaudit.audit import run_scoring
from choiceaudit.scorers import FakeScorer
from choiceaudit.store import RunStore, StoreError, read_queries, write_queries

N_QUERIES = 60


def make_queries(n: int = N_QUERIES) -> list[Query]:
    out = []
    for i in range(n):
        perm = [(0, 1, 2), (2, 0, 1), (1, 2, 0)][i % 3]
        canon = (f"alpha {i}", f"beta {i}", f"gamma {i}")
        out.append(
            Query(
                state=f"state {i}",
                options=tuple(canon[j] for j in perm),
                perm=perm,
                meta={"item_id": f"item{i // 3}", "condition": "c4", "experiment": "test"},
            )
        )
    return out


def rows(store: RunStore) -> list[dict[str, Any]]:
    table: list[dict[str, Any]] = store.read_table().to_pylist()
    return table


def test_rows_hold_query_and_decision(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    queries = make_queries(6)
    scorer = FakeScorer(position_bias=[0.0, 0.0, 5.0])
    summary = run_scoring(scorer, queries, store, chunk_size=4)
    assert summary.scored == 6 and summary.parts_written == 2
    table = store.read_table()
    assert table.num_rows == 6
    first = table.to_pylist()[1]
    q = queries[1]
    assert first["query_id"] == q.id and first["perm"] == "201"
    assert first["options"] == list(q.options) and first["item_id"] == "item0"
    assert first["choice"] == [2]  # the injected slot bias decides
    assert first["choice_canonical"] == [1]  # slot 2 shows canonical option 1
    assert sum(first["probs"]) == pytest.approx(1.0, abs=1e-12)
    assert first["score_logit"][2] - first["score_logit"][0] == pytest.approx(
        5.0 + FakeScorer().logits(q)[2] - FakeScorer().logits(q)[0]
    )
    manifest = store.read_manifest()
    assert manifest["status"] == "complete" and manifest["rows"] == 6
    assert manifest["scorer"]["backend"] == "fake"


def test_finished_run_rerun_scores_nothing(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    queries = make_queries(10)
    run_scoring(FakeScorer(), queries, store, chunk_size=3)
    scorer = FakeScorer()
    summary = run_scoring(scorer, queries, store, chunk_size=3)
    assert summary.scored == 0 and summary.already_done == 10 and scorer.calls == 0
    assert len(store.read_manifest()["sessions"]) == 2


def test_duplicates_in_input_are_counted_not_scored_twice(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    queries = make_queries(4)
    summary = run_scoring(FakeScorer(), [*queries, queries[0]], store)
    assert summary.duplicates_in_input == 1 and store.read_table().num_rows == 4
    assert store.read_manifest()["sessions"][0]["duplicates_in_input"] == 1


def test_resume_refuses_a_different_scorer(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    run_scoring(FakeScorer(name="one"), make_queries(3), store)
    with pytest.raises(StoreError, match="scored by"):
        run_scoring(FakeScorer(name="two"), make_queries(3), store)


def test_stale_temporary_part_is_removed_and_never_read(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    queries = make_queries(6)
    run_scoring(FakeScorer(), queries[:3], store)
    stale = store.parts_dir / ".part-00001.parquet.abc.tmp"
    stale.write_bytes(b"half a parquet file")
    summary = run_scoring(FakeScorer(), queries, store)
    assert not stale.exists() and summary.scored == 3
    assert store.read_manifest()["sessions"][-1]["stale_partial_files_removed"] == 1


def test_second_writer_is_locked_out(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    with store.lock(), pytest.raises(StoreError, match="another process"):
        run_scoring(FakeScorer(), make_queries(2), store)


def _score_cmd(queries_file: Path, out: Path, delay: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "choiceaudit.cli",
        "score",
        str(queries_file),
        "--model",
        "fake",
        "--out",
        str(out),
        "--chunk-size",
        "4",
        "-o",
        f"delay={delay}",
    ]


def test_sigkill_mid_run_then_resume_equals_uninterrupted(tmp_path: Path) -> None:
    queries = make_queries()
    qfile = tmp_path / "queries.jsonl"
    write_queries(qfile, queries)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}

    interrupted = tmp_path / "interrupted"
    proc = subprocess.Popen(
        _score_cmd(qfile, interrupted, 0.02),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    store = RunStore(interrupted)
    deadline = time.monotonic() + 60
    while len(store.part_paths()) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    n_before = sum(pq.read_metadata(p).num_rows for p in store.part_paths())
    assert 0 < n_before < N_QUERIES, "the kill must land part-way through the run"
    killed = store.read_manifest()
    assert killed["status"] == "running"
    # each committed part updated the count; a kill between a part and its manifest update
    # can leave the count one chunk (4 queries) behind, never ahead
    assert n_before - 4 <= killed["sessions"][0]["scored"] <= n_before

    resumed = subprocess.run(
        _score_cmd(qfile, interrupted, 0.0), env=env, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{N_QUERIES - n_before} scored, {n_before} already done" in resumed.stdout
    first = RunStore(interrupted).read_manifest()["sessions"][0]
    assert first["outcome"] == "killed" and first["scored"] == n_before  # from the parts

    clean = tmp_path / "clean"
    done = subprocess.run(_score_cmd(qfile, clean, 0.0), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

    got, want = rows(RunStore(interrupted)), rows(RunStore(clean))
    assert len(got) == N_QUERIES
    assert len({r["query_id"] for r in got}) == N_QUERIES  # none duplicated
    assert got == want  # none lost, every value identical

    again = subprocess.run(
        _score_cmd(qfile, interrupted, 0.0), env=env, capture_output=True, text=True
    )
    assert "0 scored" in again.stdout
    manifest = json.loads((interrupted / "manifest.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["sessions"]) == 3


def test_query_file_roundtrip(tmp_path: Path) -> None:
    queries = make_queries(5)
    path = tmp_path / "q.jsonl"
    write_queries(path, queries)
    assert read_queries(path).queries == queries
    assert [q.id for q in read_queries(path).queries] == [q.id for q in queries]


class FlakyScorer(FakeScorer):
    """Fails for good on queries whose state is in ``bad``; returns the rest."""

    def __init__(self, bad: set[str]) -> None:
        super().__init__()
        self.bad = bad

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        from choiceaudit.scorers import PartialScoreError

        done = [None if q.state in self.bad else FakeScorer.score(self, [q])[0] for q in queries]
        if any(d is None for d in done):
            raise PartialScoreError(f"{sum(d is None for d in done)} failed", done)
        return [d for d in done if d is not None]  # all of them: a None raised above


def test_partial_failure_keeps_completed_rows_and_resume_scores_only_the_rest(
    tmp_path: Path,
) -> None:
    from choiceaudit.scorers import PartialScoreError

    store = RunStore(tmp_path / "run")
    queries = make_queries(8)
    with pytest.raises(PartialScoreError):
        run_scoring(FlakyScorer({"state 5"}), queries, store, chunk_size=4)
    assert store.done_ids() == {q.id for q in queries if q.state != "state 5"}
    manifest = store.read_manifest()
    assert (
        manifest["status"] == "incomplete"
        and "1 queries failed" in manifest["sessions"][0]["failed"]
    )
    scorer = FakeScorer()
    summary = run_scoring(scorer, queries, store, chunk_size=4)
    assert summary.scored == 1 and scorer.calls == 1
    clean = RunStore(tmp_path / "clean")
    run_scoring(FakeScorer(), queries, clean, chunk_size=4)
    assert rows(store) == rows(clean)
