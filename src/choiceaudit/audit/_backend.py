"""Opening a model for a run: in process, or fanned out over Ray actors (one model each).

Every run function (``score_file``, ``run_meaning``, ``run_signalling``) opens its models here,
so ``--ray`` means the same thing for every command."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from choiceaudit.audit._fanout import RayFanout
from choiceaudit.audit._scoring import ChunkExecutor
from choiceaudit.scorers import Scorer, check_options, load_scorer

__all__ = ["RaySettings", "open_scorer"]


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
    spec: str, options: Mapping[str, Any], ray: RaySettings | None = None
) -> Iterator[tuple[Scorer, ChunkExecutor | None]]:
    """``(scorer, executor)`` for :func:`~choiceaudit.audit.run_scoring`: the model loaded
    here with no executor, or a :class:`~choiceaudit.audit.RayFanout` and its ``execute``.
    Options are checked against the backend before any worker starts."""
    if ray is None:
        yield load_scorer(spec, **options), None
        return
    check_options(spec, options)
    make = functools.partial(load_scorer, spec, **options)
    gpus = {"num_gpus": ray.gpus_per_worker} if ray.gpus_per_worker else {}
    with RayFanout(make, workers=ray.workers, address=ray.address, actor_options=gpus) as fan:
        yield fan, fan.execute
