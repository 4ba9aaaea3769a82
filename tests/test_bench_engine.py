"""The engine benchmark's workloads are what its README table says, and its smoke mode runs
end to end (slow: it loads SmolLM2 and times the naive loop)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_engine.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_engine", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_engine"] = module
    spec.loader.exec_module(module)
    return module


def test_the_meaning_plan_workload_is_every_ordering_of_each_item() -> None:
    bench = _bench()
    queries = bench.meaning_plan_queries(2)
    assert len(queries) == 48
    first = queries[:24]
    assert {q.state for q in first} == {first[0].state}  # one item's prompt, shared
    assert len({q.perm for q in first}) == 24
    assert sorted(first[5].options) == sorted(first[0].options)
    assert queries[24].state != first[0].state


def test_the_signalling_workload_has_a_neutral_prompt_and_six_options() -> None:
    bench = _bench()
    queries = bench.signalling_queries(3)
    assert [q.n_options for q in queries] == [6, 6, 6]
    assert all(q.neutral_state and "___" in q.neutral_state for q in queries)
    assert len({q.state for q in queries}) == 3


@pytest.mark.slow
@pytest.mark.models
def test_smoke_mode_prints_every_method_for_each_workload(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = _bench()
    assert bench.main(["--smoke", "--threads", "1", "--model", "smollm2"]) == 0
    out = capsys.readouterr().out
    for row in ("| smollm2 | signalling-like | naive |", "| smollm2 | idiom-like | engine |"):
        assert row in out
    assert "| smollm2 | meaning-plan (E7) | engine + prefix cache |" in out
    assert "measured fp32 GEMM" in out
