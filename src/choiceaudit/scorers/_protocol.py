"""The narrow interface every backend implements: score queries, describe yourself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from choiceaudit.errors import InputError, ScorerError
from choiceaudit.types import Decision, Query

__all__ = ["MissingBackendError", "PartialScoreError", "Scorer", "ScorerError", "ScorerOptionError"]


class MissingBackendError(ScorerError):
    """An optional dependency or model package is not installed; the message names the pip command."""


class ScorerOptionError(InputError, TypeError):
    """An option the backend does not accept (``-o batch_size=16`` on a causal LM). The message
    lists the options it does accept. A ``TypeError`` too, as an unexpected keyword argument is
    in Python, so callers that caught the constructor's ``TypeError`` still catch it."""

    def __init__(self, message: str, *, accepted: tuple[str, ...]) -> None:
        super().__init__(message)
        self.accepted = accepted


class PartialScoreError(ScorerError):
    """Some queries of a batch failed for good (e.g. after an API's retries). ``completed`` holds,
    in query order, the decisions that did come back (``None`` for the failed ones), so the run
    store keeps them and a resumed run scores only the rest."""

    def __init__(
        self, message: str, completed: list[Decision | None], *, query_id: str | None = None
    ) -> None:
        super().__init__(message, query_id=query_id)
        self.completed = completed


@runtime_checkable
class Scorer(Protocol):
    """``score`` returns one :class:`Decision` per query, in order; ``describe`` returns the
    manifest entry (model id, sha256 of weights or revision, dtype, library versions). That
    entry is JSON written as it is, its keys the backend's own, so it stays an open dict;
    the fields code compares (the resume identity) are declared in the backend's
    capabilities, not found by reading it."""

    name: str

    def score(self, queries: Sequence[Query]) -> list[Decision]: ...

    def describe(self) -> dict[str, Any]: ...
