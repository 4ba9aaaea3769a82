"""The instrument declaration is what runs: ``score`` and the meaning run loop plan their
queries by calling the declaration's ``plan`` (replacing it in the declaration changes what is
planned), not a function of their own."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from choiceaudit.audit import _meaning, _score, dry_run_meaning, score_file


def counted(module: ModuleType, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The module's declaration with a ``plan`` that counts its calls (and plans as before)."""
    declared = module.INSTRUMENT
    calls: list[int] = []

    def plan(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return declared.plan(*args, **kwargs)

    monkeypatch.setattr(module, "INSTRUMENT", dataclasses.replace(declared, plan=plan))
    return calls


def test_score_plans_through_the_scoring_declaration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = counted(_score, monkeypatch)
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "".join(json.dumps({"state": f"s{i}", "options": ["a", "b"]}) + "\n" for i in range(3)),
        encoding="utf-8",
    )
    result = score_file(queries, model="fake", out=tmp_path / "run")
    assert calls == [1] and result.summary.scored == 3


def test_meaning_plans_through_the_meaning_declaration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = counted(_meaning, monkeypatch)
    corpus = tmp_path / "corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as fh:
        for i in range(40):
            record = {
                "id": i + 1,
                "idiom": f"বাগধারা{i} এক",
                "alternative_idioms": None,
                "literal_meaning": f"আক্ষরিক{i} (literal thing {i})",
                "figurative_meaning_bn": f"রূপক{i}",
                "figurative_meaning_en": f"gloss {i}",
                "similar_in_english": None,
                "example_sentences_in_bangla": None,
                "example_sentences_in_english": None,
                "usage_domain": None,
                "tags": [f"t{i % 3}"],
                "frequency": "common",
                "sentiment": None,
                "historical_significance": 0,
                "religious_significance": 0,
                "cultural_significance": 0,
                "scape": None,
                "note": None,
                "history": None,
            }
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    dry_run_meaning(["fake"], corpus=f"bagdhara:{corpus}", n_items=0, embedder="none")
    assert calls == [1]
