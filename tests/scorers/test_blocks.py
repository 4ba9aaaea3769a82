"""Position-aligned prefix blocks: contexts longer than a block, scored with and without the
cross-query cache, must give the naive forward's scores and, on one thread, the same bits
whatever the cache holds, the call order and the batch-mates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from choiceaudit.scorers import (  # noqa: E402
    PrefixCache,
    ScoreSpec,
    next_token_logits,
    sequence_logprobs,
)
from choiceaudit.scorers._blocks import BLOCK, aligned_head  # noqa: E402

Naive = Callable[[Any, Any, int], np.ndarray]


def long_groups(rng: np.random.Generator, n_groups: int) -> list[list[ScoreSpec]]:
    """Queries sharing a 40-token instruction, with states of 5–60 tokens (so contexts span one
    to three blocks), a neutral prompt each, and repeated states (an item's orderings)."""
    instruction = [int(t) for t in rng.integers(0, 50, 40)]
    states = [[int(t) for t in rng.integers(0, 50, rng.integers(5, 60))] for _ in range(4)]
    groups = []
    for g in range(n_groups):
        state = states[g % len(states)]
        contexts = [instruction + state, instruction + state[-3:]]
        options = [[int(t) for t in rng.integers(0, 50, rng.integers(1, 5))] for _ in range(3)]
        groups.append([ScoreSpec(tuple(c + o), len(c)) for c in contexts for o in options])
    return groups


@pytest.fixture(scope="module")
def llama(tiny_model: Callable[..., Any]) -> Any:
    return tiny_model("llama", max_positions=256)


@pytest.fixture(scope="module")
def gemma3(tiny_model: Callable[..., Any]) -> Any:
    """Sliding-window layers with a window (20) shorter than a context and than two blocks."""
    return tiny_model("gemma3", max_positions=256, sliding_window=20)


def assert_same_bits(got: list[list[Any]], want: list[list[Any]]) -> None:
    """Every group's every sequence: the same float64 values, bit for bit."""
    for a, b in zip(got, want, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)


def test_a_head_is_cut_to_whole_blocks_leaving_a_tail() -> None:
    assert aligned_head(trunk=100, length=120) == 3 * BLOCK
    assert aligned_head(trunk=40, length=120) == BLOCK
    assert aligned_head(trunk=BLOCK - 1, length=120) == 0
    # a row that is all trunk (one sequence) keeps at least one node for its tail
    assert aligned_head(trunk=2 * BLOCK, length=2 * BLOCK) == BLOCK
    assert aligned_head(trunk=2 * BLOCK + 1, length=2 * BLOCK + 1) == 2 * BLOCK


def test_reading_every_position_gives_the_options_scores_bit_for_bit(
    llama: Any, one_thread: None
) -> None:
    """What ``serve-model`` asks (every token of each string scored) and what ``hf`` asks (the
    options' tokens only) run the same blocks and tail, so the shared positions are the same
    floats — also where the options share tokens past a block boundary (reads inside the head),
    and with the cross-query cache warm."""
    rng = np.random.default_rng(4)
    context = [int(t) for t in rng.integers(0, 50, BLOCK + 20)]
    shared = [int(t) for t in rng.integers(0, 50, 20)]  # crosses the block boundary at 64
    rows = [
        [context + o for o in ([1, 2], [3], [4, 5, 6])],
        [context + shared + o for o in ([7], [8, 9])],
    ]
    for ids_of_row in rows:
        options = [ScoreSpec(tuple(ids), len(context)) for ids in ids_of_row]
        every = [ScoreSpec(tuple(ids), 1) for ids in ids_of_row]
        cache = PrefixCache(llama, max_mb=16)
        sequence_logprobs(llama, [options], prefix_cache=cache)  # warm: the head is stored
        (want,) = sequence_logprobs(llama, [options])
        for use in (None, cache):
            (got,) = sequence_logprobs(llama, [every], prefix_cache=use)
            for a, b in zip(got, want, strict=True):
                np.testing.assert_array_equal(a[len(context) - 1 :], b)
        (warm,) = sequence_logprobs(llama, [options], prefix_cache=cache)
        for a, b in zip(warm, want, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["llama", "gemma3"])
def test_blocked_scores_equal_one_forward_per_sequence(
    request: pytest.FixtureRequest, naive_logprobs: Naive, name: str
) -> None:
    model = request.getfixturevalue(name)
    groups = long_groups(np.random.default_rng(0), 6)
    assert max(s.first for g in groups for s in g) > 2 * BLOCK
    for group, got in zip(groups, sequence_logprobs(model, groups), strict=True):
        for spec, lp in zip(group, got, strict=True):
            np.testing.assert_allclose(
                lp, naive_logprobs(model, spec.ids, spec.first), atol=1e-5, rtol=0
            )


@pytest.mark.parametrize("name", ["llama", "gemma3"])
def test_the_cache_never_changes_a_bit(
    request: pytest.FixtureRequest, one_thread: None, name: str
) -> None:
    model = request.getfixturevalue(name)
    groups = long_groups(np.random.default_rng(1), 8)
    want = sequence_logprobs(model, groups)
    # the states alone (every row recomputed over cached blocks), then the rows' stored results
    states = PrefixCache(model, max_mb=16, keep_results=False)
    rows = PrefixCache(model, max_mb=16)
    for cache in (states, rows):
        # cold, warm, one query per call in reverse order, and batch size one: the same bits
        runs = [
            sequence_logprobs(model, groups, prefix_cache=cache),
            sequence_logprobs(model, groups, prefix_cache=cache),
            [sequence_logprobs(model, [g], prefix_cache=cache)[0] for g in groups[::-1]][::-1],
            sequence_logprobs(model, groups, prefix_cache=cache, max_batch_rows=1),
        ]
        for got in runs:
            assert_same_bits(got, want)
    assert states.hits > 0 and states.reused_tokens >= 2 * BLOCK * len(groups)
    assert states.reused_rows == 0
    assert rows.reused_rows >= 3 * len(groups)  # every row of the three later runs


def test_next_token_logits_are_unchanged_by_the_cache(llama: Any, one_thread: None) -> None:
    rng = np.random.default_rng(2)
    head = [int(t) for t in rng.integers(0, 50, 70)]
    prompts = [head + [int(t) for t in rng.integers(0, 50, n)] for n in (1, 5, 40)]
    candidates = [[1, 2, 3]] * len(prompts)
    want = next_token_logits(llama, prompts, candidates)
    cache = PrefixCache(llama, max_mb=16)
    for _ in range(2):
        got = next_token_logits(llama, prompts, candidates, prefix_cache=cache)
        for (a, la), (b, lb) in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
            assert la == lb
    with torch.inference_mode():
        ref = llama(torch.tensor([prompts[2]])).logits[0, -1].double()
    np.testing.assert_allclose(want[2][0], ref[[1, 2, 3]].numpy(), atol=1e-5)


def test_a_tiny_cache_evicts_without_changing_scores(llama: Any, one_thread: None) -> None:
    groups = long_groups(np.random.default_rng(3), 6)
    want = sequence_logprobs(llama, groups)
    cache = PrefixCache(llama, max_mb=0.05)  # room for about one head's states
    got = [sequence_logprobs(llama, [g], prefix_cache=cache)[0] for g in groups]
    assert_same_bits(got, want)
    assert cache.nbytes <= cache.max_bytes


def test_a_forward_that_does_not_fill_its_cache_is_refused(
    llama: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the new positions stop reaching the buffers through the cache layer's ``update``
    (another transformers), attention would read the buffers' unwritten ends, of the right
    shape: the engine refuses instead."""
    from choiceaudit.scorers import ScorerError
    from choiceaudit.scorers._blocks import _filled_layer

    layer = _filled_layer()
    monkeypatch.setattr(layer, "update", lambda self, k, v, *a, **kw: (self._keys, self._values))
    ids = tuple(1 + i % 20 for i in range(2 * BLOCK + 6))
    groups = [[ScoreSpec(ids, 2 * BLOCK + 2)]]
    with pytest.raises(ScorerError, match="engine check 'cache filled'"):
        sequence_logprobs(llama, groups)
