"""Ray worker restarts are counted in the manifest, and a driver's Ray processes end with it.

The counting is tested on its own (each answer carries its actor's incarnation) without Ray;
with Ray installed, slow tests run a local cluster on loopback: a worker that kills itself once
is restarted by Ray and the run's manifest records one restart; a driver that started its own
cluster and is killed with SIGKILL leaves none of its Ray processes running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fanout_scorers
from choiceaudit import Query
from choiceaudit.audit import RayFanout, run_scoring
from choiceaudit.audit._fanout import RestartCounter
from choiceaudit.scorers import FakeScorer
from choiceaudit.store import RunStore
from fanout_scorers import DiesOnce

SRC = Path(__file__).resolve().parents[2] / "src"


def test_each_new_incarnation_of_a_worker_is_one_restart() -> None:
    counter = RestartCounter(3)
    for worker, incarnation in [(0, "a"), (0, "a"), (1, "b"), (1, "b2"), (1, "b3"), (0, "a")]:
        counter.seen(worker, incarnation)
    counter.died(2)
    counter.died(2)
    assert counter.by_worker() == [0, 2, 0]
    assert counter.total() == 2
    assert counter.lost == [2]


def _queries(n: int) -> list[Query]:
    return [
        Query(state=f"state {i}", options=(f"a{i}", f"b{i}", f"c{i}"), meta={"item_id": str(i)})
        for i in range(n)
    ]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_restarted_worker_is_counted_in_the_manifest(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.cloudpickle.register_pickle_by_value(fanout_scorers)
    qs, marker = _queries(8), str(tmp_path / "died")

    def make_dying() -> FakeScorer:
        return DiesOnce(marker, qs[4].id)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with RayFanout(make_dying, workers=2) as fan:
            run_scoring(fan, qs, tmp_path / "run", chunk_size=2, executor=fan.execute)
    finally:
        ray.shutdown()
    assert Path(marker).exists()  # the worker did die
    record = RunStore(tmp_path / "run").read_manifest()["scorer"]["ray"]
    assert record["restarts"] == 1
    assert sorted(record["restarts_by_worker"]) == [0, 1]
    assert record["workers_lost"] == []
    assert RunStore(tmp_path / "run").read_manifest()["status"] == "complete"


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

qs = [Query(state=f"s{i}", options=("a", "b"), meta={"item_id": str(i)}) for i in range(200)]
options = {"num_cpus": 2, "include_dashboard": False}
with RayFanout(make, workers=2, init_options=options) as fan:
    run_scoring(fan, qs, sys.argv[1], chunk_size=2, executor=fan.execute)
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_killed_driver_leaves_no_ray_process_of_its_own(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    psutil = pytest.importorskip("psutil")
    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = str(SRC)
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(run)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 200
        while len(RunStore(run).part_paths()) < 2:
            assert driver.poll() is None, "the driver ended before it could be killed"
            assert time.monotonic() < deadline, "the driver wrote no parts"
            time.sleep(0.1)
        ours = [
            p
            for p in psutil.Process(driver.pid).children(recursive=True)
            if "_ray_reaper" not in " ".join(p.cmdline())
        ]
        assert any(p.name() == "raylet" for p in ours), [p.name() for p in ours]
        os.kill(driver.pid, signal.SIGKILL)
    finally:
        driver.wait(timeout=30)

    def running() -> list[str]:
        alive = []
        for p in ours:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p.name())
            except psutil.NoSuchProcess:
                pass
        return alive

    deadline = time.monotonic() + 60
    while running() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert running() == []
