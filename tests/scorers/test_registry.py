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


def test_builtin_models_listed_with_install_state() -> None:
    rows = {row["name"]: row for row in model_status()}
    assert {"smollm2", "gemma3-270m", "sparrow", "minilm", "lm-choice:smollm2"} <= set(rows)
    for row in rows.values():
        assert row["installed"] == (not row["missing"])
    assert set(rows) == set(BUILTIN_MODELS)


def test_unknown_model_is_a_clear_error() -> None:
    with pytest.raises(ScorerError, match="unknown model 'gpt-17'"):
        load_scorer("gpt-17")


def test_systemone_needs_a_base_url() -> None:
    with pytest.raises(ScorerError, match="base_url"):
        load_scorer("systemone:jev")


def test_fake_scorer_from_registry_satisfies_protocol() -> None:
    scorer = load_scorer("fake", position_bias=[1.0])
    assert isinstance(scorer, FakeScorer) and isinstance(scorer, Scorer)
    assert scorer.describe()["position_bias"] == [1.0]


def test_an_option_the_backend_rejects_lists_the_ones_it_accepts() -> None:
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


def test_causal_lm_options_are_checked_before_any_weights_load() -> None:
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


def test_one_parser_names_backend_and_target_for_every_spec_form() -> None:
    from choiceaudit.scorers import ModelSpec, backend_of, parse_model_spec

    cases = {
        "smollm2": ("hf", "smollm2"),
        "gemma3-270m": ("hf", "gemma3-270m"),
        "hf:/models/qwen": ("hf", "hf:/models/qwen"),
        "lm-choice:smollm2": ("lm-choice", "smollm2"),
        "sparrow": ("sparrow", ""),
        "sparrow:nano-robot": ("sparrow", "nano-robot"),
        "minilm": ("cosine", ""),
        "systemone:typesafe/jev-1.13": ("systemone", "typesafe/jev-1.13"),
        "openai:qwen3-8b": ("openai", "qwen3-8b"),
        "fake": ("fake", ""),
    }
    for spec, (backend, target) in cases.items():
        assert parse_model_spec(spec) == ModelSpec(spec, backend, target)
        assert backend_of(spec) == backend
    for bad in ("hf:", "gpt", "sparrowish", "openai:"):
        with pytest.raises(ScorerError, match="unknown model"):
            parse_model_spec(bad)
