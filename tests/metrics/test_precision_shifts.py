"""``rule_shifts``: the distances between two scorings per rule, the flips of the chosen set,
and options that are not finite counted rather than dropped or crashing the comparison."""

from __future__ import annotations

import math

import numpy as np
import pytest

from choiceaudit.metrics import rule_shifts


def _q(*values: float) -> dict[str, np.ndarray]:
    return {"sum": np.array(values, dtype=np.float64)}


def test_distances_and_flips_per_rule() -> None:
    a = [_q(-1.0, -2.0, -3.0), _q(-0.5, -0.4)]
    b = [_q(-1.1, -2.0, -2.7), _q(-0.3, -0.4)]
    (shift,) = rule_shifts(a, b)
    assert (shift.rule, shift.n_queries, shift.n_options) == ("sum", 2, 5)
    assert shift.max_abs == pytest.approx(0.3)
    assert shift.median_abs == pytest.approx(0.1)
    assert shift.flips == 1 and shift.flip_rate == 0.5  # the second query's choice moved
    assert shift.n_not_finite == 0


def test_an_overflow_is_counted_and_still_compared() -> None:
    a = [_q(-1.0, -2.0, -3.0), _q(-1.0, -2.0)]
    b = [_q(-1.0, math.nan, -3.0), _q(-math.inf, -2.0)]
    (shift,) = rule_shifts(a, b)
    assert shift.n_not_finite == 2 and shift.n_options == 3
    assert shift.max_abs == 0.0
    assert shift.flips == 1  # -inf ranks last: the second query now chooses option 1


def test_a_rule_only_one_side_holds_is_left_out_and_lengths_must_agree() -> None:
    a = [{"sum": np.array([0.0, -1.0]), "pmi": np.array([0.0, 1.0])}]
    b = [{"sum": np.array([0.0, -1.0])}]
    assert [s.rule for s in rule_shifts(a, b)] == ["sum"]
    with pytest.raises(ValueError, match="queries against"):
        rule_shifts(a, [])
