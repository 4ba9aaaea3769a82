"""The engine's output projection: the float64 log-probabilities of the positions a row reads.

Logits are computed only at the nodes whose next token is scored (the output projection of a
50k–260k vocabulary dominates the cost otherwise), and log-softmax is taken in float64 whatever
the model's dtype: a float32 log-sum-exp over a 50k vocabulary alone rounds by ~1e-6 per token.
On the CPU the reads of a group of rows share each chunk of the weight while it is in cache
(:func:`normalised_reads`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from choiceaudit.scorers._fixed_tiles import needs_fixed_tiles, tiled_linear

__all__ = ["DEFAULT_OUTPUT_GROUP_MB", "VOCAB_CHUNK", "normalised_reads", "padded"]

#: megabytes of float32 logits held at once while the CPU output projection streams its
#: weight once per group of rows (0: each row runs the whole head)
DEFAULT_OUTPUT_GROUP_MB = 512
#: vocabulary rows per product of the CPU output projection (an 8192 x 640 chunk is 21 MB)
VOCAB_CHUNK = 8192


def padded(hidden: torch.Tensor) -> torch.Tensor:
    """At least 16 rows (repeats of the first), so the output GEMM never takes a path for a
    handful of rows whose reduction differs."""
    n = hidden.shape[0]
    return hidden if n >= 16 else torch.cat([hidden, hidden[:1].expand(16 - n, -1)])


def _widened(model: Any, logits: torch.Tensor) -> torch.Tensor:
    """Float64 logits, soft-capped where the model caps them."""
    wide = logits.to(torch.float64, memory_format=torch.contiguous_format)
    cap = getattr(model.config, "final_logit_softcapping", None)
    return torch.tanh(wide / cap) * cap if cap else wide


def _vocab_edges(vocab: int) -> list[int]:
    """Where the CPU output projection's chunks of the vocabulary start, and its end: every
    ``VOCAB_CHUNK`` rows, a last chunk of fewer than 16 rows joining the one before it (a
    product a row or so wide runs as a matrix-vector product, whose rows depend on how many
    rows it has)."""
    edges = [*range(0, vocab, min(vocab, VOCAB_CHUNK)), vocab]
    if len(edges) > 2 and edges[-1] - edges[-2] < 16:
        del edges[-2]
    return edges


def normalised_reads(
    model: Any,
    states: Sequence[torch.Tensor],
    picks: Sequence[tuple[torch.Tensor, torch.Tensor]],
    group_mb: float,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Per packed row, in order: the float64 logits it reads and the float64 log-sum-exp over the
    vocabulary of each of its read hidden states (``states[r]``, one per distinct read node).
    ``picks[r] = (node, target)``, index arrays of one shape: the logit of ``target`` at the
    row's read ``node``.

    On the CPU the reads of a group of rows are stacked and multiply each chunk of
    ``VOCAB_CHUNK`` vocabulary rows of the weight together, and each read's log-sum-exp over
    that chunk is taken at once, while the chunk's logits are still in cache; the chunks' sums
    are then combined (each chunk's maximum, then the sum of the chunks' exponentials shifted to
    the overall maximum, all in float64). So the weight (671 MB on Gemma 3) streams from memory
    once per group rather than once per row, a row of one read (an ``lm-choice`` query) is no
    longer padded to a product of 16, and no row's float64 logits (84 MB for 40 reads of
    Gemma 3) are written out and read back. A read's numbers never depend on its group: its
    logits are one row of a product of at least 16 rows, whose rows do not depend on the
    product's other rows — the property every batched forward of the engine already rests on
    (the engine's ``_bucket_width``) — and its sums run over its own logits in the same order. The
    logits read are the same bits as the whole-vocabulary product where the chunks are full
    (both built-in models' vocabularies are whole multiples of ``VOCAB_CHUNK``, measured on
    this project's machine; a narrower last chunk may round a logit's last float32 bit
    differently), and the log-sum-exp is the whole-row one up to the order of its float64
    additions (a few 1e-15). A bfloat16 head takes the same path (its chunk products are
    bfloat16, widened to float64 as the whole head's are): without it a 262k-token vocabulary
    runs whole per row, and Gemma 3 in bfloat16 gained a tenth of the speed-up SmolLM2 did.
    A reduced-precision head on the CPU runs every product, chunked or whole, in tiles of one
    shape (:mod:`._fixed_tiles`): its kernels, unlike float32's, pick their blocking by the
    number of rows.
    ``group_mb`` bounds the chunk logits a group holds (12 bytes per read and vocabulary row of
    a chunk: float32, then float64). With ``group_mb=0``, and anywhere else (an accelerator,
    float16, a head that is not a plain linear layer), each row runs the whole head (at least
    16 rows) and one float64 log-sum-exp over it."""
    head = model.get_output_embeddings()
    weight = getattr(head, "weight", None)
    chunked = (
        group_mb > 0
        and type(head) is torch.nn.Linear
        and head.bias is None
        and weight is not None
        and weight.device.type == "cpu"
        and weight.dtype in (torch.float32, torch.bfloat16)
    )
    tiled = type(head) is torch.nn.Linear and weight is not None and needs_fixed_tiles(weight)
    if not chunked:
        for hidden, (node, target) in zip(states, picks, strict=True):
            if tiled:
                assert weight is not None
                raw = tiled_linear(hidden, weight, head.bias)
            else:
                raw = head(padded(hidden))[: hidden.shape[0]]
            logits = _widened(model, raw)
            yield logits[node, target], torch.logsumexp(logits, dim=-1)
        return
    assert weight is not None
    vocab = int(weight.shape[0])
    edges = _vocab_edges(vocab)
    budget = max(1, int(group_mb * 2**20) // (12 * (edges[1] - edges[0])))  # reads a group holds
    group: list[tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]] = []

    def flush() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        sizes = [int(h.shape[0]) for h, _ in group]
        starts = np.cumsum([0, *sizes[:-1]]).tolist()
        stacked = padded(torch.cat([h for h, _ in group]))
        n = sum(sizes)
        # every pick as (its read in the stack, its target), in order of the chunk holding it
        read = torch.cat(
            [(node + s).reshape(-1) for (_, (node, _)), s in zip(group, starts, strict=True)]
        )
        target = torch.cat([t.reshape(-1) for _, (_, t) in group])
        chunks = len(edges) - 1
        chunk_of = torch.bucketize(target, torch.tensor(edges[1:]), right=True)
        order = torch.argsort(chunk_of, stable=True)
        bounds = torch.searchsorted(chunk_of[order], torch.arange(chunks + 1)).tolist()
        picked = torch.empty(target.shape, dtype=torch.float64)
        # (read, chunk): a read's chunks are combined along a contiguous row, whose order does
        # not depend on how many reads there are (a sum down a column's does)
        peaks = torch.empty((n, chunks), dtype=torch.float64)
        sums = torch.empty((n, chunks), dtype=torch.float64)
        for c, (lo, hi) in enumerate(itertools.pairwise(edges)):
            if tiled:
                raw = tiled_linear(stacked, weight[lo:hi])
            else:
                raw = torch.nn.functional.linear(stacked, weight[lo:hi])
            wide = _widened(model, raw[:n])
            peak = wide.amax(dim=1)
            peaks[:, c] = peak
            sums[:, c] = torch.exp(wide - peak[:, None]).sum(dim=1)
            sel = order[bounds[c] : bounds[c + 1]]
            if sel.numel():
                picked[sel] = wide[read[sel], target[sel] - lo]
        top = peaks.amax(dim=1)
        lse = top + torch.log((sums * torch.exp(peaks - top[:, None])).sum(dim=1))
        at = 0
        for (_, (node, _)), s, size in zip(group, starts, sizes, strict=True):
            k = node.numel()
            yield picked[at : at + k].reshape(node.shape), lse[s : s + size]
            at += k
        group.clear()

    held = 0
    for hidden, pick in zip(states, picks, strict=True):
        n = int(hidden.shape[0])
        if group and held + n > budget:
            yield from flush()
            held = 0
        group.append((hidden, pick))
        held += n
    if group:
        yield from flush()
