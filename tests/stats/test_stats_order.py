"""Order-audit measures (literal-attraction §5.4, Appendix Q) on a FakeScorer permutation sweep
and against brute-force loops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from stats_helpers import full_sweep, random_probs

from choiceaudit.scorers import FakeScorer
from choiceaudit.stats import (
    answer_instability,
    canonical_probs,
    gold_prob_range,
    n_distinct_choices,
    order_sensitivity,
    permutation_audit,
    selection_spread,
    slot_shares,
    unstable_items,
)
from choiceaudit.stats._validate import RETURNED_SUM_TOLERANCE
from choiceaudit.types import Query

OPTIONS = [
    ("to be very angry", "to boil blood", "to be hungry", "to sleep late"),
    ("to be lucky", "a hand of gold", "to run away", "to be cold"),
    ("to be stubborn", "a hard head", "to sing well", "to be sick"),
]
GOLD = np.array([0, 0, 0])


def _sweep(scorer: FakeScorer) -> tuple[np.ndarray, np.ndarray]:
    """Score all 24 orderings of each item's fixed option set; arrays in display order."""
    perms = full_sweep(4)
    probs = np.empty((len(OPTIONS), len(perms), 4))
    for i, opts in enumerate(OPTIONS):
        queries = [
            Query(state=f"idiom {i}", options=tuple(opts[c] for c in perm), perm=tuple(perm))
            for perm in perms
        ]
        probs[i] = np.stack([d.probs for d in scorer.score(queries)])
    return probs, np.broadcast_to(perms, probs.shape).copy()


def _content(strength: float) -> Callable[[str], float]:
    def content(text: str) -> float:
        for opts in OPTIONS:
            if text in opts:
                return strength * (3 - opts.index(text))  # gold strongest
        raise KeyError(text)

    return content


def test_order_free_scorer_is_stable_and_sits_at_float_noise() -> None:
    probs, perms = _sweep(FakeScorer(content=_content(1.0)))
    assert answer_instability(probs, perms) == 0.0
    assert n_distinct_choices(probs, perms).tolist() == [1, 1, 1]
    audit = permutation_audit(probs, perms)
    assert audit.max < 1e-15 and audit.share_at_or_below == 1.0
    assert audit.median <= audit.p95 <= audit.max
    assert gold_prob_range(probs, perms, GOLD).max() < 1e-15
    # Gold is placed in every slot equally often across the sweep: no positional preference.
    np.testing.assert_allclose(slot_shares(probs), [0.25] * 4)
    assert selection_spread(probs) == pytest.approx(0.0, abs=1e-15)


def test_strong_position_bias_is_found_and_mapped_by_identity() -> None:
    scorer = FakeScorer(content=_content(0.1), position_bias=[0.0, 10.0, 0.0, 0.0])
    probs, perms = _sweep(scorer)
    # Slot B always wins, so the chosen *gloss* is whatever sits in slot B: all 4 appear.
    assert answer_instability(probs, perms) == 1.0
    assert n_distinct_choices(probs, perms).tolist() == [4, 4, 4]
    np.testing.assert_allclose(slot_shares(probs), [0, 1, 0, 0])
    assert selection_spread(probs) == 1.0
    # p(gold) is highest when gold sits in slot B,
    logits = np.array([0.3, 0.2, 0.1, 0.0])
    in_b = np.exp(logits[0] + 10) / (np.exp(logits[0] + 10) + np.exp(logits[1:]).sum())
    # lowest when the strongest competitor (logit 0.2) takes slot B
    out_b = np.exp(0.3) / (np.exp(0.3) + np.exp(0.2 + 10) + np.exp(0.1) + np.exp(0.0))
    np.testing.assert_allclose(gold_prob_range(probs, perms, GOLD), in_b - out_b, rtol=1e-12)
    summary = order_sensitivity(probs, perms, GOLD)
    assert summary.answer_instability == 1.0 and summary.mean_distinct_choices == 4.0
    assert summary.mean_gold_prob_range == pytest.approx(in_b - out_b, rel=1e-12)
    assert (summary.n_items, summary.n_perms) == (3, 24)


def test_slot_letter_instability_would_be_wrong() -> None:
    # Appendix Q: a stable model changes slot letter whenever the gloss moves.
    probs, perms = _sweep(FakeScorer(content=_content(1.0)))
    letters = probs.argmax(axis=-1)
    assert all(len(set(row)) == 4 for row in letters)  # letters "unstable" on every item
    assert answer_instability(probs, perms) == 0.0  # identities stable


