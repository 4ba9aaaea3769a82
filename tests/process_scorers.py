"""Scorers the worker-process tests start in fresh processes: they must be importable by name
there (the test modules are not), so they live here, beside the other shared test helpers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from choiceaudit.scorers import FakeScorer, MissingBackendError, PartialScoreError


def make_fake() -> FakeScorer:
    return FakeScorer()


def cannot_open() -> FakeScorer:
    raise MissingBackendError("the model package 'nothing' is not installed: pip install nothing")


class DiesOnce(FakeScorer):
    """Kills its own worker process the first time it scores the chunk holding ``victim``."""

    def __init__(self, marker: str, victim: str) -> None:
        super().__init__()
        self.marker = marker
        self.victim = victim

    def score(self, batch: Any) -> Any:
        if any(q.id == self.victim for q in batch) and not os.path.exists(self.marker):
            Path(self.marker).write_text("died", encoding="utf-8")
            os._exit(1)
        return super().score(batch)


class FailsChunk(FakeScorer):
    """Returns only the first query of the chunk holding ``victim``."""

    def __init__(self, victim: str) -> None:
        super().__init__()
        self.victim = victim

    def score(self, batch: Any) -> Any:
        if any(q.id == self.victim for q in batch):
            done = super().score(batch[:1])
            raise PartialScoreError("gave up after retries", [*done, *[None] * (len(batch) - 1)])
        return super().score(batch)


class Buggy(FakeScorer):
    """A scorer with a bug: any chunk holding ``victim`` raises a plain exception."""

    def __init__(self, victim: str) -> None:
        super().__init__()
        self.victim = victim

    def score(self, batch: Any) -> Any:
        if any(q.id == self.victim for q in batch):
            raise KeyError("a bug in the scorer")
        return super().score(batch)
