"""Position-aligned prefix blocks: the one way the engine computes a row's shared head.

Every packed row's head (the part of its context every sequence of the row shares) is computed
in fixed blocks of :data:`BLOCK` tokens at positions ``[j·BLOCK, (j+1)·BLOCK)``, each block
attending to exactly the ``j·BLOCK`` keys before it, and the rest of the row (the head's last
partial block, the options' tree) runs as one *tail* attending to exactly the row's whole
blocks. Whether a block comes from the cross-query cache or is computed now, its keys and values
are the result of the same operations on tensors of the same shapes, and so is every tail: a
cached score is therefore bitwise the uncached score on one thread, not merely close (this is
how vLLM's block prefix caching stays exact). Batching only ever stacks rows whose tensors have
identical shapes (same block index, or same head and tail widths), so a row's arithmetic never
depends on its batch-mates either.

How much of a row runs as blocks depends only on the row's token sequences, never on which
positions' logits are read: a server asked for every position's log-probability (``serve-model``)
and the ``hf`` scorer reading only the options' positions run the same blocks and the same tail
for the same strings, so their scores are the same floats. A block that holds a read position is
always computed (its last hidden states are kept for the output projection); the cache serves
only blocks before the first read, and a computed block's keys and values are the cached ones
bit for bit.

Within one scoring call a block shared by several rows (a query's prompt and its neutral prompt
share the template and instruction; queries share an instruction) is computed once even with the
cross-query cache off: a call-local cache serves it and is dropped when the call returns.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from choiceaudit.scorers._prefix_cache import PrefixCache
from choiceaudit.scorers._protocol import ScorerError

__all__ = [
    "BLOCK",
    "CALL_CACHE_MB",
    "Heads",
    "Layers",
    "aligned_head",
    "check_filled",
    "head_states",
    "stacked_cache",
]

#: Tokens per prefix block. A multiple of 8 and at least 16 rows per GEMM (MKL's sgemm picks
#: another kernel below 16 rows); 32 keeps the number of sequential block steps of a 200-token
#: prompt small while leaving at most 31 head tokens to a row's tail.
BLOCK = 32

#: The bound of the call-local cache used when no cross-query cache is given: it only has to
#: hold the heads of one call's rows, and losing an entry costs time, never a different score.
CALL_CACHE_MB = 256

#: per layer (key, value), each ``(kv_heads, positions, head_dim)``
Layers = list[tuple[torch.Tensor, torch.Tensor]]


def aligned_head(trunk: int, length: int) -> int:
    """How many leading tokens of a row of ``length`` nodes run as whole blocks: the shared
    trunk cut to a block boundary, leaving at least one node to the tail."""
    return min(trunk, length - 1) // BLOCK * BLOCK


@dataclass
class Heads:
    """What :func:`head_states` gives per head: its key/value states over the whole head, and
    the last hidden states of its positions from ``hidden_from`` on (empty when none is read)."""

    layers: list[Layers]
    hidden: list[torch.Tensor]
    hidden_from: list[int]


def head_states(
    model: Any,
    cache: PrefixCache,
    heads: Sequence[tuple[int, ...]],
    first_reads: Sequence[int],
    max_rows: int,
    mask_for: Any,
) -> Heads:
    """The key/value states of every head (token ids, a whole number of blocks, all of one
    length), reusing the cache's longest stored run of whole blocks before the head's first read
    position (``first_reads[i]``) and storing what is new; the blocks from the one holding the
    first read on are computed, and their last hidden states returned."""
    length = len(heads[0])
    need: dict[tuple[int, ...], int] = {}  # head -> first block start whose hidden state is read
    for head, first in zip(heads, first_reads, strict=True):
        start = min(first, length) // BLOCK * BLOCK
        need[head] = min(need.get(head, length), start)
    states: dict[tuple[int, ...], Layers] = {}
    done: dict[tuple[int, ...], int] = {}
    for head, hidden_from in need.items():
        depth, entry = cache.longest(head, min(length, hidden_from))
        m = depth // BLOCK * BLOCK
        done[head] = m
        if m:
            assert entry is not None
            states[head] = [(k[:, :m], v[:, :m]) for k, v in entry.layers]
    block_hidden: dict[tuple[int, ...], torch.Tensor] = {}  # block prefix -> (BLOCK, d)
    for start in range(0, length, BLOCK):
        # the heads whose next block starts here, one representative per distinct prefix
        todo: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
        for head, m in done.items():
            if m == start:
                todo.setdefault(head[: start + BLOCK], []).append(head)
        keys = list(todo)
        for lo in range(0, len(keys), max_rows):
            chunk = keys[lo : lo + max_rows]
            past = [states.get(todo[key][0]) for key in chunk]
            new, hidden = _forward_block(model, chunk, start, past, mask_for)
            for key, layers, h in zip(chunk, new, hidden, strict=True):
                block_hidden[key] = h
                for head in todo[key]:
                    states[head] = layers
                    done[head] = start + BLOCK
    for head, layers in states.items():
        if cache.covered(head) < length:
            cache.insert(head, [(k.clone(), v.clone()) for k, v in layers])
    out = Heads([], [], [])
    for head in heads:
        out.layers.append(states[head])
        hidden_from = need[head]
        out.hidden_from.append(hidden_from)
        blocks = [block_hidden[head[: s + BLOCK]] for s in range(hidden_from, length, BLOCK)]
        out.hidden.append(torch.cat(blocks) if blocks else torch.empty(0))
    return out


def _forward_block(
    model: Any,
    prefixes: Sequence[tuple[int, ...]],
    start: int,
    past: Sequence[Layers | None],
    mask_for: Any,
) -> tuple[list[Layers], list[torch.Tensor]]:
    """Run the block ``[start, start+BLOCK)`` of each prefix, attending to its ``start`` past
    positions; return each prefix's states over ``start + BLOCK`` positions and the block's last
    hidden states ``(BLOCK, d)``."""
    from transformers import DynamicCache

    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    rows = len(prefixes)
    ids = torch.tensor([p[start : start + BLOCK] for p in prefixes], dtype=torch.long)
    pos = torch.arange(start, start + BLOCK).expand(rows, BLOCK)
    allow = torch.ones((rows, BLOCK, start + BLOCK), dtype=torch.bool)
    allow[:, :, start:] = torch.tril(torch.ones((BLOCK, BLOCK), dtype=torch.bool))
    pos_k = torch.arange(start + BLOCK).expand(rows, start + BLOCK)
    mask = mask_for(model, allow, pos, pos_k, dtype)
    mask = {k: v.to(device) for k, v in mask.items()} if isinstance(mask, dict) else mask.to(device)
    # a block after the first attends to every prefix's states so far (all present then);
    # transformers' cache types do not say which layer kind holds keys
    kv: Any = (
        stacked_cache([p for p in past if p is not None], device, BLOCK)
        if start
        else DynamicCache()
    )
    with torch.inference_mode():
        out = model.base_model(
            input_ids=ids.to(device),
            attention_mask=mask,
            position_ids=pos.to(device),
            cache=kv,
            use_cache=True,
        )
    if start:
        check_filled(kv)
    hidden = out.last_hidden_state
    per_row = [[(layer.keys[r], layer.values[r]) for layer in kv.layers] for r in range(rows)]
    return per_row, [hidden[r] for r in range(rows)]


def stacked_cache(past: Sequence[Layers], device: Any, new: int) -> Any:
    """A transformers cache holding the rows' states stacked along the batch, with room for the
    ``new`` positions the forward adds. Plain layers, even for sliding-window models: the mask
    applies the window.

    Each layer's keys and values are one buffer of the final length, filled once: the past by a
    single stacking copy, the new positions written in place by the forward. transformers' own
    dynamic cache concatenated twice (once to take the past, again to add the new positions),
    copying every row's whole past two more times per forward. Attention sees the same
    contiguous tensors either way, so no number changes."""
    from transformers.cache_utils import Cache

    layers = []
    for layer in range(len(past[0])):
        keys = _buffer([p[layer][0] for p in past], new, device)
        values = _buffer([p[layer][1] for p in past], new, device)
        layers.append(_filled_layer()(keys, values, past[0][layer][0].shape[-2]))
    return Cache(layers=layers)


def check_filled(cache: Any) -> None:
    """Refuse a forward that did not write exactly its new positions into every layer of a
    :func:`stacked_cache`: the buffers' unwritten ends would otherwise be attended to as keys
    (a transformers whose attention stops calling the cache layer's ``update``)."""
    for layer in cache.layers:
        if layer.unfilled():
            raise ScorerError(
                "engine check 'cache filled': the model's forward left "
                f"{layer.unfilled()} new positions of its key/value cache unwritten, so this "
                "transformers does not fill a cache the way the engine needs; install the "
                "transformers version the hf extra pins and report it"
            )


def _buffer(rows: Sequence[torch.Tensor], new: int, device: Any) -> torch.Tensor:
    heads, filled, dim = rows[0].shape
    out = torch.empty((len(rows), heads, filled + new, dim), dtype=rows[0].dtype, device=device)
    torch.stack([r.to(device) for r in rows], out=out[:, :, :filled])
    return out


@functools.cache
def _filled_layer() -> Any:
    """The cache layer type :func:`stacked_cache` fills (made on first use: transformers is
    imported only once a model runs)."""
    from transformers.cache_utils import DynamicLayer

    class FilledLayer(DynamicLayer):  # type: ignore[misc,no-untyped-call]
        """A dynamic cache layer over preallocated buffers: ``update`` writes in place."""

        def __init__(self, keys: torch.Tensor, values: torch.Tensor, filled: int) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self._keys, self._values, self._filled = keys, values, filled
            self.keys, self.values = keys[:, :, :filled], values[:, :, :filled]
            self.device, self.is_initialized = keys.device, True

        def update(
            self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
        ) -> tuple[torch.Tensor, torch.Tensor]:
            end = self._filled + key_states.shape[-2]
            if end > self._keys.shape[-2]:
                raise RuntimeError("more positions than the cache was made for")
            self._keys[:, :, self._filled : end].copy_(key_states)
            self._values[:, :, self._filled : end].copy_(value_states)
            self._filled = end
            self.keys, self.values = self._keys[:, :, :end], self._values[:, :, :end]
            return self.keys, self.values

        def unfilled(self) -> int:
            """How many positions of the buffers no forward has written yet."""
            return int(self._keys.shape[-2]) - self._filled

    return FilledLayer
