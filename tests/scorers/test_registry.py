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


def test_an_option_the_backend_rejects_lists_the_ones_it_accepts():
    from choiceaudit.errors import InputError
    from choiceaudit.scorers import ScorerOptionError, accepted_options

    with pytest.raises(ScorerOptionError) as info:
        load_scorer("fake", batch_size=16, temperature=2.0)
    assert str(info.value) == (
        "model 'fake' (fake backend) does not accept option(s) ['batch_size']; it accepts: "
        "content, position_bias, label_prior, temperature, delay, name, calls"
    )
    assert isinstance(info.value, InputError) and isinstance(info.value, TypeError)
    assert info.value.accepted == accepted_options("fake")
    # the spec fills the model name: it is not an option
    assert "model" not in accepted_options("systemone:jev")
    assert "base_url" in accepted_options("systemone:jev")


def test_causal_lm_options_are_checked_before_any_weights_load():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from choiceaudit.scorers import ScorerOptionError, accepted_options

    # 'batch_size' was the example in `score --help`; the hf backend batches by tokens and rows
    with pytest.raises(
        ScorerOptionError, match=r"'hf:/no/such/model' \(hf backend\).*max_batch_rows"
    ):
        load_scorer("hf:/no/such/model", batch_size=16)
    assert {"dtype", "device", "max_batch_tokens", "max_batch_rows"} <= set(
        accepted_options("smollm2")
    )
    assert "menu_line" in accepted_options("lm-choice:smollm2")
    assert "batch_size" in accepted_options("minilm")