def test_canonical_probs_brute_force() -> None:
    rng = np.random.default_rng(0)
    perms = np.stack([full_sweep(3)[rng.permutation(6)] for _ in range(5)])
    probs = random_probs(rng, 30, 3).reshape(5, 6, 3)
    canon = canonical_probs(probs, perms)
    for i in range(5):
        for j in range(6):
            for s in range(3):
                assert canon[i, j, perms[i, j, s]] == probs[i, j, s]


def test_measures_match_brute_force_on_random_sweeps() -> None:
    rng = np.random.default_rng(1)
    n_items, k = 20, 4
    perms = np.stack([full_sweep(k) for _ in range(n_items)])
    probs = random_probs(rng, n_items * 24, k).reshape(n_items, 24, k)
    gold = rng.integers(0, k, n_items)
    distinct, unstable, ranges, travel = [], [], [], []
    slot_counts = np.zeros(k)
    for i in range(n_items):
        chosen = [perms[i, j, int(np.argmax(probs[i, j]))] for j in range(24)]
        distinct.append(len(set(chosen)))
        unstable.append(len(set(chosen)) > 1)
        p_gold = [probs[i, j, list(perms[i, j]).index(gold[i])] for j in range(24)]
        ranges.append(max(p_gold) - min(p_gold))
        per_option = []
        for o in range(k):
            own = [probs[i, j, list(perms[i, j]).index(o)] for j in range(24)]
            per_option.append(max(own) - min(own))
        travel.append(max(per_option))
        for j in range(24):
            slot_counts[int(np.argmax(probs[i, j]))] += 1
    assert n_distinct_choices(probs, perms).tolist() == distinct
    assert answer_instability(probs, perms) == pytest.approx(np.mean(unstable))
    np.testing.assert_allclose(gold_prob_range(probs, perms, gold), ranges)
    audit = permutation_audit(probs, perms, threshold=0.3)
    np.testing.assert_allclose(audit.travel, travel)
    assert audit.median == pytest.approx(np.median(travel))
    assert audit.share_at_or_below == pytest.approx(np.mean(np.array(travel) <= 0.3))
    shares = slot_counts / slot_counts.sum()
    np.testing.assert_allclose(slot_shares(probs), shares)
    assert selection_spread(probs) == pytest.approx(shares.max() - shares.min())


def test_tied_choices_are_sets() -> None:
    perms = np.array([[[0, 1, 2], [1, 0, 2]]])
    tied = np.array([[[0.4, 0.4, 0.2], [0.4, 0.4, 0.2]]])
    # Both renderings choose the set {0, 1}: stable, two distinct options ever chosen.
    assert answer_instability(tied, perms) == 0.0
    assert n_distinct_choices(tied, perms).tolist() == [2]
    np.testing.assert_allclose(slot_shares(tied), [0.5, 0.5, 0.0])


def test_rounded_identical_distributions_count_as_identical() -> None:
    perms = np.stack([full_sweep(2), full_sweep(2)])
    probs = np.array([[[0.7, 0.3], [0.3, 0.7]], [[0.7, 0.3], [0.7, 0.3]]])
    audit = permutation_audit(probs, perms)
    np.testing.assert_allclose(audit.travel, [0.0, 0.4])
    assert audit.share_identical == 0.5 and audit.share_at_or_below == 0.5
    assert audit.max == pytest.approx(0.4)


def test_scores_argument_audits_another_rule() -> None:
    perms = np.array([[[0, 1], [1, 0]]])
    probs = np.array([[[0.6, 0.4], [0.4, 0.6]]])  # stable under probs
    raw = np.array([[[-1.0, -2.0], [-1.0, -2.0]]])  # slot 0 always wins under this rule
    assert order_sensitivity(probs, perms, [0]).answer_instability == 0.0
    assert order_sensitivity(probs, perms, [0], scores=raw).answer_instability == 1.0


