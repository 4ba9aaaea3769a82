"""Condition 6: an RSA layer over an eligible base chooser (paper §I-K, §IV-H1, §IV-H2).

The base supplies a literal semantics over the item's whole hypothesis space —
``hypothesis_matrix(query)``, shape ``(K, M·C)``, non-negative — and an ``rsa_kind``. The layer's
speaker is ``S1(o | h*) ∝ L0(h* | o)^α`` (see :func:`rsa_speaker`); it sends the argmax, with
exact ties kept as ties. Bases whose kind is ineligible (embedding cosine, a prompted LM) are
refused when the layer is built, with the reason; a base without a ``hypothesis_matrix`` cannot
supply literal semantics and is refused too. Renderings the base cannot cover are passed on as
uncovered (``aux["covered"] = False``), as are items where some option is compatible with no
hypothesis (L0 undefined) or the target with no option (S1 undefined).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from choiceaudit.instruments.signalling._choosers import ItemLookup
from choiceaudit.instruments.signalling._rsa import (
    INELIGIBLE_BASES,
    IneligibleBaseError,
    rsa_speaker,
)
from choiceaudit.types import Decision, Query

__all__ = ["ALPHA_SWEEP", "LiteralBase", "RSAChooser"]

#: α values recorded beside the primary α (scores ``s1@alpha=<value>``) for the §IV-H5 check
#: that α cannot move the argmax.
ALPHA_SWEEP: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0, 10.0)


@runtime_checkable
class LiteralBase(Protocol):
    """A chooser that can score every option against every hypothesis of an item."""

    name: str
    rsa_kind: str
    lookup: ItemLookup

    def hypothesis_matrix(self, query: Query) -> npt.NDArray[np.float64] | None: ...


class RSAChooser:
    """RSA over ``base`` (see module docstring)."""

    def __init__(self, base: object, *, alpha: float = 1.0) -> None:
        kind = str(getattr(base, "rsa_kind", ""))
        if kind in INELIGIBLE_BASES:
            raise IneligibleBaseError(
                f"RSA over a {kind} base is refused: {INELIGIBLE_BASES[kind]}"
            )
        if not isinstance(base, LiteralBase):
            raise IneligibleBaseError(
                f"{getattr(base, 'name', type(base).__name__)} supplies no literal semantics over "
                "the hypothesis space (no hypothesis_matrix), so an RSA layer cannot be built on it"
            )
        if not alpha > 0:
            raise ValueError(f"alpha must be positive, got {alpha}")
        self.base = base
        self.alpha = alpha
        self.name = f"rsa({base.name})"

    def describe(self) -> dict[str, str | float]:
        return {"backend": "reference", "name": self.name, "alpha": self.alpha}

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            item = self.base.lookup.item(q)
            base = self.base.hypothesis_matrix(q)
            n_clues = len(item.meta["clues"])
            h_star = int(item.meta["target"][0]) * n_clues + int(item.meta["target"][1])
            s1 = None
            if base is not None:
                try:
                    s1 = rsa_speaker(base, h_star, alpha=self.alpha, kind=self.base.rsa_kind)
                except IneligibleBaseError:
                    s1 = None  # L0 or S1 undefined on this item: uncovered, never patched
            if s1 is None:
                p = np.full(q.n_options, 1.0 / q.n_options)
                out.append(
                    Decision(query_id=q.id, probs=p, scores={"s1": p}, aux={"covered": False})
                )
                continue
            top = np.flatnonzero(s1 == s1.max())
            scores = {"s1": s1}
            assert base is not None  # s1 is defined only where the base is
            for a in ALPHA_SWEEP:
                scores[f"s1@alpha={a:g}"] = rsa_speaker(
                    base, h_star, alpha=a, kind=self.base.rsa_kind
                )
            out.append(
                Decision.uniform_over(q.id, q.n_options, top, scores=scores, aux={"covered": True})
            )
        return out
