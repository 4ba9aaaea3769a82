"""Ray fan-out on a local two-CPU Ray cluster: the rows equal the
single-process run's, a killed worker loses nothing and duplicates nothing, a killed driver
leaves whole parts and a resume completes the run (also under SIGKILL), a partial failure keeps
what came back, and a causal LM per actor gives the in-process rows.

The cluster starts once for the module (about 14 s on two cores; each actor start costs about
6 s more), so the module is `slow` (about 100 s); it is shut down after the last test.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import fanout_scorers
from bagdhara_synthetic import write_bagdhara
from choiceaudit import Query
from choiceaudit.audit import RayFanout, run_scoring, score_file
from choiceaudit.cli import app
from choiceaudit.scorers import FakeScorer, PartialScoreError
from choiceaudit.store import RunStore, write_queries
from fanout_scorers import DiesOnce, FailsChunk, make_fake, queries, rows, save_char_llama

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module", autouse=True)
def local_cluster() -> Iterator[None]:
    # the test module's scorers and the shared ones travel to the workers by value (the workers
    # cannot import them)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.cloudpickle.register_pickle_by_value(fanout_scorers)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_rows_equal_the_single_process_run(tmp_path: Path) -> None:
    qs = queries(11)
    run_scoring(FakeScorer(), qs, tmp_path / "one", chunk_size=3)
    with RayFanout(make_fake, workers=2) as fan:
        summary = run_scoring(fan, qs, tmp_path / "ray", chunk_size=3, executor=fan.execute)
    assert summary.scored == 11 and summary.parts_written == 4
    assert rows(tmp_path / "ray") == rows(tmp_path / "one")
    manifest = RunStore(tmp_path / "ray").read_manifest()
    assert manifest["status"] == "complete"
    assert manifest["scorer"]["ray"]["workers"] == 2
    assert sum(manifest["scorer"]["ray"]["chunks_by_worker"]) == 4
    assert all(n > 0 for n in manifest["scorer"]["ray"]["chunks_by_worker"])
    # a fan-out run and a single-process run are the same scorer: either resumes the other
    assert run_scoring(FakeScorer(), qs, tmp_path / "ray", chunk_size=3).scored == 0


def test_a_killed_worker_loses_no_row_and_duplicates_none(tmp_path: Path) -> None:
    qs = queries(9)
    marker = str(tmp_path / "died")

    def make_dying() -> FakeScorer:
        return DiesOnce(marker, qs[4].id)

    run_scoring(FakeScorer(), qs, tmp_path / "one", chunk_size=2)
    with RayFanout(make_dying, workers=2) as fan:
        run_scoring(fan, qs, tmp_path / "ray", chunk_size=2, executor=fan.execute)
    assert Path(marker).exists()  # the worker did die
    assert rows(tmp_path / "ray") == rows(tmp_path / "one")
    ids = [r["query_id"] for r in rows(tmp_path / "ray")]
    assert len(ids) == len(set(ids)) == 9


def test_a_killed_driver_leaves_whole_parts_and_a_resume_completes(tmp_path: Path) -> None:
    qs = queries(10)
    run = tmp_path / "ray"
    run_scoring(FakeScorer(), qs, tmp_path / "one", chunk_size=2)
    with RayFanout(make_fake, workers=2) as fan:

        def killed_after_two(chunks: Any) -> Any:
            for n, outcome in enumerate(fan.execute(chunks)):
                if n == 2:
                    raise KeyboardInterrupt  # the driver dies with work in flight
                yield outcome

        with pytest.raises(KeyboardInterrupt):
            run_scoring(fan, qs, run, chunk_size=2, executor=killed_after_two)
        assert len(RunStore(run).done_ids()) == 4
        for part in RunStore(run).part_paths():
            pq.read_table(part)  # every part is whole
        summary = run_scoring(fan, qs, run, chunk_size=2, executor=fan.execute)
    assert summary.already_done == 4 and summary.scored == 6
    assert rows(run) == rows(tmp_path / "one")


def test_a_partial_failure_keeps_what_came_back(tmp_path: Path) -> None:
    qs = queries(6)
    run = tmp_path / "ray"

    def make_failing() -> FakeScorer:
        return FailsChunk(qs[2].id)

    with (
        RayFanout(make_failing, workers=2, in_flight_per_worker=1) as fan,
        pytest.raises(PartialScoreError, match="gave up"),
    ):
        run_scoring(fan, qs, run, chunk_size=3, executor=fan.execute)
    done = RunStore(run).done_ids()
    assert qs[0].id in done and qs[1].id not in done
    assert RunStore(run).read_manifest()["status"] == "incomplete"
    with RayFanout(make_fake, workers=2) as fan:
        run_scoring(fan, qs, run, chunk_size=3, executor=fan.execute)
    run_scoring(FakeScorer(), qs, tmp_path / "one", chunk_size=3)
    assert [r["query_id"] for r in rows(run)] == [r["query_id"] for r in rows(tmp_path / "one")]


def test_score_command_with_ray(tmp_path: Path) -> None:
    qs = queries(7)
    write_queries(tmp_path / "q.jsonl", qs)
    result = CliRunner().invoke(
        app,
        [
            "score",
            str(tmp_path / "q.jsonl"),
            "-m",
            "fake",
            "--out",
            str(tmp_path / "run"),
            "--ray",
            "auto",
            "--ray-workers",
            "2",
            "--chunk-size",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    score_file(tmp_path / "q.jsonl", "fake", out=tmp_path / "one", chunk_size=2)
    assert rows(tmp_path / "run") == rows(tmp_path / "one")
    bad = CliRunner().invoke(
        app,
        [
            "score",
            str(tmp_path / "q.jsonl"),
            "-m",
            "fake",
            "--out",
            str(tmp_path / "r2"),
            "--ray",
            "auto",
            "-o",
            "batch_size=3",
        ],
    )
    assert bad.exit_code == 1 and "does not accept" in bad.output


DRIVER = """
import sys, time
from choiceaudit import Query
from choiceaudit.audit import RayFanout, run_scoring
from choiceaudit.scorers import FakeScorer

