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
* **a killed driver loses nothing committed** — the actors die with its job, the parts on disk
  are whole, the next session closes the killed session in the manifest and resumes.

Part numbers follow completion order, not input order; rows are read back in input order
(``row``), so the run's rows equal the single-process run's. Ray is an optional extra
(``pip install 'choiceaudit[ray]'``); nothing imports it until a fan-out starts.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from choiceaudit.errors import ScorerError
from choiceaudit.scorers import MissingBackendError, PartialScoreError, Scorer
from choiceaudit.types import Decision, Query

__all__ = ["RayFanout"]

RAY_PIP = "pip install 'choiceaudit[ray]'"


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise MissingBackendError(f"--ray needs Ray ({exc}): {RAY_PIP}") from None
    return ray


class _Worker:
    """The actor body: one scorer, built once; scorer failures come back as values so the
    driver can keep what a partial failure returned."""

    def __init__(self, make_scorer: Callable[[], Scorer]) -> None:
        self.scorer = make_scorer()

    def describe(self) -> dict[str, Any]:
        return self.scorer.describe()

    def score(self, queries: Sequence[Query]) -> tuple[str, Any, str, str | None]:
        try:
            return "ok", list(self.scorer.score(queries)), "", None
        except PartialScoreError as exc:
            return "partial", exc.completed, str(exc), exc.query_id
        except ScorerError as exc:
            return "error", None, str(exc), exc.query_id


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
        init_options: dict[str, Any] | None = None,
        actor_options: dict[str, Any] | None = None,
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
        self.init_options = dict(init_options or {})
        self.actor_options = {"num_cpus": 1, **(actor_options or {})}
        self.name = "ray-fanout"
        self._actors: list[Any] = []
        self._started_ray = False
        self._chunks_by_worker: list[int] = []
        self._description: dict[str, Any] | None = None

    # -- lifetime ------------------------------------------------------------------------------

    def __enter__(self) -> RayFanout:
        ray = _ray()
        if not ray.is_initialized():
            address = None if self.address == "auto" else self.address
            ray.init(address=address, log_to_driver=False, **self.init_options)
            self._started_ray = True
        n = self.requested_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        # The workers import this checkout's choiceaudit, wherever the driver found it.
        src = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
        remote = ray.remote(_Worker).options(
            max_restarts=self.max_restarts,
            max_task_retries=self.max_restarts,
            runtime_env={"env_vars": {"PYTHONPATH": path}},
            **self.actor_options,
        )
        self._actors = [remote.remote(self.make_scorer) for _ in range(n)]
        self._chunks_by_worker = [0] * n
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

    @property
    def workers(self) -> int:
        return len(self._actors)

    # -- the Scorer protocol -------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        ray = _ray()
        if not self._actors:
            raise ScorerError("RayFanout is used outside its `with` block")
        try:
            description = dict(ray.get(self._actors[0].describe.remote()))
        except ray.exceptions.RayError as exc:
            raise ScorerError(
                f"the first Ray worker could not describe its scorer: {exc}"
            ) from None
        description["ray"] = {
            "address": self.address,
            "workers": self.workers,
            "chunks_by_worker": list(self._chunks_by_worker),
            "max_restarts": self.max_restarts,
            "described_by": "worker 0",
        }
        return description

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        chunks = [list(queries)]
        for _, outcome in self.execute(chunks):
            if isinstance(outcome, PartialScoreError):
                raise outcome
            return [d for d in outcome if d is not None]
        return []

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

        def submit() -> None:
            while waiting:
                worker = min(range(len(load)), key=load.__getitem__)
                if load[worker] >= self.in_flight_per_worker:
                    return
                index = waiting.popleft()
                ref = self._actors[worker].score.remote(list(chunks[index]))
                running[ref] = (index, worker)
                load[worker] += 1

        try:
            submit()
            while running:
                (ref,), _ = ray.wait(list(running), num_returns=1)
                index, worker = running.pop(ref)
                load[worker] -= 1
                try:
                    kind, decisions, message, query_id = ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    raise ScorerError(
                        f"Ray worker {worker} died scoring chunk {index} and was not brought "
                        f"back after {self.max_restarts} restarts ({type(exc).__name__}); the "
                        "parts already written are kept and a resume scores the rest"
                    ) from None
                self._chunks_by_worker[worker] += 1
                if kind == "error":
                    raise ScorerError(message, query_id=query_id)
                if kind == "partial":
                    yield index, PartialScoreError(message, decisions, query_id=query_id)
                else:
                    yield index, decisions
                submit()
        finally:
            for ref in running:
                # a task that already finished or cannot be cancelled is left to end
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
