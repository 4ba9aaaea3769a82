"""Candidate pools for distractors (the meaning paper, §4.2 and Appendix C).

A distractor is another idiom's figurative gloss. The pools say *which* other idioms qualify:

* random — every other entry (``d-rand``, and the top-up pool of every family);
* surface — entries whose gold gloss shares at least one content word with the target's gold
  gloss (Appendix C: "glosses sharing at least one surface token with the gold"; function words
  of :data:`~choiceaudit.instruments.meaning._text.STOPWORDS` do not count);
* semantic — entries sharing at least one semantic tag (case-folded) with the target. A corpus
  without tags (``idioms-en``) uses instead the ``sem_neighbours`` nearest gold glosses by cosine
  similarity of an embedding the caller supplies (``embed``, e.g. MiniLM); this substitute is our
  choice, since the paper's corpus has tags, and the item set's config records which was used.

Draws are made by entry index and checked against the slate's *views* (``"own"``: the gloss in
the corpus language; ``"other"``: the other language's gloss), so one draw can serve both language
cells of the capture matrix (Appendix R, "the two languages share one distractor draw").
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence, Set
from typing import Literal

import numpy as np
import numpy.typing as npt

from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning._contract import K
from choiceaudit.instruments.meaning._corpus import Corpus, IdiomEntry
from choiceaudit.instruments.meaning._text import STOPWORDS, content_words, option_key
from choiceaudit.instruments.meaning._union import Postings
from choiceaudit.scorers import Embedder

__all__ = ["Pools", "Taken", "View", "gold_text", "literal_text", "nearest_neighbours"]

View = Literal["own", "other"]

_SCAN_LIMIT = 64
_MAX_TRIES = 200


def gold_text(entry: IdiomEntry, view: View) -> str | None:
    return entry.gold if view == "own" else entry.gold_other


def literal_text(entry: IdiomEntry, view: View) -> str | None:
    return entry.literal if view == "own" else entry.literal_other


class Taken:
    """Option identities already on a slate, per view (see :func:`option_key`)."""

    def __init__(self, views: Sequence[View]) -> None:
        self.views = tuple(views)
        self.keys: dict[View, set[str]] = {v: set() for v in self.views}

    def fits(self, entry: IdiomEntry) -> bool:
        for view in self.views:
            text = gold_text(entry, view)
            if not text or option_key(text) in self.keys[view]:
                return False
        return True

    def add_text(self, view: View, text: str) -> None:
        self.keys[view].add(option_key(text))

    def add(self, entry: IdiomEntry) -> None:
        for view in self.views:
            text = gold_text(entry, view)
            assert text is not None
            self.add_text(view, text)

    def take(self, entry: IdiomEntry) -> bool:
        """Add ``entry`` if it :meth:`fits`; whether it did."""
        if not self.fits(entry):
            return False
        self.add(entry)
        return True


class Pools:
    """Surface, semantic and random candidate pools over one corpus (indices into ``entries``)."""

    def __init__(
        self,
        corpus: Corpus,
        *,
        embed: Embedder | None = None,
        sem_neighbours: int = 10,
        stopwords: Mapping[str, frozenset[str]] = STOPWORDS,
    ) -> None:
        if len(corpus.entries) < K:
            # no k-option slate can be drawn: the gold and K - 1 distractors from other idioms
            steps = ", ".join(f"{name} {n}" for name, n in corpus.report.steps[:4])
            raise InputError(
                f"{len(corpus.entries)} usable idiom(s) ({steps or 'no rows'}); a slate needs "
                f"the gold and {K - 1} distractors from other idioms, so at least {K}: give "
                "the full corpus file",
                source=corpus.report.source,
            )
        self.corpus = corpus
        self.entries = corpus.entries
        self.stopwords = stopwords
        self.index_of = {e.id: i for i, e in enumerate(self.entries)}
        self._gold_words: dict[View, list[set[str]]] = {
            "own": [content_words(e.gold, corpus.language, stopwords) for e in self.entries]
        }
        n = len(self.entries)
        self._postings: dict[View, Postings] = {
            "own": Postings(_postings(self._gold_words["own"]), n)
        }
        if corpus.other_language is not None:
            other = [
                content_words(e.gold_other or "", corpus.other_language, stopwords)
                for e in self.entries
            ]
            self._gold_words["other"] = other
            self._postings["other"] = Postings(_postings(other), n)
        self._tags = [frozenset(t.casefold() for t in e.tags) for e in self.entries]
        self._tag_postings = Postings(_postings(self._tags), n)
        self._neighbours: npt.NDArray[np.int64] | None = None
        if corpus.has_tags:
            self.sem_source = "tags"
        elif embed is not None:
            self.sem_source = "embedding"
            self._neighbours = nearest_neighbours(
                embed([e.gold for e in self.entries]), sem_neighbours
            )
        else:
            self.sem_source = "none"
        self.sem_neighbours = sem_neighbours

    def __len__(self) -> int:
        return len(self.entries)

    def surface(self, i: int, view: View = "own") -> Sequence[int]:
        """Entries whose gold gloss shares a content word with entry ``i``'s gold (sorted), in
        the language of ``view`` (the corpus language, or the other language's glosses). A
        large union is a :class:`~._union.SortedUnion`, so a plan stays linear in the corpus."""
        return self._postings[view].union(self._gold_words[view][i], without=i)

    def semantic(self, i: int) -> Sequence[int]:
        """Entries sharing a tag with entry ``i`` (or its embedding neighbours), sorted."""
        if self.sem_source == "tags":
            return self._tag_postings.union(self._tags[i], without=i)
        if self._neighbours is not None:
            return sorted(int(j) for j in self._neighbours[i] if j != i)
        raise ValueError(
            f"corpus {self.corpus.name} has no semantic tags and no embedder was given: pass "
            "embed= (e.g. the minilm embedder) to build d-sem from nearest figurative glosses"
        )

    def draw(
        self, rng: random.Random, pool: Sequence[int] | None, n: int, taken: Taken
    ) -> list[int]:
        """Up to ``n`` entries from ``pool`` (``None``: the whole corpus) that fit ``taken``,
        adding each to ``taken``. Small pools are scanned in a random order; large ones sampled
        with rejection (at most 200 draws), so the cost per item does not grow with the corpus.
        A large pool whose candidates nearly all collide can come back short; the caller tops
        the slate up from the random pool and counts it."""
        picked: list[int] = []
        if n <= 0:
            return picked
        size = len(self.entries) if pool is None else len(pool)
        if size == 0:
            return picked
        if pool is not None and size <= _SCAN_LIMIT:
            for j in rng.sample(list(pool), size):
                if len(picked) == n:
                    break
                if taken.take(self.entries[j]):
                    picked.append(j)
            return picked
        for _ in range(_MAX_TRIES):
            if len(picked) == n:
                break
            r = rng.randrange(size)
            j = r if pool is None else pool[r]
            if taken.take(self.entries[j]):
                picked.append(j)
        return picked


def _postings(word_sets: Sequence[Set[str]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, ws in enumerate(word_sets):
        for w in ws:
            out.setdefault(w, []).append(i)
    return out


def nearest_neighbours(
    vectors: npt.NDArray[np.floating], m: int, *, block: int = 1024
) -> npt.NDArray[np.int64]:
    """Per row, the ``m`` rows of highest cosine similarity excluding itself (ties by index)."""
    x = np.asarray(vectors, dtype=np.float32)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"embeddings must be a 2-D array of at least two rows, got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("embeddings contain non-finite values")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = (x / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    n = x.shape[0]
    m = min(m, n - 1)
    out = np.empty((n, m), dtype=np.int64)
    for start in range(0, n, block):
        sims = x[start : start + block] @ x.T
        rows = np.arange(sims.shape[0])
        sims[rows, start + rows] = -np.inf
        # stable sort on -sim gives ties to the lower index, independent of BLAS block order
        order = np.argsort(-sims, axis=1, kind="stable")[:, :m]
        out[start : start + block] = order
    return out
