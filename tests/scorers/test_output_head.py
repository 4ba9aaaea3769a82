"""The CPU output projection streams its weight once per group of rows and normalises each
chunk of the vocabulary while it is in cache: a row's log-probabilities must not depend on which
rows share its group, and must be those of the row run through the whole head alone, with one
float64 log-sum-exp over it."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch.nn.functional as F  # noqa: E402

from choiceaudit.scorers import (  # noqa: E402
    ScoreSpec,
    _output_head,
    next_token_logits,
    sequence_logprobs,
)


def groups(rng: np.random.Generator, n: int) -> list[list[ScoreSpec]]:
    """Queries of 1–6 options of 1–9 tokens (so a row reads from 1 to ~50 positions), some
    with a neutral prompt, contexts of 3–40 tokens."""
    out = []
    for _ in range(n):
        contexts = [[int(t) for t in rng.integers(0, 50, rng.integers(3, 40))]]
        if rng.random() < 0.5:
            contexts.append(contexts[0][-2:])
        options = [
            [int(t) for t in rng.integers(0, 50, rng.integers(1, 10))]
            for _ in range(rng.integers(1, 7))
        ]
        out.append([ScoreSpec(tuple(c + o), len(c)) for c in contexts for o in options])
    return out


def run(model: Any, work: list[list[ScoreSpec]], group_mb: float) -> tuple[Any, Any]:
    prompts = [g[0].ids[: g[0].first] for g in work]
    candidates = [[1, 2, 3]] * len(prompts)
    return (
        sequence_logprobs(model, work, output_group_mb=group_mb),
        next_token_logits(model, prompts, candidates, output_group_mb=group_mb),
    )


def same(
    a: tuple[Any, Any], b: tuple[Any, Any], *, atol: float = 0.0, lse_atol: float | None = None
) -> None:
    """Log-probabilities within ``atol``; next-token logits within ``atol`` and their
    log-sum-exp within ``lse_atol`` (default ``atol``)."""
    lse_atol = atol if lse_atol is None else lse_atol
    for x, y in zip(a[0], b[0], strict=True):
        for u, v in zip(x, y, strict=True):
            np.testing.assert_allclose(u, v, rtol=0, atol=max(atol, lse_atol))
    for (la, sa), (lb, sb) in zip(a[1], b[1], strict=True):
        np.testing.assert_allclose(la, lb, rtol=0, atol=atol)
        np.testing.assert_allclose(sa, sb, rtol=0, atol=lse_atol)


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
@pytest.mark.parametrize("chunk", [7, 13, 50])
def test_a_rows_numbers_do_not_depend_on_its_group(
    tiny_model: Callable[..., Any],
    one_thread: None,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    chunk: int,
) -> None:
    """One row per group, a few rows per group, every row in one group: the same bits; and
    within float32 rounding of the whole head (the same bits where the chunks are full, as on
    both built-in models: a narrower last chunk may round its last bit differently), with the
    chunked log-sum-exp within float64 rounding of the whole row's."""
    model = tiny_model(kind, max_positions=128)
    work = groups(np.random.default_rng(11), 24)
    whole = run(model, work, 0)
    # vocabulary chunks that do not divide it (7, 13), and one chunk of all of it (50)
    monkeypatch.setattr(_output_head, "VOCAB_CHUNK", chunk)
    alone, few, all_in_one = (run(model, work, mb) for mb in (1e-9, 0.01, 512))
    same(alone, few)
    same(alone, all_in_one)
    # a last bit of a float32 logit in the logit read and in the log-sum-exp (the tiny
    # models' logits stay below 16 in magnitude, where a float32 step is 9.5e-7)
    same(alone, whole, atol=2 * float(np.spacing(np.float32(8.0))))
    if chunk == 50:  # one full chunk: the whole head's own product and one sum, in its order
        same(alone, whole, lse_atol=1e-12)


@pytest.mark.parametrize("chunk", [7, 50])
def test_the_chunked_log_sum_exp_is_the_whole_rows(
    tiny_model: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Against a log-sum-exp in extended precision over the same logits: a chunked sum whose
    chunks lie far apart (a large logit in one chunk, the rest tiny) is exact to float64
    rounding, soft-capped or not."""
    model = tiny_model("gemma3", max_positions=64)
    monkeypatch.setattr(_output_head, "VOCAB_CHUNK", chunk)
    head = model.get_output_embeddings()
    hidden = torch.randn(5, head.weight.shape[1], generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        head.weight[11] *= 40.0  # one chunk's maximum far above every other chunk's
    for cap in (None, 30.0):
        model.config.final_logit_softcapping = cap
        with torch.inference_mode():  # the engine's own chunk products, so the same float32 bits
            edges = _output_head._vocab_edges(int(head.weight.shape[0]))
            padded = _output_head.padded(hidden)
            parts = [F.linear(padded, head.weight[lo:hi]) for lo, hi in pairwise(edges)]
            logits = torch.cat(parts, dim=1)[:5].double()
            if cap:
                logits = torch.tanh(logits / cap) * cap
        node = torch.arange(5)[:, None].expand(5, 3)
        target = torch.tensor([[0, 11, 49]]).expand(5, 3)
        with torch.inference_mode():
            ((picked, lse),) = _output_head.normalised_reads(model, [hidden], [(node, target)], 512)
        wide = logits.numpy().astype(np.longdouble)
        top = wide.max(axis=1, keepdims=True)
        exact = (top[:, 0] + np.log(np.exp(wide - top).sum(axis=1))).astype(np.float64)
        np.testing.assert_allclose(lse.numpy(), exact, rtol=4e-16, atol=0)
        np.testing.assert_array_equal(picked.numpy(), logits[node, target].numpy())


def test_a_negative_group_budget_is_refused(tiny_model: Callable[..., Any]) -> None:
    model = tiny_model("llama", max_positions=64)
    with pytest.raises(ValueError, match="output_group_mb must be 0 or more"):
        sequence_logprobs(model, [[ScoreSpec((1, 2, 3), 2)]], output_group_mb=-1)


@pytest.mark.parametrize(
    ("vocab", "chunk", "edges"),
    [
        (50, 7, [0, 7, 14, 21, 28, 35, 42, 50]),  # a last chunk of one row joins the one before
        (50, 13, [0, 13, 26, 50]),
        (50, 64, [0, 50]),
        (262_144, 8192, list(range(0, 262_145, 8192))),
        (49_153, 8192, [*range(0, 40_961, 8192), 49_153]),
    ],
)
def test_vocabulary_chunks_never_end_in_a_sliver(
    monkeypatch: pytest.MonkeyPatch, vocab: int, chunk: int, edges: list[int]
) -> None:
    monkeypatch.setattr(_output_head, "VOCAB_CHUNK", chunk)
    assert _output_head._vocab_edges(vocab) == edges


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_a_bfloat16_rows_numbers_do_not_depend_on_its_group(
    tiny_model: Callable[..., Any],
    one_thread: None,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
) -> None:
    """A bfloat16 head streams chunk by chunk too: one row per group, a few, all in one, the
    same bits; and within a bfloat16 step of the whole head run row by row."""
    model = tiny_model(kind, max_positions=128).to(torch.bfloat16)
    work = groups(np.random.default_rng(12), 16)
    whole = run(model, work, 0)
    monkeypatch.setattr(_output_head, "VOCAB_CHUNK", 13)
    alone, few, all_in_one = (run(model, work, mb) for mb in (1e-9, 0.01, 512))
    same(alone, few)
    same(alone, all_in_one)
    same(alone, whole, atol=2 * 2.0**-4)  # a bfloat16 step at 8 is 2**-4
