"""The causal-LM scoring engine: every unique prefix token runs once, in length-bucketed batches.

A query asks for the log-probabilities of ``k`` options after its prompt and, for PMI, after its
neutral prompt: ``2k`` token sequences that share a long head (the instruction, the template)
and differ in short tails. Each distinct context of a query (its prompt, its neutral prompt)
becomes one packed *row*: its options are merged into a token trie after the context, each trie
node is one token, its position id is its depth, and it attends to exactly its ancestors (a
tree-shaped 4D attention mask). A node's key and value are therefore computed once and reused by
every sequence that passes through it, and option tokens shared by several options run once.
A sequence's last token is left out of the trie: no score reads the state after it.
The row's context runs first in position-aligned blocks (:mod:`._blocks`), which any row with
the same leading tokens reuses (within a call always; across calls through the prefix cache),
so the template and instruction a prompt shares with its neutral prompt and with other queries
run once too. The hidden state of a node depends only on its root path with positions
``0..depth``, exactly the computation of a plain forward pass over that sequence, so the
scores equal the naive per-option forward up to floating-point reduction order (docs/architecture.md,
"The causal-LM engine").

A row's tail (what follows its whole blocks) is batched with rows of the same block count and
the same padded width under a token budget, padded at the end; a padding position attends only
to itself and nothing attends to it, so padding never changes a real token's value. Logits
are computed only at the nodes whose next token is scored, and normalised in float64
(:mod:`._output_head`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from choiceaudit.scorers._blocks import (
    BLOCK,
    CALL_CACHE_MB,
    Heads,
    aligned_head,
    check_filled,
    head_states,
    stacked_cache,
)
from choiceaudit.scorers._fixed_tiles import fix_tiles
from choiceaudit.scorers._output_head import DEFAULT_OUTPUT_GROUP_MB, normalised_reads
from choiceaudit.scorers._prefix_cache import PrefixCache
from choiceaudit.scorers._protocol import ScorerError
from choiceaudit.types import FloatArray, IntArray

__all__ = [
    "DEFAULT_MAX_BATCH_TOKENS",
    "DEFAULT_OUTPUT_GROUP_MB",
    "ScoreSpec",
    "TokenTrie",
    "context_window",
    "next_token_logits",
    "sequence_logprobs",
]

#: Padded tokens per forward call (rows × longest row). Around 4k keeps a 135M model's
#: activations and the tree masks in a few hundred MB while amortising per-call overhead.
DEFAULT_MAX_BATCH_TOKENS = 4096


@dataclass(frozen=True)
class ScoreSpec:
    """A token sequence and the index of its first scored token (``1 <= first < len(ids)``)."""

    ids: tuple[int, ...]
    first: int


class TokenTrie:
    """The unique prefixes of a group of sequences, in insertion order (parents before children).

    ``tokens[n]`` is node ``n``'s token, ``depth[n]`` its position id and ``paths[s][j]`` the
    node of token ``j`` of sequence ``s``.
    """

    def __init__(self, sequences: Sequence[Sequence[int]]) -> None:
        if not sequences:
            raise ScorerError("nothing to score: an empty menu (a query with no options)")
        index: dict[tuple[int, int], int] = {}
        tokens: list[int] = []
        depth: list[int] = []
        paths: list[IntArray] = []
        for seq in sequences:
            if len(seq) == 0:
                raise ScorerError("cannot score an empty token sequence")
            node = -1
            path = np.empty(len(seq), dtype=np.int64)
            for j, tok in enumerate(seq):
                key = (node, int(tok))
                child = index.get(key)
                if child is None:
                    child = len(tokens)
                    index[key] = child
                    tokens.append(int(tok))
                    depth.append(j)
                path[j] = child
                node = child
            paths.append(path)
        self.tokens: IntArray = np.asarray(tokens, dtype=np.int64)
        self.depth: IntArray = np.asarray(depth, dtype=np.int64)
        self.paths = paths

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    def ancestors(self) -> npt.NDArray[np.bool_]:
        """``anc[a, b]``: node ``b`` is ``a`` or an ancestor of ``a`` (the tree attention mask)."""
        n = len(self)
        anc = np.zeros((n, n), dtype=bool)
        for path in self.paths:
            tril = np.tri(len(path), dtype=bool)
            anc[path[:, None], path[None, :]] |= tril
        return anc


def context_window(model: Any) -> int | None:
    """The longest sequence the model was trained for (``max_position_embeddings``), if known."""
    value = getattr(model.config, "max_position_embeddings", None)
    return int(value) if value else None


@dataclass
class _Read:
    """What to read from one packed row: logits of ``targets[m]`` at node ``nodes[m]``."""

    nodes: IntArray  # (M,)
    targets: IntArray  # (M, C)


def _bucket_width(length: int, multiple: int) -> int:
    """A row's padded width: ``length`` rounded up to ``multiple``, and at least 16.

    Rows are batched only with rows of the same width, so a row's tensors have the same shape
    whether it runs alone or in a batch. CPU kernels pick their reduction order by shape (MKL's
    sgemm changes kernels below 16 rows; attention splits by key length), so this is what makes
    a batched fp32 score *bitwise* equal to the batch-1 score on one thread, not merely close.
    A reduced precision's kernels also pick their reduction by the number of rows; its products
    run in fixed tiles (:mod:`._fixed_tiles`), which gives it the same property.
    """
    return max(16, -(-length // multiple) * multiple)


def _batches(
    keys: Sequence[tuple[int, int]], max_tokens: int, max_rows: int, multiple: int
) -> list[tuple[int, int, list[int]]]:
    """Batches ``(head, width, rows)`` of rows with the same whole-block head and the same padded
    tail width (``keys[i] = (head, tail length)``), with rows × (head + width) ≤ ``max_tokens``."""
    by_shape: dict[tuple[int, int], list[int]] = {}
    for i, (head, n) in enumerate(keys):
        by_shape.setdefault((head, _bucket_width(n, multiple)), []).append(i)
    batches: list[tuple[int, int, list[int]]] = []
    for head, width in sorted(by_shape, key=lambda s: (-s[1], s[0])):
        rows = by_shape[(head, width)]
        per_batch = max(1, min(max_rows, max_tokens // (head + width)))
        batches.extend(
            (head, width, rows[k : k + per_batch]) for k in range(0, len(rows), per_batch)
        )
    return batches


def _mask_for(
    model: Any, allow: torch.Tensor, pos_q: torch.Tensor, pos_k: torch.Tensor, dtype: torch.dtype
) -> Any:
    """Additive float mask(s) from a boolean (B, Lq, Lk) allow-matrix; a dict for models that mix
    full and sliding-window layers (Gemma 3), where the window also limits the distance."""
    neg = torch.finfo(dtype).min

    def additive(ok: torch.Tensor) -> torch.Tensor:
        mask = torch.zeros(ok.shape, dtype=dtype)
        mask.masked_fill_(~ok, neg)
        return mask[:, None, :, :]

    layer_types = getattr(model.config, "layer_types", None) or ()
    window = getattr(model.config, "sliding_window", None)
    if "sliding_attention" in layer_types and window:
        near = (pos_q[:, :, None] - pos_k[:, None, :]) < int(window)
        return {"full_attention": additive(allow), "sliding_attention": additive(allow & near)}
    return additive(allow)


def _run(
    model: Any,
    tries: Sequence[TokenTrie],
    reads: Sequence[_Read],
    *,
    max_batch_tokens: int,
    max_batch_rows: int,
    pad_multiple: int,
    prefix_cache: PrefixCache | None = None,
    output_group_mb: float = DEFAULT_OUTPUT_GROUP_MB,
) -> list[tuple[FloatArray, FloatArray]]:
    """Forward every trie (one packed row each); return ``(logits[M, C], logsumexp[M])`` per read.

    A row's shared trunk runs in whole blocks (:mod:`._blocks`), served by ``prefix_cache``
    across calls or, without one, by a cache that lives for this call only; the rest of the
    row runs as its tail, batched with rows of the same head and tail widths. A row the cache has
    seen (the same trie and reads, :func:`_row_key`) takes the numbers stored then: a row's
    floats depend on nothing else, so they are the ones it would compute now.
    """
    _check_budget(max_batch_tokens, max_batch_rows, pad_multiple)
    if not output_group_mb >= 0:
        raise ValueError(f"output_group_mb must be 0 or more, got {output_group_mb!r}")
    cache = prefix_cache if prefix_cache is not None else PrefixCache(model, CALL_CACHE_MB)
    cache.check_model(model)
    fix_tiles(model)  # a reduced precision's products at one shape: a row's bits are its own
    results: list[tuple[FloatArray, FloatArray]] = [(np.empty((0, 0)), np.empty(0)) for _ in tries]
    # Callers merge the rows a call asks twice, so only a cache that outlives the call can be
    # asked a row again: without one, no row is digested or kept.
    memo = (
        [_row_key(t, r, pad_multiple, output_group_mb) for t, r in zip(tries, reads, strict=True)]
        if prefix_cache is not None
        else []
    )
    todo: list[int] = []
    for i in range(len(tries)):
        held = cache.result(memo[i]) if memo else None
        if held is None:
            todo.append(i)
        else:
            results[i] = held
    heads = {i: aligned_head(_trunk(tries[i]), len(tries[i])) for i in todo}
    keys = [(heads[i], len(tries[i]) - heads[i]) for i in todo]
    block_rows = max(1, min(max_batch_rows, max_batch_tokens // BLOCK))
    for head, width, batch in _batches(keys, max_batch_tokens, max_batch_rows, pad_multiple):
        rows = [todo[b] for b in batch]
        done: Heads | None = None
        if head:
            ids = [tuple(int(x) for x in tries[i].tokens[:head]) for i in rows]
            first = [int(reads[i].nodes.min()) for i in rows]
            done = head_states(model, cache, ids, first, block_rows, _mask_for)
        _forward_batch(model, tries, reads, rows, width, head, done, results, output_group_mb)
        if memo:
            for i in rows:
                logits, lse = results[i]
                logits.setflags(write=False)  # shared with later calls that ask for the row
                lse.setflags(write=False)
                cache.keep_result(memo[i], results[i], logits.nbytes + lse.nbytes)
    return results


def _row_key(trie: TokenTrie, read: _Read, pad_multiple: int, output_group_mb: float) -> bytes:
    """A digest of everything a row's numbers are computed from: its trie (each node's token
    and parent), its reads, and the two options that change its arithmetic (the padding
    multiple sets its tail's shape; the output grouping the order of its log-sum-exp)."""
    parent = np.full(len(trie), -1, dtype=np.int64)
    for path in trie.paths:
        parent[path[1:]] = path[:-1]
    digest = hashlib.blake2b(digest_size=32)
    for part in (trie.tokens, parent, read.nodes, read.targets):
        digest.update(np.ascontiguousarray(part, dtype=np.int64).tobytes())
        digest.update(repr(part.shape).encode())
    digest.update(repr((pad_multiple, float(output_group_mb))).encode())
    return digest.digest()


def _trunk(trie: TokenTrie) -> int:
    """How many leading tokens every sequence of the trie shares (nodes ``0..t-1``)."""
    t = min(len(p) for p in trie.paths)
    for path in trie.paths:
        off = np.nonzero(path[:t] != np.arange(t))[0]
        if off.size:
            t = int(off[0])
    return t


def _forward_batch(
    model: Any,
    tries: Sequence[TokenTrie],
    reads: Sequence[_Read],
    rows: Sequence[int],
    width: int,
    head: int,
    done: Heads | None,
    results: list[tuple[FloatArray, FloatArray]],
    output_group_mb: float,
) -> None:
    """The tails of ``rows`` (nodes ``head..``), each attending to its row's ``head`` block
    positions and to its own ancestors; writes the read logits into ``results`` (a read node
    inside the head takes its hidden state from the block that computed it)."""
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    n_rows = len(rows)
    ids = torch.zeros((n_rows, width), dtype=torch.long)
    pos = torch.zeros((n_rows, width), dtype=torch.long)
    allow = torch.zeros((n_rows, width, head + width), dtype=torch.bool)
    allow[:, :, head:] = torch.eye(width, dtype=torch.bool)
    for r, i in enumerate(rows):
        trie = tries[i]
        n = len(trie) - head
        ids[r, :n] = torch.from_numpy(trie.tokens[head:])
        pos[r, :n] = torch.from_numpy(trie.depth[head:])
        allow[r, :n, head : head + n] = torch.from_numpy(trie.ancestors()[head:, head:])
        allow[r, :n, :head] = True  # the head's blocks: ancestors of every tail node
    pos_k = torch.cat([torch.arange(head).expand(n_rows, head), pos], dim=1)
    mask = _mask_for(model, allow, pos, pos_k, dtype)
    mask = {k: v.to(device) for k, v in mask.items()} if isinstance(mask, dict) else mask.to(device)
    kv = None if done is None else stacked_cache(done.layers, device, width)
    with torch.inference_mode():
        out = model.base_model(
            input_ids=ids.to(device),
            attention_mask=mask,
            position_ids=pos.to(device),
            **({"use_cache": False} if kv is None else {"cache": kv, "use_cache": True}),
        )
        if kv is not None:
            check_filled(kv)
        hidden = out.last_hidden_state
        inverse, states, picks = [], [], []
        for r, i in enumerate(rows):
            uniq, inv = np.unique(reads[i].nodes, return_inverse=True)
            read = hidden[r, torch.from_numpy(uniq[uniq >= head] - head).to(device)]
            if done is not None and uniq[0] < head:
                inside = torch.from_numpy(uniq[uniq < head] - done.hidden_from[r])
                read = torch.cat([done.hidden[r][inside.to(device)], read])
            inv_t = torch.from_numpy(inv).to(device)
            tgt = torch.from_numpy(reads[i].targets).to(device)
            inverse.append(inv_t)
            states.append(read)
            picks.append((inv_t[:, None].expand(tgt.shape), tgt))
        read_of = normalised_reads(model, states, picks, output_group_mb)
        for i, inv_t, (logits, lse) in zip(rows, inverse, read_of, strict=True):
            results[i] = (logits.double().cpu().numpy(), lse[inv_t].double().cpu().numpy())


def sequence_logprobs(
    model: Any,
    groups: Sequence[Sequence[ScoreSpec]],
    *,
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    max_batch_rows: int = 64,
    pad_multiple: int = 8,
    prefix_cache: PrefixCache | None = None,
    output_group_mb: float = DEFAULT_OUTPUT_GROUP_MB,
) -> list[list[FloatArray]]:
    """Per-token log-probabilities of the scored tokens of every sequence.

    ``groups[g][s]`` is one sequence (put a query's options and its neutral-prompt options in
    one group). Each distinct context ``ids[:first]`` of a group runs as its own packed row with
    its continuations, so its trunk is the whole context: the blocks of a context repeated by
    later queries (a neutral prompt per tile, an item's orderings) and of the part two contexts
    share are computed once. Returns ``out[g][s]``, an array of ``len(ids) - first``
    log-probabilities: ``log P(ids[t] | ids[:t])`` for ``t ≥ first``. ``prefix_cache`` (bound to
    ``model``) keeps the blocks across calls (:mod:`._blocks`); scores do not depend on it.

    A row is its set of distinct sequences, packed in sorted order, so it runs the same way
    whatever order its options came in (an E7 ordering of an item scored as independent options
    is the item's own row), and rows of the call that are the same set run once: each sequence
    gets its own copy of the row's numbers, which are what the row would give alone. A row
    ``prefix_cache`` has seen in an earlier call takes the numbers it gave then.
    """
    parts = [_by_context(g) for g in groups]
    # each sequence's ids as plain ints once: they key the rows and look up their numbers
    seqs = [[tuple(int(t) for t in spec.ids) for spec in g] for g in groups]
    row_of: dict[tuple[int, tuple[tuple[int, ...], ...]], int] = {}
    tries: list[TokenTrie] = []
    reads: list[_Read] = []
    placed: list[list[tuple[list[int], int]]] = []  # per group: (its sequences, row) per part
    for g, ps in enumerate(parts):
        placed.append([])
        for part in ps:
            specs = [groups[g][s] for s in part]
            for spec in specs:
                if not 1 <= spec.first < len(spec.ids):
                    raise ScorerError(
                        f"first scored token {spec.first} is outside 1..{len(spec.ids) - 1}: "
                        "a scored token needs at least one token of context"
                    )
            first = specs[0].first  # one context, so one first scored token
            distinct = tuple(sorted({seqs[g][s] for s in part}))
            key = (first, distinct)
            row = row_of.get(key)
            if row is None:
                row = row_of[key] = len(tries)
                # a sequence's last token is never an input: no score reads the state after it
                trie = TokenTrie([ids[:-1] for ids in distinct])
                nodes = [trie.paths[s][first - 1 :] for s in range(len(distinct))]
                targets = [np.asarray(ids[first:], dtype=np.int64) for ids in distinct]
                tries.append(trie)
                reads.append(_Read(np.concatenate(nodes), np.concatenate(targets)[:, None]))
            placed[g].append((part, row))
    raw = _run(
        model,
        tries,
        reads,
        max_batch_tokens=max_batch_tokens,
        max_batch_rows=max_batch_rows,
        pad_multiple=pad_multiple,
        prefix_cache=prefix_cache,
        output_group_mb=output_group_mb,
    )
    by_row: list[dict[tuple[int, ...], FloatArray]] = []
    for (logits, lse), (first, distinct) in zip(raw, row_of, strict=True):
        flat = logits[:, 0] - lse
        cuts = np.cumsum([len(ids) - first for ids in distinct])[:-1]
        by_row.append(dict(zip(distinct, np.split(flat, cuts), strict=True)))
    out: list[list[FloatArray]] = []
    for g, group_parts in enumerate(placed):
        row_out: list[FloatArray] = [np.empty(0)] * len(groups[g])
        for part, row in group_parts:
            for s in part:
                row_out[s] = by_row[row][seqs[g][s]].copy()
        out.append(row_out)
    return out


def _by_context(group: Sequence[ScoreSpec]) -> list[list[int]]:
    """The group's sequences by their context ``ids[:first]``, in order of first appearance."""
    if not group:
        raise ScorerError("nothing to score: an empty menu (a query with no options)")
    by: dict[tuple[int, ...], list[int]] = {}
    for s, spec in enumerate(group):
        by.setdefault(tuple(spec.ids[: spec.first]), []).append(s)
    return list(by.values())


def next_token_logits(
    model: Any,
    prompts: Sequence[Sequence[int]],
    candidates: Sequence[Sequence[int]],
    *,
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    max_batch_rows: int = 64,
    pad_multiple: int = 8,
    prefix_cache: PrefixCache | None = None,
    output_group_mb: float = DEFAULT_OUTPUT_GROUP_MB,
) -> list[tuple[FloatArray, float]]:
    """Raw next-token logits of ``candidates[i]`` after ``prompts[i]``, with the log-sum-exp over
    the whole vocabulary (so ``logit - lse`` is the candidate's log-probability). A prompt asked
    twice with the same candidates in one call runs once; each asker gets its own copy."""
    row_of: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
    asked = []
    for p, c in zip(prompts, candidates, strict=True):
        key = (tuple(int(t) for t in p), tuple(int(t) for t in c))
        asked.append(row_of.setdefault(key, len(row_of)))
    tries = [TokenTrie([p]) for p, _ in row_of]
    reads = [
        _Read(np.asarray([len(p) - 1]), np.asarray([list(c)], dtype=np.int64)) for p, c in row_of
    ]
    raw = _run(
        model,
        tries,
        reads,
        max_batch_tokens=max_batch_tokens,
        max_batch_rows=max_batch_rows,
        pad_multiple=pad_multiple,
        prefix_cache=prefix_cache,
        output_group_mb=output_group_mb,
    )
    return [(raw[row][0][0].copy(), float(raw[row][1][0])) for row in asked]


def _check_budget(max_batch_tokens: int, max_batch_rows: int, pad_multiple: int) -> None:
    if max_batch_tokens < 1 or max_batch_rows < 1 or pad_multiple < 1:
        raise ValueError("max_batch_tokens, max_batch_rows and pad_multiple must be positive")
