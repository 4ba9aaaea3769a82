"""The RSA layer (paper §I-K condition 6, §IV-H1, §IV-H5) over an eligible literal base.

Given a literal semantics ``base[o, h] ≥ 0`` (how compatible option ``o`` is with hypothesis
``h``), the literal listener is ``L0(h | o) = base[o, h] / Σ_h' base[o, h']`` and the pragmatic
speaker ``S1(o | h*) ∝ L0(h* | o)^α``. With the fit function as the base this speaker's argmax is
``o_bayes`` (up to its tie-break). Because ``x^α`` is strictly increasing on ``x ≥ 0`` for
``α > 0``, α can never change the argmax (§IV-H5): it is reported, never swept as evidence.

Eligibility (§IV-H1) is checked, never patched: a base must be finite and non-negative, and every
option must be compatible with at least one hypothesis. Two kinds of base are refused outright,
with the reason: embedding cosine (signed, unbounded below, no probabilistic reading — every
transform adds an assumption or a free parameter) and a prompted language model (it supplies a
speaker likelihood; deriving a listener from it assumes the rational speaker the layer tests).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from choiceaudit.errors import InputError
from choiceaudit.types import FloatArray

__all__ = ["INELIGIBLE_BASES", "IneligibleBaseError", "literal_listener", "rsa_speaker"]


#: Base kinds the RSA layer refuses, with the reason reported to the user (§IV-H1).
INELIGIBLE_BASES: Mapping[str, str] = {
    "cosine": (
        "embedding cosine is signed, unbounded below and has no probabilistic interpretation: "
        "L0^alpha is undefined for negative entries, clipping asserts that a negative cosine "
        "means zero compatibility, and shifting or softmax reintroduce a free parameter"
    ),
    "prompted-lm": (
        "a prompted language model supplies P(o | prompt naming the target), a speaker "
        "likelihood; deriving a listener from it by Bayes assumes the model is a rational "
        "speaker, which is what the layer exists to test"
    ),
}


class IneligibleBaseError(InputError):
    """The base cannot supply the literal semantics an RSA layer needs (§IV-H1)."""


def literal_listener(base: npt.ArrayLike, *, kind: str | None = None) -> FloatArray:
    """``L0(h | o)`` from ``base`` of shape ``(..., K, H)``, after the eligibility checks."""
    if kind is not None and kind in INELIGIBLE_BASES:
        raise IneligibleBaseError(f"RSA over a {kind} base is refused: {INELIGIBLE_BASES[kind]}")
    b = np.asarray(base, dtype=np.float64)
    if b.ndim < 2:
        raise ValueError(f"base must have shape (..., options, hypotheses), got {b.shape}")
    if not np.all(np.isfinite(b)):
        raise IneligibleBaseError("base has non-finite entries")
    negative = float(np.mean(b < 0))
    if negative > 0:
        raise IneligibleBaseError(
            f"{100 * negative:.1f} % of base entries are negative; a literal listener needs a "
            "non-negative compatibility and no transform is applied"
        )
    totals = b.sum(axis=-1, keepdims=True)
    if np.any(totals == 0):
        raise IneligibleBaseError("an option is compatible with no hypothesis: L0 is undefined")
    return np.asarray(b / totals, dtype=np.float64)


def rsa_speaker(
    base: npt.ArrayLike, target: int | npt.ArrayLike, *, alpha: float = 1.0, kind: str | None = None
) -> FloatArray:
    """``S1(o | h*)`` over options for target hypothesis index ``target`` (per leading row)."""
    if not alpha > 0:
        raise ValueError(f"alpha must be positive, got {alpha}")
    l0 = literal_listener(base, kind=kind)
    t = np.asarray(target, dtype=np.int64)
    if t.shape != l0.shape[:-2]:
        raise ValueError(f"target shape {t.shape} does not match base rows {l0.shape[:-2]}")
    at_target = np.take_along_axis(l0, t[..., None, None], axis=-1)[..., 0]  # (..., K)
    if np.any(at_target.max(axis=-1) == 0):
        raise IneligibleBaseError("the target is compatible with no option: S1 is undefined")
    # In log space: L0^α can underflow for large α where its argmax is still defined.
    with np.errstate(divide="ignore"):
        logits = alpha * np.log(at_target)
    logits -= logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    return np.asarray(weights / weights.sum(axis=-1, keepdims=True), dtype=np.float64)
