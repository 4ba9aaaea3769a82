"""Association baselines (paper §I-K): condition 2, a SWOW random walk, and condition 3,
ConceptNet path scoring — both with the design's pair aggregation (minimum over the two target
concepts) and one word-level aggregation for option phrases.

The paper does not print these choosers' formulas; this is our reading, stated so it can be
checked and changed:

* **Option words.** An option phrase is reduced to its content words: lower-cased alphabetic
  tokens, minus a short stopword list and minus the words every option of the tile shares (the
  tile's frame, e.g. "about the size of a"). An option is related to a concept through its
  *best* content word (maximum similarity / shortest path).
* **ConceptNet path scoring.** ``K(w, c)`` is the number of hops on the shortest undirected path
  between term ``w`` and concept ``c`` (relations and weights ignored, at most ``max_hops``);
  the option's score for the pair is ``d^max(K_m, K_c)`` — the pair minimum of ``d^K``. The
  decay ``d ∈ (0, 1)`` cannot change the argmax (§IV-H5) and is reported, not tuned.
* **SWOW random walk.** Walk profile of a cue: ``v_w = Σ_{r=1..R} α^r e_w P^r`` with ``P`` the
  row-normalised cue-to-cue strength matrix (responses that are not cues dropped), ``α = 0.75``
  as in De Deyne et al.'s random-walk similarity; similarity is the cosine of two profiles (no
  PPMI step: it needs the whole walk matrix).

A query is covered only when both target concepts and at least one content word of *every*
option are in the source (and, for ConceptNet, some option reaches both targets within
``max_hops``; an option that does not scores ``d^∞ = 0``). An uncovered query gets uniform
probabilities and ``aux["covered"] = False``; the analysis excludes such renderings and counts
them, so coverage is always stated.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

import numpy as np
from scipy import sparse

from choiceaudit.instruments.signalling._associations import AssociationStrengths, ConceptNetEdges
from choiceaudit.instruments.signalling._choosers import ItemLookup
from choiceaudit.instruments.signalling._words import STOPWORDS, option_content_words
from choiceaudit.types import Decision, FloatArray, Item, Query

__all__ = [
    "DECAY_SWEEP",
    "STOPWORDS",
    "ConceptNetPathChooser",
    "SwowWalkChooser",
    "option_content_words",
]

#: Decay bases recorded beside the primary one (scores ``path@d=<value>``), §IV-H5.
DECAY_SWEEP: tuple[float, ...] = (0.25, 0.5, 0.75, 0.9)


def _uncovered(q: Query, rule: str) -> Decision:
    p = np.full(q.n_options, 1.0 / q.n_options)
    return Decision(
        query_id=q.id, probs=p, scores={rule: np.zeros(q.n_options)}, aux={"covered": False}
    )


def _argmax_decision(
    q: Query, rule: str, scores: FloatArray, extra: dict[str, FloatArray] | None = None
) -> Decision:
    return Decision.uniform_over(
        q.id,
        q.n_options,
        np.flatnonzero(scores == scores.max()),
        scores={rule: scores, **(extra or {})},
        aux={"covered": True},
    )


class ConceptNetPathChooser:
    """Condition 3: ConceptNet shortest-path scoring (see module docstring)."""

    name = "conceptnet-path"

    def __init__(
        self,
        items: Iterable[Item],
        edges: ConceptNetEdges,
        *,
        decay: float = 0.5,
        max_hops: int = 4,
    ) -> None:
        if not 0.0 < decay < 1.0:
            raise ValueError(f"decay must lie in (0, 1), got {decay}")
        self.lookup = ItemLookup(items)
        self.decay = decay
        self.max_hops = max_hops
        self.adjacency: dict[str, set[str]] = {}
        for a, b in zip(edges.start, edges.end, strict=True):
            if a != b:
                self.adjacency.setdefault(a, set()).add(b)
                self.adjacency.setdefault(b, set()).add(a)
        self._hops: dict[str, dict[str, int]] = {}

    def describe(self) -> dict[str, str | float]:
        return {
            "backend": "reference",
            "name": self.name,
            "decay": self.decay,
            "max_hops": self.max_hops,
            "edges": sum(len(v) for v in self.adjacency.values()) // 2,
        }

    def hops_from(self, source: str) -> dict[str, int]:
        """Breadth-first hop counts from ``source`` up to ``max_hops`` (memoised)."""
        if source not in self._hops:
            dist = {source: 0}
            queue = deque([source]) if source in self.adjacency else deque()
            while queue:
                node = queue.popleft()
                if dist[node] == self.max_hops:
                    continue
                for nxt in self.adjacency[node]:
                    if nxt not in dist:
                        dist[nxt] = dist[node] + 1
                        queue.append(nxt)
            self._hops[source] = dist
        return self._hops[source]

    def pair_hops(self, query: Query) -> list[float]:
        """Per displayed option: ``max`` over the two targets of the best word's hop count."""
        item = self.lookup.item(query)
        targets = [str(w) for w in item.meta["target_words"]]
        out = []
        for words in option_content_words(query.options):
            per_target = []
            for t in targets:
                dist = self.hops_from(t)
                per_target.append(min((dist.get(w, np.inf) for w in words), default=np.inf))
            out.append(float(max(per_target)))
        return out

    #: RSA over shortest-path scores is eligible: ``d^K`` is a non-negative compatibility.
    rsa_kind = "conceptnet-path"

    def hypothesis_matrix(self, query: Query) -> FloatArray | None:
        """Literal base for RSA: ``d^max(K_m, K_c)`` for every displayed option and every
        (Means, Clue) hypothesis, shape ``(K, M·C)``; ``None`` when a listed concept or an
        option has no term in the graph."""
        item = self.lookup.item(query)
        concepts = [str(w) for w in (*item.meta["means"], *item.meta["clues"])]
        words = option_content_words(query.options)
        if any(c not in self.adjacency for c in concepts) or not all(
            any(w in self.adjacency for w in ws) for ws in words
        ):
            return None
        hops = np.array(
            [
                [
                    min((self.hops_from(c).get(w, np.inf) for w in ws), default=np.inf)
                    for c in concepts
                ]
                for ws in words
            ]
        )
        fit = np.where(np.isfinite(hops), self.decay ** np.where(np.isfinite(hops), hops, 0), 0.0)
        m = len(item.meta["means"])
        pair = np.minimum(fit[:, :m, None], fit[:, None, m:])
        return np.asarray(pair.reshape(len(words), -1), dtype=np.float64)

    def covers(self, query: Query) -> bool:
        """Both targets and some content word of every option are ConceptNet terms."""
        item = self.lookup.item(query)
        if any(str(w) not in self.adjacency for w in item.meta["target_words"]):
            return False
        return all(
            any(w in self.adjacency for w in words) for words in option_content_words(query.options)
        )

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            k = np.array(self.pair_hops(q)) if self.covers(q) else np.full(q.n_options, np.inf)
            if not np.isfinite(k).any():
                out.append(_uncovered(q, "path"))
                continue
            finite = np.isfinite(k)
            scores = np.where(finite, self.decay ** np.where(finite, k, 0), 0.0)
            # §IV-H5: d cannot move the argmax; the sweep is recorded to show it
            sweep = {
                f"path@d={d:g}": np.where(finite, d ** np.where(finite, k, 0), 0.0)
                for d in DECAY_SWEEP
            }
            out.append(_argmax_decision(q, "path", scores, sweep))
        return out


