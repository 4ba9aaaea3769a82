"""sparrow-decider in process: a real typed decision model with shipped weights (numpy only).

A query becomes one ``choice`` question of the /v1/systemone contract: ``criteria`` maps each key
to its option text in display order. ``probs`` is the model's unrounded probability vector
(``Decider.probs``); the ``confidence`` field the contract exposes — a separate head, not the max
probability — is kept as ``aux["conf_head"]`` (DESIGN.md, "Embedded defaults").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from choiceaudit.scorers._loading import library_versions, require, sha256_file
from choiceaudit.scorers._protocol import ScorerError
from choiceaudit.types import Decision, Query

__all__ = ["SparrowScorer"]

_QUESTION = "q"


class SparrowScorer:
    name = "sparrow"

    def __init__(self, decider: Any, path: str) -> None:
        self.decider = decider
        self.path = path
        self.calls = 0

    @classmethod
    def load(cls, model: str | None = None) -> SparrowScorer:
        sparrow = require("sparrow_decider", "pip install sparrow-decider")
        from sparrow_decider import _resolve  # the package's own name→file resolution

        try:
            path = _resolve(model)
        except FileNotFoundError as exc:
            raise ScorerError(str(exc)) from None
        return cls(sparrow.Decider.load(path), path)

    def _question(self, query: Query) -> dict[str, Any]:
        return {
            "type": "choice",
            "instructions": query.instruction,
            "criteria": dict(zip(query.keys, query.options, strict=True)),
        }

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for query in queries:
            if query.n_options < 2:
                raise ScorerError(f"query {query.id}: sparrow needs at least two options")
            question = self._question(query)
            _, names, _, raw = self.decider.probs(query.state, question)
            answer = self.decider.ask(query.state, {_QUESTION: question})[_QUESTION]
            self.calls += 1
            if list(names) != list(query.keys):
                raise ScorerError(f"query {query.id}: sparrow answered for keys {names}")
            vec = np.asarray(raw, dtype=np.float64)
            probs = vec / vec.sum()  # float32 output: renormalise in float64
            out.append(
                Decision(
                    query_id=query.id,
                    probs=probs,
                    scores={"prob": vec},
                    aux={"conf_head": float(answer["confidence"]), "choice_key": answer["choice"]},
                )
            )
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "sparrow",
            "model": self.decider.name,
            "model_id": self.decider.name,
            "weights_sha256": sha256_file(__import__("pathlib").Path(self.path)),
            "arch": self.decider.cfg.get("arch"),
            "libraries": library_versions("sparrow-decider", "numpy"),
            "calls": self.calls,
        }
