"""Input checks shared by every statistic: one place that says what a valid array is.

Every public function in :mod:`choiceaudit.stats` converts its inputs here, so NaN, empty input,
mismatched shapes and probability rows that do not sum to one fail with the same clear
:class:`ValueError` naming the argument and the first offending row.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from choiceaudit.types import PROB_TOLERANCE, BoolArray, FloatArray, IntArray

__all__ = [
    "PROB_TOLERANCE",
    "RETURNED_SUM_TOLERANCE",
    "BoolArray",
    "FloatArray",
    "IntArray",
    "as_choices",
    "as_correct",
    "as_finite",
    "as_perms",
    "as_probs",
    "as_returned",
    "check_level",
    "check_same_length",
    "make_rng",
]

#: Σp of a vector *as returned* (read by the order statistics) may differ from 1 by this much:
#: four options each rounded to two decimals can sum to 1 ± 0.02 (4 × 0.005), which is what an
#: API reporting two decimals returns; a caller with another precision passes ``tolerance``.
RETURNED_SUM_TOLERANCE = 0.02


def _first_bad(mask: npt.NDArray[np.bool_]) -> str:
    """Human-readable index of the first True entry of ``mask`` (row, or row and column)."""
    idx = np.argwhere(mask)[0]
    return "row " + ", ".join(str(int(i)) for i in idx) if idx.size else "?"


def as_finite(x: Any, name: str, *, ndim: int | tuple[int, ...] = 1) -> FloatArray:
    """``x`` as a finite float64 array of the given rank with at least one element."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric, got {type(x).__name__}") from None
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if arr.ndim not in allowed:
        raise ValueError(
            f"{name} must have {' or '.join(map(str, allowed))} dimension(s), got shape {arr.shape}"
        )
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} contains NaN or infinite values (first at {_first_bad(bad)})")
    return arr


def as_probs(x: Any, name: str = "probs", *, ndim: int | tuple[int, ...] = 2) -> FloatArray:
    """Rows of probabilities over options (last axis): finite, in [0, 1], Σp = 1 within 1e-6."""
    arr = as_finite(x, name, ndim=ndim)
    if arr.shape[-1] < 2:
        raise ValueError(f"{name} needs at least 2 options on its last axis, got shape {arr.shape}")
    out_of_range = (arr < 0.0) | (arr > 1.0)
    if out_of_range.any():
        raise ValueError(f"{name} has values outside [0, 1] (first at {_first_bad(out_of_range)})")
    sums = arr.sum(axis=-1)
    off = np.abs(sums - 1.0) > PROB_TOLERANCE
    if off.any():
        where = _first_bad(off) if off.ndim else "the only row"
        first = float(sums[tuple(np.argwhere(off)[0])]) if off.ndim else float(sums)
        raise ValueError(
            f"{name} rows must sum to 1 within {PROB_TOLERANCE:g}; {where} sums to {first:.9g}"
        )
    return arr


def as_returned(
    x: Any, name: str = "probs", *, ndim: int | tuple[int, ...] = 2, tolerance: float
) -> tuple[FloatArray, float]:
    """Vectors as a model returned them: finite, in [0, 1], Σp = 1 within ``tolerance``; returns
    the array and the largest |Σp − 1| over its vectors, so a result can say how far from 1 the
    vectors were."""
    if not np.isfinite(tolerance) or tolerance < 0:
        raise ValueError(f"tolerance must be a non-negative number, got {tolerance!r}")
    arr = as_finite(x, name, ndim=ndim)
    if arr.shape[-1] < 2:
        raise ValueError(f"{name} needs at least 2 options on its last axis, got shape {arr.shape}")
    out_of_range = (arr < 0.0) | (arr > 1.0)
    if out_of_range.any():
        raise ValueError(f"{name} has values outside [0, 1] (first at {_first_bad(out_of_range)})")
    deviation = np.abs(arr.sum(axis=-1) - 1.0)
    # 0.34 + 0.34 + 0.34 is 1.0200000000000002 in floating point: a sum exactly at the stated
    # tolerance is accepted, whatever the last bit of its addition
    off = deviation > tolerance + 1e-12
    if off.any():
        where = _first_bad(off) if off.ndim else "the only row"
        first = float(arr.sum(axis=-1)[tuple(np.argwhere(off)[0])]) if off.ndim else 1.0
        raise ValueError(
            f"{name} rows must sum to 1 within {tolerance:g} (the tolerance argument); {where} "
            f"sums to {first:.9g}"
        )
    return arr, float(deviation.max())


