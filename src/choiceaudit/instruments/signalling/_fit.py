"""The fit function (paper §I-D): how well an option describes a concept, and a pair.

For option ``o`` with interval ``I_o = [lo, hi]`` and a concept rated ``v``::

    f(o, v) = 1                               if v ∈ I_o
            = exp(-dist(v, I_o) / width(o))   otherwise     (exponential, the primary form)
            = exp(-(dist(v, I_o) / width(o))²)               (Gaussian, the reported alternative)

with ``width`` the tile's common bin width taken from the instrument, so neither form has a free
parameter (the two agree at one width from the bin). Both forms are 1 on the interval, so the
closed-interval distance ``max(lo − v, 0, v − hi)`` covers both cases. Fit for a pair
``h = (m, c)`` is the minimum over its two members (§I-D: max and centroid collapse the design,
the mean discards straddle magnitude). Everything is computed in log space: ``log f = −d/w`` or
``−(d/w)²``, and the pair minimum is the minimum of logs.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from choiceaudit.instruments.signalling._tiles import Tile
from choiceaudit.types import FloatArray

__all__ = [
    "DECAY_FAMILIES",
    "DecayFamily",
    "concept_fit",
    "concept_log_fit",
    "option_distance",
    "pair_fit",
]

DecayFamily = Literal["exponential", "gaussian"]
DECAY_FAMILIES: tuple[DecayFamily, ...] = ("exponential", "gaussian")


def option_distance(values: npt.ArrayLike, tile: Tile) -> FloatArray:
    """Distance of each value to each option interval: shape ``values.shape + (K,)``."""
    v = np.asarray(values, dtype=np.float64)[..., None]
    return np.maximum(np.maximum(tile.lows - v, v - tile.highs), 0.0)


def concept_log_fit(
    values: npt.ArrayLike, tile: Tile, decay: DecayFamily = "exponential"
) -> FloatArray:
    """``log f(o, v)`` for every value and option (``values.shape + (K,)``), never ``-inf``."""
    scaled = option_distance(values, tile) / tile.width
    if decay == "exponential":
        return -scaled
    if decay == "gaussian":
        return -(scaled**2)
    raise ValueError(f"unknown decay family {decay!r}; use one of {DECAY_FAMILIES}")


def concept_fit(
    values: npt.ArrayLike, tile: Tile, decay: DecayFamily = "exponential"
) -> FloatArray:
    """``f(o, v)`` (see module docstring)."""
    return np.exp(concept_log_fit(values, tile, decay))


def pair_fit(
    value_a: npt.ArrayLike, value_b: npt.ArrayLike, tile: Tile, decay: DecayFamily = "exponential"
) -> FloatArray:
    """``f(o, (a, b)) = min(f(o, a), f(o, b))`` for broadcastable value arrays (+ option axis)."""
    return np.minimum(concept_fit(value_a, tile, decay), concept_fit(value_b, tile, decay))
