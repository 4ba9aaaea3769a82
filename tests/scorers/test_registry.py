from __future__ import annotations

import pytest

from choiceaudit.scorers import (
    BUILTIN_MODELS,
    FakeScorer,
    Scorer,
    ScorerError,
    load_scorer,
    model_status,
)


def test_builtin_models_listed_with_install_state():
    rows = {row["name"]: row for row in model_status()}
    assert {"smollm2", "gemma3-270m", "sparrow", "minilm", "lm-choice:smollm2"} <= set(rows)
    for row in rows.values():
        assert row["installed"] == (not row["missing"])
    assert set(rows) == set(BUILTIN_MODELS)


def test_unknown_model_is_a_clear_error():
    with pytest.raises(ScorerError, match="unknown model 'gpt-17'"):
        load_scorer("gpt-17")


def test_systemone_needs_a_base_url():
    with pytest.raises(ScorerError, match="base_url"):
        load_scorer("systemone:jev")


def test_fake_scorer_from_registry_satisfies_protocol():
    scorer = load_scorer("fake", position_bias=[1.0])
    assert isinstance(scorer, FakeScorer) and isinstance(scorer, Scorer)
    assert scorer.describe()["position_bias"] == [1.0]
