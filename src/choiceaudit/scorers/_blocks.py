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

Within one scoring call a block shared by several rows (a query's prompt and its neutral prompt
share the template and instruction; queries share an instruction) is computed once even with the
cross-query cache off: a call-local cache serves it and is dropped when the call returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from choiceaudit.scorers._prefix_cache import PrefixCache

__all__ = ["BLOCK", "CALL_CACHE_MB", "Layers", "aligned_head", "head_states"]

#: Tokens per prefix block. A multiple of 8 and at least 16 rows per GEMM (MKL's sgemm picks
#: another kernel below 16 rows); 32 keeps the number of sequential block steps of a 200-token
#: prompt small while leaving at most 31 head tokens to a row's tail.
BLOCK = 32

#: The bound of the call-local cache used when no cross-query cache is given: it only has to
#: hold the heads of one call's rows, and losing an entry costs time, never a different score.
CALL_CACHE_MB = 256

#: per layer (key, value), each ``(kv_heads, positions, head_dim)``
Layers = list[tuple[torch.Tensor, torch.Tensor]]


def aligned_head(trunk: int, first_read: int) -> int:
    """How many leading tokens of a row run as whole blocks: the shared trunk, cut to a block
    boundary, never past the first node whose logits are read (the tail reads them)."""
    return min(trunk, first_read) // BLOCK * BLOCK


def head_states(
    model: Any,
    cache: PrefixCache,
    heads: Sequence[tuple[int, ...]],
    max_rows: int,
    mask_for: Any,
) -> list[Layers]:
    """The key/value states of every head (token ids, a whole number of blocks, all of one
    length), reusing the cache's longest stored run of whole blocks and storing what is new."""
    length = len(heads[0])
    states: dict[tuple[int, ...], Layers] = {}
    done: dict[tuple[int, ...], int] = {}
    for head in heads:
        if head in done:
            continue
        depth, entry = cache.longest(head, length)
        m = depth // BLOCK * BLOCK
        done[head] = m
        if m:
            assert entry is not None
            states[head] = [(k[:, :m], v[:, :m]) for k, v in entry.layers]
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
            new = _forward_block(model, chunk, start, past, mask_for)
            for key, layers in zip(chunk, new, strict=True):
                for head in todo[key]:
                    states[head] = layers
                    done[head] = start + BLOCK
    for head, layers in states.items():
        if cache.covered(head) < length:
            cache.insert(head, [(k.clone(), v.clone()) for k, v in layers])
    return [states[head] for head in heads]


def _forward_block(
    model: Any,
    prefixes: Sequence[tuple[int, ...]],
    start: int,
    past: Sequence[Layers | None],
    mask_for: Any,
) -> list[Layers]:
    """Run the block ``[start, start+BLOCK)`` of each prefix, attending to its ``start`` past
    positions; return each prefix's states over ``start + BLOCK`` positions."""
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
    kv: Any  # transformers' cache types do not say which layer kind holds keys
    if start:
        layers = []
        for layer in range(len(past[0] or ())):
            keys = torch.stack([p[layer][0] for p in past if p is not None])
            values = torch.stack([p[layer][1] for p in past if p is not None])
            layers.append((keys.to(device), values.to(device)))
        kv = DynamicCache(ddp_cache_data=layers)
    else:
        kv = DynamicCache()
    with torch.inference_mode():
        model.base_model(
            input_ids=ids.to(device),
            attention_mask=mask,
            position_ids=pos.to(device),
            cache=kv,
            use_cache=True,
        )
    return [[(layer.keys[r], layer.values[r]) for layer in kv.layers] for r in range(rows)]