def as_correct(x: Any, name: str = "correct") -> FloatArray:
    """Per-row correctness in [0, 1]: booleans, 0/1, or a fractional credit for a tied choice."""
    arr = as_finite(x, name, ndim=1)
    bad = (arr < 0.0) | (arr > 1.0)
    if bad.any():
        raise ValueError(f"{name} must lie in [0, 1] (first bad at {_first_bad(bad)})")
    return arr


def as_choices(x: Any, name: str, n_options: int, *, ndim: int = 1) -> IntArray:
    """Integer option indices in ``0 .. n_options - 1`` (one choice per row)."""
    if isinstance(n_options, bool) or not isinstance(n_options, int | np.integer):
        raise ValueError(f"n_options must be an integer, got {n_options!r}")
    if n_options < 1:
        raise ValueError(f"n_options must be at least 1, got {n_options}")
    raw = np.asarray(x)
    if raw.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {raw.shape}")
    if raw.size == 0:
        raise ValueError(f"{name} is empty")
    if raw.dtype.kind == "f":
        if not np.all(np.isfinite(raw)):
            raise ValueError(f"{name} contains NaN or infinite values")
        if not np.all(raw == np.round(raw)):
            raise ValueError(f"{name} must hold integer option indices")
    elif raw.dtype.kind not in "iub":
        raise ValueError(f"{name} must hold integer option indices, got dtype {raw.dtype}")
    arr = raw.astype(np.int64)
    bad = (arr < 0) | (arr >= n_options)
    if bad.any():
        raise ValueError(
            f"{name} has option indices outside 0..{n_options - 1} (first at {_first_bad(bad)})"
        )
    return arr


def as_perms(x: Any, name: str = "perms", *, ndim: int = 3) -> IntArray:
    """Permutations on the last axis: ``perm[s]`` is the canonical option shown in slot ``s``."""
    raw = np.asarray(x)
    if raw.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {raw.shape}")
    if raw.size == 0:
        raise ValueError(f"{name} is empty")
    if raw.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integer option indices, got dtype {raw.dtype}")
    arr = raw.astype(np.int64)
    k = arr.shape[-1]
    ok = np.array_equal(np.sort(arr, axis=-1), np.broadcast_to(np.arange(k), arr.shape))
    if not ok:
        bad = np.any(np.sort(arr, axis=-1) != np.arange(k), axis=-1)
        raise ValueError(f"{name} at {_first_bad(bad)} is not a permutation of 0..{k - 1}")
    return arr


def check_same_length(**arrays: npt.NDArray[Any]) -> int:
    """All arrays have the same first dimension; returns it."""
    lengths = {name: int(a.shape[0]) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{n} has {m}" for n, m in lengths.items())
        raise ValueError(f"mismatched lengths: {described} rows")
    return next(iter(lengths.values()))


def check_level(level: float) -> float:
    """A confidence level strictly between 0 and 1."""
    if not isinstance(level, float | int) or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be strictly between 0 and 1, got {level!r}")
    return float(level)


def make_rng(seed: int | np.random.Generator) -> np.random.Generator:
    """A generator from an integer seed (or a generator passed through unchanged)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer or numpy Generator, got {seed!r}")
    return np.random.default_rng(int(seed))
