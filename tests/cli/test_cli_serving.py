"""``serve-model`` and ``serve-human`` say "serving" only once their address is bound: a port
in use is one ``error:`` line naming it, no "serving" line, no traceback and (for a study) no
study directory; a free port is listening by the time the announcement is made."""

from __future__ import annotations

import socket
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from choiceaudit.cli import app
from choiceaudit.human import parse_study_file, serve
from choiceaudit.net import listening_socket
from choiceaudit.serve import serve_forever
from human.human_helpers import frozen_items, study_file

runner = CliRunner()


@pytest.fixture
def busy() -> Iterator[int]:
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    try:
        yield int(holder.getsockname()[1])
    finally:
        holder.close()


def _refused(args: list[str], port: int) -> str:
    result = runner.invoke(app, args)
    text = result.output
    assert result.exit_code == 1, text
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in text
    lines = text.splitlines()
    assert sum(line.startswith("error:") for line in lines) == 1, text
    assert not any(line.startswith("serving") for line in lines), text
    joined = " ".join(text.split())
    assert f"cannot listen on 127.0.0.1:{port}: the address is already in use" in joined
    return joined


def test_serve_model_on_a_port_in_use_is_one_error_before_loading(busy: int) -> None:
    # the spec names no installed model: the bind is refused before the model is looked at
    _refused(["serve-model", "hf:/nonexistent/model", "--port", str(busy)], busy)


def test_serve_human_on_a_port_in_use_is_one_error_and_no_study(tmp_path: Path, busy: int) -> None:
    items, toml = frozen_items(tmp_path), study_file(tmp_path)
    out = tmp_path / "study"
    args = ["serve-human", str(items), "--out", str(out), "--study", str(toml)]
    _refused([*args, "--port", str(busy)], busy)
    assert not out.exists()


class _Announced(Exception):
    """Raised by the announcement callback to stop the server once it has checked the port."""


def _connects(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return True
    except OSError:
        return False


def test_serve_human_announces_only_once_the_port_listens(tmp_path: Path) -> None:
    probe = listening_socket("127.0.0.1", 0)
    port = int(probe.getsockname()[1])
    probe.close()  # a port that was free a moment ago
    seen: list[bool] = []

    def on_open(hosts: Sequence[str]) -> None:
        seen.append(_connects(port))
        raise _Announced

    spec = parse_study_file(study_file(tmp_path))
    with pytest.raises(_Announced):
        serve(frozen_items(tmp_path), tmp_path / "study", spec, port=port, on_open=on_open)
    assert seen == [True]
    assert not _connects(port)  # the socket is closed when serving ends


def test_serve_forever_announces_only_once_the_port_listens() -> None:
    sock = listening_socket("127.0.0.1", 0)
    port = int(sock.getsockname()[1])
    seen: list[bool] = []

    def on_listening() -> None:
        seen.append(_connects(port))
        raise _Announced

    with pytest.raises(_Announced):
        serve_forever(object(), sock=sock, on_listening=on_listening)
    assert seen == [True]
    assert sock.fileno() == -1  # closed
