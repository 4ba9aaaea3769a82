"""The one run loop: jobs are filled in order, each under its configuration type, with its
progress label, its hooks and the files it writes beside the decisions; a second call resumes."""

from __future__ import annotations

import json
from pathlib import Path

from choiceaudit.audit._runs import ReplayScorer, RunJob, loaded, run_jobs
from choiceaudit.instruments.scoring import ScoreConfig
from choiceaudit.store import RunStore, open_run
from choiceaudit.types import Decision, Query


def _queries(n: int) -> list[Query]:
    return [Query(state=f"s{i}", options=("a", "b", "c")) for i in range(n)]


def test_jobs_fill_their_directories_with_typed_manifests(tmp_path: Path) -> None:
    queries = _queries(5)
    decisions = {q.id: Decision.uniform_over(q.id, 3, [i % 3]) for i, q in enumerate(queries)}
    seen: list[tuple[str, int, int]] = []
    events: list[str] = []

    def job(name: str) -> RunJob:
        scorer = ReplayScorer(decisions, {"backend": "replay", "model": name})
        return RunJob(
            path=tmp_path / name,
            label=name,
            config=ScoreConfig(kind="score"),
            queries=queries,
            scorer=loaded(scorer),
            on_accepted=lambda d: (d / "beside.txt").write_text("x"),
            notes={"imported_from": "test"},
            before=lambda store, n=name: events.append(f"before {n}"),  # type: ignore[misc]
            after=lambda store, n=name: events.append(f"after {n}"),  # type: ignore[misc]
        )

    summaries = run_jobs(
        [job("a"), job("b")], chunk_size=2, progress=lambda *a: seen.append(a), command=["t"]
    )
    assert [s.path.name for s in summaries] == ["a", "b"]
    assert events == ["before a", "after a", "before b", "after b"]
    assert [s for s in seen if s[0] == "a"] == [("a", 0, 5), ("a", 2, 5), ("a", 4, 5), ("a", 5, 5)]
    manifest = summaries[0].manifest
    assert (manifest.rows, manifest.parts, manifest.status) == (5, 3, "complete")
    assert manifest.sessions[-1]["imported_from"] == "test"
    stored = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert stored["config"] == {"kind": "score"} and stored["command"] == ["t"]
    assert "failure" not in stored
    assert (tmp_path / "a" / "beside.txt").read_text() == "x"
    run = open_run(tmp_path / "b")
    assert [r.decision.choice() for r in run.rows] == [(0,), (1,), (2,), (0,), (1,)]
    again = run_jobs([job("a")], chunk_size=2)
    assert (again[0].scored, again[0].already_done) == (0, 5)
    assert len(RunStore(tmp_path / "a").manifest().sessions) == 2
