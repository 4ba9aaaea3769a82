"""The causal-LM scoring engine: every unique prefix token runs once, in length-bucketed batches.

A query asks for the log-probabilities of ``k`` options after its prompt and, for PMI, after its
neutral prompt: ``2k`` token sequences that share a long head (the instruction, the template)
and differ in short tails. The engine merges a *group* of sequences (one query) into a token
trie and runs the trie as one packed row: each trie node is one token, its position id is its
depth, and it attends to exactly its ancestors (a tree-shaped 4D attention mask). A node's key
and value are therefore computed once and reused by every sequence that passes through it,
which is shared-prefix key/value reuse without a second forward call: the prompt's tokens, the
instruction shared by prompt and neutral prompt, and option tokens shared by several options
each run once. The hidden state of a node depends only on its root path with positions
``0..depth``, exactly the computation of a plain forward pass over that sequence, so the
scores equal the naive per-option forward up to floating-point reduction order (DESIGN.md,
"The causal-LM engine").

Rows are sorted by length and cut into batches under a token budget (length buckets), padded
at the end; a padding position attends only to itself and nothing attends to it, so padding
never changes a real token's value. Logits are computed only at the nodes whose next token is
scored (the output projection of a 50k–260k vocabulary dominates the cost otherwise), and
log-softmax is taken in float64 whatever the model's dtype: promoting a few rows of logits is
cheap, and a float32 log-sum-exp over a 50k vocabulary alone rounds by ~1e-6 per token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from choiceaudit.scorers._prefix_cache import PrefixCache
from choiceaudit.scorers._protocol import ScorerError
from choiceaudit.types import FloatArray, IntArray

__all__ = [
    "DEFAULT_MAX_BATCH_TOKENS",
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
    """
    return max(16, -(-length // multiple) * multiple)


def _batches(
    lengths: Sequence[int], max_tokens: int, max_rows: int, multiple: int
) -> list[tuple[int, list[int]]]:
    """Length buckets: ``(width, rows)`` with equal padded widths and rows × width ≤ ``max_tokens``."""
    by_width: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        by_width.setdefault(_bucket_width(n, multiple), []).append(i)
    batches: list[tuple[int, list[int]]] = []
    for width in sorted(by_width, reverse=True):
        rows = by_width[width]
        per_batch = max(1, min(max_rows, max_tokens // width))
        batches.extend((width, rows[k : k + per_batch]) for k in range(0, len(rows), per_batch))
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


def _output_logits(model: Any, hidden: torch.Tensor) -> torch.Tensor:
    """Float64 logits for a few hidden states, computed per packed row with at least 16 rows
    (repeats of the first) so the GEMM shape, hence its reduction order, never depends on
    which other rows share the batch."""
    n = hidden.shape[0]
    if n < 16:
        hidden = torch.cat([hidden, hidden[:1].expand(16 - n, -1)])
    logits = model.get_output_embeddings()(hidden)[:n].double()
    cap = getattr(model.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits  # type: ignore[no-any-return]


def _run(
    model: Any,
    tries: Sequence[TokenTrie],
    reads: Sequence[_Read],
    *,
    max_batch_tokens: int,
    max_batch_rows: int,
    pad_multiple: int,
    prefix_cache: PrefixCache | None = None,
) -> list[tuple[FloatArray, FloatArray]]:
    """Forward every trie (one packed row each); return ``(logits[M, C], logsumexp[M])`` per read.

    With a prefix cache, rows run in two rounds: first one *leader* per distinct row head whose
    trunk is not stored yet (storing it), then the rest, each attending to the longest stored
    prefix of its trunk instead of recomputing it, so a head shared by many queries is computed
    once whatever their order.
    """
    results: list[tuple[FloatArray, FloatArray]] = [(np.empty((0, 0)), np.empty(0)) for _ in tries]
    knobs = (max_batch_tokens, max_batch_rows, pad_multiple)
    if prefix_cache is None:
        _run_rows(model, tries, reads, list(range(len(tries))), results, knobs, None)
        return results
    prefix_cache.check_model(model)
    trunks = [_trunk(t) for t in tries]
    leaders: dict[tuple[int, ...], int] = {}
    for i, (trie, trunk) in enumerate(zip(tries, trunks, strict=True)):
        head = tuple(int(x) for x in trie.tokens[: min(trunk, _HEAD)])
        if trunk >= _MIN_STORED and prefix_cache.covered(trie.tokens[:trunk]) < trunk:
            leaders.setdefault(head, i)
    first = sorted(leaders.values())
    chosen = set(first)
    rest = [i for i in range(len(tries)) if i not in chosen]
    for rows in (first, rest):
        if rows:
            _run_rows(model, tries, reads, rows, results, knobs, (prefix_cache, trunks))
    return results


#: Rows whose first ``_HEAD`` tokens agree share one leader; trunks shorter than
#: ``_MIN_STORED`` tokens are not worth a cache entry.
_HEAD = 32
_MIN_STORED = 16


def _trunk(trie: TokenTrie) -> int:
    """How many leading tokens every sequence of the trie shares (nodes ``0..t-1``)."""
    t = min(len(p) for p in trie.paths)
    for path in trie.paths:
        off = np.nonzero(path[:t] != np.arange(t))[0]
        if off.size:
            t = int(off[0])
    return t


def _run_rows(
    model: Any,
    tries: Sequence[TokenTrie],
    reads: Sequence[_Read],
    which: Sequence[int],
    results: list[tuple[FloatArray, FloatArray]],
    knobs: tuple[int, int, int],
    cached: tuple[PrefixCache, Sequence[int]] | None,
) -> None:
    """Forward the tries ``which`` in length-bucketed batches, writing into ``results``."""
    reuse = [0] * len(which)
    entries: list[Any] = [None] * len(which)
    if cached is not None:
        cache, trunks = cached
        for r, i in enumerate(which):
            limit = min(trunks[i], int(reads[i].nodes.min()))
            reuse[r], entries[r] = cache.longest(tries[i].tokens, limit)
    lengths = [len(tries[i]) - reuse[r] for r, i in enumerate(which)]
    for width, batch in _batches(lengths, *knobs):
        rows = [which[b] for b in batch]
        past = [(reuse[b], entries[b]) for b in batch]
        _forward_batch(model, tries, reads, rows, width, past, results, cached)


def _forward_batch(
    model: Any,
    tries: Sequence[TokenTrie],
    reads: Sequence[_Read],
    rows: Sequence[int],
    width: int,
    past: Sequence[tuple[int, Any]],
    results: list[tuple[FloatArray, FloatArray]],
    cached: tuple[PrefixCache, Sequence[int]] | None,
) -> None:
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    n_rows, n_past = len(rows), max((m for m, _ in past), default=0)
    ids = torch.zeros((n_rows, width), dtype=torch.long)
    pos = torch.zeros((n_rows, width), dtype=torch.long)
    allow = torch.zeros((n_rows, width, n_past + width), dtype=torch.bool)
    allow[:, :, n_past:] = torch.eye(width, dtype=torch.bool)
    for r, i in enumerate(rows):
        trie, m = tries[i], past[r][0]
        n = len(trie) - m
        ids[r, :n] = torch.from_numpy(trie.tokens[m:])
        pos[r, :n] = torch.from_numpy(trie.depth[m:])
        allow[r, :n, n_past : n_past + n] = torch.from_numpy(trie.ancestors()[m:, m:])
        allow[r, :n, :m] = True  # the stored trunk: an ancestor of every node
    pos_k = torch.cat([torch.arange(n_past).expand(n_rows, n_past), pos], dim=1)
    mask = _mask_for(model, allow, pos, pos_k, dtype)
    mask = {k: v.to(device) for k, v in mask.items()} if isinstance(mask, dict) else mask.to(device)
    kv = None if cached is None else _past_cache(model, past, n_past, device, dtype)
    with torch.inference_mode():
        out = model.base_model(
            input_ids=ids.to(device),
            attention_mask=mask,
            position_ids=pos.to(device),
            **({"use_cache": False} if kv is None else {_CACHE_KWARG: kv, "use_cache": True}),
        )
        hidden = out.last_hidden_state
        for r, i in enumerate(rows):
            m = past[r][0]
            uniq, inv = np.unique(reads[i].nodes - m, return_inverse=True)
            logits = _output_logits(model, hidden[r, torch.from_numpy(uniq).to(device)])
            lse = torch.logsumexp(logits, dim=-1)
            inv_t = torch.from_numpy(inv).to(device)
            tgt = torch.from_numpy(reads[i].targets).to(device)
            results[i] = (
                logits[inv_t[:, None], tgt].double().cpu().numpy(),
                lse[inv_t].double().cpu().numpy(),
            )
        if cached is not None and kv is not None:
            _store_trunks(cached, kv, tries, rows, past, n_past)


_CACHE_KWARG = "cache"


def _past_cache(
    model: Any, past: Sequence[tuple[int, Any]], n_past: int, device: Any, dtype: torch.dtype
) -> Any:
    """A fresh ``DynamicCache`` holding each row's stored trunk, zero-padded to ``n_past``
    positions (the padding is masked out). Plain layers, even for sliding-window models: the
    mask applies the window, and a sliding layer would drop the positions a later row reuses."""
    from transformers import DynamicCache

    cache = DynamicCache()
    if n_past == 0:
        return cache
    n_layers = len(next(e for m, e in past if m).layers)
    layers = []
    for layer in range(n_layers):
        proto_k, proto_v = next(e for m, e in past if m).layers[layer]
        k = torch.zeros(
            (len(past), proto_k.shape[0], n_past, proto_k.shape[2]), dtype=dtype, device=device
        )
        v = torch.zeros(
            (len(past), proto_v.shape[0], n_past, proto_v.shape[2]), dtype=dtype, device=device
        )
        for r, (m, entry) in enumerate(past):
            if m:
                k[r, :, :m] = entry.layers[layer][0][:, :m]
                v[r, :, :m] = entry.layers[layer][1][:, :m]
        layers.append((k, v))
    return DynamicCache(ddp_cache_data=layers)


def _store_trunks(
    cached: tuple[PrefixCache, Sequence[int]],
    kv: Any,
    tries: Sequence[TokenTrie],
    rows: Sequence[int],
    past: Sequence[tuple[int, Any]],
    n_past: int,
) -> None:
    """Store each row's trunk states (reused part plus the newly computed trunk nodes)."""
    cache, trunks = cached
    for r, i in enumerate(rows):
        t, m = trunks[i], past[r][0]
        tokens = tries[i].tokens[:t]
        if t < _MIN_STORED or cache.covered(tokens) >= t:
            continue
        layers = []
        for layer in kv.layers:
            k = torch.cat([layer.keys[r, :, :m], layer.keys[r, :, n_past : n_past + t - m]], dim=1)
            v = torch.cat(
                [layer.values[r, :, :m], layer.values[r, :, n_past : n_past + t - m]], dim=1
            )
            layers.append((k.clone(), v.clone()))
        cache.insert(tokens, layers)


def sequence_logprobs(
    model: Any,
    groups: Sequence[Sequence[ScoreSpec]],
    *,
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    max_batch_rows: int = 64,
    pad_multiple: int = 8,
    prefix_cache: PrefixCache | None = None,
) -> list[list[FloatArray]]:
    """Per-token log-probabilities of the scored tokens of every sequence.

    ``groups[g][s]`` is one sequence; sequences in a group share one packed row (put a query's
    options and its neutral-prompt options in one group). Returns ``out[g][s]``, an array of
    ``len(ids) - first`` log-probabilities: ``log P(ids[t] | ids[:t])`` for ``t ≥ first``.
    ``prefix_cache`` (bound to ``model``) reuses and keeps the key/value states of the groups'
    shared heads across calls (:mod:`._prefix_cache`); scores stay equal within fp32 noise.
    """
    _check_budget(max_batch_tokens, max_batch_rows, pad_multiple)
    if prefix_cache is not None and any(len(_by_context(g)) > 1 for g in groups):
        return _split_by_context(
            model, groups, max_batch_tokens, max_batch_rows, pad_multiple, prefix_cache
        )
    tries: list[TokenTrie] = []
    reads: list[_Read] = []
    for group in groups:
        for spec in group:
            if not 1 <= spec.first < len(spec.ids):
                raise ScorerError(
                    f"first scored token {spec.first} is outside 1..{len(spec.ids) - 1}: "
                    "a scored token needs at least one token of context"
                )
        trie = TokenTrie([spec.ids for spec in group])
        nodes = [trie.paths[s][spec.first - 1 : -1] for s, spec in enumerate(group)]
        targets = [np.asarray(spec.ids[spec.first :], dtype=np.int64) for spec in group]
        tries.append(trie)
        reads.append(_Read(np.concatenate(nodes), np.concatenate(targets)[:, None]))
    raw = _run(
        model,
        tries,
        reads,
        max_batch_tokens=max_batch_tokens,
        max_batch_rows=max_batch_rows,
        pad_multiple=pad_multiple,
        prefix_cache=prefix_cache,
    )
    out: list[list[FloatArray]] = []
    for group, (logits, lse) in zip(groups, raw, strict=True):
        flat = logits[:, 0] - lse
        cuts = np.cumsum([len(spec.ids) - spec.first for spec in group])[:-1]
        out.append(list(np.split(flat, cuts)))
    return out


def _by_context(group: Sequence[ScoreSpec]) -> list[list[int]]:
    """The group's sequences by their context ``ids[:first]``, in order of first appearance."""
    by: dict[tuple[int, ...], list[int]] = {}
    for s, spec in enumerate(group):
        by.setdefault(tuple(spec.ids[: spec.first]), []).append(s)
    return list(by.values())


def _split_by_context(
    model: Any,
    groups: Sequence[Sequence[ScoreSpec]],
    max_batch_tokens: int,
    max_batch_rows: int,
    pad_multiple: int,
    prefix_cache: PrefixCache,
) -> list[list[FloatArray]]:
    """With a prefix cache, each context of a group (a query's prompt, its neutral prompt) runs
    as its own row: its trunk is then the whole context, which the cache stores and every later
    query with the same context (a neutral prompt repeated per tile, an item's orderings) reuses
    whole, while the part two contexts share is still served by the radix lookup."""
    parts = [_by_context(g) for g in groups]
    flat = [[groups[g][s] for s in part] for g, ps in enumerate(parts) for part in ps]
    scored = iter(
        sequence_logprobs(
            model,
            flat,
            max_batch_tokens=max_batch_tokens,
            max_batch_rows=max_batch_rows,
            pad_multiple=pad_multiple,
            prefix_cache=prefix_cache,
        )
    )
    out: list[list[FloatArray]] = []
    for g, ps in enumerate(parts):
        row: list[FloatArray] = [np.empty(0)] * len(groups[g])
        for part in ps:
            for s, lp in zip(part, next(scored), strict=True):
                row[s] = lp
        out.append(row)
    return out


def next_token_logits(
    model: Any,
    prompts: Sequence[Sequence[int]],
    candidates: Sequence[Sequence[int]],
    *,
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    max_batch_rows: int = 64,
    pad_multiple: int = 8,
    prefix_cache: PrefixCache | None = None,
) -> list[tuple[FloatArray, float]]:
    """Raw next-token logits of ``candidates[i]`` after ``prompts[i]``, with the log-sum-exp over
    the whole vocabulary (so ``logit - lse`` is the candidate's log-probability)."""
    _check_budget(max_batch_tokens, max_batch_rows, pad_multiple)
    tries = [TokenTrie([p]) for p in prompts]
    reads = [
        _Read(np.asarray([len(p) - 1]), np.asarray([list(c)], dtype=np.int64))
        for p, c in zip(prompts, candidates, strict=True)
    ]
    raw = _run(
        model,
        tries,
        reads,
        max_batch_tokens=max_batch_tokens,
        max_batch_rows=max_batch_rows,
        pad_multiple=pad_multiple,
        prefix_cache=prefix_cache,
    )
    return [(logits[0], float(lse[0])) for logits, lse in raw]


def _check_budget(max_batch_tokens: int, max_batch_rows: int, pad_multiple: int) -> None:
    if max_batch_tokens < 1 or max_batch_rows < 1 or pad_multiple < 1:
        raise ValueError("max_batch_tokens, max_batch_rows and pad_multiple must be positive")
