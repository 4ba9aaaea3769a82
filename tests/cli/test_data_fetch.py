from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from choiceaudit.cli import app

runner = CliRunner()


@pytest.fixture()
def mirror(shared_data: Path) -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(shared_data))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]  # a partial takes any attribute
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_data_fetch_things_from_a_local_mirror(
    mirror: str, tmp_path: Path, shared_data: Path
) -> None:
    dest = tmp_path / "norms"
    result = runner.invoke(
        app, ["data", "fetch", "things", "--dest", str(dest), "--base-url", mirror]
    )
    assert result.exit_code == 0, result.output
    concepts = dest / "things" / "things_concepts.tsv"
    assert concepts.read_bytes() == (shared_data / "things" / "things_concepts.tsv").read_bytes()
    assert (dest / "SHA256SUMS.json").exists() and "downloaded" in result.output
    again = runner.invoke(
        app, ["data", "fetch", "things", "--dest", str(dest), "--base-url", mirror]
    )
    assert again.exit_code == 0 and "verified" in again.output and "downloaded" not in again.output
    concepts.write_bytes(b"tampered")
    bad = runner.invoke(app, ["data", "fetch", "things", "--dest", str(dest), "--base-url", mirror])
    assert bad.exit_code == 1 and "sha256" in bad.output.lower()


def test_unknown_bundle(tmp_path: Path) -> None:
    result = runner.invoke(app, ["data", "fetch", "swow", "--dest", str(tmp_path)])
    assert result.exit_code == 1 and "unknown bundle 'swow'" in result.output
