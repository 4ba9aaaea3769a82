"""The cross-query prefix cache: radix lookups, the memory bound, and scores unchanged by it.

A score with the cache must equal the score without it bit for bit on one thread (a prompt's
head runs in the same position-aligned blocks either way), and a cache never serves another
model's states.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from choiceaudit.scorers import (  # noqa: E402  # noqa: E402
    EngineOptions,
    HFScorer,
    PrefixCache,
    ScoreSpec,
    sequence_logprobs,
)
from choiceaudit.types import Query  # noqa: E402

CACHED = EngineOptions(prefix_cache_mb=16)


def _layers(n: int, value: float = 1.0) -> list[tuple[Any, Any]]:
    """Two layers of (heads=1, n positions, dim=4) fp32 states, keys and values: 64·n bytes."""
    t = torch.full((1, n, 4), value)
    return [(t, t.clone()), (t.clone(), t.clone())]


def test_longest_returns_any_prefix_of_a_stored_path() -> None:
    model = object()
    cache = PrefixCache(model, max_mb=1)
    cache.insert([1, 2, 3, 4, 5], _layers(5))
    assert cache.longest([1, 2, 3, 9], limit=10)[0] == 3  # a prefix of a stored trunk
    assert cache.longest([1, 2, 3, 4, 5, 6], limit=4)[0] == 4  # never past the limit
    assert cache.longest([7, 1], limit=5) == (0, None)
    assert (cache.hits, cache.misses, cache.reused_tokens) == (2, 1, 7)
    assert cache.covered([1, 2, 3, 4, 5, 6]) == 5


def test_entries_are_evicted_least_recently_used_past_the_bound() -> None:
    cache = PrefixCache(object(), max_mb=3 * 64 * 100 / 2**20)  # room for 300 positions
    cache.insert([1] * 100, _layers(100))
    cache.insert([2] * 100, _layers(100))
    cache.longest([1] * 100, limit=100)  # touch the first entry
    cache.insert([3] * 150, _layers(150))  # 350 positions: the least recently used goes
    assert cache.covered([2] * 100) == 0
    assert cache.covered([1] * 100) == 100 and cache.covered([3] * 150) == 150
    assert cache.nbytes == 64 * 250 <= cache.max_bytes
    cache.insert([4] * 400, _layers(400))  # larger than the whole bound: not stored
    assert cache.covered([4] * 400) == 0


def _shared(a: Any, b: Any) -> int:
    """How many leading tokens ``a`` and ``b`` have in common."""
    n = min(len(a), len(b))
    return next((j for j in range(n) if a[j] != b[j]), n)


def test_lookups_serve_only_stored_entries_through_many_evictions() -> None:
    """Evicted entries stay linked until the tree is rebuilt: a lookup must never return one,
    every answer must be a prefix some stored entry holds, and a prefix stored whole (the
    newest entry through its path) is served whole."""
    rng = np.random.default_rng(0)
    cache = PrefixCache(object(), max_mb=4 * 64 * 40 / 2**20)  # room for 160 positions
    for _ in range(300):
        tokens = [int(t) for t in rng.integers(0, 3, size=int(rng.integers(5, 40)))]
        if rng.random() < 0.5:
            cache.insert(tokens, _layers(len(tokens), value=float(len(tokens))))
            if 64 * len(tokens) <= cache.max_bytes:
                assert cache.covered(tokens) == len(tokens)
        depth, entry = cache.longest(tokens, limit=len(tokens))
        stored = list(cache._entries.values())
        best = max((_shared(e.tokens, tokens) for e in stored), default=0)
        assert depth <= best
        if depth:
            assert entry is not None and entry in stored
            assert list(entry.tokens[:depth]) == tokens[:depth]
        assert cache.nbytes == sum(e.nbytes for e in stored) <= cache.max_bytes
    assert cache._evicted <= len(cache)  # the tree was rebuilt as evictions piled up


def test_a_cache_refuses_another_model(tiny_lms: dict[str, Any]) -> None:
    cache = PrefixCache(tiny_lms["merge"].model)
    groups = [[ScoreSpec((5, 6, 7, 8), 2)]]
    with pytest.raises(ValueError, match="another model"):
        sequence_logprobs(tiny_lms["chat"].model, groups, prefix_cache=cache)


def _queries() -> list[Query]:
    """Queries sharing an instruction longer than a block (the tiny tokenizers are character
    level); two states repeat (as an item's orderings do)."""
    instruction = "Pick one of the options."
    states = ["sea", "a cat", "sea", "a dog", "a cat"]
    return [
        Query(state=s, options=("yes", "no", "sea"), instruction=instruction, neutral_state="x")
        for s in states
    ]


def _scores(scorer: HFScorer, queries: list[Query]) -> np.ndarray:
    """Every option's sum and pmi score, flattened (menus may differ in size)."""
    return np.concatenate([d.scores[r] for d in scorer.score(queries) for r in ("sum", "pmi")])


@pytest.mark.parametrize("keep_results", [False, True])
@pytest.mark.parametrize("name", ["merge", "chat"])
def test_cached_scores_equal_uncached_on_tiny_models(
    tiny_lms: dict[str, Any],
    chat_template_text: str,
    one_thread: None,
    name: str,
    keep_results: bool,
) -> None:
    lm = tiny_lms[name]
    template = chat_template_text if name == "chat" else None
    plain = HFScorer(lm, chat_template=template)
    cached = HFScorer(lm, chat_template=template)
    cache = cached.prefix_cache = PrefixCache(lm.model, max_mb=16, keep_results=keep_results)
    queries = _queries()
    want = _scores(plain, queries)
    for _ in range(2):  # cold, then every context served from the cache
        np.testing.assert_array_equal(_scores(cached, queries), want)
    if keep_results:  # the second pass asks only rows the first computed
        assert cache.reused_rows == cache.stats()["results"] > 0
    else:
        assert cache.hits > 0 and cache.reused_tokens > 0 and cache.reused_rows == 0


def test_no_leak_between_models_or_chat_templates(
    tiny_lms: dict[str, Any], chat_template_text: str, one_thread: None
) -> None:
    """The merge and chat tiny models share a tokenizer but not weights; each scorer's cache is
    its own model's, and a template only changes the token ids the cache is keyed by."""
    queries = _queries()
    a = HFScorer(tiny_lms["merge"], engine=CACHED)
    a.score(queries)  # warm a's cache with the merge model's states
    for lm, template in ((tiny_lms["chat"], None), (tiny_lms["chat"], chat_template_text)):
        want = _scores(HFScorer(lm, chat_template=template), queries)
        got = _scores(HFScorer(lm, chat_template=template, engine=CACHED), queries)
        np.testing.assert_array_equal(got, want)
    assert a.prefix_cache is not None and a.prefix_cache.model is tiny_lms["merge"].model


def _real_model_check(lm: Any) -> float:
    from test_hf_models import signalling_like_queries

    queries = signalling_like_queries()
    want = _scores(HFScorer(lm), queries)
    cached = HFScorer(lm, engine=EngineOptions(prefix_cache_mb=256))
    worst = 0.0
    for _ in range(2):
        worst = max(worst, float(np.abs(_scores(cached, queries) - want).max()))
    assert cached.prefix_cache is not None and cached.prefix_cache.reused_tokens > 0
    return worst


@pytest.mark.models
def test_smollm2_cached_scores_equal_uncached(smollm2_lm: Any, one_thread: None) -> None:
    # fp32, one thread: a cached block is the block the uncached pass computes, bit for bit
    assert _real_model_check(smollm2_lm) == 0.0


@pytest.mark.models
@pytest.mark.slow
def test_gemma3_cached_scores_equal_uncached(gemma_lm: Any, one_thread: None) -> None:
    assert _real_model_check(gemma_lm) == 0.0


def test_stored_results_count_towards_the_bound() -> None:
    """Rows' results take at most an eighth of the bound, oldest out first, and the states give
    way so that both together stay within it."""
    cache = PrefixCache(object(), max_mb=8 * 1000 / 2**20)  # 8,000 bytes: results ≤ 1,000
    cache.insert([1, 2, 3], [(torch.zeros(1, 3, 250), torch.zeros(1, 3, 250))])  # 6,000 bytes
    for k in range(4):
        cache.keep_result(("row", k), k, 400)
    assert cache.stats()["results"] == 2  # 800 bytes; the two oldest went
    assert cache.result(("row", 0)) is None and cache.result(("row", 3)) == 3
    assert cache.nbytes == 6000 and len(cache) == 1
    cache.insert([4], [(torch.zeros(1, 1, 250), torch.zeros(1, 1, 250))])  # 2,000 more
    assert len(cache) == 1 and cache.longest([1, 2, 3], 3) == (0, None)  # [1, 2, 3] made room
    assert cache.nbytes + 800 <= cache.max_bytes
    off = PrefixCache(object(), max_mb=1, keep_results=False)
    off.keep_result(("row", 0), 0, 8)
    assert off.result(("row", 0)) is None and off.stats()["results"] == 0
