"""Download the ``things`` norms with sha256 checksums recorded and verified.

``fetch_things(dest)`` fetches THINGS, THINGSplus and SPoSE files into ``dest`` in the layout
:func:`load_things` reads (``things/``, ``thingsplus/``, ``spose/``). Every file is streamed to a
temporary file beside its target, hashed, checked, and only then renamed into place, so an
interrupted fetch never leaves a partial file under the real name. Checksums are recorded in
``dest/SHA256SUMS.json``; a later fetch verifies files already present against that record and
re-downloads nothing that matches. A mismatch against a recorded or expected sum raises
:class:`ChecksumError` and leaves no file behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

import httpx

from choiceaudit.errors import InputError
from choiceaudit.files import atomic_write_text, sha256_file

__all__ = [
    "CHECKSUM_FILE",
    "DEFAULT_THINGS_URLS",
    "THINGS_FILES",
    "THINGS_SHA256",
    "ChecksumError",
    "FetchReport",
    "fetch_things",
]

#: Relative paths fetched, in the layout ``load_things`` expects.
THINGS_FILES: tuple[str, ...] = (
    "things/things_concepts.tsv",
    "thingsplus/property_ratings_animacy.csv",
    "thingsplus/size_ratings_size_fixed.csv",
    "thingsplus/Categories_final_20200131.tsv",
    "spose/spose_embedding_66d_sorted.txt",
    "spose/labels_66.txt",
    "spose/unique_id.txt",
)

_OSF_THINGS = "https://files.osf.io/v1/resources/jum2f/providers/osfstorage"
_OSF_SPOSE = "https://files.osf.io/v1/resources/f5rn6/providers/osfstorage"

#: Canonical sources: THINGS and THINGSplus from OSF project jum2f, SPoSE from OSF f5rn6, by
#: storage path. These paths could not be checked from the offline build machines (OSF may
#: serve files by id rather than by name); if a download fails, pass ``base_url`` pointing at a
#: mirror with the ``dest`` layout, or edit this mapping. Checksums guard either way.
DEFAULT_THINGS_URLS: Mapping[str, str] = {
    "things/things_concepts.tsv": f"{_OSF_THINGS}/THINGS/things_concepts.tsv",
    "thingsplus/property_ratings_animacy.csv": f"{_OSF_THINGS}/THINGSplus/property_ratings_animacy.csv",
    "thingsplus/size_ratings_size_fixed.csv": f"{_OSF_THINGS}/THINGSplus/size_ratings_size_fixed.csv",
    "thingsplus/Categories_final_20200131.tsv": f"{_OSF_THINGS}/THINGSplus/Categories_final_20200131.tsv",
    "spose/spose_embedding_66d_sorted.txt": f"{_OSF_SPOSE}/data/spose_embedding_66d_sorted.txt",
    "spose/labels_66.txt": f"{_OSF_SPOSE}/data/labels_66.txt",
    "spose/unique_id.txt": f"{_OSF_SPOSE}/data/unique_id.txt",
}

#: sha256 of the release this project's tests were built against (the early THINGSplus release);
#: pass as ``expected_sha256`` to pin exactly that release.
THINGS_SHA256: Mapping[str, str] = {
    "things/things_concepts.tsv": "051729f275eba4d5bb584d049230afaaefb5d8f03d043c6d8ed4a0c2f2109e08",
    "thingsplus/property_ratings_animacy.csv": "e5163a8d68a2704cf0d14e8b5c002963e180aba79e76d13653bcba854e8cf644",
    "thingsplus/size_ratings_size_fixed.csv": "6a14e7f359e2698231b49210aeb5e4a6878f1337aa19529b04220bac172ea042",
    "thingsplus/Categories_final_20200131.tsv": "968d45a1a2fb8def83b33661031a1c473a61a8fe208c8c0af3474784c6bbcd95",
    "spose/spose_embedding_66d_sorted.txt": "6a485922fe22c10b2eb920140198488451d44ac6de0c6be5e8ee8eec8a2007cc",
    "spose/labels_66.txt": "396f333a38d629a503f894b0ee7929af0ed073bc59a3c0d86ec5e88de713f808",
    "spose/unique_id.txt": "e2e59d02197e89776034938e7a73940a0823cacac4b6084b56b1d8959816ff76",
}

CHECKSUM_FILE = "SHA256SUMS.json"


class ChecksumError(InputError):
    """A file's sha256 differs from the recorded or expected sum."""


