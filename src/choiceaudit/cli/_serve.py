"""``choiceaudit serve-model``: the local engine behind an OpenAI-compatible completions API."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from choiceaudit.cli._app import app, guarded, out, panel, parse_options


@app.command("serve-model", rich_help_panel=panel("serve-model"))
@guarded
def serve_model(
    model: Annotated[str, typer.Argument(help="Causal LM spec: smollm2, hf:<dir|gguf|hub id>.")],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    served_name: Annotated[
        str | None, typer.Option(help="Model name clients send (default: the spec).")
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(help="Require 'Authorization: Bearer $VAR' (the key is read, never printed)."),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option("--option", "-o", help="hf scorer option key=value, e.g. -o dtype=float32."),
    ] = None,
) -> None:
    """Serve a causal LM's prompt log-probabilities over HTTP.

    An OpenAI-compatible /v1/completions (echo, logprobs, max_tokens=0) for the openai scorer,
    so another machine, or many processes, score against one copy of the model.

    Example:

    \b
      choiceaudit serve-model smollm2 --port 8000
      choiceaudit score q.jsonl -m openai:smollm2 -o base_url=http://127.0.0.1:8000 --out runs/q
    """
    from choiceaudit.errors import InputError
    from choiceaudit.scorers import MissingBackendError

    try:
        from choiceaudit.serve import serve_model
    except ImportError as exc:
        raise MissingBackendError(
            f"serve-model needs starlette and uvicorn ({exc}): pip install 'choiceaudit[serve]'"
        ) from None
    api_key = None
    if api_key_env is not None:
        api_key = os.environ.get(api_key_env) or None
        if api_key is None:
            raise InputError(f"--api-key-env {api_key_env}: that environment variable is not set")
    name = served_name or model

    def announce() -> None:  # once the address is bound and the model loaded, never before
        out.print(
            f"serving {name} at http://{host}:{port}/v1/completions "
            f"(score with -m openai:{name} -o base_url=http://{host}:{port})",
            highlight=False,
        )

    serve_model(
        model,
        host=host,
        port=port,
        served_name=served_name,
        api_key=api_key,
        on_listening=announce,
        **parse_options(option or []),
    )
