"""The narrow interface every backend implements: score queries, describe yourself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from choiceaudit.errors import InputError, ScorerError
from choiceaudit.types import Decision, Query

__all__ = [
    "InconsistentServerError",
    "MissingBackendError",
    "PartialScoreError",
    "Scorer",
    "ScorerError",
    "ScorerOptionError",
]


class MissingBackendError(ScorerError):
    """An optional dependency or model package is not installed; the message names the pip command."""


class ScorerOptionError(InputError, TypeError):
    """An option the backend does not accept (``-o batch_size=16`` on a causal LM). The message
    lists the options it does accept. A ``TypeError`` too, as an unexpected keyword argument is
    in Python, so callers that caught the constructor's ``TypeError`` still catch it."""

    def __init__(self, message: str, *, accepted: tuple[str, ...]) -> None:
        super().__init__(message)
        self.accepted = accepted


class InconsistentServerError(ScorerError):
    """A check made while scoring found the server answering what cannot be right or what
    contradicts its own earlier answers (the same strings scored differently in another order,
    a token missing or repeated, an impossible log-probability, another model answering). The
    rows it gave earlier in the same scoring session are no longer trusted: the run loop moves
    them aside (``quarantine/``) so a resume scores them again."""


class PartialScoreError(ScorerError):
    """Some queries of a batch failed for good (e.g. after an API's retries). ``completed`` holds,
    in query order, the decisions that did come back (``None`` for the failed ones), so the run
    store keeps them and a resumed run scores only the rest. ``distrust`` (what was observed),
    set when a failure was an :class:`InconsistentServerError`, says that neither these
    decisions nor the session's earlier ones from that server are to be kept."""

    def __init__(
        self,
        message: str,
        completed: list[Decision | None],
        *,
        query_id: str | None = None,
        distrust: str | None = None,
    ) -> None:
        super().__init__(message, query_id=query_id)
        self.completed = completed
        self.distrust = distrust


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
