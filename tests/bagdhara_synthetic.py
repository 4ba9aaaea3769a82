"""A synthetic Bangla Bagdhara corpus in the real 19-field schema, for tests that need a
two-language meaning corpus without ../shared/data (one definition for every test module)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["bagdhara_record", "write_bagdhara"]

_EMPTY = (
    "alternative_idioms",
    "similar_in_english",
    "example_sentences_in_bangla",
    "example_sentences_in_english",
    "usage_domain",
    "frequency",
    "sentiment",
    "historical_significance",
    "religious_significance",
    "cultural_significance",
    "scape",
    "note",
    "history",
)


def bagdhara_record(i: int) -> dict[str, Any]:
    """Entry ``i + 1``: a three-word idiom, a literal gloss, a Bengali figurative gloss ending in
    one of three tag words, an English gloss and a tag shared by every third entry."""
    record: dict[str, Any] = {
        "id": i + 1,
        "idiom": f"বাগধারা{i} এক দুই",
        "literal_meaning": f"আক্ষরিক{i} অর্থ",
        "figurative_meaning_bn": f"রূপক{i} অর্থ {['নদী', 'পাথর', 'মুকুট'][i % 3]}",
        "figurative_meaning_en": f"figurative {i}",
        "tags": [f"t{i % 3}"],
    }
    record.update(dict.fromkeys(_EMPTY))
    return record


def write_bagdhara(path: Path, n: int) -> Path:
    """``n`` records as JSONL at ``path``."""
    lines = [json.dumps(bagdhara_record(i), ensure_ascii=False) for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
