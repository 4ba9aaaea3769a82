"""Worker processes on this machine: the rows equal the single-process run's, whichever worker
scored which chunk; a worker that cannot open its model is refused with its own reason; a worker
that dies, a partial failure and a bug stop the run with what came back kept, and a resume
completes it; only backends that compute in process fan out."""

from __future__ import annotations

import functools
import multiprocessing
from pathlib import Path

import pytest

from choiceaudit import Query
from choiceaudit.audit import ProcessFanout, ProcessSettings, run_scoring
from choiceaudit.audit._backend import open_scorer
from choiceaudit.audit._processes import start_worker_server, worker_cpu_seconds
from choiceaudit.errors import InputError
from choiceaudit.scorers import FakeScorer, MissingBackendError, PartialScoreError, ScorerError
from choiceaudit.store import RunStore
from fanout_scorers import (
    Buggy,
    DiesOnce,
    FailsChunk,
    cannot_open,
    make_fake,
    names_llama_if_preloaded,
    queries,
    rows,
    save_char_llama,
)

pytestmark = pytest.mark.timeout(120)


def test_worker_processes_give_the_in_process_rows(tmp_path: Path) -> None:
    qs = queries(9)
    before = worker_cpu_seconds()
    with ProcessFanout(make_fake, workers=2, threads=1) as fan:
        summary = run_scoring(fan, qs, tmp_path / "two", chunk_size=2, executor=fan.execute)
        described = fan.describe()["processes"]
    run_scoring(FakeScorer(), qs, tmp_path / "one", chunk_size=2)
    assert summary.scored == 9 and summary.parts_written == 5
    assert rows(tmp_path / "two") == rows(tmp_path / "one")
    assert described["workers"] == 2 and described["threads_per_worker"] == 1
    assert sum(described["chunks_by_worker"]) == 5
    assert min(described["chunks_by_worker"]) >= 1  # both workers took chunks
    assert worker_cpu_seconds() > before
    manifest = RunStore(tmp_path / "two").read_manifest()
    assert manifest["scorer"]["processes"]["workers"] == 2
    assert manifest["status"] == "complete"


def test_workers_fork_from_a_server_started_early_with_the_loading_modules_imported(
    tmp_path: Path,
) -> None:
    """The server can be started before any fan-out (twice is harmless); its workers then find
    the modules that load a model already imported, and score as before."""
    pytest.importorskip("transformers")
    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("workers start as fresh interpreters here")
    start_worker_server()
    start_worker_server()
    with ProcessFanout(names_llama_if_preloaded, workers=2, threads=1) as fan:
        assert fan.describe()["name"] == "preloaded"
        run_scoring(fan, queries(4), tmp_path / "run", chunk_size=2, executor=fan.execute)
    assert RunStore(tmp_path / "run").read_manifest()["status"] == "complete"


def test_no_worker_server_is_started_where_the_platform_has_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from multiprocessing import forkserver

    def refuse() -> None:
        raise AssertionError("a server was started")

    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    monkeypatch.setattr(forkserver, "ensure_running", refuse)
    start_worker_server()


def test_a_worker_that_cannot_open_its_model_is_refused_with_its_reason() -> None:
    with (
        pytest.raises(MissingBackendError, match="pip install nothing"),
        ProcessFanout(cannot_open, workers=2),
    ):
        pass


def test_a_worker_that_dies_stops_the_run_and_a_resume_completes_it(tmp_path: Path) -> None:
    qs = queries(8)
    run = tmp_path / "run"
    dies = functools.partial(DiesOnce, str(tmp_path / "marker"), qs[5].id)
    with (
        ProcessFanout(dies, workers=2, in_flight_per_worker=1) as fan,
        pytest.raises(ScorerError, match=r"worker process \d \(pid \d+\) died while scoring"),
    ):
        run_scoring(fan, qs, run, chunk_size=2, executor=fan.execute)
    assert RunStore(run).read_manifest()["status"] == "failed"
    kept = RunStore(run).done_ids()
    assert qs[5].id not in kept
    with ProcessFanout(make_fake, workers=2) as fan:
        summary = run_scoring(fan, qs, run, chunk_size=2, executor=fan.execute)
    assert summary.already_done == len(kept) and summary.scored == 8 - len(kept)
    run_scoring(FakeScorer(), qs, tmp_path / "one", chunk_size=2)
    assert sorted(rows(run), key=lambda r: r["row"]) == rows(tmp_path / "one")