class Slow(FakeScorer):
    def score(self, batch):
        time.sleep(0.3)
        return super().score(batch)

def make():
    return Slow()

qs = [Query(state=f"state {i}", options=(f"a{i}", f"b{i}", f"c{i}"), meta={"item_id": str(i)})
      for i in range(int(sys.argv[3]))]
with RayFanout(make, workers=2, address=sys.argv[1]) as fan:
    run_scoring(fan, qs, sys.argv[2], chunk_size=2, executor=fan.execute)
"""


def test_a_driver_killed_with_sigkill_loses_no_row_and_duplicates_none(tmp_path: Path) -> None:
    import signal
    import subprocess
    import time

    run = tmp_path / "ray"
    address = ray.get_runtime_context().gcs_address
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, address, str(run), "40"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while len(RunStore(run).part_paths()) < 3:
            assert driver.poll() is None, "the driver ended before it could be killed"
            assert time.monotonic() < deadline, "the driver wrote no parts"
            time.sleep(0.05)
        os.kill(driver.pid, signal.SIGKILL)
    finally:
        driver.wait(timeout=30)
    left = RunStore(run).done_ids()
    assert 6 <= len(left) < 40
    qs = queries(40)
    with RayFanout(make_fake, workers=2) as fan:
        summary = run_scoring(fan, qs, run, chunk_size=2, executor=fan.execute)
    assert summary.already_done == len(left) and summary.scored == 40 - len(left)
    sessions = RunStore(run).read_manifest()["sessions"]
    assert sessions[0]["outcome"] == "killed"
    run_scoring(FakeScorer(), qs, tmp_path / "one", chunk_size=2)
    assert rows(run) == rows(tmp_path / "one")


def test_any_backend_a_causal_lm_per_actor_gives_the_in_process_rows(tmp_path: Path) -> None:
    """Each actor loads its own copy of a tiny random Llama from disk (``hf:<dir>``)."""
    import functools

    import numpy as np

    pytest.importorskip("torch")
    pytest.importorskip("transformers")

    from choiceaudit.scorers import load_scorer

    directory = save_char_llama(tmp_path / "tiny", positions=64)
    qs = [
        Query(state=f"s{i}", options=("yes", "no"), neutral_state="", template="{state}\nA:")
        for i in range(6)
    ]
    make = functools.partial(load_scorer, f"hf:{directory}")
    with RayFanout(make, workers=2) as fan:
        run_scoring(fan, qs, tmp_path / "ray", chunk_size=2, executor=fan.execute)
    run_scoring(make(), qs, tmp_path / "one", chunk_size=2)
    a, b = RunStore(tmp_path / "ray").load(), RunStore(tmp_path / "one").load()
    assert [r.query.id for r in a.rows] == [r.query.id for r in b.rows]
    for x, y in zip(a.rows, b.rows, strict=True):
        for rule in ("sum", "mean", "pmi"):
            np.testing.assert_allclose(x.decision.scores[rule], y.decision.scores[rule], atol=1e-5)
    assert a.manifest.scorer["backend"] == "hf"


def test_instrument_runs_fan_out_and_equal_the_in_process_rows(tmp_path: Path) -> None:
    from choiceaudit.audit import RaySettings, run_meaning, run_signalling

    corpus = write_bagdhara(tmp_path / "b.jsonl", 8)
    settings = RaySettings("auto", workers=2)
    kwargs: dict[str, Any] = {
        "corpus": f"bagdhara:{corpus}",
        "experiments": ["e1"],
        "n_items": 4,
        "embedder": "none",
    }
    (local,) = run_meaning(["fake"], out=tmp_path / "m-local", **kwargs)
    (fanned,) = run_meaning(["fake"], out=tmp_path / "m-ray", ray=settings, **kwargs)
    assert rows(local) == rows(fanned)
    sig: dict[str, Any] = {"norms": "lancaster", "n_items": 8, "n_candidates": 4000, "seed": 3}
    local_s = run_signalling(["fake"], ["uniform"], out=tmp_path / "s-local", **sig)
    fanned_s = run_signalling(["fake"], ["uniform"], out=tmp_path / "s-ray", ray=settings, **sig)
    for a, b in zip(local_s, fanned_s, strict=True):
        assert rows(a) == rows(b)
    assert RunStore(fanned_s[0]).read_manifest()["scorer"]["ray"]
