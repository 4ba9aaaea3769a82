"""Readings of Appendix B's tie statistics (paper Appendix B, §I-E).

Appendix B says two options tie exactly when their likelihood columns over the hypothesis space
are proportional, and that the geometric statement — "both options lie entirely outside the
item's concept range" — covers 84.7 % of ties. The paper does not say which ties it counts or
which range it means, and the two readings the oracle implements (ties *at the Bayes optimum*,
geometric = every tied option beyond the range of the item's 20 listed concepts, on one side)
give about 10 % on the shared data. :func:`tie_readings` therefore reports every candidate
reading side by side, so none is chosen silently:

* **tie set** — ``bayes_optimum``: candidates whose ``o_bayes`` class has more than one option
  (item level; the share of those whose whole class is geometric); ``any_two_options``: every
  pair of options of every candidate whose columns are proportional (pair level; the share of
  those pairs that are geometric), whether or not the pair is at the optimum.
* **range** — ``listed_concepts``: the range of all ``M + C`` listed concepts' ratings;
  ``target_pair``: the range of the two target concepts' ratings.

A pair (or class) is geometric when every option in it lies beyond the range on the same side
(its interval ends at or below the minimum, or starts at or above the maximum). Proportionality
is the algebraic test of :mod:`._oracle` (spread of log-likelihood differences ≤ ``TIE_ATOL``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, NotRequired

import numpy as np
from typing_extensions import TypedDict

from choiceaudit.instruments.signalling._fit import concept_log_fit
from choiceaudit.instruments.signalling._items import CandidateBlock
from choiceaudit.instruments.signalling._oracle import TIE_ATOL
from choiceaudit.types import BoolArray

__all__ = [
    "TIE_RANGES",
    "TIE_SETS",
    "Sufficiency",
    "TieReadings",
    "TieShare",
    "pooled_tie_readings",
    "tie_readings",
]

TIE_SETS: tuple[str, ...] = ("bayes_optimum", "any_two_options")
TIE_RANGES: tuple[str, ...] = ("listed_concepts", "target_pair")


class TieShare(TypedDict):
    """One reading: tied units, the geometric ones among them and their share; ``tie_rate``
    (tied candidates over all) for the ``bayes_optimum`` readings of a non-empty block."""

    tied: int
    geometric: int
    geometric_share: float | None
    tie_rate: NotRequired[float]


class Sufficiency(TypedDict):
    """Option pairs geometric under one range, and how many of them tie."""

    geometric_pairs: int
    tied: int
    p_tie_given_geometric: float | None


# the readings are recorded under "<tie set>/<range>" keys, which the class syntax cannot name
TieReadings = TypedDict(
    "TieReadings",
    {
        "candidates": int,
        "bayes_optimum/listed_concepts": TieShare,
        "bayes_optimum/target_pair": TieShare,
        "any_two_options/listed_concepts": TieShare,
        "any_two_options/target_pair": TieShare,
        "sufficiency/listed_concepts": Sufficiency,
        "sufficiency/target_pair": Sufficiency,
    },
)
TieReadings.__doc__ = """:func:`tie_readings` of a block (or pooled over blocks), as recorded in
the item set's ``config["tie_readings"]``."""

_ShareKey = Literal[
    "bayes_optimum/listed_concepts",
    "bayes_optimum/target_pair",
    "any_two_options/listed_concepts",
    "any_two_options/target_pair",
]
_SufficiencyKey = Literal["sufficiency/listed_concepts", "sufficiency/target_pair"]
_SHARE_KEYS: tuple[_ShareKey, ...] = (
    "bayes_optimum/listed_concepts",
    "bayes_optimum/target_pair",
    "any_two_options/listed_concepts",
    "any_two_options/target_pair",
)
_SUFFICIENCY_KEYS: tuple[_SufficiencyKey, ...] = (
    "sufficiency/listed_concepts",
    "sufficiency/target_pair",
)


def _sides(block: CandidateBlock, rows: slice, scope: str) -> tuple[BoolArray, BoolArray]:
    tile = block.tile
    values = block.norms.dimensions[tile.dimension].means[block.concepts[rows]]
    if scope == "listed_concepts":
        lo, hi = values.min(axis=1)[:, None], values.max(axis=1)[:, None]
    else:
        target = block.target[rows]
        idx = np.arange(values.shape[0])
        pair = np.stack(
            [values[idx, target[:, 0]], values[idx, block.n_means + target[:, 1]]], axis=1
        )
        lo, hi = pair.min(axis=1)[:, None], pair.max(axis=1)[:, None]
    return tile.highs[None, :] <= lo, tile.lows[None, :] >= hi


