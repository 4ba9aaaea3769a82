"""``Decision.uniform_over``: a chosen tied set as a probability split evenly over it."""

from __future__ import annotations

import numpy as np
import pytest

from choiceaudit.types import Decision


def test_split_over_a_tied_set() -> None:
    d = Decision.uniform_over("q", 4, [3, 1, 3], scores={"x": [0, 1, 2, 1]}, aux={"a": 1})
    assert d.probs.tolist() == [0.0, 0.5, 0.0, 0.5]
    assert d.choice() == (1, 3) and d.aux == {"a": 1} and d.scores["x"][2] == 2.0
    third = Decision.uniform_over("q", 3, np.flatnonzero(np.array([1.0, 1.0, 1.0]) == 1.0))
    assert third.probs.tolist() == (np.array([True, True, True]) / 3).tolist()
    assert Decision.uniform_over("q", 2, [0]).probs.tolist() == [1.0, 0.0]


def test_an_empty_tied_set_is_refused() -> None:
    with pytest.raises(ValueError, match="tied set is empty"):
        Decision.uniform_over("q", 2, [])