def test_a_partial_failure_keeps_what_came_back(tmp_path: Path) -> None:
    qs = queries(6)
    run = tmp_path / "run"
    failing = functools.partial(FailsChunk, qs[2].id)
    with (
        ProcessFanout(failing, workers=2, in_flight_per_worker=1) as fan,
        pytest.raises(PartialScoreError, match="gave up"),
    ):
        run_scoring(fan, qs, run, chunk_size=3, executor=fan.execute)
    done = RunStore(run).done_ids()
    assert qs[0].id in done and qs[1].id not in done
    assert RunStore(run).read_manifest()["status"] == "incomplete"


def test_a_bug_in_a_worker_comes_back_with_its_traceback(tmp_path: Path) -> None:
    qs = queries(4)
    with (
        ProcessFanout(functools.partial(Buggy, qs[3].id), workers=2) as fan,
        pytest.raises(ScorerError, match=r"(?s)KeyError: 'a bug in the scorer'.*Traceback"),
    ):
        run_scoring(fan, qs, tmp_path / "run", chunk_size=2, executor=fan.execute)


def test_only_backends_that_compute_in_process_fan_out() -> None:
    with open_scorer("fake", {}, processes=ProcessSettings(2)) as (scorer, executor):
        assert executor is None and isinstance(scorer, FakeScorer)


@pytest.mark.parametrize(("workers", "threads"), [(0, None), (2, 0)])
def test_impossible_settings_are_refused(workers: int, threads: int | None) -> None:
    with pytest.raises(InputError, match="must be 1 or more"):
        ProcessSettings(workers, threads)


def test_a_causal_lm_in_one_thread_workers_gives_the_in_process_bits(tmp_path: Path) -> None:
    """Each worker loads its own copy of a tiny random Llama from disk (``hf:<dir>``); on one
    thread the engine's numbers for a query do not depend on its batch-mates, so the rows are
    the in-process one-thread rows to the bit, and ``lm-choice`` over it fans out too."""
    import numpy as np

    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")

    from choiceaudit.scorers import load_scorer

    directory = save_char_llama(tmp_path / "tiny", positions=128, keys="ABC")
    qs = [
        Query(
            state=f"s{i}", options=("yes", "no", "maybe"), neutral_state="", template="{state}\nA:"
        )
        for i in range(7)
    ]
    for spec in (f"hf:{directory}", f"lm-choice:hf:{directory}"):
        name = spec.split(":")[0]
        with open_scorer(spec, {}, processes=ProcessSettings(2, 1)) as (fan, executor):
            assert isinstance(fan, ProcessFanout) and executor is not None
            run_scoring(fan, qs, tmp_path / f"{name}-two", chunk_size=2, executor=executor)
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            run_scoring(load_scorer(spec), qs, tmp_path / f"{name}-one", chunk_size=2)
        finally:
            torch.set_num_threads(before)
        a = RunStore(tmp_path / f"{name}-two").load()
        b = RunStore(tmp_path / f"{name}-one").load()
        assert [r.query.id for r in a.rows] == [r.query.id for r in b.rows]
        for x, y in zip(a.rows, b.rows, strict=True):
            assert x.decision.scores.keys() == y.decision.scores.keys()
            for rule in x.decision.scores:
                np.testing.assert_array_equal(x.decision.scores[rule], y.decision.scores[rule])
        assert a.manifest.scorer["processes"]["threads_per_worker"] == 1


#: a driver scoring with two slow workers; it prints the workers' pids once they are ready
SLOW_DRIVER = """
import sys
from choiceaudit.audit import ProcessFanout, run_scoring
from fanout_scorers import make_slow, queries
with ProcessFanout(make_slow, workers=2, threads=1) as fan:
    print(" ".join(str(p) for p in fan.pids), flush=True)
    run_scoring(fan, queries(8), sys.argv[1], chunk_size=1, executor=fan.execute)
"""


def _ended(pid: int) -> bool:
    """Gone, or a zombie nobody has reaped yet (it computes nothing either way)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except FileNotFoundError:
        return True


def test_workers_end_within_seconds_of_their_driver_being_killed(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root / "tests")])}
    driver = subprocess.Popen(
        [sys.executable, "-c", SLOW_DRIVER, str(tmp_path / "run")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert driver.stdout is not None
        pids = [int(p) for p in driver.stdout.readline().split()]
        assert len(pids) == 2, "the driver did not start its workers"
        time.sleep(1.0)  # each worker now holds chunks it would take minutes to score
        assert not any(_ended(p) for p in pids)
        os.kill(driver.pid, signal.SIGKILL)
        killed = time.monotonic()
    finally:
        driver.wait(timeout=30)
    while not all(_ended(p) for p in pids) and time.monotonic() - killed < 30:
        time.sleep(0.1)
    waited = time.monotonic() - killed
    assert all(_ended(p) for p in pids), "the workers outlived their driver by 30 s"
    assert waited < 5, f"the workers took {waited:.1f} s to notice their driver was gone"
