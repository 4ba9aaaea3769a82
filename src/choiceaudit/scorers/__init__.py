"""Scorers: the :class:`Scorer` protocol, its backends and model resolution.

Backends are imported lazily by :func:`load_scorer`, so the core imports without torch,
transformers or sentence-transformers; a missing extra is reported with the pip command.
"""

from choiceaudit.scorers._fake import FakeScorer, hashed_content
from choiceaudit.scorers._protocol import (
    MissingBackendError,
    PartialScoreError,
    Scorer,
    ScorerError,
)
from choiceaudit.scorers._registry import (
    BUILTIN_MODELS,
    ModelInfo,
    backend_of,
    load_scorer,
    model_status,
)

__all__ = [
    "BUILTIN_MODELS",
    "FakeScorer",
    "MissingBackendError",
    "ModelInfo",
    "PartialScoreError",
    "Scorer",
    "ScorerError",
    "backend_of",
    "hashed_content",
    "load_scorer",
    "model_status",
]
