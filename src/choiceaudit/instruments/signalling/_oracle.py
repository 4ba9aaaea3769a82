"""The exact oracle (paper §I-E, §I-F1, Appendix B), vectorised over many items at once.

An item shows ``M`` candidate Means and ``C`` candidate Clues; the hypothesis space is every
``(m, c)`` pairing, exactly one of which (``h*``) is the target. Under a uniform prior::

    P(h* | o) = f(o, h*) / Σ_h f(o, h)                                          (eq. 2)
    o_fit   = argmax_o f(o, h*)                                                 (eq. 3)
    o_bayes = argmax_o P(h* | o), ties → maximum f(o, h*) among the tied       (eq. 4)

**Exact ties** (Appendix B) are decided by the algebraic condition, never by comparing floats:
two options tie exactly when their likelihood columns ``(f(o, h))_h`` are proportional, i.e.
their log-likelihood columns differ by a constant (within ``tie_atol``). The geometric special
case — every tied option lies wholly outside the item's concept range, on the same side — is
counted separately. It only arises under the exponential family (a common distance offset ``c``
scales every fit by ``exp(−c/width)``); under the Gaussian family ties are generically absent.
Where the lexicographic rule still leaves several options (equal posterior *and* equal fit, so
every coordinate is the same), ``o_bayes`` is the lowest canonical index.

``fit_cost = f(o_fit, h*) − f(o_bayes, h*)``; an item has **decision conflict** when
``fit_cost > FIT_COST_ATOL`` (1e-12): the fit-maximising option is not the posterior-maximising
one. The tolerance keeps a rounding difference (1.1e-16 between two evaluations of one fit)
from counting as conflict; a real fit_cost on these scales is many orders larger.

The **local competition ratio** is ``Σ_h f(o_fit, h) / Σ_h f(o_bayes, h)``: how much more the
fit-maximising option also fits the item's own hypotheses (its competition, the denominator of
eq. 2) than the Bayes option does. By the §I-E identity it is > 1 on every conflict item, and 1
where ``o_fit = o_bayes``. The paper reports its median (1.842) without printing the formula;
this reading is ours. We chose it because on the shared THINGSplus data its median over conflict
candidates is 1.87, where the posterior ratio ``P(h* | o_bayes) / P(h* | o_fit)`` (kept as
``posterior_ratio``) has a median near 1.2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from choiceaudit.instruments.signalling._fit import DecayFamily, concept_log_fit
from choiceaudit.instruments.signalling._tiles import Tile
from choiceaudit.types import BoolArray, FloatArray, IntArray

__all__ = ["FIT_COST_ATOL", "OracleResult", "coordinates", "decision_conflict", "run_oracle"]


#: Tolerance on the spread of log-likelihood differences for "proportional columns".
TIE_ATOL = 1e-9
#: Largest fit_cost that is rounding, not conflict.
FIT_COST_ATOL = 1e-12


def decision_conflict(fit_cost: FloatArray) -> BoolArray:
    """Decision conflict: ``fit_cost`` beyond rounding (``> FIT_COST_ATOL``)."""
    return np.asarray(np.asarray(fit_cost, dtype=np.float64) > FIT_COST_ATOL, dtype=np.bool_)


@dataclass(frozen=True)
class OracleResult:
    """Per item (rows) and option (columns, canonical tile order).

    ``fit`` is ``f(o, h*)``; ``posterior`` is ``P(h* | o)``; ``fit_tied``/``bayes_tied`` mark the
    options attaining the maximum fit / the exact posterior maximum (the proportional class).
    """

    fit: FloatArray
    posterior: FloatArray
    o_fit: IntArray
    fit_tied: BoolArray
    o_bayes: IntArray
    bayes_tied: BoolArray
    tie: BoolArray
    geometric_tie: BoolArray
    conflict: BoolArray
    fit_cost: FloatArray
    competition_ratio: FloatArray
    posterior_ratio: FloatArray
    posterior_gap: FloatArray
    bayes_margin: FloatArray

    def __len__(self) -> int:
        return int(self.fit.shape[0])

    def fit_norm(self) -> FloatArray:
        """Eq. 5: target fit min-max normalised within each item's option set (NaN if flat)."""
        return _minmax(self.fit)

    def post_norm(self) -> FloatArray:
        """Eq. 6: posterior min-max normalised within each item's option set (NaN if flat)."""
        return _minmax(self.posterior)


def _minmax(x: FloatArray) -> FloatArray:
    lo = x.min(axis=1, keepdims=True)
    span = x.max(axis=1, keepdims=True) - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(span > 0, (x - lo) / np.where(span > 0, span, 1.0), np.nan)


def coordinates(result: OracleResult) -> tuple[FloatArray, FloatArray]:
    """``(fit_norm, post_norm)`` for every item and option (eqs. 5–6)."""
    return result.fit_norm(), result.post_norm()


