from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("sparrow_decider")

from choiceaudit import Query
from choiceaudit.scorers import (
    ScorerError,
    ScorerOptionError,
    SparrowScorer,
    accepted_options,
    load_scorer,
)

OPTIONS = ("Paris", "London", "Berlin", "Madrid")


@pytest.fixture(scope="module")
def sparrow() -> SparrowScorer:
    scorer = load_scorer("sparrow")
    assert isinstance(scorer, SparrowScorer)
    return scorer


def test_probabilities_are_the_models_real_vector(sparrow: SparrowScorer) -> None:
    from sparrow_decider import Decider

    query = Query(
        state="What is the capital of France?", options=OPTIONS, instruction="Pick the capital."
    )
    decision = sparrow.score([query])[0]
    _, names, _, raw = Decider.load().probs(
        query.state,
        {
            "type": "choice",
            "instructions": query.instruction,
            "criteria": dict(zip("ABCD", OPTIONS, strict=True)),
        },
    )
    assert names == ["A", "B", "C", "D"]
    np.testing.assert_allclose(decision.probs, raw / raw.sum(), atol=1e-7)
    assert decision.probs.sum() == pytest.approx(1.0, abs=1e-12)
    # The contract's confidence field is a separate number from the max probability.
    assert "conf_head" in decision.aux
    assert decision.aux["conf_head"] != pytest.approx(decision.probs.max(), abs=1e-3)
    assert decision.aux["choice_key"] == "ABCD"[int(np.argmax(decision.probs))]


def _sweep(sparrow: SparrowScorer, *, keys_travel: bool) -> np.ndarray:
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
            [d.probs[perm.index(c)] for c in range(4)]
            for perm, d in zip(itertools.permutations(range(4)), decisions, strict=True)
        ]
    )


def test_probabilities_identical_under_all_24_orderings(sparrow: SparrowScorer) -> None:
    # Each option keeps its key (A = Paris in every ordering); only the display order changes.
    canonical = _sweep(sparrow, keys_travel=True)
    assert canonical.shape == (24, 4)
    assert np.abs(canonical - canonical[0]).max() <= 1e-6


def test_slot_bound_keys_expose_label_sensitivity(sparrow: SparrowScorer) -> None:
    # With A–D bound to slots the key each option carries changes, and sparrow reads the keys:
    # its order invariance is not label invariance. An order audit must keep the two apart.
    canonical = _sweep(sparrow, keys_travel=False)
    assert np.abs(canonical - canonical[0]).max() > 0.05
    described = sparrow.describe()
    assert described["backend"] == "sparrow" and len(described["weights_sha256"]) == 64


# -- what the model reads -----------------------------------------------------


def _words(n: int, tail: str = "") -> str:
    return " ".join(["river"] * n) + tail


def _own_count(text: str) -> int:
    """Tokens of ``text`` by sparrow-decider's own WordPiece, uncut (a fresh model)."""
    from sparrow_decider import Decider

    return len(Decider.load().static.tok.encode(text, 10**9))


def test_a_state_the_model_would_cut_is_refused_naming_query_and_counts(
    sparrow: SparrowScorer,
) -> None:
    assert _own_count(_words(513)) == 513 and sparrow.max_len == 512
    at_limit = Query(state=_words(512), options=OPTIONS, instruction="Pick the capital.")
    (decision,) = sparrow.score([at_limit])
    assert decision.aux["truncated"] is False
    assert (
        decision.aux["tokens_seen"] == decision.aux["tokens_in_input"] == 512 + 4 + 4 * 2
    )  # "pick the capital ."
    over = Query(
        state=_words(513), options=OPTIONS, instruction="Pick the capital.", meta={"item_id": "x7"}
    )
    with pytest.raises(ScorerError) as info:
        sparrow.score([at_limit, over])
    message = str(info.value)
    assert message.startswith(f"query {over.id} (item x7): sparrow model ")
    assert "the state is 513 tokens, 512 read" in message
    assert "525 tokens in the input, 524 read by the model" in message
    assert "-o truncate=true" in message
    assert info.value.query_id == over.id


def test_truncate_scores_and_records_the_cut_per_decision() -> None:
    scorer = load_scorer("sparrow", truncate=True)
    long_a = Query(state=_words(2000, " paris"), options=OPTIONS)
    long_b = Query(state=_words(2000, " berlin"), options=OPTIONS)
    short = Query(state="What is the capital of France?", options=OPTIONS)
    a, b, c = scorer.score([long_a, long_b, short])
    # Why it is recorded: what differs after token 512 is never read.
    np.testing.assert_array_equal(a.probs, b.probs)
    n_in = 2001 + 4 * 2  # state, empty instruction, four "A paris"-style option lines
    assert a.aux["tokens_in_input"] == n_in == _own_count(long_a.state) + 8
    assert a.aux["tokens_seen"] == 512 + 8 and a.aux["truncated"] is True
    assert c.aux["truncated"] is False
    assert c.aux["tokens_in_input"] == c.aux["tokens_seen"] == _own_count(short.state) + 8
    info = scorer.describe()
    assert info["truncate"] is True and info["truncated_decisions"] == 2


def test_key_value_pairs_beyond_the_models_sixteen_are_a_cut_too() -> None:
    robot = load_scorer("sparrow:nano-robot")
    state = "\n".join(f"sensor{i}: {i}" for i in range(20))
    query = Query(state=state, options=("dock", "explore"))
    with pytest.raises(ScorerError, match="20 key-value pairs, 16 read"):
        robot.score([query])
    (decision,) = load_scorer("sparrow:nano-robot", truncate=True).score([query])
    assert decision.aux["kv_pairs_in_input"] == 20 and decision.aux["kv_pairs_seen"] == 16
    assert (
        decision.aux["truncated"] is True
        and decision.aux["tokens_seen"] == decision.aux["tokens_in_input"]
    )


def test_sparrow_options_are_checked_before_loading() -> None:
    with pytest.raises(ScorerOptionError, match=r"does not accept option\(s\) \['batch_size'\]"):
        load_scorer("sparrow", batch_size=16)
    assert accepted_options("sparrow") == ("truncate",)
