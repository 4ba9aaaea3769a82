"""A bounded cache of key/value states keyed by token-id prefix, shared across queries.

Queries of one run repeat long heads: the chat template's system prompt, the instruction, an
item's state under every E7 ordering. The engine already computes a query's shared head once
(its options share one packed row); this cache keeps, across queries and calls, the key/value
states of each packed row's *trunk* (the prefix every sequence of the row shares) so a later row
whose tokens start the same way attends to the stored states instead of recomputing them.

It is a radix tree over token ids in the sense of SGLang's RadixAttention and vLLM's automatic
prefix caching: every stored trunk is a path of token ids, and any prefix of a stored path can
be reused (a transformer's key/value at position ``t`` depends only on tokens ``0..t``), so a
lookup returns the longest stored prefix of the new row and the entry whose first ``m`` positions
hold it. Entries are evicted least-recently-used once their bytes pass the bound.

The engine looks up and stores whole blocks only (:mod:`._blocks`), so a reused prefix is
always a number of blocks the uncached pass would have computed the same way.

The cache also keeps each packed row's finished numbers (its read logits and log-sum-exps) under
the row's own key: a row's arithmetic depends only on its token sequences and reads, never on
the rows batched with it or on what the cache held, so a row asked again in a later call (the
neutral prompt of every tile of a signalling run, with the same options) is answered with the
floats it gave the first time. Those results count towards the bound and take at most an
eighth of it, least recently used out first.

Key/value states belong to one model's weights: the cache is bound to the model it was made for
and refuses any other, so it can never carry states between models. Chat templates and prompts
need nothing special, since they reach the cache only as token ids.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["DEFAULT_PREFIX_CACHE_MB", "PrefixCache", "prefix_cache_for"]

#: A laptop-sized bound for ``-o prefix_cache_mb=…``, the scorers' default: about 300 SmolLM2
#: contexts of 100 tokens (≈ 1.8 MB each in fp32: 30 layers × 2 × 3 heads × 64 × 100 × 4
#: bytes); a run's shared heads (template, instruction, an item's state) fit easily. The cache
#: changes no score: what it stores are whole position-aligned blocks (:mod:`._blocks`), the
#: same numbers the uncached pass computes.
DEFAULT_PREFIX_CACHE_MB = 512

#: token ids, as a list or as the engine's int64 arrays
Tokens = Sequence[int] | npt.NDArray[np.int64]


@dataclass
class _Entry:
    tokens: tuple[int, ...]
    layers: list[tuple[Any, Any]]  # per layer (key, value), each (kv_heads, len, head_dim)
    nbytes: int
    live: bool = True  # False once evicted


@dataclass
class _Node:
    children: dict[int, _Node] = field(default_factory=dict)
    entry: _Entry | None = None  # one stored trunk passing through (or ending at) this node


class PrefixCache:
    """Key/value states of token prefixes for one model, at most ``max_mb`` megabytes.

    ``hits``/``misses`` count lookups; ``reused_tokens`` the positions served from the cache;
    ``reused_rows`` the packed rows answered from their stored results (none are kept with
    ``keep_results=False``, which leaves only the states to reuse).
    """

    def __init__(
        self, model: Any, max_mb: float = DEFAULT_PREFIX_CACHE_MB, *, keep_results: bool = True
    ) -> None:
        if max_mb < 0:
            raise ValueError(f"prefix_cache_mb must be ≥ 0, got {max_mb}")
        self.model = model
        self.max_bytes = int(max_mb * 2**20)
        self._entries: OrderedDict[tuple[int, ...], _Entry] = OrderedDict()
        self._root = _Node()
        self.nbytes = 0
        self.hits = 0
        self.misses = 0
        self.reused_tokens = 0
        self._evicted = 0  # evicted entries still linked in the tree
        self.keep_results = keep_results
        self._results: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._result_bytes = 0
        self.reused_rows = 0

    def check_model(self, model: Any) -> None:
        if model is not self.model:
            raise ValueError(
                "this prefix cache holds another model's key/value states; a cache is bound "
                "to the model it was made for"
            )

    def __len__(self) -> int:
        return len(self._entries)

    def longest(self, tokens: Tokens, limit: int) -> tuple[int, _Entry | None]:
        """The longest stored prefix of ``tokens[:limit]``: its length and an entry holding it."""
        depth, best = self._deepest(tokens[:limit])
        if best is None:
            self.misses += 1
            return 0, None
        self._entries.move_to_end(best.tokens)
        self.hits += 1
        self.reused_tokens += depth
        return depth, best

    def _deepest(self, tokens: Tokens) -> tuple[int, _Entry | None]:
        """The deepest node on ``tokens``' path that a stored entry serves, and that entry. A
        node whose entry was evicted is passed over: any stored entry through a deeper node
        passes through it too."""
        node, depth, found, best = self._root, 0, 0, None
        for tok in tokens:
            child = node.children.get(int(tok))
            if child is None:
                break
            node, depth = child, depth + 1
            if child.entry is not None and child.entry.live:
                found, best = depth, child.entry
        return found, best

    def covered(self, tokens: Tokens) -> int:
        """How many leading tokens of ``tokens`` are already stored (no bookkeeping)."""
        return self._deepest(tokens)[0]

    def insert(self, tokens: Tokens, layers: list[tuple[Any, Any]]) -> None:
        """Store the states of ``tokens`` (per layer ``(key, value)``, ``(heads, len, dim)``)."""
        key = tuple(int(t) for t in tokens)
        if not key or key in self._entries:
            return
        nbytes = sum(
            k.element_size() * k.nelement() + v.element_size() * v.nelement() for k, v in layers
        )
        if nbytes > self.max_bytes:
            return
        entry = _Entry(key, layers, nbytes)
        self._entries[key] = entry
        self.nbytes += nbytes
        self._link(entry)
        self._fit()

    def _fit(self) -> None:
        """Evict least recently used states until the states and the results fit the bound."""
        while self._entries and self.nbytes + self._result_bytes > self.max_bytes:
            _, old = self._entries.popitem(last=False)
            old.live = False
            self.nbytes -= old.nbytes
            self._evicted += 1
        # An evicted entry stays in the tree, passed over, until the evicted outnumber the
        # stored: rebuilding the tree at every eviction cost a run about 2% of its time, and a
        # node whose newest entry went may be served again only after the rebuild.
        if self._evicted > len(self._entries):
            self._rebuild()

    def _link(self, entry: _Entry) -> None:
        node = self._root
        for tok in entry.tokens:
            child = node.children.get(tok)
            if child is None:  # a node is made only where the path is new
                child = node.children[tok] = _Node()
            node = child
            node.entry = entry  # the newest entry through a node serves it

    def _rebuild(self) -> None:
        self._root = _Node()
        self._evicted = 0
        for entry in self._entries.values():
            self._link(entry)

    def result(self, key: Hashable) -> Any | None:
        """The stored numbers of the row ``key``, or ``None``."""
        held = self._results.get(key)
        if held is None:
            return None
        self._results.move_to_end(key)
        self.reused_rows += 1
        return held[0]

    def keep_result(self, key: Hashable, value: Any, nbytes: int) -> None:
        """Store a row's numbers (``nbytes`` of them) under ``key``. Results hold at most an
        eighth of the bound, and count towards it with the states."""
        bound = self.max_bytes // 8
        if not self.keep_results or key in self._results or nbytes > bound:
            return
        self._results[key] = (value, nbytes)
        self._result_bytes += nbytes
        while self._result_bytes > bound:
            _, (_, old) = self._results.popitem(last=False)
            self._result_bytes -= old
        self._fit()

    def stats(self) -> dict[str, Any]:
        return {
            "entries": len(self._entries),
            "mb": round(self.nbytes / 2**20, 3),
            "max_mb": round(self.max_bytes / 2**20, 3),
            "hits": self.hits,
            "misses": self.misses,
            "reused_tokens": self.reused_tokens,
            "results": len(self._results),
            "reused_rows": self.reused_rows,
        }


def prefix_cache_for(model: Any, max_mb: float) -> PrefixCache | None:
    """A cache for ``model`` of ``max_mb`` megabytes, or ``None`` when ``max_mb`` is 0 (off)."""
    if max_mb < 0:
        raise ValueError(f"prefix_cache_mb must be ≥ 0, got {max_mb}")
    return PrefixCache(model, max_mb) if max_mb > 0 else None
