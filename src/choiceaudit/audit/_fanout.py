"""Ray fan-out: a run's pending queries scored on Ray actors, every part written by the driver.

:func:`run_scoring` cuts the queries a run still lacks into chunks of ``chunk_size`` (one chunk
is one future part: the store's shard) and hands them to an executor. :class:`RayFanout` is an
executor that scores them on ``workers`` Ray actors, each holding one scorer built once by
``make_scorer`` (one model per actor, any backend: ``hf`` on a GPU each, ``openai`` clients of
one server, ``fake``). Results come back to the driver, which alone writes: each chunk becomes
one atomically written, stamped part as soon as it returns, under the run's lock, with the
manifest updated after it, exactly as in the single-process loop. So the guarantees are the
single-process ones:

* **atomicity** — a part exists whole or not at all (temporary file, then rename);
* **no duplicate** — only the driver writes, a chunk is committed once, and a resume scores
  only the ids no part holds (``RunStore.done_ids``);
* **a killed worker loses nothing** — scoring is a pure function of the query, so Ray restarts
  the actor (``max_restarts``) and re-runs its task (``max_task_retries``); when the retries run
  out the run stops with a :class:`ScorerError`, keeping every part already written, and the
  next session scores the rest;
* **a killed driver loses nothing committed** — the actors die with its job (and, on the
  driver's machine, each actor also ends itself within a second of the driver process being
  gone, whoever runs the cluster), the parts on disk are whole, the next session closes the
  killed session in the manifest and resumes.

The manifest's ``scorer.ray`` records, per session, the chunks each worker scored, the restarts
Ray made of each (``restarts``, ``restarts_by_worker``: counted from the incarnation every answer
carries) and the workers lost for good (``workers_lost``).

Part numbers follow completion order, not input order; rows are read back in input order
(``row``), so the run's rows equal the single-process run's. Ray is an optional extra
(``pip install 'choiceaudit[ray]'``); nothing imports it until a fan-out starts.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from choiceaudit.audit._processes import hand_out
from choiceaudit.audit._scoring import (
    ChunkOutcome,
    chunk_outcome,
    outcome_result,
    score_as_one_chunk,
)
from choiceaudit.errors import ScorerError
from choiceaudit.scorers import MissingBackendError, PartialScoreError, Scorer
from choiceaudit.types import Decision, Query

__all__ = ["RayFanout", "RestartCounter"]

RAY_PIP = "pip install 'choiceaudit[ray]'"


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise MissingBackendError(f"--ray needs Ray ({exc}): {RAY_PIP}") from None
    return ray


def _driver_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process has this pid: not our driver
        return False
    return True


def _exit_with_driver(pid: int, period_s: float) -> None:
    """End this process once the driver process ``pid`` (on this machine) is gone."""
    while _driver_alive(pid):
        time.sleep(period_s)
    os._exit(0)


def _start_reaper(pythonpath: str) -> subprocess.Popen[bytes] | None:
    """Start the reaper of the local cluster this driver just started (``_ray_reaper``), so a
    driver killed outright leaves no Ray process behind; ``None`` without psutil (the only
    cost: a killed driver may then leave Ray's agents running, as Ray itself does)."""
    try:
        import psutil  # noqa: F401
    except ImportError:
        return None
    return subprocess.Popen(
        [sys.executable, "-m", "choiceaudit.audit._ray_reaper", str(os.getpid())],
        env={**os.environ, "PYTHONPATH": pythonpath},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


class _Worker:
    """The actor body: one scorer, built once; scorer failures come back as values so the
    driver can keep what a partial failure returned. Each result carries the actor's
    incarnation (a new one each time Ray restarts the actor), so the driver can count
    restarts. On the driver's machine a daemon thread ends the actor when the driver process
    is gone, so a killed driver leaves no actor behind even when the cluster outlives it."""

    def __init__(
        self,
        make_scorer: Callable[[], Scorer],
        driver: tuple[str, int] | None = None,
        period_s: float = 1.0,
    ) -> None:
        self.incarnation = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        if driver is not None and driver[0] == socket.gethostname():
            threading.Thread(
                target=_exit_with_driver, args=(driver[1], period_s), daemon=True
            ).start()
        self.scorer = make_scorer()

    def describe(self) -> tuple[dict[str, Any], str]:
        return self.scorer.describe(), self.incarnation

    def score(self, queries: Sequence[Query]) -> tuple[ChunkOutcome, str]:
        return chunk_outcome(self.scorer, queries), self.incarnation


class RestartCounter:
    """Ray restarts of each worker, counted from the incarnations its answers carry: every
    incarnation after a worker's first is one restart Ray made (a restart no answer came back
    from is not seen; a worker that died for good is counted in ``lost``)."""

    def __init__(self, workers: int) -> None:
        self._seen: list[list[str]] = [[] for _ in range(workers)]
        self.lost: list[int] = []

    def seen(self, worker: int, incarnation: str) -> None:
        if incarnation not in self._seen[worker]:
            self._seen[worker].append(incarnation)

    def died(self, worker: int) -> None:
        if worker not in self.lost:
            self.lost.append(worker)

    def by_worker(self) -> list[int]:
        return [max(len(seen) - 1, 0) for seen in self._seen]

    def total(self) -> int:
        return sum(self.by_worker())


class RayFanout:
    """``with RayFanout(make_scorer, workers=2) as fan: run_scoring(fan, queries, run,
    executor=fan.execute)``. ``address`` is ``"auto"`` (a cluster already running on this
    machine, else a fresh local one) or a cluster address; ``init_options`` go to
    ``ray.init`` (e.g. ``num_cpus``); ``actor_options`` to each actor (e.g. ``num_gpus=1``).
    The fan-out is also the run's :class:`Scorer`: ``describe`` is the first actor's scorer
    description plus a ``ray`` entry, ``score`` runs on the first actor."""

    def __init__(
        self,
        make_scorer: Callable[[], Scorer],
        *,
        workers: int | None = None,
        address: str = "auto",
        in_flight_per_worker: int = 2,
        max_restarts: int = 2,
        init_options: Mapping[str, object] | None = None,
        actor_options: Mapping[str, object] | None = None,
    ) -> None:
        if workers is not None and workers < 1:
            raise ScorerError("--ray needs at least one worker")
        if in_flight_per_worker < 1 or max_restarts < 0:
            raise ScorerError("in_flight_per_worker must be >= 1 and max_restarts >= 0")
        self.make_scorer = make_scorer
        self.requested_workers = workers
        self.address = address
        self.in_flight_per_worker = in_flight_per_worker
        self.max_restarts = max_restarts
        # keyword arguments of ray.init and of the actor's options, passed through as given
        self.init_options: dict[str, object] = dict(init_options or {})
        self.actor_options: dict[str, object] = {"num_cpus": 1, **(actor_options or {})}
        self.name = "ray-fanout"
        self._actors: list[Any] = []
        self._started_ray = False
        self._reaper: subprocess.Popen[bytes] | None = None
        self._chunks_by_worker: list[int] = []
        self._restarts = RestartCounter(0)
        self._description: dict[str, Any] | None = None

    # -- lifetime ------------------------------------------------------------------------------

    def __enter__(self) -> RayFanout:
        ray = _ray()
        # The workers (and the reaper) import this checkout's choiceaudit, wherever the driver
        # found it.
        src = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
        if not ray.is_initialized():
            address = None if self.address == "auto" else self.address
            ray.init(address=address, log_to_driver=False, **self.init_options)
            self._started_ray = True
            self._reaper = _start_reaper(path)
        n = self.requested_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        remote = ray.remote(_Worker).options(
            max_restarts=self.max_restarts,
            max_task_retries=self.max_restarts,
            runtime_env={"env_vars": {"PYTHONPATH": path}},
            **self.actor_options,
        )
        driver = (socket.gethostname(), os.getpid())
        self._actors = [remote.remote(self.make_scorer, driver) for _ in range(n)]
        self._chunks_by_worker = [0] * n
        self._restarts = RestartCounter(n)
        self.name = self.describe().get("name") or self.name
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        ray = _ray()
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False
        if self._reaper is not None:  # the cluster is down: nothing left for it to end
            self._reaper.kill()
            self._reaper.wait()
            self._reaper = None

    @property
    def workers(self) -> int:
        return len(self._actors)

    # -- the Scorer protocol -------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        ray = _ray()
        if not self._actors:
            raise ScorerError("RayFanout is used outside its `with` block")
        try:
            described, incarnation = ray.get(self._actors[0].describe.remote())
        except ray.exceptions.RayError as exc:
            raise ScorerError(
                f"the first Ray worker could not describe its scorer: {exc}"
            ) from None
        self._restarts.seen(0, incarnation)
        description = dict(described)
        description["ray"] = {
            "address": self.address,
            "workers": self.workers,
            "chunks_by_worker": list(self._chunks_by_worker),
            "max_restarts": self.max_restarts,
            "restarts": self._restarts.total(),
            "restarts_by_worker": self._restarts.by_worker(),
            "workers_lost": list(self._restarts.lost),
            "described_by": "worker 0",
        }
        return description

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        return score_as_one_chunk(self.execute, queries)

    # -- the executor --------------------------------------------------------------------------

    def execute(
        self, chunks: Sequence[Sequence[Query]]
    ) -> Iterator[tuple[int, list[Decision | None] | PartialScoreError]]:
        """Score ``chunks`` on the actors, at most ``in_flight_per_worker`` per actor; yield
        each chunk as it returns. Closing the iterator cancels the work still in flight."""
        ray = _ray()
        if not self._actors:
            raise ScorerError("RayFanout is used outside its `with` block")
        waiting = deque(range(len(chunks)))
        running: dict[Any, tuple[int, int]] = {}  # object ref -> (chunk, worker)
        load = [0] * len(self._actors)

        def send(worker: int, index: int) -> None:
            running[self._actors[worker].score.remote(list(chunks[index]))] = (index, worker)

        def submit() -> None:
            hand_out(waiting, load, self.in_flight_per_worker, send)

        try:
            submit()
            while running:
                (ref,), _ = ray.wait(list(running), num_returns=1)
                index, worker = running.pop(ref)
                load[worker] -= 1
                try:
                    outcome, incarnation = ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    self._restarts.died(worker)
                    raise ScorerError(
                        f"Ray worker {worker} died scoring chunk {index} and was not brought "
                        f"back after {self.max_restarts} restarts ({type(exc).__name__}); the "
                        "parts already written are kept and a resume scores the rest"
                    ) from None
                self._chunks_by_worker[worker] += 1
                self._restarts.seen(worker, incarnation)
                yield index, outcome_result(outcome)
                submit()
        finally:
            for ref in running:
                # a task that already finished or cannot be cancelled is left to end
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
