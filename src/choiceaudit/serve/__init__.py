"""``choiceaudit serve-model``: the local causal-LM engine behind an OpenAI-compatible
``/v1/completions`` (echo + logprobs with text offsets), so the ``openai`` scorer can be tested
against a real server and a lab can put one GPU box behind it. Needs the ``serve`` extra
(starlette, uvicorn) and the ``hf`` extra.
"""

from __future__ import annotations

from typing import Any

from choiceaudit.errors import InputError
from choiceaudit.serve._app import create_app
from choiceaudit.serve._thread import ServerThread, serve_forever

__all__ = ["ServerThread", "create_app", "load_app", "serve_forever"]


def load_app(
    model: str,
    *,
    served_name: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> Any:
    """Load ``model`` (a spec of the in-process causal-LM engine: ``smollm2``, ``hf:<dir>`` …)
    with its scorer ``options`` and build the app."""
    from choiceaudit.scorers import HFScorer, backend_of, capabilities_of, load_scorer

    if not capabilities_of(model).engine:
        raise InputError(
            f"serve-model serves causal LMs scored by prompt log-probability (the hf backend); "
            f"{model!r} is a {backend_of(model)} model"
        )
    scorer = load_scorer(model, **options)
    assert isinstance(scorer, HFScorer)
    return create_app(scorer, served_name=served_name, api_key=api_key)
