"""fetch_things against a local HTTP server serving the shared data (no internet)."""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from sig_helpers import shared_data

from choiceaudit.instruments.signalling import fetch_things
from choiceaudit.instruments.signalling._fetch import (
    CHECKSUM_FILE,
    THINGS_FILES,
    THINGS_SHA256,
    ChecksumError,
)
from choiceaudit.instruments.signalling._things import load_things


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(shared_data()))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_fetch_downloads_records_and_loads(server: str, tmp_path: Path) -> None:
    report = fetch_things(tmp_path, base_url=server, expected_sha256=THINGS_SHA256)
    assert set(report.status.values()) == {"downloaded"}
    for rel in THINGS_FILES:
        data = (tmp_path / rel).read_bytes()
        assert data == (shared_data() / rel).read_bytes()
        assert report.sha256[rel] == hashlib.sha256(data).hexdigest() == THINGS_SHA256[rel]
    record = json.loads((tmp_path / CHECKSUM_FILE).read_text())["files"]
    assert (
        record["things/things_concepts.tsv"]["sha256"]
        == THINGS_SHA256["things/things_concepts.tsv"]
    )
    assert record["spose/labels_66.txt"]["url"] == f"{server}/spose/labels_66.txt"
    assert not list(tmp_path.rglob("*.part"))
    assert len(load_things(tmp_path)) == 1854


def test_refetch_verifies_without_downloading(server: str, tmp_path: Path) -> None:
    files = ("spose/labels_66.txt",)
    fetch_things(tmp_path, base_url=server, files=files)
    # A dead mirror proves nothing is downloaded the second time.
    report = fetch_things(tmp_path, base_url="http://127.0.0.1:9", files=files)
    assert report.status == {"spose/labels_66.txt": "verified"}


def test_tampered_local_file_is_refused(server: str, tmp_path: Path) -> None:
    files = ("spose/labels_66.txt",)
    fetch_things(tmp_path, base_url=server, files=files)
    (tmp_path / "spose" / "labels_66.txt").write_text("tampered\n")
    with pytest.raises(ChecksumError, match="differs from the recorded"):
        fetch_things(tmp_path, base_url=server, files=files)


def test_expected_checksum_mismatch_writes_nothing(server: str, tmp_path: Path) -> None:
    files = ("spose/labels_66.txt",)
    with pytest.raises(ChecksumError, match="nothing written"):
        fetch_things(tmp_path, base_url=server, files=files, expected_sha256={files[0]: "0" * 64})
    assert not (tmp_path / "spose" / "labels_66.txt").exists()
    assert not list(tmp_path.rglob("*.part"))


def test_http_error_names_url(server: str, tmp_path: Path) -> None:
    with pytest.raises(httpx.HTTPStatusError, match=r"missing/file\.txt"):
        fetch_things(tmp_path, base_url=server, files=("missing/file.txt",))
    assert not list(tmp_path.rglob("*.part"))


def test_unsafe_relative_path_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unsafe"):
        fetch_things(tmp_path, base_url="http://127.0.0.1:9", files=("../escape.txt",))


def test_per_file_url_overrides_base(server: str, tmp_path: Path) -> None:
    files = ("spose/labels_66.txt",)
    report = fetch_things(
        tmp_path,
        base_url="http://127.0.0.1:9",
        urls={"spose/labels_66.txt": f"{server}/spose/labels_66.txt"},
        files=files,
        expected_sha256=THINGS_SHA256,
    )
    assert report.status == {"spose/labels_66.txt": "downloaded"}
