"""The RSA layer: eligibility refusals (§IV-H1), the inert α (§IV-H5), fit base → o_bayes."""

from __future__ import annotations

import numpy as np
import pytest

from choiceaudit.instruments.signalling._fit import (
    pair_fit,
)
from choiceaudit.instruments.signalling._oracle import (
    run_oracle,
)
from choiceaudit.instruments.signalling._rsa import (
    IneligibleBaseError,
    rsa_speaker,
)
from choiceaudit.instruments.signalling._tiles import load_tiles

SIZE = {t.name: t for t in load_tiles("things")}["size"]


def _fit_base(means: np.ndarray, clues: np.ndarray) -> np.ndarray:
    f = pair_fit(means[:, :, None], clues[:, None, :], SIZE)  # (n, M, C, K)
    n = means.shape[0]
    return np.moveaxis(f.reshape(n, -1, SIZE.n_options), 1, 2)  # (n, K, H)


def test_rsa_over_the_fit_base_sends_o_bayes_and_alpha_is_inert() -> None:
    rng = np.random.default_rng(0)
    n = 300
    means, clues = rng.uniform(60, 440, (n, 10)), rng.uniform(60, 440, (n, 10))
    target = rng.integers(0, 10, (n, 2))
    res = run_oracle(means, clues, target, SIZE)
    base = _fit_base(means, clues)
    h_star = target[:, 0] * 10 + target[:, 1]
    s1 = rsa_speaker(base, h_star)
    np.testing.assert_allclose(s1.sum(axis=1), 1.0)
    untied = ~res.tie
    assert np.array_equal(np.argmax(s1, axis=1)[untied], res.o_bayes[untied])
    for alpha in (0.5, 2.0, 50.0):
        other = rsa_speaker(base, h_star, alpha=alpha)
        assert np.array_equal(np.argmax(other, axis=1)[untied], np.argmax(s1, axis=1)[untied])


def test_ineligible_bases_are_refused_with_the_reason() -> None:
    base = np.array([[0.5, -0.1], [0.2, 0.3]])
    with pytest.raises(IneligibleBaseError, match=r"25\.0 % of base entries are negative"):
        rsa_speaker(base, 0)
    with pytest.raises(IneligibleBaseError, match="signed, unbounded below"):
        rsa_speaker(np.abs(base), 0, kind="cosine")
    with pytest.raises(IneligibleBaseError, match="speaker likelihood"):
        rsa_speaker(np.abs(base), 0, kind="prompted-lm")
    with pytest.raises(IneligibleBaseError, match="no hypothesis"):
        rsa_speaker(np.array([[0.0, 0.0], [0.2, 0.3]]), 0)
    with pytest.raises(ValueError, match="alpha"):
        rsa_speaker(np.abs(base), 0, alpha=0.0)


def test_speaker_definition_on_a_small_base() -> None:
    base = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # option 1 is true of h0 only
    s1 = rsa_speaker(base, 0)
    # L0(h0 | o0) = 1/2, L0(h0 | o1) = 1 → S1 = (1/3, 2/3)
    np.testing.assert_allclose(s1, [1 / 3, 2 / 3])
    np.testing.assert_allclose(rsa_speaker(base, 1), [1.0, 0.0])
