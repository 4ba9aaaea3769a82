"""The ``hf`` scorer on the real embedded models: SmolLM2 (no BOS) and Gemma 3 (adds ``<bos>``).

SmolLM2 loads once per session (about a second from the converted cache); Gemma 3 tests are
``slow`` because the first load converts its GGUF (about a minute, 1 GB in fp32).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from choiceaudit.scorers import EngineOptions, HFScorer  # noqa: E402
from choiceaudit.types import Query  # noqa: E402

pytestmark = pytest.mark.models

Naive = Callable[[Any, Any, int], np.ndarray]

INSTRUCTION = "Choose the property value that best signals the hidden pair to your team."


def signalling_like_queries() -> list[Query]:
    """Prompts of different lengths (different length buckets) with neutral prompts for PMI."""
    pairs = [
        ("hammer", "nail"),
        ("violin", "bow"),
        ("lemon", "knife"),
        ("candle", "match"),
        ("bicycle", "helmet"),
        ("kettle", "tea bag"),
        ("anchor", "rope"),
        ("pillow", "feather"),
    ]
    options = ("tiny", "small", "medium", "large", "huge", "stays still")
    queries = []
    for i, (means, clue) in enumerate(pairs):
        filler = " Other candidates were " + ", ".join(p[0] for p in pairs[: i + 1]) + "."
        queries.append(
            Query(
                state=f"The hidden means is {means} and the clue is {clue}.{filler * (i % 3)}",
                options=options[i % 2 :],
                instruction=INSTRUCTION,
                neutral_state="The hidden means is ___ and the clue is ___.",
                meta={"item": i},
            )
        )
    return queries


@pytest.fixture(scope="module")
def smollm2(smollm2_lm: Any) -> HFScorer:
    return HFScorer(smollm2_lm)


def test_smollm2_ranks_paris_first_for_the_capital_of_france(smollm2: HFScorer) -> None:
    query = Query(
        state="What is the capital of France?",
        options=("London", "Paris", "Berlin", "Madrid"),
        instruction="Answer the question with the name of a city.",
    )
    decision = smollm2.score([query])[0]
    assert decision.choice() == (1,)
    assert decision.probs[1] > 0.5
    assert np.all(decision.scores["sum"][1] > np.delete(decision.scores["sum"], 1))


def test_smollm2_batched_equals_batch_one_within_1e_5(smollm2_lm: Any, one_thread: None) -> None:
    """The fp32 batching check, on one thread: rows are batched only with rows of their own padded
    width, so the engine's shapes, hence results, do not depend on the batch (it is bitwise
    equal here). With several threads MKL splits a GEMM's rows by the batch's size, which adds
    ~1e-5 per token (benchmarks/noise_floor.py reports it); a mask or position bug would show at
    full magnitude either way."""
    queries = signalling_like_queries()
    batched = HFScorer(smollm2_lm).score(queries)
    alone = HFScorer(smollm2_lm, engine=EngineOptions(max_batch_rows=1))
    singles = [alone.score([q])[0] for q in queries]
    worst = 0.0
    for b, s in zip(batched, singles, strict=True):
        for rule in ("sum", "mean", "pmi"):
            worst = max(worst, float(np.abs(b.scores[rule] - s.scores[rule]).max()))
    assert worst <= 1e-5


def test_smollm2_in_place_scores_equal_one_forward_per_option(
    smollm2: HFScorer, naive_logprobs: Naive
) -> None:
    tok = smollm2.lm.tokenizer
    # one query, six options of one to several tokens, each against its own full forward
    queries = signalling_like_queries()[:1]
    decisions = smollm2.score(queries)
    model = smollm2.lm.model
    for query, decision in zip(queries, decisions, strict=True):
        assert decision.aux["crosses_join"] == [False] * query.n_options  # SmolLM2 splits at spaces
        sums: dict[bool, list[float]] = {False: [], True: []}
        for neutral in (False, True):
            prompt = query.prompt(neutral=neutral)
            n_ctx = len(tok(prompt)["input_ids"])
            assert tok(prompt)["input_ids"][0] != tok.bos_token_id  # SmolLM2 adds no BOS
            for i, cont in enumerate(query.continuations()):
                ids = tok(prompt + cont)["input_ids"]
                sums[neutral].append(float(naive_logprobs(model, ids, n_ctx).sum()))
                if not neutral:
                    assert decision.n_tokens is not None
                    assert decision.n_tokens[i] == len(ids) - n_ctx
        np.testing.assert_allclose(decision.scores["sum"], sums[False], atol=1e-4)
        pmi = np.array(sums[False]) - np.array(sums[True])
        np.testing.assert_allclose(decision.scores["pmi"], pmi, atol=1e-4)
    # "stays still" is several tokens, "tiny" one: the count is in-place, leading space included.
    assert (
        decisions[0].n_tokens is not None and decisions[0].n_tokens[-1] > decisions[0].n_tokens[0]
    )


def test_smollm2_own_chat_template(smollm2_lm: Any) -> None:
    scorer = HFScorer(smollm2_lm, chat_template="own")
    context = scorer.renderer.context("What is the capital of France?")
    assert context.startswith("<|im_start|>system\n") and context.endswith(
        "<|im_start|>assistant\n"
    )
    query = Query(state="What is the capital of France?", options=("London", "Paris", "Rome"))
    assert scorer.score([query])[0].choice() == (1,)


def test_a_base_model_scored_under_a_sibling_template_named_by_model(
    tiny_lms: dict[str, Any], smollm2_lm: Any
) -> None:
    scorer = HFScorer(tiny_lms["merge"], chat_template="smollm2")
    assert scorer.chat is not None and scorer.chat.template == smollm2_lm.tokenizer.chat_template
    messages = [{"role": "user", "content": "Hi"}]
    expected = smollm2_lm.tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    assert scorer.renderer.context("Hi") == expected
    assert scorer.describe()["chat_template"]["source"] == "smollm2"


@pytest.mark.slow
def test_gemma3_adds_bos_and_scores_in_place(gemma_lm: Any, naive_logprobs: Naive) -> None:
    scorer = HFScorer(gemma_lm)
    tok = gemma_lm.tokenizer
    query = Query(
        state="What is the capital of France?",
        options=("London", "Paris", "Berlin", "Madrid"),
        instruction="Answer the question with the name of a city.",
        neutral_state="What is the capital?",
    )
    decision = scorer.score([query])[0]
    prompt_ids = tok(query.prompt())["input_ids"]
    assert prompt_ids[0] == tok.bos_token_id
    for i, cont in enumerate(query.continuations()):
        ids = tok(query.prompt() + cont)["input_ids"]
        ref = naive_logprobs(gemma_lm.model, ids, len(prompt_ids)).sum()
        assert decision.scores["sum"][i] == pytest.approx(ref, abs=1e-4)
        assert decision.n_tokens is not None and decision.n_tokens[i] == len(ids) - len(prompt_ids)
    assert decision.choice() == (1,)
