"""A deterministic decision model with known parts, for tests and examples.

Each option's logit is ``content(option text) + position_bias[slot] + label_prior[key]``, so every
metric computed on its output has an exact expected value: content scores carry the "meaning",
the position bias is what an order audit must find, the label prior what a key-swap must find.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from choiceaudit.types import Decision, Query

__all__ = ["FakeScorer", "hashed_content"]


def hashed_content(text: str) -> float:
    """A stable pseudo-random content score in [-1, 1) derived from the text alone."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**63 - 1.0


@dataclass
class FakeScorer:
    content: Mapping[str, float] | Callable[[str], float] = field(default=hashed_content)
    position_bias: Sequence[float] = ()
    label_prior: Mapping[str, float] = field(default_factory=dict)
    temperature: float = 1.0
    delay: float = 0.0  # seconds per query, to make interruption tests deterministic
    name: str = "fake"
    calls: int = 0

    def _content(self, text: str) -> float:
        if callable(self.content):
            return float(self.content(text))
        return float(self.content.get(text, 0.0))

    def logits(self, query: Query) -> np.ndarray:
        out = np.empty(query.n_options, dtype=np.float64)
        for slot, (text, key) in enumerate(zip(query.options, query.keys, strict=True)):
            bias = self.position_bias[slot] if slot < len(self.position_bias) else 0.0
            out[slot] = self._content(text) + bias + self.label_prior.get(key, 0.0)
        return out / self.temperature

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        decisions = []
        for query in queries:
            self.calls += 1
            if self.delay:
                time.sleep(self.delay)
            logits = self.logits(query)
            z = np.exp(logits - logits.max())
            probs = z / z.sum()
            decisions.append(
                Decision(
                    query_id=query.id,
                    probs=probs,
                    scores={"prob": probs, "logit": logits},
                    aux={"conf_head": float(probs.max())},
                )
            )
        return decisions

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "fake",
            "name": self.name,
            "position_bias": list(self.position_bias),
            "label_prior": dict(self.label_prior),
            "temperature": self.temperature,
        }
