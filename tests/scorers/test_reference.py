"""The float64 reference shares nothing with the engine but the tokens: on a healthy engine
float32 agrees with it to rounding, and an engine bug (here, a position offset applied to every
packed row's last scored token) shows at full magnitude against it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from choiceaudit.scorers import _hf as hf
from choiceaudit.scorers import load_scorer, reference_scores, sequence_logprobs
from choiceaudit.types import Query
from tiny_llama import save_tiny_llama, tiny_tokenizer

QUERIES = [
    Query(state="the capital of france", options=("paris", "london", "berlin")),
    Query(state="is it yes", options=("yes", "no"), neutral_state="is it"),
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    return save_tiny_llama(
        tmp_path_factory.mktemp("reference") / "tiny", tiny_tokenizer(), seed=13, context=256
    )


def _largest(scorer: Any) -> float:
    engine = scorer.score(QUERIES)
    reference = reference_scores(scorer, QUERIES)
    return max(
        float(np.abs(d.scores[rule] - r[rule]).max())
        for d, r in zip(engine, reference, strict=True)
        for rule in r
    )


def test_float32_agrees_with_the_float64_reference_to_rounding(tiny: Path) -> None:
    scorer = load_scorer(f"hf:{tiny}")
    reference = reference_scores(scorer, QUERIES)
    assert set(reference[1]) == {"sum", "mean", "pmi"} and set(reference[0]) == {"sum", "mean"}
    assert _largest(scorer) < 1e-4


def test_an_engine_bug_survives_float32_against_the_reference(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scorer = load_scorer(f"hf:{tiny}")
    real = sequence_logprobs

    def shifted(*args: Any, **kwargs: Any) -> Any:
        rows = real(*args, **kwargs)
        return [[np.concatenate([x[:-1], x[-1:] + 0.05]) for x in group] for group in rows]

    monkeypatch.setattr(hf, "sequence_logprobs", shifted)
    assert _largest(scorer) > 0.04


def test_the_reference_refuses_a_scorer_that_is_not_the_engine() -> None:
    from choiceaudit.scorers import ScorerError

    with pytest.raises(ScorerError, match="float64 reference needs the in-process causal LM"):
        reference_scores(load_scorer("fake"), QUERIES)


def test_a_reference_that_cannot_run_in_float64_is_one_error_naming_why(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from choiceaudit.scorers import ScorerError, _reference

    def no_kernel(model: Any, encoded: Any) -> float:
        raise RuntimeError("no float64 kernel for this operation")

    monkeypatch.setattr(_reference, "_option_logprob", no_kernel)
    with pytest.raises(ScorerError, match="float64 reference could not run on cpu: no float64"):
        reference_scores(load_scorer(f"hf:{tiny}"), QUERIES)


def test_a_log_probability_that_is_not_finite_is_refused_by_name(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reduced precision that overflows (Gemma 3 in float16 on the CPU) gives NaN
    log-probabilities: the scorer says so and what to do, rather than failing on a Decision."""
    from choiceaudit.scorers import ScorerError

    scorer = load_scorer(f"hf:{tiny}")
    real = sequence_logprobs

    def overflowed(*args: Any, **kwargs: Any) -> Any:
        rows = real(*args, **kwargs)
        return [[x * np.nan for x in group] for group in rows]

    monkeypatch.setattr(hf, "sequence_logprobs", overflowed)
    with pytest.raises(ScorerError, match="in float32: a log-probability of this query is not"):
        scorer.score(QUERIES)


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_projecting_only_the_read_positions_changes_no_bit(
    tiny_model: Any, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference asks the model's forward for the read positions' logits only; the same
    float64 forward over every position gives the same sums, bit for bit."""
    import torch

    from choiceaudit.scorers import _reference
    from choiceaudit.scorers._tokenize import InPlace

    model = tiny_model(kind, max_positions=64).to(torch.float64)
    encoded = InPlace(ids=(1, 7, 9, 11, 3, 5, 8), first_scored=4, crosses_join=False)
    kept = _reference._option_logprob(model, encoded)
    forward = type(model).forward

    def every_position(self: Any, *args: Any, **kwargs: Any) -> Any:
        if "logits_to_keep" in kwargs:  # as a forward that does not take it
            raise TypeError("forward() got an unexpected keyword argument 'logits_to_keep'")
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(type(model), "forward", every_position)
    assert _reference._option_logprob(model, encoded) == kept
