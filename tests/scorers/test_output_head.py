"""The CPU output projection streams its weight once per group of rows of few reads: a row's
log-probabilities must not depend on which rows share its group, and must be those of the row
run through the whole head alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from choiceaudit.scorers import _engine  # noqa: E402
from choiceaudit.scorers._engine import (  # noqa: E402
    ScoreSpec,
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
        options = [[int(t) for t in rng.integers(0, 50, rng.integers(1, 10))]
                   for _ in range(rng.integers(1, 7))]  # fmt: skip
        out.append([ScoreSpec(tuple(c + o), len(c)) for c in contexts for o in options])
    return out


def run(model: Any, work: list[list[ScoreSpec]], group_mb: float) -> tuple[Any, Any]:
    prompts = [g[0].ids[: g[0].first] for g in work]
    candidates = [[1, 2, 3]] * len(prompts)
    return (
        sequence_logprobs(model, work, output_group_mb=group_mb),
        next_token_logits(model, prompts, candidates, output_group_mb=group_mb),
    )


def same(a: tuple[Any, Any], b: tuple[Any, Any], *, atol: float = 0.0) -> None:
    for x, y in zip(a[0], b[0], strict=True):
        for u, v in zip(x, y, strict=True):
            np.testing.assert_allclose(u, v, rtol=0, atol=atol)
    for (la, sa), (lb, sb) in zip(a[1], b[1], strict=True):
        np.testing.assert_allclose(la, lb, rtol=0, atol=atol)
        np.testing.assert_allclose(sa, sb, rtol=0, atol=atol)


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
@pytest.mark.parametrize(("chunk", "grouped"), [(7, 8), (13, 64), (50, 32)])
def test_a_rows_numbers_do_not_depend_on_its_group(
    tiny_model: Callable[..., Any],
    one_thread: None,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    chunk: int,
    grouped: int,
) -> None:
    """One row per group, a few rows per group, every row in one group: the same bits; and
    within float32 rounding of the whole head (the same bits where the chunks are full, as on
    both built-in models: a narrower last chunk may round its last bit differently)."""
    model = tiny_model(kind, max_positions=128)
    work = groups(np.random.default_rng(11), 24)
    whole = run(model, work, 0)
    # vocabulary chunks that do not divide it (50), and rows of more reads than the grouped
    # limit interleaved with grouped ones
    monkeypatch.setattr(_engine, "VOCAB_CHUNK", chunk)
    monkeypatch.setattr(_engine, "GROUPED_READS", grouped)
    alone, few, all_in_one = (run(model, work, mb) for mb in (1e-9, 0.01, 512))
    same(alone, few)
    same(alone, all_in_one)
    same(alone, whole, atol=1e-6)  # a last bit of a float32 logit
    if chunk == 50:  # one full chunk: the whole head's own product
        same(alone, whole)


def test_a_negative_group_budget_is_refused(tiny_model: Callable[..., Any]) -> None:
    model = tiny_model("llama", max_positions=64)
    with pytest.raises(ValueError, match="output_group_mb must be 0 or more"):
        sequence_logprobs(model, [[ScoreSpec((1, 2, 3), 2)]], output_group_mb=-1)
