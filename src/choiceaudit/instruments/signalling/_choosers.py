"""Reference choosers (paper §I-K, §I-H1): uniform random, salience (fit-maximising) and the
exact Bayes oracle, behind the same :class:`~choiceaudit.scorers.Scorer` protocol as any model.

A reference chooser needs the item behind a query: each keeps a lookup from ``meta["item_id"]``
to the :class:`~choiceaudit.types.Item` (whose meta carries the oracle's per-option fit and
posterior under both decay families), and maps canonical options to display slots through
``Query.perm``. Outputs follow the toolkit's tie convention: an exact tie is a tied set of equal
probabilities, never broken by array order.

* ``UniformChooser`` — equal probability on every option; its expected coordinate *is* the
  per-item random reference (the mean coordinate over the option set, §I-H1).
* ``SalienceChooser`` — all probability on ``o_fit`` (split equally over exact fit ties);
  ``scores["fit"]`` holds ``f(o, h*)``.
* ``BayesOracleChooser`` — all probability on ``o_bayes`` (the lexicographic tie-break of §I-E);
  ``scores["posterior"]`` holds ``P(h* | o)``, ``scores["fit"]`` the fit.
* ``CosineChooser`` — condition 1, embedding cosine with no pragmatics, over an injected
  embedding function.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from choiceaudit.instruments.signalling._fit import DECAY_FAMILIES, DecayFamily
from choiceaudit.instruments.signalling._words import option_content_words
from choiceaudit.scorers import Embedder
from choiceaudit.types import Decision, FloatArray, Item, Query

__all__ = [
    "BayesOracleChooser",
    "CosineChooser",
    "ItemLookup",
    "SalienceChooser",
    "UniformChooser",
]


class ItemLookup:
    """Items by id, resolving the item behind a query (``query.meta["item_id"]``)."""

    def __init__(self, items: Iterable[Item]) -> None:
        self._items: dict[str, Item] = {}
        for item in items:
            if item.id in self._items:
                raise ValueError(f"duplicate item id {item.id!r}")
            self._items[item.id] = item

    def __len__(self) -> int:
        return len(self._items)

    def item(self, query: Query) -> Item:
        item_id = query.meta.get("item_id")
        if item_id is None:
            raise KeyError(f"query {query.id} carries no meta['item_id']")
        try:
            item = self._items[str(item_id)]
        except KeyError:
            raise KeyError(f"query {query.id}: unknown item {item_id!r}") from None
        if sorted(query.options) != sorted(item.options):
            raise ValueError(f"query {query.id}: options do not match item {item.id}")
        return item

    def display(self, query: Query, canonical: Sequence[float]) -> FloatArray:
        """Per-canonical-option values reordered into the query's display order."""
        self.item(query)  # validates that the query belongs to a known item
        return np.array([canonical[query.canonical(s)] for s in range(query.n_options)])


def _field(decay: DecayFamily, name: str) -> str:
    if decay not in DECAY_FAMILIES:
        raise ValueError(f"unknown decay family {decay!r}; use one of {DECAY_FAMILIES}")
    return name if decay == "exponential" else f"{name}_gaussian"


class UniformChooser:
    """Uniform selection over the option set (needs no item)."""

    name = "uniform-random"

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            p = np.full(q.n_options, 1.0 / q.n_options)
            out.append(Decision(query_id=q.id, probs=p, scores={"prob": p}))
        return out

    def describe(self) -> dict[str, str]:
        # ``model`` names the chooser in run listings and provenance
        return {"backend": "reference", "name": self.name, "model": self.name}


class _ItemChooser:
    name = "reference"

    def __init__(self, items: Iterable[Item], *, decay: DecayFamily = "exponential") -> None:
        _field(decay, "fit")
        self.lookup = ItemLookup(items)
        self.decay: DecayFamily = decay

    def describe(self) -> dict[str, str]:
        return {"backend": "reference", "name": self.name, "model": self.name, "decay": self.decay}

    def _values(self, q: Query) -> tuple[Item, FloatArray, FloatArray]:
        item = self.lookup.item(q)
        meta: Mapping[str, Any] = item.meta
        fit = self.lookup.display(q, meta[_field(self.decay, "fit")])
        post = self.lookup.display(q, meta[_field(self.decay, "posterior")])
        return item, fit, post


class SalienceChooser(_ItemChooser):
    """Fit-maximising chooser: probability on ``argmax_o f(o, h*)`` (ties split equally)."""

    name = "salience"

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            _, fit, post = self._values(q)
            out.append(
                Decision.uniform_over(
                    q.id,
                    q.n_options,
                    np.flatnonzero(fit == fit.max()),
                    scores={"fit": fit, "posterior": post},
                )
            )
        return out