def _counts(block: CandidateBlock, chunk: int = 4096) -> dict[str, list[int]]:
    """Per reading ``[tied, geometric]`` counts over the block."""
    tile, o, m = block.tile, block.oracle, block.n_means
    k = tile.n_options
    out = {f"{s}/{r}": [0, 0] for s in TIE_SETS for r in TIE_RANGES}
    # sufficiency: [geometric pairs, of which proportional] per range
    out |= {f"sufficiency/{r}": [0, 0] for r in TIE_RANGES}
    for start in range(0, len(block), chunk):
        rows = slice(start, min(start + chunk, len(block)))
        values = block.norms.dimensions[tile.dimension].means[block.concepts[rows]]
        lm = np.swapaxes(concept_log_fit(values[:, :m], tile), 1, 2)
        lc = np.swapaxes(concept_log_fit(values[:, m:], tile), 1, 2)
        log_lik = np.minimum(lm[:, :, :, None], lc[:, :, None, :]).reshape(values.shape[0], k, -1)
        tied_class = o.bayes_tied[rows]
        tie = o.tie[rows]
        for scope in TIE_RANGES:
            below, above = _sides(block, rows, scope)
            geo = tie & (np.all(below | ~tied_class, axis=1) | np.all(above | ~tied_class, axis=1))
            cell = out[f"bayes_optimum/{scope}"]
            cell[0] += int(tie.sum())
            cell[1] += int(geo.sum())
            pairs = out[f"any_two_options/{scope}"]
            for a in range(k):
                for b in range(a + 1, k):
                    d = log_lik[:, a, :] - log_lik[:, b, :]
                    prop = (d.max(axis=1) - d.min(axis=1)) <= TIE_ATOL
                    same = (below[:, a] & below[:, b]) | (above[:, a] & above[:, b])
                    pairs[0] += int(prop.sum())
                    pairs[1] += int((prop & same).sum())
                    suff = out[f"sufficiency/{scope}"]
                    suff[0] += int(same.sum())
                    suff[1] += int((prop & same).sum())
    return out


def _share(counts: Sequence[int], n: int, *, rate: bool) -> TieShare:
    a, b = counts
    out: TieShare = {"tied": a, "geometric": b, "geometric_share": b / a if a else None}
    if rate and n:
        out["tie_rate"] = a / n
    return out


def _sufficiency(counts: Sequence[int]) -> Sufficiency:
    # Appendix B calls the geometric condition sufficient: P(tie | geometric) = 1
    a, b = counts
    return {"geometric_pairs": a, "tied": b, "p_tie_given_geometric": b / a if a else None}


def _shares(counts: Mapping[str, Sequence[int]], n: int) -> TieReadings:
    def share(key: _ShareKey) -> TieShare:
        return _share(counts[key], n, rate=key.startswith("bayes_optimum"))

    return {
        "candidates": n,
        "bayes_optimum/listed_concepts": share("bayes_optimum/listed_concepts"),
        "bayes_optimum/target_pair": share("bayes_optimum/target_pair"),
        "any_two_options/listed_concepts": share("any_two_options/listed_concepts"),
        "any_two_options/target_pair": share("any_two_options/target_pair"),
        "sufficiency/listed_concepts": _sufficiency(counts["sufficiency/listed_concepts"]),
        "sufficiency/target_pair": _sufficiency(counts["sufficiency/target_pair"]),
    }


def tie_readings(block: CandidateBlock) -> TieReadings:
    """Per reading ``"<tie set>/<range>"``: tied units, geometric units, the geometric share
    and (for ``bayes_optimum``) the tie rate over the block's candidates; per range
    ``"sufficiency/<range>"``: option pairs that are geometric under that range and the share of
    them that tie (Appendix B says the geometric condition is sufficient, so 1)."""
    return _shares(_counts(block), len(block))


def pooled_tie_readings(per_tile: Mapping[str, TieReadings]) -> TieReadings:
    """Per-tile :func:`tie_readings` results pooled over tiles (counts summed, then shares)."""
    total: dict[str, list[int]] = {}
    for result in per_tile.values():
        for key in _SHARE_KEYS:
            acc = total.setdefault(key, [0, 0])
            acc[0] += int(result[key]["tied"])
            acc[1] += int(result[key]["geometric"])
        for skey in _SUFFICIENCY_KEYS:
            acc = total.setdefault(skey, [0, 0])
            acc[0] += int(result[skey]["geometric_pairs"])
            acc[1] += int(result[skey]["tied"])
    return _shares(total, sum(int(r["candidates"]) for r in per_tile.values()))
