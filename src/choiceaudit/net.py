"""The listening socket a server binds before it says it is serving.

``choiceaudit serve-model`` and ``choiceaudit serve-human`` bind their address here first and
hand the bound socket to uvicorn, so "serving …" is printed only once the address is really
theirs, and an address in use is one :class:`~choiceaudit.errors.InputError` naming it and what
to do, before a model is loaded or a study directory is touched. Imports only ``errors``.
"""

from __future__ import annotations

import errno
import socket

from choiceaudit.errors import InputError

__all__ = ["bound_port", "listening_socket"]


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` and listening (port 0: a free one). Address reuse
    is on, as uvicorn sets it, so a restart is not refused for a connection of the previous
    server still closing; a port another process listens on is refused all the same."""
    if not 0 <= port <= 65535:
        raise InputError(f"must be 0 to 65535, got {port}", field="port")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InputError(
            f"cannot listen on {host!r}: not an address of this machine ({exc.strerror}); "
            "pass --host 127.0.0.1 or another local address",
            field="host",
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            why = "the address is already in use (another server listens there)"
            todo = "choose another --port, or stop the process listening there"
        elif exc.errno == errno.EACCES:
            why = "permission denied (ports below 1024 need privileges)"
            todo = "choose a port of 1024 or more with --port"
        else:
            why = exc.strerror or str(exc)
            todo = "choose another --host or --port"
        raise InputError(f"cannot listen on {host}:{port}: {why}; {todo}") from None
    return sock


def bound_port(sock: socket.socket) -> int:
    """The port ``sock`` is bound to (the free one chosen for port 0)."""
    return int(sock.getsockname()[1])