@pytest.mark.parametrize(
    ("probs", "perms", "message"),
    [
        (np.full((1, 2, 3), 1 / 3), np.array([[[0, 1, 1], [0, 1, 2]]]), "not a permutation"),
        (np.full((1, 2, 3), 1 / 3), np.array([[[0, 1, 2]]]), "mismatched shapes"),
        (np.full((1, 2, 3), 0.5), np.array([[[0, 1, 2], [2, 1, 0]]]), "sum to 1"),
        (np.full((1, 2, 2), np.nan), np.array([[[0, 1], [1, 0]]]), "NaN"),
        (np.full((0, 2, 2), 0.5), np.zeros((0, 2, 2), dtype=int), "empty"),
        (np.full((2, 2), 0.5), np.array([[0, 1], [1, 0]]), "dimension"),
    ],
)
def test_bad_input_raises(probs: Any, perms: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        permutation_audit(probs, perms)
    with pytest.raises(ValueError, match=message):
        gold_prob_range(probs, perms, np.zeros(len(probs), dtype=int))


def test_gold_out_of_range_or_wrong_length() -> None:
    perms = np.array([[[0, 1], [1, 0]]])
    probs = np.full((1, 2, 2), 0.5)
    with pytest.raises(ValueError, match="outside"):
        gold_prob_range(probs, perms, [2])
    with pytest.raises(ValueError, match="mismatched"):
        gold_prob_range(probs, perms, [0, 1])


def test_vendor_reported_choice_via_one_hot_scores() -> None:
    # A decision API may report its own choice; one-hot scores audit that choice directly.
    perms = np.array([[[0, 1, 2], [2, 0, 1], [1, 2, 0]]])
    reported_slot = np.array([[0, 1, 2]])  # canonical 0 every time: perm[slot] = 0, 0, 0
    scores = np.eye(3)[reported_slot]
    assert answer_instability(scores, perms) == 0.0
    np.testing.assert_allclose(slot_shares(scores), [1 / 3] * 3)
    assert n_distinct_choices(scores, perms).tolist() == [1]


def test_vectors_as_returned_within_the_stated_tolerance_are_accepted_and_reported() -> None:
    # two-decimal outputs: 0.34 + 0.33 + 0.33 = 1.00, 0.50 + 0.25 + 0.24 = 0.99, 0.34 × 3 = 1.02
    perms = np.array([[[0, 1, 2], [2, 0, 1]]])
    probs = np.array([[[0.50, 0.25, 0.24], [0.34, 0.34, 0.34]]])
    audit = permutation_audit(probs, perms)
    assert audit.tolerance == RETURNED_SUM_TOLERANCE == 0.02
    assert audit.max_sum_deviation == pytest.approx(0.02)
    # canonical: rendering 0 gives [0.50, 0.25, 0.24], rendering 1 gives [0.34, 0.34, 0.34]
    np.testing.assert_allclose(audit.travel, [0.16])
    np.testing.assert_allclose(gold_prob_range(probs, perms, [0]), [0.16])
    summary = order_sensitivity(probs, perms, [0])
    assert summary.max_sum_deviation == pytest.approx(0.02) and summary.tolerance == 0.02
    assert summary.mean_gold_prob_range == pytest.approx(0.16)
    with pytest.raises(ValueError, match=r"within 0.01 .*tolerance"):
        permutation_audit(probs, perms, tolerance=0.01)
    with pytest.raises(ValueError, match="within 1e-06"):
        gold_prob_range(probs, perms, [0], tolerance=1e-6)
    with pytest.raises(ValueError, match="tolerance must be"):
        order_sensitivity(probs, perms, [0], tolerance=-1.0)


def test_unstable_items_are_the_items_answer_instability_counts() -> None:
    perms = np.array([[[0, 1], [1, 0]], [[0, 1], [1, 0]]])
    probs = np.array([[[0.9, 0.1], [0.9, 0.1]], [[0.9, 0.1], [0.1, 0.9]]])
    assert unstable_items(probs, perms).tolist() == [True, False]
    assert answer_instability(probs, perms) == 0.5


def test_the_travel_p95_is_numpys_95th_percentile() -> None:
    # three items of two orderings whose first two options each move by m / 2
    probs, perms = [], []
    for moves in (0.1, 0.2, 0.9):
        first = [0.5, 0.25, 0.125, 0.125]
        second = [0.5 - moves / 2, 0.25 + moves / 2, 0.125, 0.125]
        probs.append([first, second])
        perms.append([(0, 1, 2, 3), (0, 1, 2, 3)])
    audit = permutation_audit(np.array(probs), np.array(perms))
    np.testing.assert_allclose(audit.travel, [0.05, 0.1, 0.45])
    # the 95th percentile of three values, interpolated between the second and the third
    assert audit.p95 == pytest.approx(0.1 + 0.9 * (0.45 - 0.1))