def _oracle_block(
    means: FloatArray, clues: FloatArray, target: IntArray, tile: Tile, decay: DecayFamily
) -> dict[str, npt.NDArray[np.generic]]:
    n, m = means.shape
    c = clues.shape[1]
    k = tile.n_options
    rows = np.arange(n)
    # Options first, hypotheses last, so the big reductions run over contiguous memory; the
    # minimum of fits is taken on fits directly (exp is monotone), exp only on the small arrays.
    lm = np.swapaxes(concept_log_fit(means, tile, decay), 1, 2)  # (n, K, M)
    lc = np.swapaxes(concept_log_fit(clues, tile, decay), 1, 2)  # (n, K, C)
    fm, fc = np.exp(lm), np.exp(lc)
    lik = np.minimum(fm[:, :, :, None], fc[:, :, None, :]).reshape(n, k, m * c)
    fit = np.minimum(fm[rows, :, target[:, 0]], fc[rows, :, target[:, 1]])  # (n, K)
    competition = lik.sum(axis=2)  # Σ_h f(o, h), the denominator of eq. 2
    posterior = fit / competition

    fit_max = fit.max(axis=1, keepdims=True)
    fit_tied = fit == fit_max
    o_fit = np.argmax(fit, axis=1)

    best = np.argmax(posterior, axis=1)
    # Proportional columns have equal posteriors up to rounding, so only options within a
    # rounding distance of the maximum need the exact column test.
    best_post = posterior[rows, best][:, None]
    bayes_tied = posterior >= best_post * (1.0 - 1e-9)
    check = np.flatnonzero(bayes_tied.sum(axis=1) > 1)
    if check.size:
        log_lik = np.minimum(lm[check][:, :, :, None], lc[check][:, :, None, :]).reshape(
            check.size, k, m * c
        )
        diff = log_lik - log_lik[np.arange(check.size), best[check], :][:, None, :]
        bayes_tied[check] = (diff.max(axis=2) - diff.min(axis=2)) <= TIE_ATOL
        # Algebraically equal posteriors are stored equal, so post_norm is exactly 1 on the
        # whole tied class and never depends on rounding.
        posterior = np.where(bayes_tied, best_post, posterior)
    masked_fit = np.where(bayes_tied, fit, -np.inf)
    o_bayes = np.argmax(masked_fit, axis=1)  # first index among equal fits: lowest canonical
    tie = bayes_tied.sum(axis=1) > 1

    vmin = np.minimum(means.min(axis=1), clues.min(axis=1))[:, None]
    vmax = np.maximum(means.max(axis=1), clues.max(axis=1))[:, None]
    below = tile.highs[None, :] <= vmin
    above = tile.lows[None, :] >= vmax
    all_below = np.all(below | ~bayes_tied, axis=1)
    all_above = np.all(above | ~bayes_tied, axis=1)
    geometric = tie & (all_below | all_above)

    fit_bayes = fit[rows, o_bayes]
    fit_cost = fit_max[:, 0] - fit_bayes
    post_bayes = posterior[rows, o_bayes]
    post_fit = posterior[rows, o_fit]
    outside = np.where(bayes_tied, -np.inf, posterior).max(axis=1)
    margin = np.where(np.isfinite(outside), (post_bayes - outside) / post_bayes, 1.0)
    return {
        "fit": fit,
        "posterior": posterior,
        "o_fit": o_fit,
        "fit_tied": fit_tied,
        "o_bayes": o_bayes,
        "bayes_tied": bayes_tied,
        "tie": tie,
        "geometric_tie": geometric,
        "conflict": decision_conflict(fit_cost),
        "fit_cost": fit_cost,
        "competition_ratio": competition[rows, o_fit] / competition[rows, o_bayes],
        "posterior_ratio": post_bayes / post_fit,
        "posterior_gap": post_bayes - post_fit,
        "bayes_margin": margin,
    }


def run_oracle(
    means: npt.ArrayLike,
    clues: npt.ArrayLike,
    target: npt.ArrayLike,
    tile: Tile,
    decay: DecayFamily = "exponential",
    *,
    chunk: int = 4096,
) -> OracleResult:
    """Score items exactly: ``means`` (n, M) and ``clues`` (n, C) are the listed concepts'
    ratings on the tile's dimension, ``target`` (n, 2) the (means index, clue index) of ``h*``.
    A single item may be passed without the leading axis. Work is chunked over items."""
    mv = np.asarray(means, dtype=np.float64)
    cv = np.asarray(clues, dtype=np.float64)
    tg = np.asarray(target, dtype=np.int64)
    single = mv.ndim == 1
    if single:
        mv, cv, tg = mv[None, :], cv[None, :], tg[None, :]
    if mv.ndim != 2 or cv.ndim != 2 or mv.shape[0] != cv.shape[0] or tg.shape != (mv.shape[0], 2):
        raise ValueError(
            f"oracle inputs must be (n, M), (n, C), (n, 2); got {mv.shape}, {cv.shape}, {tg.shape}"
        )
    if not (np.all(np.isfinite(mv)) and np.all(np.isfinite(cv))):
        raise ValueError("oracle inputs contain non-finite ratings")
    if (
        np.any(tg[:, 0] < 0)
        or np.any(tg[:, 0] >= mv.shape[1])
        or np.any(tg[:, 1] < 0)
        or np.any(tg[:, 1] >= cv.shape[1])
    ):
        raise ValueError("target index out of range")
    parts = [
        _oracle_block(mv[s : s + chunk], cv[s : s + chunk], tg[s : s + chunk], tile, decay)
        for s in range(0, mv.shape[0], chunk)
    ]
    merged = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    return OracleResult(**merged)  # type: ignore[arg-type]
