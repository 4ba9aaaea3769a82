"""Opening a model for a run: in process, fanned out over worker processes on this machine, or
fanned out over Ray actors (one model each).

Every run function (``score_file``, ``run_meaning``, ``run_signalling``) opens its models here,
so ``--workers`` and ``--ray`` mean the same thing for every command."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from choiceaudit.audit._fanout import RayFanout
from choiceaudit.audit._processes import ProcessFanout
from choiceaudit.audit._scoring import ChunkExecutor
from choiceaudit.errors import InputError
from choiceaudit.scorers import (
    Scorer,
    capabilities_of,
    check_options,
    load_scorer,
    prepare_scorer,
)

__all__ = ["ProcessSettings", "RaySettings", "available_cores", "open_scorer"]


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity, where the platform says)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class ProcessSettings:
    """How many worker processes score a causal LM loaded in process (``workers``), and how
    many torch threads each runs (``threads_per_worker``; default: the available cores shared
    out, at least one). Backends that do not compute in the scoring process (HTTP clients,
    reference choosers, the fast decision models) are scored in process whatever is set."""

    workers: int
    threads_per_worker: int | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise InputError(f"must be 1 or more, got {self.workers}", field="workers")
        if self.threads_per_worker is not None and self.threads_per_worker < 1:
            raise InputError(
                f"must be 1 or more, got {self.threads_per_worker}", field="threads_per_worker"
            )

    @staticmethod
    def of(workers: int | ProcessSettings | None) -> ProcessSettings | None:
        """What every entry point's ``workers`` argument means: a number of processes (1, or
        ``None``: this process; below 1 is refused) or the settings themselves (threads per
        worker given)."""
        if workers is None or isinstance(workers, ProcessSettings):
            return workers
        return None if workers == 1 else ProcessSettings(workers)

    def threads(self) -> int:
        return self.threads_per_worker or max(1, available_cores() // self.workers)


@dataclass(frozen=True)
class RaySettings:
    """Where and how wide to fan out: ``address`` is ``"auto"`` (a cluster on this machine,
    else a local one) or a cluster address; ``workers`` actors (default: one per free CPU, or
    per GPU when ``gpus_per_worker``), each reserving ``gpus_per_worker`` GPUs."""

    address: str = "auto"
    workers: int | None = None
    gpus_per_worker: float = 0.0


@contextlib.contextmanager
def open_scorer(
    spec: str,
    options: Mapping[str, Any],
    ray: RaySettings | None = None,
    processes: ProcessSettings | None = None,
) -> Iterator[tuple[Scorer, ChunkExecutor | None]]:
    """``(scorer, executor)`` for :func:`~choiceaudit.audit.run_scoring`: the model loaded
    here with no executor, a :class:`~choiceaudit.audit.ProcessFanout` (``processes``, for a
    backend that computes in process, with more than one worker) or a
    :class:`~choiceaudit.audit.RayFanout` (``ray``) and its ``execute``. Options are checked
    against the backend before any worker starts, and a model's one-time conversion runs here
    before the workers load it."""
    if ray is not None and processes is not None:
        raise InputError("choose worker processes or Ray, not both", field="workers")
    fan_out = processes is not None and processes.workers > 1
    if ray is None and not (fan_out and capabilities_of(spec).local_compute):
        yield load_scorer(spec, **options), None
        return
    check_options(spec, options)
    make = functools.partial(load_scorer, spec, **options)
    if ray is None:
        assert processes is not None
        prepare_scorer(spec)
        with ProcessFanout(make, workers=processes.workers, threads=processes.threads()) as pool:
            yield pool, pool.execute
        return
    gpus = {"num_gpus": ray.gpus_per_worker} if ray.gpus_per_worker else {}
    with RayFanout(make, workers=ray.workers, address=ray.address, actor_options=gpus) as fan:
        yield fan, fan.execute
