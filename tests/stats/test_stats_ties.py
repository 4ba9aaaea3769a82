"""The tie rule and the permutation-sweep grouping, against brute-force definitions."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from choiceaudit import stats


def _brute_credit(row: list[float]) -> list[float]:
    top = max(row)
    winners = [i for i, v in enumerate(row) if v == top]
    return [1 / len(winners) if i in winners else 0.0 for i in range(len(row))]


def test_tie_credit_splits_exact_ties_and_nothing_else() -> None:
    rng = random.Random(3)
    rows = [[rng.choice([0.1, 0.2, 0.3]) for _ in range(4)] for _ in range(200)]
    got = stats.tie_credit(np.array(rows))
    want = np.array([_brute_credit(r) for r in rows])
    np.testing.assert_array_equal(got, want)
    assert stats.tie_credit(np.array([[0.5, 0.5 - 1e-12]])).tolist() == [[1.0, 0.0]]


def test_tie_credit_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="dimension"):
        stats.tie_credit(np.array([0.5, 0.5]))
    with pytest.raises(ValueError):
        stats.tie_credit(np.array([[np.nan, 1.0]]))


def test_sweeps_keep_only_complete_distinct_orderings_sorted_by_permutation() -> None:
    perms = list(itertools.permutations(range(3)))  # 6 orderings
    ids: list[str] = []
    rows: list[tuple[int, ...] | None] = []
    for item in ("b", "a"):  # complete, shuffled
        order = perms[:]
        random.Random(item).shuffle(order)
        for perm in order:
            ids.append(item)
            rows.append(perm)
    ids += ["c"] * 5  # incomplete
    rows += perms[:5]
    ids += ["d"] * 6  # six renderings but a repeated ordering
    rows += [perms[0], *perms[:5]]
    ids.append("e")  # no permutation: ignored
    rows.append(None)
    sweeps = stats.permutation_sweeps(ids, rows, n_orderings=6)
    assert sweeps is not None
    assert sweeps.items == ("a", "b") and sweeps.n_excluded == 2 and sweeps.n_orderings == 6
    for item, index in zip(sweeps.items, sweeps.index, strict=True):
        assert all(ids[j] == item for j in index)
        assert [rows[j] for j in index] == sorted(perms)
    assert stats.permutation_sweeps(ids, rows, n_orderings=24) is None


def test_mode_sweeps_keep_the_most_common_sweep_size() -> None:
    ids = ["a", "a", "b", "b", "c", "c", "c", "z"]
    perms = [(0, 1), (1, 0), (1, 0), (0, 1), (0, 1), (1, 0), (1, 0), (0, 1)]
    sweeps = stats.permutation_sweeps(ids, perms, n_orderings="mode")
    assert sweeps is not None
    assert sweeps.items == ("a", "b") and sweeps.n_excluded == 2
    assert sweeps.index == ((0, 1), (3, 2))
    assert stats.permutation_sweeps(["a"], [(0, 1)]) is None
    with pytest.raises(ValueError, match="item ids"):
        stats.permutation_sweeps(["a"], [])
