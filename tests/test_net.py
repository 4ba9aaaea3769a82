"""The listening socket servers bind before announcing themselves: a free port is bound and
accepts connections; a port another socket listens on, a bad port and an unknown host are each
one InputError naming the address and what to do."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from choiceaudit.errors import InputError
from choiceaudit.net import bound_port, listening_socket


@pytest.fixture
def busy() -> Iterator[int]:
    """A port another socket is listening on for the test's duration."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    try:
        yield int(holder.getsockname()[1])
    finally:
        holder.close()


def test_a_free_port_is_bound_and_accepts_a_connection() -> None:
    sock = listening_socket("127.0.0.1", 0)
    try:
        port = bound_port(sock)
        assert port > 0
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        sock.close()


def test_a_port_in_use_names_the_address_and_what_to_do(busy: int) -> None:
    with pytest.raises(InputError) as caught:
        listening_socket("127.0.0.1", busy)
    message = str(caught.value)
    assert f"cannot listen on 127.0.0.1:{busy}: the address is already in use" in message
    assert "choose another --port" in message


@pytest.mark.parametrize("port", [-1, 65536])
def test_a_port_out_of_range_is_refused(port: int) -> None:
    with pytest.raises(InputError, match=rf"port: must be 0 to 65535, got {port}"):
        listening_socket("127.0.0.1", port)


def test_an_unknown_host_is_refused() -> None:
    with pytest.raises(InputError, match=r"cannot listen on 'no such host\.invalid'"):
        listening_socket("no such host.invalid", 0)
