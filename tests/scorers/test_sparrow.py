from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("sparrow_decider")

from choiceaudit import Query
from choiceaudit.scorers import load_scorer

OPTIONS = ("Paris", "London", "Berlin", "Madrid")


@pytest.fixture(scope="module")
def sparrow():
    return load_scorer("sparrow")


def test_probabilities_are_the_models_real_vector(sparrow):
    from sparrow_decider import Decider

    query = Query(
        state="What is the capital of France?", options=OPTIONS, instruction="Pick the capital."
    )
    decision = sparrow.score([query])[0]
    _, names, _, raw = Decider.load().probs(
        query.state, {"type": "choice", "instructions": query.instruction,
                      "criteria": dict(zip("ABCD", OPTIONS, strict=True))},
    )  # fmt: skip
    assert names == ["A", "B", "C", "D"]
    np.testing.assert_allclose(decision.probs, raw / raw.sum(), atol=1e-7)
    assert decision.probs.sum() == pytest.approx(1.0, abs=1e-12)
    # The contract's confidence field is a separate number from the max probability.
    assert "conf_head" in decision.aux
    assert decision.aux["conf_head"] != pytest.approx(decision.probs.max(), abs=1e-3)
    assert decision.aux["choice_key"] == "ABCD"[int(np.argmax(decision.probs))]


def _sweep(sparrow, *, keys_travel: bool) -> np.ndarray:
    """Canonical-order probabilities for all 24 orderings, shape (24, 4)."""
    queries = [
        Query(
            state="What is the capital of France?",
            options=tuple(OPTIONS[i] for i in perm),
            keys=tuple("ABCD"[i] for i in perm) if keys_travel else ("A", "B", "C", "D"),
            instruction="Pick the capital.",
            perm=perm,
        )
        for perm in itertools.permutations(range(4))
    ]
    decisions = sparrow.score(queries)
    return np.array(
        [
            [d.probs[q.perm.index(c)] for c in range(4)]
            for q, d in zip(queries, decisions, strict=True)
        ]
    )


def test_probabilities_identical_under_all_24_orderings(sparrow):
    # Each option keeps its key (A = Paris in every ordering); only the display order changes.
    canonical = _sweep(sparrow, keys_travel=True)
    assert canonical.shape == (24, 4)
    assert np.abs(canonical - canonical[0]).max() <= 1e-6


def test_slot_bound_keys_expose_label_sensitivity(sparrow):
    # With A–D bound to slots the key each option carries changes, and sparrow reads the keys:
    # its order invariance is not label invariance. An order audit must keep the two apart.
    canonical = _sweep(sparrow, keys_travel=False)
    assert np.abs(canonical - canonical[0]).max() > 0.05
    described = sparrow.describe()
    assert described["backend"] == "sparrow" and len(described["weights_sha256"]) == 64
