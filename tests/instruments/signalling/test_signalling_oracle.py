"""Fit (§I-D) and the exact oracle (§I-E, §I-F1, Appendix B) against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from choiceaudit.instruments.signalling._fit import (
    concept_fit,
    pair_fit,
)
from choiceaudit.instruments.signalling._oracle import (
    run_oracle,
)
from choiceaudit.instruments.signalling._tiles import (
    Tile,
    load_tiles,
)

SIZE = {t.name: t for t in load_tiles("things")}["size"]
MOVES = {t.name: t for t in load_tiles("things")}["moves"]


def _fit_brute(v: float, lo: float, hi: float, width: float, decay: str) -> float:
    if lo <= v <= hi:
        return 1.0
    d = lo - v if v < lo else v - hi
    return math.exp(-d / width) if decay == "exponential" else math.exp(-((d / width) ** 2))


def _oracle_brute(means, clues, target, tile: Tile, decay: str):  # type: ignore[no-untyped-def]
    k = tile.n_options
    cols = []
    for o in range(k):
        lo, hi = tile.edges[o], tile.edges[o + 1]
        col = [
            min(_fit_brute(a, lo, hi, tile.width, decay), _fit_brute(b, lo, hi, tile.width, decay))
            for a, b in itertools.product(means, clues)
        ]
        cols.append(col)
    h_star = target[0] * len(clues) + target[1]
    fit = [col[h_star] for col in cols]
    post = [col[h_star] / sum(col) for col in cols]
    return fit, post, cols


def test_fit_is_one_inside_and_decays_with_bin_width() -> None:
    f = concept_fit([100.0, 190.0, 250.0, 280.0], SIZE)
    assert f[0, 0] == 1.0 and f[1, 1] == 1.0 and f[1, 2] == 1.0  # closed intervals, shared edge
    assert f[2, 1] == pytest.approx(math.exp(-60 / 60))
    assert f[3, 0] == pytest.approx(math.exp(-150 / 60))
    g = concept_fit([250.0], SIZE, "gaussian")
    assert g[0, 1] == pytest.approx(math.exp(-1.0))  # the two families agree at one width
    assert g[0, 0] == pytest.approx(math.exp(-4.0))
    with pytest.raises(ValueError, match="decay family"):
        concept_fit([1.0], SIZE, "linear")  # type: ignore[arg-type]


def test_pair_fit_is_the_minimum_the_papers_figure_1() -> None:
    # grapefruit and faucet in this release: 217.1 and 223.0 → football 1.00, chicken egg 0.58
    f = pair_fit(217.1, 223.0, SIZE)
    assert f[2] == 1.0
    assert f[1] == pytest.approx(math.exp(-(223.0 - 190.0) / 60.0))
    assert round(float(f[1]), 2) == 0.58


@pytest.mark.parametrize("decay", ["exponential", "gaussian"])
@pytest.mark.parametrize("seed", range(4))
def test_oracle_matches_brute_force(decay: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 40
    means = np.round(rng.uniform(60, 440, (n, 10)), 1)
    clues = np.round(rng.uniform(60, 440, (n, 10)), 1)
    target = rng.integers(0, 10, (n, 2))
    res = run_oracle(means, clues, target, SIZE, decay)  # type: ignore[arg-type]
    for i in range(n):
        fit, post, cols = _oracle_brute(means[i], clues[i], target[i], SIZE, decay)
        np.testing.assert_allclose(res.fit[i], fit, rtol=1e-12)
        np.testing.assert_allclose(res.posterior[i], post, rtol=1e-12)
        assert fit[res.o_fit[i]] == max(fit)
        # every option the oracle calls tied has a column proportional to o_bayes's
        b = int(res.o_bayes[i])
        for o in range(SIZE.n_options):
            ratio = np.array(cols[o]) / np.array(cols[b])
            proportional = bool(np.ptp(ratio) <= 1e-9 * ratio.max())
            assert proportional == bool(res.bayes_tied[i, o])
        assert post[b] == pytest.approx(max(post), rel=1e-12)
        assert fit[b] == max(fit[o] for o in range(SIZE.n_options) if res.bayes_tied[i, o])
        assert res.fit_cost[i] == pytest.approx(max(fit) - fit[b])
        assert res.conflict[i] == (max(fit) - fit[b] > 0)
        f_opt = int(res.o_fit[i])
        assert res.competition_ratio[i] == pytest.approx(sum(cols[f_opt]) / sum(cols[b]))
        assert res.posterior_ratio[i] == pytest.approx(post[b] / post[f_opt])


def test_conflict_means_smaller_denominator_at_o_bayes() -> None:
    # §I-E: where o_fit and o_bayes differ, Σ_h f(o, h) is smaller at o_bayes (an identity)
    rng = np.random.default_rng(7)
    means, clues = rng.uniform(60, 440, (500, 10)), rng.uniform(60, 440, (500, 10))
    target = rng.integers(0, 10, (500, 2))
    res = run_oracle(means, clues, target, SIZE)
    rows = np.flatnonzero(res.conflict)
    assert rows.size > 50
    denom = res.fit / res.posterior
    assert np.all(denom[rows, res.o_bayes[rows]] < denom[rows, res.o_fit[rows]])
    assert np.all(res.competition_ratio[rows] > 1.0)
    assert np.all(res.posterior_ratio[rows] >= 1.0)
    assert np.all(res.competition_ratio[~res.conflict & (res.o_fit == res.o_bayes)] == 1.0)
    assert np.all(res.fit_cost >= 0)


def test_geometric_tie_broken_by_fit() -> None:
    # all concepts inside [200, 245]; the target is the two lowest, so the options below the
    # range (0 and 1) discriminate best and are exactly tied (proportional columns)
    means = np.array([200.0, 210, 215, 220, 225, 230, 235, 240, 242, 245])
    clues = np.array([201.0, 211, 216, 221, 226, 231, 236, 241, 243, 244])
    res = run_oracle(means, clues, [0, 0], SIZE)
    assert res.bayes_tied[0].tolist() == [True, True, False, False, False, False]
    assert res.tie[0] and res.geometric_tie[0]
    assert res.o_bayes[0] == 1  # maximum fit among the tied: the nearer one
    assert res.posterior[0, 0] == res.posterior[0, 1]  # stored exactly equal
    assert res.o_fit[0] == 2 and res.conflict[0]
    assert res.fit_cost[0] == pytest.approx(1.0 - math.exp(-(201.0 - 190.0) / 60.0))
    gauss = run_oracle(means, clues, [0, 0], SIZE, "gaussian")
    assert not gauss.tie[0]  # no exact ties under the Gaussian family


def test_non_geometric_tie_binding_member_outside_both() -> None:
    # Means all far above options 0 and 1; a clue inside option 0 → not wholly outside the
    # concept range, yet every pair's minimum is bound by its Means member: columns proportional
    means = np.array([236.0, 241, 247, 260, 298, 301, 397, 404, 405, 418])
    clues = np.array([112.0, 131, 147, 148, 165, 200, 238, 304, 340, 355])
    res = run_oracle(means, clues, [0, 4], SIZE)
    assert res.bayes_tied[0, :2].all() and res.tie[0] and not res.geometric_tie[0]


def test_coordinates_put_o_fit_and_o_bayes_at_the_poles() -> None:
    rng = np.random.default_rng(3)
    means, clues = rng.uniform(1, 7, (300, 10)), rng.uniform(1, 7, (300, 10))
    res = run_oracle(means, clues, rng.integers(0, 10, (300, 2)), MOVES)
    fit_norm, post_norm = res.fit_norm(), res.post_norm()
    rows = np.arange(300)
    ok = np.isfinite(fit_norm).all(axis=1) & np.isfinite(post_norm).all(axis=1)
    assert np.all(fit_norm[rows, res.o_fit][ok] == 1.0)
    assert np.all(post_norm[rows, res.o_bayes][ok] == pytest.approx(1.0))
    assert np.nanmin(fit_norm) == 0.0


def test_oracle_rejects_bad_shapes_and_targets() -> None:
    with pytest.raises(ValueError, match="target index"):
        run_oracle(np.ones((2, 10)), np.ones((2, 10)), [[0, 10], [0, 0]], MOVES)
    with pytest.raises(ValueError, match="non-finite"):
        run_oracle(np.full(10, np.nan), np.ones(10), [0, 0], MOVES)


def test_a_rounding_fit_cost_is_not_decision_conflict() -> None:
    from choiceaudit.instruments.signalling._oracle import FIT_COST_ATOL, decision_conflict

    costs = np.array([0.0, 1.1e-16, FIT_COST_ATOL, 2e-12, 0.028, 0.42])
    assert decision_conflict(costs).tolist() == [False, False, False, True, True, True]
