"""The engine against its definition: a token trie run as one packed row per group equals one
plain forward per sequence; batching and padding never change a score."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from choiceaudit.scorers import (  # noqa: E402  # noqa: E402
    ScorerError,
    ScoreSpec,
    TokenTrie,
    next_token_logits,
    sequence_logprobs,
)
from choiceaudit.scorers._engine import _batches, _bucket_width  # noqa: E402

Naive = Callable[[Any, Any, int], np.ndarray]


def random_groups(rng: np.random.Generator, vocab: int, n_groups: int) -> list[list[ScoreSpec]]:
    """Groups shaped like queries: a shared head, two prompt variants, options of 1–6 tokens,
    some options sharing their first token."""
    groups = []
    for _ in range(n_groups):
        head = list(rng.integers(0, vocab, rng.integers(1, 12)))
        variants = [head + list(rng.integers(0, vocab, rng.integers(1, 15))) for _ in range(2)]
        shared_first = int(rng.integers(0, vocab))
        options = []
        for i in range(int(rng.integers(1, 6))):
            body = list(rng.integers(0, vocab, rng.integers(1, 6)))
            options.append([shared_first, *body] if i % 2 else body)
        group = [ScoreSpec(tuple(int(t) for t in v + o), len(v)) for v in variants for o in options]
        groups.append(group)
    return groups


@pytest.fixture(scope="module")
def tiny_llama(tiny_model: Callable[..., Any]) -> Any:
    return tiny_model("llama", max_positions=128)


@pytest.fixture(scope="module")
def tiny_gemma3(tiny_model: Callable[..., Any]) -> Any:
    """Mixed sliding-window (width 4) and full-attention layers, as in Gemma 3."""
    return tiny_model("gemma3", max_positions=128, sliding_window=4)


def test_trie_nodes_are_exactly_the_unique_prefixes() -> None:
    seqs = [(5, 1, 2, 3), (5, 1, 2, 4, 4), (5, 1, 7), (6, 1, 2), (5, 1, 2, 3)]
    trie = TokenTrie(seqs)
    prefixes = {s[: j + 1] for s in seqs for j in range(len(s))}
    assert len(trie) == len(prefixes) == 10
    for s, path in zip(seqs, trie.paths, strict=True):
        assert trie.tokens[path].tolist() == list(s)
        assert trie.depth[path].tolist() == list(range(len(s)))
    anc = trie.ancestors()
    # b is an ancestor-or-self of a iff b's prefix is a prefix of a's prefix.
    node_prefix = {
        int(p[j]): s[: j + 1] for s, p in zip(seqs, trie.paths, strict=True) for j in range(len(s))
    }
    for a, b in itertools.product(range(len(trie)), repeat=2):
        pa, pb = node_prefix[a], node_prefix[b]
        assert anc[a, b] == (pa[: len(pb)] == pb)


def test_engine_equals_one_forward_per_sequence(tiny_llama: Any, naive_logprobs: Naive) -> None:
    groups = random_groups(np.random.default_rng(0), 50, 6)
    out = sequence_logprobs(tiny_llama, groups)
    n_checked = 0
    for group, got in zip(groups, out, strict=True):
        for spec, lp in zip(group, got, strict=True):
            ref = naive_logprobs(tiny_llama, spec.ids, spec.first)
            assert lp.shape == (len(spec.ids) - spec.first,)
            np.testing.assert_allclose(lp, ref, atol=1e-5, rtol=0)
            n_checked += 1
    assert n_checked > 20


def test_batched_equals_batch_one_bitwise(tiny_llama: Any, one_thread: None) -> None:
    groups = random_groups(np.random.default_rng(1), 50, 10)
    batched = sequence_logprobs(tiny_llama, groups, max_batch_rows=64)
    alone = [sequence_logprobs(tiny_llama, [g], max_batch_rows=1)[0] for g in groups]
    for got, ref in zip(batched, alone, strict=True):
        for a, b in zip(got, ref, strict=True):
            np.testing.assert_array_equal(a, b)


def test_sliding_window_layers_get_a_windowed_tree_mask(
    tiny_gemma3: Any, naive_logprobs: Naive
) -> None:
    # Sequences of 20+ tokens are far longer than the window of 4: a full tree mask on the
    # sliding layers would differ from the model's own forward by much more than 1e-5.
    groups = random_groups(np.random.default_rng(2), 50, 4)
    groups = [[ScoreSpec(s.ids + s.ids, len(s.ids) + 1) for s in g] for g in groups]
    out = sequence_logprobs(tiny_gemma3, groups)
    for group, got in zip(groups, out, strict=True):
        for spec, lp in zip(group, got, strict=True):
            np.testing.assert_allclose(
                lp, naive_logprobs(tiny_gemma3, spec.ids, spec.first), atol=1e-5
            )


def test_next_token_logits_are_the_last_position_logits(tiny_llama: Any) -> None:
    prompts = [[1, 2, 3], [4, 5, 6, 7, 8, 9, 10], [3]]
    candidates = [[7, 8], [1, 2, 3, 4], [9]]
    out = next_token_logits(tiny_llama, prompts, candidates)
    for p, c, (logits, lse) in zip(prompts, candidates, out, strict=True):
        with torch.inference_mode():
            ref = tiny_llama(torch.tensor([p])).logits[0, -1].double()
        np.testing.assert_allclose(logits, ref[c].numpy(), atol=1e-5)
        assert lse == pytest.approx(torch.logsumexp(ref, 0).item(), abs=1e-5)


def test_buckets_have_one_width_respect_the_budget_and_cover_every_row() -> None:
    rng = np.random.default_rng(3)
    lengths = [int(n) for n in rng.integers(1, 300, 200)]
    heads = [32 * int(h) for h in rng.integers(0, 3, 200)]
    keys = list(zip(heads, lengths, strict=True))
    batches = _batches(keys, max_tokens=1024, max_rows=16, multiple=8)
    seen = sorted(i for _, _, rows in batches for i in rows)
    assert seen == list(range(len(lengths)))
    for head, width, rows in batches:
        assert all(_bucket_width(lengths[i], 8) == width and heads[i] == head for i in rows)
        assert len(rows) <= 16
        assert len(rows) == 1 or len(rows) * (head + width) <= 1024
    assert _bucket_width(3, 8) == 16 and _bucket_width(17, 8) == 24 and _bucket_width(24, 8) == 24


def test_empty_menu_and_contextless_tokens_are_refused(tiny_llama: Any) -> None:
    with pytest.raises(ScorerError, match="empty menu"):
        sequence_logprobs(tiny_llama, [[]])
    with pytest.raises(ScorerError, match="at least one token of context"):
        sequence_logprobs(tiny_llama, [[ScoreSpec((1, 2, 3), 0)]])
    with pytest.raises(ScorerError, match="at least one token of context"):
        sequence_logprobs(tiny_llama, [[ScoreSpec((1, 2, 3), 3)]])


def test_a_rows_numbers_do_not_depend_on_the_order_of_its_options(
    tiny_llama: Any, tiny_gemma3: Any, one_thread: None
) -> None:
    """Options scored independently after one context are a set: every ordering of them (an E7
    ordering of an item without a menu) gives each option the same bits."""
    rng = np.random.default_rng(5)
    for model in (tiny_llama, tiny_gemma3):
        for group in random_groups(rng, 50, 4):
            ref = sequence_logprobs(model, [group])[0]
            for perm in itertools.islice(itertools.permutations(range(len(group))), 1, 8):
                got = sequence_logprobs(model, [[group[i] for i in perm]])[0]
                for slot, i in enumerate(perm):
                    np.testing.assert_array_equal(got[slot], ref[i])


@pytest.fixture
def rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The packed rows the engine runs, counted per call of its forward loop."""
    from choiceaudit.scorers import _engine

    counts: list[int] = []
    run = _engine._run

    def counted(model: Any, tries: Any, *args: Any, **kwargs: Any) -> Any:
        counts.append(len(tries))
        return run(model, tries, *args, **kwargs)

    monkeypatch.setattr(_engine, "_run", counted)
    return counts


