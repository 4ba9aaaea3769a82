"""sparrow-decider in process: a real typed decision model with shipped weights (numpy only).

A query becomes one ``choice`` question of the /v1/systemone contract: ``criteria`` maps each key
to its option text in display order. ``probs`` is the model's unrounded probability vector
(``Decider.probs``), kept as returned in ``scores["prob"]``; the ``confidence`` field the contract
exposes — a separate head, not the max probability — is kept as ``aux["conf_head"]`` (docs/architecture.md,
"Embedded defaults"), and the returned ``choice`` as ``aux["choice_key"]`` with
``aux["choice_is_argmax"]`` (whether it is the argmax of the vector).

What the model reads. sparrow-decider cuts its input without saying so: the static models
(``arch`` ``static``/``pico``, the bundled ``sparrow-nano-*``) mean-pool the WordPiece tokens of
each text — the state, the instruction, every option line, every key/label of a ``key: value``
pair — but stop at ``max_len`` (512) tokens per text, and read at most 16 such pairs; the
encoder models keep a head and a tail of the state so that it and the question fit ``max_len``.
Two states that differ only after the cut get identical probabilities. So every decision records,
counted with the model's own tokenizer, ``aux["tokens_in_input"]`` (tokens of every text the
model pools), ``aux["tokens_seen"]`` (those it reads) and ``aux["truncated"]``; for the
key-value models also ``kv_pairs_in_input``/``kv_pairs_seen``. By default a query the model
would not read in full is refused with a :class:`ScorerError` naming the query, the text and the
two counts; ``truncate=True`` (``-o truncate=true``) scores it and records the cut.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from typing_extensions import TypedDict

from choiceaudit.scorers._loading import library_versions, require, sha256_file
from choiceaudit.scorers._protocol import ScorerError
from choiceaudit.types import Decision, Query

__all__ = ["ReadCounts", "SparrowScorer"]

_QUESTION = "q"
_UNLIMITED = sys.maxsize


class _Question(TypedDict):
    """One ``choice`` question of the /v1/systemone contract, as sparrow-decider reads it."""

    type: Literal["choice"]
    instructions: str
    criteria: dict[str, str]


@dataclass(frozen=True)
class ReadCounts:
    """How much of one query the model reads: per pooled text ``(label, tokens, tokens read)``
    and, for key-value models, the pairs found and read."""

    texts: tuple[tuple[str, int, int], ...]
    kv_pairs: tuple[int, int] | None = None

    @property
    def tokens_in_input(self) -> int:
        return sum(n for _, n, _ in self.texts)

    @property
    def tokens_seen(self) -> int:
        return sum(seen for _, _, seen in self.texts)

    @property
    def truncated(self) -> bool:
        kv_cut = self.kv_pairs is not None and self.kv_pairs[1] < self.kv_pairs[0]
        return self.tokens_seen < self.tokens_in_input or kv_cut

    def aux(self) -> dict[str, object]:
        out: dict[str, object] = {
            "tokens_in_input": self.tokens_in_input,
            "tokens_seen": self.tokens_seen,
            "truncated": self.truncated,
        }
        if self.kv_pairs is not None:
            out["kv_pairs_in_input"], out["kv_pairs_seen"] = self.kv_pairs
        return out

    def cuts(self) -> list[str]:
        """One phrase per text (or the pair list) the model does not read in full."""
        out = [f"{label} is {n} tokens, {seen} read" for label, n, seen in self.texts if seen < n]
        if self.kv_pairs is not None and self.kv_pairs[1] < self.kv_pairs[0]:
            out.append(f"{self.kv_pairs[0]} key-value pairs, {self.kv_pairs[1]} read")
        return out


class _CountingWordPiece:
    """The static model's own WordPiece, recording for every text it encodes the full token
    count and the count ``encode`` keeps (its ``max_len`` cut), so the counts are the model's."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.log: list[tuple[str, int, int]] | None = None

    def encode(self, text: str, max_len: int = 512) -> list[int]:
        full: list[int] = self.inner.encode(text, _UNLIMITED)
        if self.log is not None:
            self.log.append((text, len(full), min(len(full), max_len)))
        return full[:max_len]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class SparrowScorer:
    name = "sparrow"

    def __init__(self, decider: Any, path: str, *, truncate: bool = False) -> None:
        self.decider = decider
        self.path = path
        self.truncate = bool(truncate)
        self.calls = 0
        self.truncated = 0
        static = getattr(decider, "static", None)
        if static is not None:
            self._counter: _CountingWordPiece | None = _CountingWordPiece(static.tok)
            static.tok = self._counter
            self.max_len = int(static.max_len)
        elif hasattr(decider, "_encode") and hasattr(decider, "max_len"):
            self._counter = None
            self.max_len = int(decider.max_len)
        else:
            raise ScorerError(
                f"sparrow model {getattr(decider, 'name', path)!r}: cannot tell how much of its "
                "input this architecture reads, so its truncation could not be recorded"
            )

    @classmethod
    def load(cls, model: str | None = None, *, truncate: bool = False) -> SparrowScorer:
        """``truncate``: score queries longer than the model reads (recording the cut in
        ``aux``) instead of refusing them."""
        sparrow = require("sparrow_decider", "pip install sparrow-decider")
        from sparrow_decider import _resolve  # the package's own name→file resolution

        try:
            path = _resolve(model)
        except FileNotFoundError as exc:
            raise ScorerError(str(exc)) from None
        return cls(sparrow.Decider.load(path), path, truncate=truncate)

    def _question(self, query: Query) -> _Question:
        return {
            "type": "choice",
            "instructions": query.instruction,
            "criteria": dict(zip(query.keys, query.options, strict=True)),
        }

    def read_counts(self, query: Query) -> ReadCounts:
        """What the model reads of ``query`` (see the module docstring)."""
        return self._probs(query)[2]

    def _probs(self, query: Query) -> tuple[list[str], Any, ReadCounts]:
        """One pass of the model: the keys it answered for, its vector, and what it read."""
        question = self._question(query)
        if self._counter is None:
            _, names, _, raw = self.decider.probs(query.state, question)
            return list(names), raw, self._encoder_counts(query, question)
        self._counter.log = []
        try:
            _, names, _, raw = self.decider.probs(query.state, question)
            log = self._counter.log
        finally:
            self._counter.log = None
        return list(names), raw, ReadCounts(tuple(_labelled(query, log)), self._kv_counts(query))

    def _kv_counts(self, query: Query) -> tuple[int, int] | None:
        static = self.decider.static
        if not static.kv:
            return None
        from sparrow_decider.static import MAX_PAIRS, kv_pairs

        found = len(kv_pairs(query.state.strip(), _UNLIMITED))
        return found, min(found, MAX_PAIRS)

    def _encoder_counts(self, query: Query, question: _Question) -> ReadCounts:
        from sparrow_decider import _options

        kind, opts = _options(question)
        whole = copy.copy(self.decider)
        whole.max_len = _UNLIMITED
        ids_all, _, _ = whole._encode(query.state, question["instructions"], kind, opts)
        ids_read, _, _ = self.decider._encode(query.state, question["instructions"], kind, opts)
        return ReadCounts((("the state and question", len(ids_all), len(ids_read)),))

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for query in queries:
            if query.n_options < 2:
                raise ScorerError(
                    f"query {query.id}: sparrow needs at least two options", query_id=query.id
                )
            names, raw, counts = self._probs(query)
            if counts.truncated and not self.truncate:
                raise ScorerError(_refusal(query, counts, self), query_id=query.id)
            answer = self.decider.ask(query.state, {_QUESTION: self._question(query)})[_QUESTION]
            self.calls += 1
            self.truncated += int(counts.truncated)
            if list(names) != list(query.keys):
                raise ScorerError(
                    f"query {query.id}: sparrow answered for keys {names}", query_id=query.id
                )
            vec = np.asarray(raw, dtype=np.float64)
            probs = vec / vec.sum()  # float32 output: renormalise in float64 (Decision contract)
            choice = answer["choice"]
            is_argmax = choice in names and bool(vec[list(names).index(choice)] == vec.max())
            out.append(
                Decision(
                    query_id=query.id,
                    probs=probs,
                    scores={"prob": vec},
                    aux={
                        "conf_head": float(answer["confidence"]),
                        "choice_key": choice,
                        "choice_is_argmax": is_argmax,
                        **counts.aux(),
                    },
                )
            )
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "sparrow",
            "model": self.decider.name,
            "model_id": self.decider.name,
            "weights_sha256": sha256_file(Path(self.path)),
            "arch": self.decider.cfg.get("arch"),
            "max_len": self.max_len,
            "truncate": self.truncate,
            "libraries": library_versions("sparrow-decider", "numpy"),
            "calls": self.calls,
            "truncated_decisions": self.truncated,
        }


def _labelled(query: Query, log: Sequence[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """Name each text the model pooled by what it is in the query."""
    names = {query.state.strip(): "the state", query.instruction.strip(): "the instruction"}
    for key, option in zip(query.keys, query.options, strict=True):
        names.setdefault(f"{key} {option.strip()}", f"option {key}")
    return [(names.get(text, "a key-value label"), n, seen) for text, n, seen in log]


def _refusal(query: Query, counts: ReadCounts, scorer: SparrowScorer) -> str:
    item = query.meta.get("item_id")
    where = f"query {query.id}" + (f" (item {item})" if item is not None else "")
    return (
        f"{where}: sparrow model {scorer.decider.name!r} would not read all of it — "
        f"{'; '.join(counts.cuts())} (at most {scorer.max_len} tokens per text); "
        f"{counts.tokens_in_input} tokens in the input, {counts.tokens_seen} read by the model. "
        "Shorten the input, or pass -o truncate=true to score it anyway with the cut recorded "
        "in the row (aux tokens_in_input, tokens_seen, truncated)"
    )