@dataclass
class FetchReport:
    """What a fetch did: per relative path, ``"downloaded"`` or ``"verified"`` (already present
    and matching its recorded sum), the sha256 of each, and the checksum record's path."""

    dest: Path
    status: dict[str, str] = field(default_factory=dict)
    sha256: dict[str, str] = field(default_factory=dict)
    checksum_file: Path | None = None


def _safe_relpath(rel: str) -> PurePosixPath:
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise ValueError(f"refusing unsafe relative path {rel!r}")
    return p


def _sha256_file(path: Path) -> str:
    return sha256_file(path)


def _load_record(path: Path) -> dict[str, dict[str, object]]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        files = data["files"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ChecksumError(f"{path}: unreadable checksum record ({exc})") from None
    if not isinstance(files, dict):
        raise ChecksumError(f"{path}: 'files' is not an object")
    return files


def _write_atomic(path: Path, text: str) -> None:
    atomic_write_text(path, text)


def _download(client: httpx.Client, url: str, target: Path) -> tuple[Path, str, int]:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    h = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as fh, client.stream("GET", url) as response:
            if response.status_code != 200:
                raise httpx.HTTPStatusError(
                    f"GET {url} returned HTTP {response.status_code}",
                    request=response.request,
                    response=response,
                )
            for chunk in response.iter_bytes():
                fh.write(chunk)
                h.update(chunk)
                size += len(chunk)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp, h.hexdigest(), size


def fetch_things(
    dest: str | Path,
    *,
    base_url: str | None = None,
    urls: Mapping[str, str] | None = None,
    files: Sequence[str] = THINGS_FILES,
    expected_sha256: Mapping[str, str] | None = None,
    client: httpx.Client | None = None,
    timeout: float = 60.0,
) -> FetchReport:
    """Fetch the ``things`` norms into ``dest`` and record their sha256 sums.

    ``base_url``: a mirror laid out like ``dest`` (``{base_url}/things/things_concepts.tsv``);
    default: the canonical OSF URLs in :data:`DEFAULT_THINGS_URLS`. ``urls`` overrides the URL
    of individual files (e.g. OSF download links by file id). ``expected_sha256`` pins
    sums (e.g. :data:`THINGS_SHA256`); sums already recorded in ``dest/SHA256SUMS.json`` are
    always enforced. Raises :class:`ChecksumError` on a mismatch and ``httpx.HTTPError`` on a
    failed download, naming the URL.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    record_path = dest / CHECKSUM_FILE
    record = _load_record(record_path)
    expected = dict(expected_sha256 or {})
    report = FetchReport(dest=dest, checksum_file=record_path)
    own_client = client is None
    http = client if client is not None else httpx.Client(timeout=timeout, follow_redirects=True)
    try:
        for rel in files:
            rel_path = _safe_relpath(rel)
            target = dest.joinpath(*rel_path.parts)
            if urls is not None and rel in urls:
                url = urls[rel]
            elif base_url is not None:
                url = f"{base_url.rstrip('/')}/{rel_path.as_posix()}"
            elif rel in DEFAULT_THINGS_URLS:
                url = DEFAULT_THINGS_URLS[rel]
            else:
                raise ValueError(f"no canonical URL for {rel!r}; pass base_url")
            recorded = record.get(rel, {}).get("sha256")
            want = expected.get(rel) or (str(recorded) if recorded else None)
            if target.is_file() and recorded:
                digest = _sha256_file(target)
                if digest != recorded:
                    raise ChecksumError(
                        f"{target}: sha256 {digest} differs from the recorded {recorded}; "
                        "the local copy changed — delete it to re-fetch"
                    )
                if want is not None and digest != want:
                    raise ChecksumError(f"{target}: sha256 {digest}, expected {want}")
                report.status[rel] = "verified"
                report.sha256[rel] = digest
                continue
            tmp, digest, size = _download(http, url, target)
            if want is not None and digest != want:
                tmp.unlink(missing_ok=True)
                raise ChecksumError(f"{url}: sha256 {digest}, expected {want}; nothing written")
            os.replace(tmp, target)
            record[rel] = {
                "sha256": digest,
                "bytes": size,
                "url": url,
                "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            report.status[rel] = "downloaded"
            report.sha256[rel] = digest
            # Record after every file so an interrupted fetch keeps what it verified.
            _write_atomic(
                record_path, json.dumps({"files": record}, indent=2, sort_keys=True) + "\n"
            )
    finally:
        if own_client:
            with contextlib.suppress(Exception):
                http.close()
    return report