class SwowWalkChooser:
    """Condition 2: SWOW random-walk similarity (see module docstring)."""

    name = "swow-walk"

    def __init__(
        self,
        items: Iterable[Item],
        strengths: AssociationStrengths,
        *,
        alpha: float = 0.75,
        steps: int = 20,
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
        self.lookup = ItemLookup(items)
        self.alpha, self.steps = alpha, steps
        cues = sorted(strengths.cues)
        self.index = {c: i for i, c in enumerate(cues)}
        rows, cols, vals = [], [], []
        for cue, responses in strengths.strength.items():
            for response, s in responses.items():
                j = self.index.get(response)
                if j is not None and j != self.index[cue]:
                    rows.append(self.index[cue])
                    cols.append(j)
                    vals.append(s)
        n = len(cues)
        m = sparse.csr_matrix((vals, (rows, cols)), shape=(n, n), dtype=np.float64)
        totals = np.asarray(m.sum(axis=1)).ravel()
        scale = sparse.diags(np.divide(1.0, totals, out=np.zeros(n), where=totals > 0))
        self.transition = (scale @ m).tocsr()
        self._transition_t = self.transition.T.tocsr()
        self._profiles: dict[str, FloatArray] = {}

    def describe(self) -> dict[str, str | float]:
        return {
            "backend": "reference",
            "name": self.name,
            "alpha": self.alpha,
            "steps": self.steps,
            "cues": len(self.index),
        }

    def profile(self, word: str) -> FloatArray | None:
        """Unit-normalised walk profile of a cue, or ``None`` if the word is not a cue."""
        if word not in self.index:
            return None
        if word not in self._profiles:
            v = np.zeros(len(self.index))
            v[self.index[word]] = 1.0
            total = np.zeros_like(v)
            for r in range(1, self.steps + 1):
                v = self._transition_t @ v
                total += self.alpha**r * v
            norm = np.linalg.norm(total)
            self._profiles[word] = total / norm if norm > 0 else total
        return self._profiles[word]

    #: RSA over walk-profile cosines is eligible: the profiles are non-negative, so is the cosine.
    rsa_kind = "swow-walk"

    def hypothesis_matrix(self, query: Query) -> FloatArray | None:
        """Literal base for RSA: pair minimum of best-word profile cosines for every displayed
        option and (Means, Clue) hypothesis, ``(K, M·C)``; ``None`` when a word is missing."""
        item = self.lookup.item(query)
        concepts = [self.profile(str(w)) for w in (*item.meta["means"], *item.meta["clues"])]
        options = [
            [v for v in (self.profile(w) for w in ws) if v is not None]
            for ws in option_content_words(query.options)
        ]
        if any(c is None for c in concepts) or any(not vs for vs in options):
            return None
        cmat = np.stack([c for c in concepts if c is not None])
        sim = np.array([np.max(np.stack(vs) @ cmat.T, axis=0) for vs in options])  # (K, M+C)
        m = len(item.meta["means"])
        pair = np.minimum(sim[:, :m, None], sim[:, None, m:])
        return np.asarray(pair.reshape(len(options), -1), dtype=np.float64)

    def pair_similarity(self, query: Query) -> list[float]:
        """Per displayed option: min over the two targets of the best word's cosine (NaN when
        the option or a target is not in the graph)."""
        item = self.lookup.item(query)
        targets = [self.profile(str(w)) for w in item.meta["target_words"]]
        out = []
        for words in option_content_words(query.options):
            vecs = [v for v in (self.profile(w) for w in words) if v is not None]
            if not vecs or any(t is None for t in targets):
                out.append(float("nan"))
                continue
            out.append(min(max(float(v @ t) for v in vecs) for t in targets if t is not None))
        return out

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            s = np.array(self.pair_similarity(q))
            if not np.all(np.isfinite(s)):
                out.append(_uncovered(q, "walk"))
                continue
            out.append(_argmax_decision(q, "walk", s))
        return out
