"""Random inputs shared by the stats tests (seeded, so every failure reproduces)."""

from __future__ import annotations

import itertools

import numpy as np


def random_probs(
    rng: np.random.Generator, n: int, k: int, *, grid: int | None = None
) -> np.ndarray:
    """``n`` probability rows over ``k`` options; with ``grid`` the values are multiples of
    ``1/grid`` (so exact ties in the argmax and in confidence are common)."""
    if grid is None:
        logits = rng.normal(scale=2.0, size=(n, k))
        z = np.exp(logits - logits.max(axis=1, keepdims=True))
        out: np.ndarray = z / z.sum(axis=1, keepdims=True)
        return out
    out = np.zeros((n, k))
    for i in range(n):
        cuts = np.sort(rng.integers(0, grid + 1, size=k - 1))
        out[i] = np.diff(np.concatenate(([0], cuts, [grid]))) / grid
    return out


def full_sweep(k: int) -> np.ndarray:
    """All ``k!`` permutations of ``0..k-1`` in lexicographic order, shape (k!, k)."""
    return np.array(list(itertools.permutations(range(k))), dtype=np.int64)
