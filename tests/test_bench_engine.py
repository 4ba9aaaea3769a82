"""The engine benchmark's workloads are what its README table says, and its smoke mode runs
end to end (slow: it loads SmolLM2 and times the naive loop)."""

from __future__ import annotations

import pytest

from bench_scripts import load_benchmark


def test_the_meaning_plan_workload_is_every_ordering_of_each_item() -> None:
    bench = load_benchmark("bench_engine")
    queries = bench.meaning_plan_queries(2)
    assert len(queries) == 48
    first = queries[:24]
    assert {q.state for q in first} == {first[0].state}  # one item's prompt, shared
    assert len({q.perm for q in first}) == 24
    assert sorted(first[5].options) == sorted(first[0].options)
    assert queries[24].state != first[0].state


def test_the_signalling_workload_has_a_neutral_prompt_and_six_options() -> None:
    bench = load_benchmark("bench_engine")
    queries = bench.signalling_queries(3)
    assert [q.n_options for q in queries] == [6, 6, 6]
    assert all(q.neutral_state and "___" in q.neutral_state for q in queries)
    assert len({q.state for q in queries}) == 3


@pytest.mark.slow
@pytest.mark.models
def test_smoke_mode_prints_every_method_for_each_workload(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = load_benchmark("bench_engine")
    assert bench.main(["--smoke", "--threads", "1", "--model", "smollm2"]) == 0
    out = capsys.readouterr().out
    for row in ("| smollm2 | signalling-like | naive |", "| smollm2 | idiom-like | engine |"):
        assert row in out
    assert "| smollm2 | meaning-plan (E7) | engine + prefix cache |" in out
    assert "measured fp32 GEMM" in out
    assert "| floor input tokens | floor reads |" in out


@pytest.mark.parametrize("tied", [False, True])
def test_the_exact_floor_counts_each_input_prefix_and_read_once(tied: bool) -> None:
    transformers = pytest.importorskip("transformers")
    bench = load_benchmark("bench_engine")
    config = transformers.LlamaConfig(
        vocab_size=32,
        hidden_size=8,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        tie_word_embeddings=tied,
    )
    model = transformers.LlamaForCausalLM(config)

    def request(ids: tuple[int, ...]) -> object:
        return bench.Request("c", "o", ids, 2, 0, 0, False)

    # inputs: (1), (1, 2), (1, 2, 3) and (7), (7, 2): never a request's last token
    # reads: (1, 2), (1, 2, 3), (7, 2) (a scored token is predicted from each)
    requests = [
        request((1, 2, 3, 4)),
        request((1, 2, 3, 5)),
        request((1, 2, 6)),
        request((7, 2, 9)),
    ]
    floor = bench.exact_floor(model, requests)
    assert (floor["floor_input_tokens"], floor["floor_reads"]) == (5, 3)
    embeddings = 32 * 8
    total = sum(p.numel() for p in model.parameters())
    assert floor["head_params"] == embeddings
    assert floor["body_params"] == total - embeddings * (1 if tied else 2)
    flops = 2 * (floor["body_params"] * 5 + embeddings * 3)
    assert bench.floor_seconds(floor, 1e9) == pytest.approx(flops / 1e9)


def test_the_floor_table_divides_naive_and_lm_eval_by_the_floor() -> None:
    bench = load_benchmark("bench_engine")
    common = {
        "model": "m",
        "workload": "w",
        "floor_input_tokens": 10,
        "floor_reads": 2,
        "floor_s": 0.5,
    }
    rows = [
        {**common, "method": "naive", "seconds": 10.0},
        {**common, "method": "lm-eval (batch 8)", "seconds": 4.0},
        {**common, "method": "engine", "seconds": 1.0},
        {**common, "workload": "plan", "method": "engine", "seconds": 1.0},  # no naive: no line
    ]
    table = bench.floors_markdown(rows).splitlines()
    assert table[2:] == ["| m | w | 10 | 2 | 0.50 | 20.0 | 8.0 | 2.00 |"]
