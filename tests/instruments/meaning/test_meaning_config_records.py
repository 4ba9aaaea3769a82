"""The meaning run's configuration is typed JSON: the plan's blocks and build reports count
what was built, survive the store's JSON round trip unchanged as a ``MeaningConfig``, and the
idioms-en reader turns a bad record into a ``CorpusError`` naming row and field."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bagdhara_synthetic import write_bagdhara
from choiceaudit.instruments.meaning import (
    CorpusError,
    MeaningConfig,
    MeaningPlan,
    load_bagdhara,
    load_idioms_en,
    plan_meaning,
)
from choiceaudit.instruments.meaning.records import PlanBlock


def _plan(tmp_path: Path) -> MeaningPlan:
    corpus = load_bagdhara(write_bagdhara(tmp_path / "bag.jsonl", 30))
    return plan_meaning(corpus, experiments=["e1", "e7"], n_items=8, n_order_items=2)


def test_build_reports_count_the_queries_built(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    ladder = plan.builds["e1"]
    built = Counter(q.meta["family"] for q in ladder.queries)
    report = ladder.report
    assert {f: c["items"] for f, c in report["families"].items()} == dict(built)
    assert sum(built.values()) == len(ladder.queries) == 8 * len(built)
    assert report["block"] == "e1"
    assert report["language"] == "bn"


def test_plan_blocks_hold_the_typed_fields(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    blocks = plan.config["blocks"]
    assert [b["block"] for b in blocks] == ["e1", "e7"]
    assert all(set(b) == set(PlanBlock.__annotations__) for b in blocks)
    assert [b["n_items"] for b in blocks] == [8, 2]


def test_config_round_trips_the_stored_json(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    record = {"instrument": "meaning", **plan.config, "build_reports": plan.reports()}
    stored = json.loads(json.dumps(record))
    config = MeaningConfig.from_json(stored)
    assert config.to_json() == stored
    assert config.blocks is not None and config.blocks[1]["experiment"] == "e7"
    assert config.build_reports is not None
    assert config.build_reports["e7"]["families"]["d-rand"]["items"] == 2


def _phrases(tmp_path: Path, records: list[dict[str, object]]) -> Path:
    path = tmp_path / "phrases.json"
    path.write_text(json.dumps({"dictionary": records}), encoding="utf-8")
    return path


def test_idioms_en_refuses_an_id_that_is_not_an_integer(tmp_path: Path) -> None:
    path = _phrases(tmp_path, [{"id": "seven", "phrase": "a", "definition": "Lit. x Fig. y"}])
    with pytest.raises(CorpusError) as caught:
        load_idioms_en(path)
    assert (caught.value.row, caught.value.field_name) == (0, "id")


def test_idioms_en_refuses_patterns_that_are_not_a_list(tmp_path: Path) -> None:
    good = {"id": 1, "phrase": "a", "definition": "Lit. x Fig. y"}
    bad = {"id": 2, "phrase": "b", "definition": "Lit. x Fig. y", "patterns": "b"}
    with pytest.raises(CorpusError) as caught:
        load_idioms_en(_phrases(tmp_path, [good, bad]))
    assert (caught.value.row, caught.value.field_name) == (1, "patterns")