def test_rows_asked_twice_in_a_call_run_once_with_the_numbers_of_one_alone(
    tiny_llama: Any, one_thread: None, rows: list[int]
) -> None:
    base = random_groups(np.random.default_rng(6), 50, 3)
    first_context = [s for s in base[0] if s.ids[: s.first] == base[0][0].ids[: base[0][0].first]]
    assert len(first_context) > 1  # so one of its options alone is another set of sequences
    # each group again with its options reversed, and one option of the first group twice
    repeated = [*base, *[list(reversed(g)) for g in base], [base[0][0], base[0][0]]]
    out = sequence_logprobs(tiny_llama, repeated)
    assert rows == [2 * len(base) + 1]  # two contexts per group, and the one-option row
    for g, group in enumerate(repeated):
        alone = sequence_logprobs(tiny_llama, [group])[0]
        for got, ref in zip(out[g], alone, strict=True):
            np.testing.assert_array_equal(got, ref)
    # every sequence owns its array: base[0][0] is also the last of its reversed copy
    twin = out[len(base)][-1].copy()
    out[0][0][...] = 0.0
    np.testing.assert_array_equal(out[len(base)][-1], twin)


def test_a_prompt_asked_twice_for_its_next_token_runs_once(
    tiny_llama: Any, one_thread: None, rows: list[int]
) -> None:
    prompts = [[1, 2, 3], [4, 5, 6], [1, 2, 3], [1, 2, 3]]
    candidates = [[7, 8], [7, 8], [7, 8], [8, 7]]
    out = next_token_logits(tiny_llama, prompts, candidates)
    assert rows == [3]
    alone = [
        next_token_logits(tiny_llama, [p], [c])[0] for p, c in zip(prompts, candidates, strict=True)
    ]
    for (logits, lse), (ref, ref_lse) in zip(out, alone, strict=True):
        np.testing.assert_array_equal(logits, ref)
        assert lse == ref_lse
    np.testing.assert_array_equal(out[3][0], out[0][0][::-1])
    twin = out[2][0].copy()
    out[0][0][...] = 0.0
    np.testing.assert_array_equal(out[2][0], twin)


