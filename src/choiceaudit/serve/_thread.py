"""Run the app under uvicorn: in the foreground (the CLI) or in a thread (tests, benchmarks)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import uvicorn

from choiceaudit.errors import ScorerError
from choiceaudit.net import listening_socket

__all__ = ["ServerThread", "serve_forever"]


def serve_forever(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    sock: socket.socket | None = None,
    on_listening: Callable[[], None] | None = None,
) -> None:
    """Serve ``app`` until interrupted (``choiceaudit serve-model``) on ``sock``, or on a
    socket bound to ``(host, port)`` first; ``on_listening`` is called once the address is
    bound and listening, so a server that could not bind never says it is serving."""
    sock = sock if sock is not None else listening_socket(host, port)
    try:
        if on_listening is not None:
            on_listening()
        config = uvicorn.Config(app, log_level="warning")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


class ServerThread:
    """``with ServerThread(app) as url:`` serves ``app`` on ``host`` (port 0: a free one) in a
    daemon thread, yields its base URL, and stops it on exit."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.host = host
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = ""

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise ScorerError(f"the test server on {self.host} did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{self.host}:{port}"
        return self.url

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
