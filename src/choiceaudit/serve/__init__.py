"""``choiceaudit serve-model``: the local causal-LM engine behind an OpenAI-compatible
``/v1/completions`` (echo + logprobs with text offsets), so the ``openai`` scorer can be tested
against a real server and a lab can put one GPU box behind it. Needs the ``serve`` extra
(starlette, uvicorn) and the ``hf`` extra.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from choiceaudit.errors import InputError
from choiceaudit.net import listening_socket
from choiceaudit.serve._app import create_app
from choiceaudit.serve._thread import ServerThread, serve_forever

__all__ = ["ServerThread", "create_app", "load_app", "serve_forever", "serve_model"]


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


def serve_model(
    model: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    served_name: str | None = None,
    api_key: str | None = None,
    on_listening: Callable[[], None] | None = None,
    **options: Any,
) -> None:
    """Bind ``(host, port)``, load ``model`` (:func:`load_app`), call ``on_listening`` and
    serve until interrupted. The address is bound before the model loads, so an address in use
    is refused at once (an InputError naming it) rather than after the load, and nothing says
    "serving" before the bind succeeded."""
    sock = listening_socket(host, port)
    try:
        application = load_app(model, served_name=served_name, api_key=api_key, **options)
    except BaseException:
        sock.close()
        raise
    serve_forever(application, sock=sock, on_listening=on_listening)
