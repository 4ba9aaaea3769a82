"""Scorers: the :class:`Scorer` protocol, its backends and model resolution.

Every backend is one row of the backend table with its :class:`Capabilities` (the built-in
:data:`BACKENDS`, and any added by :func:`register_backend` or a ``choiceaudit.backends`` entry
point: :func:`registered_backends`); the layers above ask those (:func:`capabilities_of`, :func:`causal_lm_of`, :func:`resume_identity`) instead of
comparing backend names.

Backends are imported lazily by :func:`load_scorer`, so the core imports without torch,
transformers or sentence-transformers; a missing extra is reported with the pip command.
"""

from typing import TYPE_CHECKING

from choiceaudit.scorers._backends import (
    BACKEND_ENTRY_POINTS,
    BACKENDS,
    DEFAULT_IDENTITY,
    Backend,
    Capabilities,
    backend_named,
    register_backend,
    registered_backends,
    resume_identity,
)
from choiceaudit.scorers._cosine import CosineScorer
from choiceaudit.scorers._embedder import EMBEDDERS, Embedder, load_embedder
from choiceaudit.scorers._fake import FakeScorer, hashed_content
from choiceaudit.scorers._loading import (
    LoadedLM,
    cache_dir,
    conversions_this_process,
    load_causal_lm,
    resolve_causal_lm,
)
from choiceaudit.scorers._openai import OpenAIScorer
from choiceaudit.scorers._openai_rows import query_strings
from choiceaudit.scorers._openai_wire import ConformanceError
from choiceaudit.scorers._probe import ProbeFailed, ProbeResult
from choiceaudit.scorers._protocol import (
    InconsistentServerError,
    MissingBackendError,
    PartialScoreError,
    Scorer,
    ScorerError,
    ScorerOptionError,
)
from choiceaudit.scorers._registry import (
    BUILTIN_MODELS,
    ModelInfo,
    ModelSpec,
    ModelStatus,
    accepted_options,
    backend_of,
    capabilities_of,
    causal_lm_of,
    check_options,
    load_scorer,
    model_status,
    parse_model_spec,
    prepare_scorer,
    spec_forms,
)
from choiceaudit.scorers._sparrow import SparrowScorer
from choiceaudit.scorers._systemone import SystemOneScorer

if TYPE_CHECKING:  # the lazy names below, for type checkers only (importing them needs torch)
    from choiceaudit.scorers._engine import (
        ScoreSpec,
        TokenTrie,
        next_token_logits,
        sequence_logprobs,
    )
    from choiceaudit.scorers._hf import EngineOptions, HFScorer
    from choiceaudit.scorers._lm_choice import LMChoiceScorer
    from choiceaudit.scorers._prefix_cache import PrefixCache
    from choiceaudit.scorers._prompt import NextToken, PromptLogprobs, next_token, prompt_logprobs
    from choiceaudit.scorers._reference import has_reference, reference_scores

_LAZY = {
    "EngineOptions": "choiceaudit.scorers._hf",
    "HFScorer": "choiceaudit.scorers._hf",
    "LMChoiceScorer": "choiceaudit.scorers._lm_choice",
    "NextToken": "choiceaudit.scorers._prompt",
    "PrefixCache": "choiceaudit.scorers._prefix_cache",
    "PromptLogprobs": "choiceaudit.scorers._prompt",
    "next_token": "choiceaudit.scorers._prompt",
    "prompt_logprobs": "choiceaudit.scorers._prompt",
    "TokenTrie": "choiceaudit.scorers._engine",
    "ScoreSpec": "choiceaudit.scorers._engine",
    "sequence_logprobs": "choiceaudit.scorers._engine",
    "next_token_logits": "choiceaudit.scorers._engine",
    "reference_scores": "choiceaudit.scorers._reference",
    "has_reference": "choiceaudit.scorers._reference",
}


def __getattr__(name: str) -> object:
    """Backends that need torch are imported on first use, so ``import choiceaudit`` does not."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'choiceaudit.scorers' has no attribute {name!r}")


__all__ = [
    "BACKENDS",
    "BACKEND_ENTRY_POINTS",
    "BUILTIN_MODELS",
    "DEFAULT_IDENTITY",
    "EMBEDDERS",
    "Backend",
    "Capabilities",
    "ConformanceError",
    "CosineScorer",
    "Embedder",
    "EngineOptions",
    "FakeScorer",
    "HFScorer",
    "InconsistentServerError",
    "LMChoiceScorer",
    "LoadedLM",
    "MissingBackendError",
    "ModelInfo",
    "ModelSpec",
    "ModelStatus",
    "NextToken",
    "OpenAIScorer",
    "PartialScoreError",
    "PrefixCache",
    "ProbeFailed",
    "ProbeResult",
    "PromptLogprobs",
    "ScoreSpec",
    "Scorer",
    "ScorerError",
    "ScorerOptionError",
    "SparrowScorer",
    "SystemOneScorer",
    "TokenTrie",
    "accepted_options",
    "backend_named",
    "backend_of",
    "cache_dir",
    "capabilities_of",
    "causal_lm_of",
    "check_options",
    "conversions_this_process",
    "has_reference",
    "hashed_content",
    "load_causal_lm",
    "load_embedder",
    "load_scorer",
    "model_status",
    "next_token",
    "next_token_logits",
    "parse_model_spec",
    "prepare_scorer",
    "prompt_logprobs",
    "query_strings",
    "reference_scores",
    "register_backend",
    "registered_backends",
    "resolve_causal_lm",
    "resume_identity",
    "sequence_logprobs",
    "spec_forms",
]