def test_a_sequences_last_token_never_runs_through_the_model(
    tiny_llama: Any, naive_logprobs: Naive
) -> None:
    """No score reads the state after a sequence's last token, so the body is never given it:
    one-token options cost no forward position at all."""
    context = (3, 4, 5, 6, 7)
    options = [(40,), (41,), (42, 43)]
    group = [ScoreSpec(context + o, len(context)) for o in options]
    fed: list[int] = []
    hook = tiny_llama.get_input_embeddings().register_forward_pre_hook(
        lambda _, args: fed.extend(int(t) for t in args[0].reshape(-1))
    )
    try:
        (got,) = sequence_logprobs(tiny_llama, [group])
    finally:
        hook.remove()
    assert 42 in fed and not {40, 41, 43} & set(fed)
    for spec, lp in zip(group, got, strict=True):
        np.testing.assert_allclose(
            lp, naive_logprobs(tiny_llama, spec.ids, spec.first), atol=1e-5, rtol=0
        )


def test_a_row_asked_in_a_later_call_takes_the_numbers_it_gave(
    tiny_llama: Any, one_thread: None
) -> None:
    from choiceaudit.scorers import PrefixCache

    groups = random_groups(np.random.default_rng(8), 50, 4)
    cache = PrefixCache(tiny_llama, max_mb=16)
    first = sequence_logprobs(tiny_llama, groups[:2], prefix_cache=cache)
    assert cache.reused_rows == 0
    # group 1 again, with other batch-mates: its two rows come from the cache, bit for bit
    later = sequence_logprobs(tiny_llama, [groups[2], groups[1]], prefix_cache=cache)
    assert cache.reused_rows == 2
    for got, want in zip(later[1], first[1], strict=True):
        np.testing.assert_array_equal(got, want)
    later[1][0][...] = 0.0  # the caller's copy: the stored numbers stay
    again = sequence_logprobs(tiny_llama, [groups[1]], prefix_cache=cache)[0]
    np.testing.assert_array_equal(again[0], first[1][0])
    # another padding multiple is other arithmetic: nothing is taken from the cache
    wide = sequence_logprobs(tiny_llama, [groups[1]], prefix_cache=cache, pad_multiple=16)[0]
    assert cache.reused_rows == 4
    fresh = sequence_logprobs(tiny_llama, [groups[1]], pad_multiple=16)[0]
    for got, want in zip(wide, fresh, strict=True):
        np.testing.assert_array_equal(got, want)
