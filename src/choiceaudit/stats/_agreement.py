"""Agreement between two choice vectors, and overlap of two token sets.

``agreement_rate`` is the plain share of rows on which two choosers (or two renderings, or two
label forms) make the same choice (consistency-without-alignment §IV-H4: the two label forms
"agree on only 64.9 percent of choices"; literal-attraction Appendix N). It is *not*
item-sensitivity; see :func:`~choiceaudit.stats.excess_consistency` for that.

``jaccard_similarity`` is the distinctness cut between a gold and a literal gloss
(literal-attraction Appendix J(iii): Jaccard < 0.34 on token sets). Tokenisation is the caller's:
this function only sees the two collections of tokens.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["agreement_rate", "jaccard_similarity"]


def _as_labels(x: Any, name: str) -> np.ndarray[Any, Any]:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if arr.dtype.kind == "O" and any(v is None for v in arr):
        raise ValueError(f"{name} contains None")
    return arr


def agreement_rate(choice_a: Any, choice_b: Any) -> float:
    """Share of rows where ``choice_a == choice_b`` (any comparable labels, one choice per row).

    Exact ties are a tied set elsewhere in the toolkit; a single-choice statistic needs the caller
    to decide how a tied row is represented (or to exclude and count it).

    >>> agreement_rate([0, 1, 2, 3], [0, 1, 3, 2])
    0.5
    """
    a = _as_labels(choice_a, "choice_a")
    b = _as_labels(choice_b, "choice_b")
    if a.shape != b.shape:
        raise ValueError(f"mismatched lengths: choice_a has {a.size} rows, choice_b has {b.size}")
    return float(np.mean(a == b))


def jaccard_similarity(tokens_a: Iterable[str], tokens_b: Iterable[str]) -> float:
    """``|A ∩ B| / |A ∪ B|`` of the two token *sets* (duplicates and order ignored).

    >>> jaccard_similarity("the cat sat".split(), "the dog sat down".split())
    0.4
    """
    if isinstance(tokens_a, str) or isinstance(tokens_b, str):
        raise ValueError("pass token collections, not raw strings (a string is a set of letters)")
    a, b = set(tokens_a), set(tokens_b)
    if not a and not b:
        raise ValueError("Jaccard similarity of two empty token sets is undefined")
    return len(a & b) / len(a | b)
