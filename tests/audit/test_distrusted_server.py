"""A server found inconsistent mid-run (the order check, an impossible answer) keeps no row of
that scoring session: the parts it gave move to ``quarantine/``, the manifest records what was
observed and which parts moved, and a resume against a sound server scores them again, giving
the rows of a run that never met the fault."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from choiceaudit.audit import run_scoring
from choiceaudit.scorers import OpenAIScorer, PartialScoreError
from choiceaudit.store import RunStore
from choiceaudit.types import Query
from scorers.openai_fake_server import FakeServer

#: echo requests the probe makes (one for the tiling strings, one per continued prefix)
PROBE_ECHOES = 4


def queries(n: int) -> list[Query]:
    return [
        Query(
            state=f"The cat {i}", options=("yes", "no"), instruction="", template="{state}\nAnswer:"
        )
        for i in range(n)
    ]


def scorer(server: FakeServer, **kwargs: Any) -> OpenAIScorer:
    return OpenAIScorer(
        "http://toy.test",
        "toy",
        transport=httpx.MockTransport(server),
        sleep=lambda _: None,
        max_retries=0,
        **kwargs,
    )


def rows(run: Path) -> list[tuple[str, list[float]]]:
    return [(r.query.id, r.decision.probs.tolist()) for r in RunStore(run).load().rows]


@pytest.mark.parametrize(
    ("fault", "observed"),
    [
        ("order_dependent", "scored the same text differently the second time"),
        ("nan", "log-probability nan"),
    ],
)
def test_rows_from_a_server_found_inconsistent_are_quarantined_and_rescored(
    fault: str, observed: str, tmp_path: Path
) -> None:
    # two queries (an echo and its reordered twin each) go through before the fault starts
    server = FakeServer(faults=frozenset({fault}), fault_after=PROBE_ECHOES + 4)
    run = tmp_path / "run"
    with pytest.raises(PartialScoreError) as info:
        run_scoring(scorer(server), queries(5), run, chunk_size=1)
    assert info.value.distrust is not None and observed in str(info.value)
    manifest = RunStore(run).read_manifest()
    session = manifest["sessions"][-1]
    assert session["outcome"] == "server inconsistent" and observed in session["failed"]
    assert [q["rows"] for q in session["quarantined"]] == [1, 1]
    assert manifest["rows"] == 0 and manifest["status"] == "incomplete"
    assert session["scored"] == 0
    assert len(list((run / "quarantine").glob("part-*.parquet"))) == 2
    assert RunStore(run).done_ids() == set()
    # a resume against a sound server scores every query, as a run that met no fault
    run_scoring(scorer(FakeServer()), queries(5), run, chunk_size=1)
    run_scoring(scorer(FakeServer()), queries(5), tmp_path / "direct", chunk_size=1)
    assert rows(run) == rows(tmp_path / "direct") and len(rows(run)) == 5
    assert json.loads((run / "manifest.json").read_text())["rows"] == 5


class FailsLater(FakeServer):
    """Answers 400 to every echo after the first ``fault_after``."""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.method == "POST" else {}
        if body.get("echo") and self.echoes >= self.fault_after:
            return httpx.Response(400, json={"error": {"message": "prompt too long"}})
        return super().__call__(request)


def test_an_ordinary_failure_still_keeps_the_rows_that_came_back(tmp_path: Path) -> None:
    # a server error that is not an inconsistency keeps what was scored before it
    server = FailsLater(fault_after=PROBE_ECHOES + 4)
    with pytest.raises(PartialScoreError) as info:
        run_scoring(scorer(server), queries(5), tmp_path / "run", chunk_size=1)
    assert info.value.distrust is None
    assert len(RunStore(tmp_path / "run").done_ids()) == 2


def test_a_worker_elsewhere_sends_the_distrust_back_to_the_driver() -> None:
    from choiceaudit.audit._scoring import chunk_outcome, outcome_result

    class Lying:
        name = "lying"

        def score(self, batch: Any) -> Any:
            raise PartialScoreError("x", [None], distrust="answered as another model")

        def describe(self) -> dict[str, Any]:
            return {}

    back = outcome_result(chunk_outcome(Lying(), queries(1)))  # type: ignore[arg-type]
    assert isinstance(back, PartialScoreError)
    assert back.distrust == "answered as another model"
