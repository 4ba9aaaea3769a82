"""Within a part the scorer sees its queries sorted by prompt, and nothing stored changes: the
part's rows, their order and a resumed run are what they would be without the sort."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from choiceaudit.audit import by_prompt
from choiceaudit.audit._runs import RunJob, loaded, run_jobs
from choiceaudit.instruments.scoring import ScoreConfig
from choiceaudit.scorers import FakeScorer, PartialScoreError
from choiceaudit.store import RunStore, open_run
from choiceaudit.types import Decision, Query

# prompts deliberately out of order, with repeats, as an instrument's plan interleaves them
STATES = ["zeta", "alpha", "mid", "alpha", "zeta", "beta", "alpha", "mid", "beta"]


def _queries() -> list[Query]:
    return [Query(state=s, options=("a", "b", "c"), meta={"k": i}) for i, s in enumerate(STATES)]


class Recording(FakeScorer):
    """A fake scorer that records the order of the prompts of each call."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[list[str]] = []

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        self.seen.append([q.state for q in queries])
        return super().score(queries)


def _job(path: Path, scorer: FakeScorer) -> RunJob:
    return RunJob(
        path=path,
        label="fake",
        config=ScoreConfig(kind="score"),
        queries=_queries(),
        scorer=loaded(scorer),
    )


def test_each_part_is_scored_sorted_by_prompt_and_stored_in_input_order(tmp_path: Path) -> None:
    scorer = Recording()
    run_jobs([_job(tmp_path / "run", scorer)], chunk_size=4)
    # chunks are the input's runs of four; within each the prompts arrive sorted (stable)
    assert scorer.seen == [
        ["alpha", "alpha", "mid", "zeta"],
        ["alpha", "beta", "mid", "zeta"],
        ["beta"],
    ]
    rows = open_run(tmp_path / "run").rows
    assert [r.index for r in rows] == list(range(len(STATES)))
    assert [r.query.state for r in rows] == STATES
    # every decision belongs to its own query, not to the query scored in its place
    plain = FakeScorer().score(_queries())
    for row, want in zip(rows, plain, strict=True):
        assert row.decision.query_id == row.query.id
        assert row.decision.probs.tolist() == want.probs.tolist()
    # the parts hold the same queries as an unsorted loop writes: the input's runs of four
    parts = RunStore(tmp_path / "run").part_paths()
    import pyarrow.parquet as pq

    assert [pq.read_table(p).column("row").to_pylist() for p in parts] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8],
    ]


def test_a_resumed_run_scores_the_same_chunks_as_an_uninterrupted_one(tmp_path: Path) -> None:
    whole = Recording()
    run_jobs([_job(tmp_path / "whole", whole)], chunk_size=4)

    class StopAfterOne(Recording):
        def score(self, queries: Sequence[Query]) -> list[Decision]:
            if self.seen:
                raise KeyboardInterrupt
            return super().score(queries)

    first = StopAfterOne()
    with pytest.raises(KeyboardInterrupt):
        run_jobs([_job(tmp_path / "resumed", first)], chunk_size=4)
    rest = Recording()
    run_jobs([_job(tmp_path / "resumed", rest)], chunk_size=4)
    assert first.seen + rest.seen == whole.seen
    a, b = open_run(tmp_path / "whole").rows, open_run(tmp_path / "resumed").rows
    assert [(r.index, r.query.id, r.decision.probs.tolist()) for r in a] == [
        (r.index, r.query.id, r.decision.probs.tolist()) for r in b
    ]


def test_a_partial_failure_keeps_each_decision_with_its_own_query() -> None:
    queries = _queries()[:4]  # zeta, alpha, mid, alpha: sorted alpha, alpha, mid, zeta
    made = FakeScorer().score(queries)

    def execute(
        chunks: Sequence[Sequence[Query]],
    ) -> Iterator[tuple[int, list[Decision | None] | PartialScoreError]]:
        # the scorer fails on the last query it was given (zeta, sorted last)
        by_id = {d.query_id: d for d in made}
        done: list[Decision | None] = [by_id[q.id] for q in chunks[0]]
        done[-1] = None
        yield 0, PartialScoreError("one failed", done)

    [(index, outcome)] = list(by_prompt(execute)([queries]))
    assert index == 0 and isinstance(outcome, PartialScoreError)
    assert [d.query_id if d else None for d in outcome.completed] == [
        None,
        queries[1].id,
        queries[2].id,
        queries[3].id,
    ]
