"""The analysis's excess (Table I, per tile, format L): every tie scored by split credit (§I-H),
no item left out for a tie; on rows built here, so it needs no data."""

from __future__ import annotations

import numpy as np
import pytest

from choiceaudit import stats
from choiceaudit.instruments.signalling._analysis import CoordinateRow, paired_excess


def _row(item_id: str, perm: int, k: int, chosen: list[int]) -> CoordinateRow:
    # only the item, the permutation, the menu size and the chosen set enter the excess
    return CoordinateRow(
        item_id=item_id,
        tile="size",
        conflict=True,
        condition="4",
        format="V",
        perm_index=perm,
        rule="probs",
        n_options=k,
        chosen=tuple(chosen),
        chosen_slots=tuple(chosen),
        covered=True,
        n_tied=len(chosen),
        fit_norm=0.0,
        post_norm=0.0,
        agree_fit=0.0,
        agree_bayes=0.0,
        random_fit_norm=0.0,
        random_post_norm=0.0,
        random_agree_fit=0.0,
        random_agree_bayes=0.0,
        salience_post_norm=0.0,
        bayes_fit_norm=0.0,
    )


def _rows(choices_a: list[list[int]], choices_b: list[list[int]], k: int) -> list[CoordinateRow]:
    rows = []
    for i, (a, b) in enumerate(zip(choices_a, choices_b, strict=True)):
        for perm, chosen in ((0, a), (1, b)):
            rows.append(_row(f"i{i}", perm, k, chosen))
    return rows


def test_equals_todays_value_when_nothing_ties() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 6, 50), rng.integers(0, 6, 50)
    ex = paired_excess(_rows([[int(x)] for x in a], [[int(x)] for x in b], 6))
    assert ex.excess == stats.excess_consistency(a, b, 6)
    assert (ex.n_items, ex.tied_items, ex.excluded_unpaired) == (50, 0, 0)


def test_uniform_is_exactly_zero_and_keeps_every_item() -> None:
    menu = list(range(6))
    ex = paired_excess(_rows([menu] * 20, [menu] * 20, 6))
    assert ex.excess == 0.0 and (ex.n_items, ex.tied_items) == (20, 20)


def test_a_hedging_chooser_gets_its_monte_carlo_value() -> None:
    # always a tie between two item-determined options, under both permutations: its excess is
    # the expectation over random tie-breaks (agreement exactly; the marginal's square up to
    # the tie-break variance, under 1/(2n))
    rng = np.random.default_rng(5)
    n, k = 300, 4
    first = rng.integers(0, k, n)
    second = (first + 1 + rng.integers(0, k - 1, n)) % k
    sets = [[int(x), int(y)] for x, y in zip(first, second, strict=True)]
    ex = paired_excess(_rows(sets, sets, k))
    draws = np.array(
        [
            stats.excess_consistency(
                np.where(rng.random(n) < 0.5, first, second),
                np.where(rng.random(n) < 0.5, first, second),
                k,
            )
            for _ in range(3000)
        ]
    )
    se = draws.std(ddof=1) / np.sqrt(draws.size)
    assert ex.excess is not None
    assert abs(ex.excess - draws.mean()) < 1 / (2 * n) + 4 * se
    assert ex.consistency == pytest.approx(0.5) and ex.tied_items == n


def test_an_unpaired_item_is_the_only_one_left_out() -> None:
    lone = _row("lone", 0, 3, [1])
    rows = [*_rows([[0], [1, 2]], [[0], [2]], 3), lone]
    ex = paired_excess(rows)
    assert (ex.n_items, ex.tied_items, ex.excluded_unpaired) == (2, 1, 1)