class BayesOracleChooser(_ItemChooser):
    """Posterior-maximising chooser: all probability on the item's ``o_bayes``."""

    name = "bayes-oracle"

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            item, fit, post = self._values(q)
            o_bayes = int(item.meta[_field(self.decay, "o_bayes")])
            slot = q.perm.index(o_bayes) if q.perm is not None else o_bayes
            scores = {"posterior": post, "fit": fit}
            out.append(Decision.uniform_over(q.id, q.n_options, [slot], scores=scores))
        return out


class CosineChooser:
    """Condition 1: embedding cosine with no pragmatics (a mandatory literal baseline, §I-K).

    ``embed`` maps texts to vectors (MiniLM in production; any function in tests). With
    ``word_level`` (the default) the option relates to a concept through its best content word
    (:func:`option_content_words`: the tile's shared frame stripped), the same word-level
    aggregation as conditions 2 and 3, so comparing the three isolates the similarity source
    (§I-K); ``word_level=False`` embeds the whole option phrase. Over the pair the score is the
    minimum — the fit function's pair aggregation. All probability goes to the highest score
    (ties split equally). Each decision's ``aux["negative_hypothesis_share"]`` is the share of
    the item's ``K x M·C`` hypothesis entries (option x (Means, Clue) pair) whose cosine is
    negative (§IV-H1: why cosine cannot be an RSA base). Embeddings are cached per text.
    """

    name = "cosine"
    #: Refused as an RSA base (§IV-H1): cosine is signed and has no probabilistic reading.
    rsa_kind = "cosine"

    def __init__(
        self, items: Iterable[Item], embed: Embedder, *, model: str = "", word_level: bool = True
    ) -> None:
        self.lookup = ItemLookup(items)
        self._embed = embed
        self._cache: dict[str, FloatArray] = {}
        self.model = model
        self.word_level = word_level

    def describe(self) -> dict[str, str | bool]:
        return {
            "backend": "reference",
            "name": self.name,
            "model": self.model,
            "word_level": self.word_level,
        }

    def _vectors(self, texts: Sequence[str]) -> FloatArray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vecs = np.asarray(self._embed(missing), dtype=np.float64)
            if vecs.ndim != 2 or vecs.shape[0] != len(missing):
                raise ValueError(f"embedder returned shape {vecs.shape} for {len(missing)} texts")
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            if np.any(norms == 0) or not np.all(np.isfinite(vecs)):
                raise ValueError("embedder returned a zero or non-finite vector")
            for text, vec in zip(missing, vecs / norms, strict=True):
                self._cache[text] = vec
        return np.stack([self._cache[t] for t in texts])

    def _option_units(self, options: Sequence[str]) -> list[tuple[str, ...]]:
        if not self.word_level:
            return [(o,) for o in options]
        words = option_content_words(options)
        # an option whose words are all frame or stopwords falls back to its phrase
        return [ws if ws else (o,) for ws, o in zip(words, options, strict=True)]

    def concept_scores(self, query: Query, concepts: Sequence[str]) -> FloatArray:
        """Cosine of each displayed option with each concept (best unit), ``(K, len)``."""
        units = self._option_units(list(query.options))
        cvec = self._vectors(list(concepts))
        return np.array([np.max(self._vectors(list(u)) @ cvec.T, axis=0) for u in units])

    def pair_scores(self, query: Query) -> FloatArray:
        """Cosine of each displayed option with the target pair (minimum over the two words)."""
        item = self.lookup.item(query)
        words = [str(w) for w in item.meta["target_words"]]
        return np.asarray(self.concept_scores(query, words).min(axis=1), dtype=np.float64)

    def negative_share(self, query: Query) -> float:
        """Share of negative entries of the item's ``K x M·C`` cosine hypothesis matrix."""
        item = self.lookup.item(query)
        means, clues = list(item.meta["means"]), list(item.meta["clues"])
        sim = self.concept_scores(query, [str(w) for w in (*means, *clues)])
        m = len(means)
        pair = np.minimum(sim[:, :m, None], sim[:, None, m:])
        return float(np.mean(pair < 0))

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            s = self.pair_scores(q)
            out.append(
                Decision.uniform_over(
                    q.id,
                    q.n_options,
                    np.flatnonzero(s == s.max()),
                    scores={"cosine": s},
                    aux={"negative_hypothesis_share": self.negative_share(q)},
                )
            )
        return out
