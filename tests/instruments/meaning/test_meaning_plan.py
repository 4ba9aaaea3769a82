"""The run plan, the one-call analysis, the public surface, and real decision models end to end."""

from __future__ import annotations

import dataclasses
import importlib
import json
import pkgutil

import httpx
import numpy as np
import pytest

import choiceaudit.instruments.meaning as meaning
from choiceaudit.instruments.meaning import Corpus, MeaningRows, analyse_meaning, plan_meaning
from choiceaudit.scorers import FakeScorer, SystemOneScorer


def test_public_api_is_entry_points_sorted_and_importable() -> None:
    # ruff's RUF022 order: SCREAMING_CASE constants, then CamelCase classes, then functions
    def kind(name: str) -> int:
        return 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2

    assert list(meaning.__all__) == sorted(meaning.__all__, key=lambda n: (kind(n), n))
    assert all(hasattr(meaning, name) for name in meaning.__all__)
    # entry points, not internals: building blocks stay in the private modules
    assert len(meaning.__all__) <= 21
    assert "render_query" not in meaning.__all__ and "paired_contrast" not in meaning.__all__
    for info in pkgutil.iter_modules(meaning.__path__):
        module = importlib.import_module(f"{meaning.__name__}.{info.name}")
        exported = list(getattr(module, "__all__", ()))
        assert exported == sorted(exported, key=lambda n: (kind(n), n)), info.name
        assert all(hasattr(module, name) for name in exported), info.name


def test_plan_on_a_two_language_corpus(synthetic: Corpus) -> None:
    plan = plan_meaning(synthetic, n_items=20, n_order_items=3)
    assert list(plan.builds) == ["e1", "e6", "e7", "matrix"]
    assert plan.config["n_items"] == 20 and plan.config["families_left_out"] == []
    e1_items = {q.meta["item_id"] for q in plan.builds["e1"].queries}
    assert len(e1_items) == 20
    assert len(plan.builds["e7"].queries) == 3 * 24  # slot-bound keys only (the paper's E7)
    assert {q.meta["item_id"] for q in plan.builds["e7"].queries} <= e1_items
    again = plan_meaning(synthetic, n_items=20, n_order_items=3)
    assert [q.id for q in again.queries()] == [q.id for q in plan.queries()]
    json.dumps(plan.config)  # the manifest can hold it


def test_plan_without_tags_or_embedder_drops_semantic_families(idioms_en_corpus: Corpus) -> None:
    plan = plan_meaning(idioms_en_corpus, n_items=10, n_order_items=2)
    assert plan.config["families"] == ["d-rand", "d-surf", "d-lit"]
    assert plan.config["families_left_out"] == ["d-sem", "d-hard"]
    assert plan.config["skipped_experiments"] == ["matrix"]  # one language
    with pytest.raises(ValueError, match="unknown experiments"):
        plan_meaning(idioms_en_corpus, experiments=("e9",))


def test_analyse_meaning_with_a_biased_fake(synthetic: Corpus) -> None:
    plan = plan_meaning(synthetic, n_items=40, n_order_items=4)
    queries = plan.queries()
    literal_texts = {e.literal: 3.0 for e in synthetic.entries}
    literal_texts |= {e.literal_other: 3.0 for e in synthetic.entries if e.literal_other}
    scorer = FakeScorer(content=literal_texts, position_bias=[0.5])
    rows = MeaningRows.from_decisions(queries, scorer.score(queries))
    result = analyse_meaning(rows, n_resamples=100)
    e1, e6, e7, matrix = result.e1, result.e6, result.e7, result.matrix
    assert e1 is not None and e6 is not None and e6.o4 is not None
    assert e7 is not None and matrix is not None and matrix.contrast is not None
    ladder = rows.where(experiment="e1", family="d-rand")
    # no literal in d-rand: the bias alone picks slot 0, so accuracy = share of gold in slot 0
    assert e1.accuracy["d-rand"].estimate == pytest.approx(np.mean(ladder.gold_slot == 0))
    assert e1.lar["d-lit"].estimate == 1.0 and e1.lar["d-hard"].estimate == 1.0
    assert e1.decomposition["d-lit"].gold == 0.0
    assert e7.answer_instability == 1.0
    assert matrix.lar["bn"].estimate == 1.0
    assert matrix.contrast_label == "bn_minus_en" and matrix.contrast.difference == 0.0
    o4 = e6.o4.overconfidence_gap.estimate
    e6_o4 = rows.where(experiment="e6", condition="o4")
    assert o4 == pytest.approx(e6_o4.peak.mean() - np.mean(e6_o4.gold_slot == 0))
    json.dumps(dataclasses.asdict(result))  # frozen dataclasses of plain data all the way down


def test_meaning_queries_through_the_http_scorer(synthetic: Corpus) -> None:
    plan = plan_meaning(synthetic, experiments=("e1",), n_items=8)
    queries = plan.queries()
    fake = FakeScorer(position_bias=[0.0, 0.3])

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        question = body["questions"]["q"]
        from choiceaudit.types import Query

        q = Query(
            state=body["state"],
            options=tuple(question["criteria"].values()),
            instruction=question["instructions"],
            keys=tuple(question["criteria"]),
        )
        (decision,) = fake.score([q])
        probs = dict(zip(q.keys, np.round(decision.probs, 4).tolist(), strict=True))
        answer = {
            "choice": max(probs, key=probs.__getitem__),
            "probabilities": probs,
            "confidence": 0.5,
        }
        return httpx.Response(200, json={"answers": {"q": answer}})

    scorer = SystemOneScorer(
        "http://decider.test", "fake/1", transport=httpx.MockTransport(handler)
    )
    decisions = scorer.score(queries)
    direct = fake.score(queries)
    for got, want in zip(decisions, direct, strict=True):
        np.testing.assert_allclose(got.probs, want.probs, atol=5e-4)  # 4-decimal rounding
    rows = MeaningRows.from_decisions(queries, decisions)
    assert (rows.conf_head == 0.5).all()
    e1 = analyse_meaning(rows, n_resamples=50).e1
    assert e1 is not None and e1.calibration["d-lit"].conf_head_by_outcome is not None


@pytest.mark.models
def test_sparrow_is_captured_by_the_literal_gloss(idioms_en_corpus: Corpus) -> None:
    """A real measurement on the offline defaults (sparrow-decider, idioms-en, 150 items): the
    literal gloss lowers accuracy and draws the choice, as the paper finds for its arms."""
    from choiceaudit.scorers import load_scorer

    scorer = load_scorer("sparrow")
    plan = plan_meaning(idioms_en_corpus, experiments=("e1",), n_items=150)
    queries = plan.queries()
    rows = MeaningRows.from_decisions(queries, scorer.score(queries))
    result = analyse_meaning(rows, n_resamples=200).e1
    assert result is not None
    acc = result.accuracy
    assert acc["d-lit"].high < acc["d-rand"].low
    assert result.lar["d-lit"].low > 0.25
    assert result.contrast_vs_d_rand["d-lit"].mcnemar_p < 1e-6
