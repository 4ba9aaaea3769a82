"""Two processes converting the same GGUF at once (parallel test workers, two demos on a fresh
machine): the second waits on the conversion's lock file and reuses the first's directory."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("transformers")
from filelock import FileLock

import choiceaudit.scorers._loading as loading
from choiceaudit.scorers._gguf_tokenizer import TOKENIZER_REVISION


def test_a_second_conversion_waits_for_the_first_and_reuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHOICEAUDIT_CACHE", str(tmp_path / "cache"))
    sha = "ef" * 32
    target = tmp_path / "cache" / "converted" / f"{sha}-tok{TOKENIZER_REVISION}"
    converted: list[Path] = []

    def convert(gguf: Path, sha256: str, where: Path) -> Path:
        converted.append(where)
        return where

    monkeypatch.setattr(loading, "_convert_gguf_unlocked", convert)
    target.parent.mkdir(parents=True)
    results: list[Path] = []
    with FileLock(target.parent / f".{target.name}.lock"):  # the first process, converting
        waiter = threading.Thread(
            target=lambda: results.append(loading.convert_gguf(tmp_path / "m.gguf", sha))
        )
        waiter.start()
        waiter.join(timeout=0.5)
        assert waiter.is_alive() and not results  # it waits instead of converting alongside
        target.mkdir()
        (target / "choiceaudit-conversion.json").write_text("{}")  # the first one finishes
    waiter.join(timeout=30)
    assert results == [target] and converted == []  # reused, not converted again
    # with no conversion stored and nobody holding the lock, it converts
    other = "12" * 32
    assert loading.convert_gguf(tmp_path / "m.gguf", other) == target.with_name(
        f"{other}-tok{TOKENIZER_REVISION}"
    )
    assert converted == [target.with_name(f"{other}-tok{TOKENIZER_REVISION}")]
