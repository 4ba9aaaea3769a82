"""Runs built in the test: a scorer that returns the probabilities written in each query's meta,
so every confidence, correctness and slice of a run is known exactly."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from choiceaudit.audit import run_scoring
from choiceaudit.store import open_run
from choiceaudit.types import Arm, Decision, Query


class MetaScorer:
    """``probs`` (display order) and optionally ``head`` (a confidence head) from the meta."""

    name = "meta"

    def __init__(self, label: str = "model-x") -> None:
        self.label = label

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            aux = {} if q.meta.get("head") is None else {"conf_head": q.meta["head"]}
            out.append(Decision(query_id=q.id, probs=np.array(q.meta["probs"]), aux=aux))
        return out

    def describe(self) -> dict[str, Any]:
        return {"backend": "meta", "model": self.label}


def query(
    item: str, probs: Sequence[float], gold: int, *, head: float | None = None, **meta: Any
) -> Query:
    """A k-option query whose decision will be ``probs``; ``gold`` is canonical (identity perm)."""
    k = len(probs)
    return Query(
        state=f"state {item}",
        options=tuple(f"{item} option {i}" for i in range(k)),
        meta={"item_id": item, "gold": gold, "probs": list(probs), "head": head, **meta},
    )


def correct_probs(conf: float, gold: int, right: bool, k: int = 4) -> list[float]:
    """Peak ``conf`` on the gold option (``right``) or on the next one."""
    p = [(1.0 - conf) / (k - 1)] * k
    p[gold if right else (gold + 1) % k] = conf
    return p


def shifted_queries(n: int = 120, seed: int = 0) -> list[Query]:
    """Two families: on ``d-rand`` confidence predicts correctness, on ``d-lit`` it is
    inverted (the meaning paper §5.2's shift); a ``language`` field splits each in two."""
    rng = np.random.default_rng(seed)
    out = []
    for family in ("d-rand", "d-lit"):
        for i in range(n):
            conf = float(rng.uniform(0.3, 0.95))
            gold = int(rng.integers(4))
            p_right = conf if family == "d-rand" else 1.1 - conf
            right = bool(rng.random() < p_right)
            out.append(
                query(
                    f"{family}-{i}",
                    correct_probs(conf, gold, right),
                    gold,
                    head=round(conf * 0.9, 6),
                    family=family,
                    language="bn" if i % 2 else "en",
                )
            )
    return out


def build_run(tmp: Path, queries: Sequence[Query], label: str = "model-x") -> Path:
    run_scoring(MetaScorer(label), queries, tmp, config={"kind": "score"})
    return tmp


def arm_of(tmp: Path, queries: Sequence[Query], label: str = "model-x") -> Arm:
    return open_run(build_run(tmp, queries, label)).arm()
