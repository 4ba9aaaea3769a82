"""``lm-choice``: a causal LM as a keyed decision model, against the plain next-token logits,
and the position/label bias it carries on the real SmolLM2."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from choiceaudit.scorers import (  # noqa: E402
    LMChoiceScorer,
    ScorerError,
    load_scorer,
)
from choiceaudit.scorers._lm_choice import render_menu  # noqa: E402
from choiceaudit.types import Query  # noqa: E402


def last_logits(model: Any, ids: list[int]) -> np.ndarray:
    with torch.inference_mode():
        return model(torch.tensor([ids])).logits[0, -1].double().numpy()  # type: ignore[no-any-return]


def test_menu_is_rendered_after_the_state_in_display_order(tiny_lms: dict[str, Any]) -> None:
    scorer = LMChoiceScorer(tiny_lms["bos"])
    query = Query(state="the capital of france?", options=("london", "paris"), instruction="answer")
    assert (
        scorer.prompt(query) == "answer\n\nthe capital of france?\n\nA. london\nB. paris\n\nAnswer:"
    )
    assert render_menu(("x", "y"), ("1", "2"), "({key}) {option}") == "(x) 1\n(y) 2"


def test_probs_are_the_softmax_of_the_key_logits(tiny_lms: dict[str, Any]) -> None:
    lm = tiny_lms["bos"]
    scorer = LMChoiceScorer(lm)
    queries = [
        Query(state="the capital of france?", options=("london", "paris", "berlin", "yes")),
        Query(state="paris?", options=("yes", "no"), keys=("paris", "london")),
    ]
    decisions = scorer.score(queries)
    tok = lm.tokenizer
    for query, decision in zip(queries, decisions, strict=True):
        context = tok(scorer.prompt(query))["input_ids"][:-1]  # without the appended </s>
        key_ids = [tok.convert_tokens_to_ids(k.lower()) for k in query.keys]
        logits = last_logits(lm.model, context)
        np.testing.assert_allclose(decision.scores["logit"], logits[key_ids], atol=1e-5)
        expected = np.exp(logits[key_ids] - logits[key_ids].max())
        np.testing.assert_allclose(decision.probs, expected / expected.sum(), atol=1e-6)
        np.testing.assert_array_equal(decision.scores["prob"], decision.probs)
        full = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        assert decision.aux["key_mass"] == pytest.approx(full[key_ids].sum(), abs=1e-6)


def test_keys_that_share_a_first_token_are_refused(tiny_lms: dict[str, Any]) -> None:
    query = Query(state="paris?", options=("yes", "no"), keys=("a b", "a c"))
    with pytest.raises(ScorerError, match=r"keys \['a b', 'a c'\] begin with the same token"):
        LMChoiceScorer(tiny_lms["bos"]).score([query])


def test_a_key_merging_with_the_prompt_is_refused(tiny_lms: dict[str, Any]) -> None:
    # The merge tokenizer turns ":" + " " into one token, so " A" has no logit of its own.
    query = Query(state="Is the sky blue?", options=("yes", "no"))
    with pytest.raises(ScorerError, match="merges with the end of the prompt"):
        LMChoiceScorer(tiny_lms["merge"]).score([query])


def test_a_chat_template_is_rendered_once_around_the_menu(
    tiny_lms: dict[str, Any], chat_template_text: str
) -> None:
    lm = tiny_lms["chat"]
    scorer = LMChoiceScorer(lm, chat_template="own")
    query = Query(state="Is the sky blue?", options=("yes", "no"))
    rendered = f"<|user|>{scorer.prompt(query)}\n<|assistant|>"
    assert scorer.renderer.context(scorer.prompt(query)) == rendered
    decision = scorer.score([query])[0]
    ids = lm.tokenizer(rendered)["input_ids"]
    key_ids = lm.tokenizer.convert_tokens_to_ids(["A", "B"])  # no space before the reply
    np.testing.assert_allclose(
        decision.scores["logit"], last_logits(lm.model, ids)[key_ids], atol=1e-5
    )


def test_a_prompt_beyond_the_context_window_is_refused(tiny_lms: dict[str, Any]) -> None:
    query = Query(state=" ".join(["paris"] * 80), options=("yes", "no"))
    with pytest.raises(
        ScorerError, match=rf"query {query.id}: the prompt is .* context window of 64"
    ):
        LMChoiceScorer(tiny_lms["bos"]).score([query])


def test_the_context_window_boundary_is_exact(tiny_lms: dict[str, Any]) -> None:
    scorer = LMChoiceScorer(tiny_lms["bos"])
    fits = Query(state=" ".join(["paris"] * 55), options=("yes", "no"))
    context, _ = scorer._key_tokens(scorer.prompt(fits), fits.keys, "q")
    assert len(context) == 64  # "<s>" + words + the menu and answer cue: the whole window
    (decision,) = scorer.score([fits])
    assert decision.probs.sum() == pytest.approx(1.0)
    over = Query(state=" ".join(["paris"] * 56), options=("yes", "no"))
    with pytest.raises(ScorerError, match="the prompt is 65 tokens") as info:
        scorer.score([over])
    assert info.value.query_id == over.id


def test_registry_builds_lm_choice_for_a_local_model(tiny_dirs: dict[str, Path]) -> None:
    scorer = load_scorer(f"lm-choice:hf:{tiny_dirs['bos']}")
    assert isinstance(scorer, LMChoiceScorer)
    info = scorer.describe()
    assert info["backend"] == "lm-choice" and info["rules"] == ["prob", "logit"]
    assert scorer.name == info["model"] == f"lm-choice:hf:{tiny_dirs['bos']}"
    assert info["causal_lm"] == f"hf:{tiny_dirs['bos']}"


@pytest.mark.models
def test_smollm2_lm_choice_matches_plain_logits_and_shows_position_bias(smollm2_lm: Any) -> None:
    scorer = LMChoiceScorer(smollm2_lm)
    tok = smollm2_lm.tokenizer
    options = ("London", "Paris", "Berlin", "Madrid")
    queries = [
        Query(
            state="What is the capital of France?",
            options=tuple(options[i] for i in perm),
            instruction="Choose the correct answer.",
            perm=perm,
        )
        for perm in itertools.permutations(range(4))
    ]
    decisions = scorer.score(queries)
    # Against a plain forward for one ordering.
    ids = tok(scorer.prompt(queries[5]))["input_ids"]
    key_ids = [tok(" " + k)["input_ids"][0] for k in "ABCD"]
    logits = last_logits(smollm2_lm.model, ids)[key_ids]
    np.testing.assert_allclose(decisions[5].scores["logit"], logits, atol=1e-4)
    assert all(d.aux["key_mass"] > 0.5 for d in decisions)  # it does answer with a key
    # Position bias: averaged over all 24 orderings every option sits in every slot equally
    # often, so a content-driven chooser would give each slot 0.25 on average.
    probs = np.array([d.probs for d in decisions])
    slot_mean = probs.mean(axis=0)
    assert slot_mean.max() - slot_mean.min() > 0.1
    # The same option's probability moves with its position.
    canonical = np.zeros_like(probs)
    for row, query in enumerate(queries):
        assert query.perm is not None
        canonical[row, list(query.perm)] = probs[row]
    assert (canonical.max(axis=0) - canonical.min(axis=0)).min() > 0.1
    # The label prior with no content at all is far from uniform.
    prior = scorer.content_free_probs()
    assert prior.sum() == pytest.approx(1.0) and prior.max() - prior.min() > 0.1
