"""The checks a lent GPU machine runs in one call: the engine on the device in float32 and
bfloat16 for both built-in models, against the naive per-option forward and
lm-evaluation-harness on the same requests (ratios measured side by side in one run), with each
method's tokens per second as a fraction of the device's measured matrix-multiply rate in that
dtype, and the precision gate there (`choiceaudit check precision`: bfloat16's noise floor
against float32, float32 against the float64 reference).

    python benchmarks/gpu_check.py --device cuda --out "$OUT"      # on the lent machine
    python benchmarks/gpu_check.py --device cpu --smoke --out DIR  # how it is tested here

Writes ``gpu_check.json`` (every row) and ``gpu_check.md`` (the tables) into ``--out`` and
prints the tables. lm-evaluation-harness is used where it is importable and reported as not
installed otherwise; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import (
    bench_workload,
    best_tokens_per_second,
    gemm_flops,
    idiom_queries,
    markdown,
    signalling_queries,
)


def _device_name(device: str) -> str:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return str(torch.cuda.get_device_name(device))
    return platform.processor() or platform.machine()


def engine_rows(
    model_name: str, dtype: str, device: str, args: argparse.Namespace
) -> tuple[list[dict[str, Any]], float]:
    """The naive loop, lm-eval and the engine on both workloads, for one model in one dtype."""
    from choiceaudit.scorers import EngineOptions, HFScorer, load_causal_lm

    lm = load_causal_lm(model_name, dtype=dtype, device=device)
    scorer = HFScorer(lm, engine=EngineOptions(prefix_cache_mb=0))
    gemm = gemm_flops(args.threads, device=device, dtype=dtype)
    tps_best = best_tokens_per_second(lm.model)
    rows = []
    for name, queries in (
        ("signalling-like", signalling_queries(args.signalling_queries)),
        ("idiom-like", idiom_queries(args.idiom_queries)),
    ):
        for row in bench_workload(
            name, scorer, queries, args.batch_size, tps_best, args.repeats, gemm=gemm
        ):
            # the dtype in the model column: the tables hold both precisions of each model
            rows.append({"model": f"{model_name} {dtype}", "dtype": dtype, "device": device, **row})
    del scorer, lm
    return rows, gemm


def precision_rows(model_name: str, device: str, args: argparse.Namespace) -> dict[str, Any]:
    from choiceaudit.audit import check_precision

    options = {} if device == "cpu" else {"device": device}
    report = check_precision(
        model_name,
        dtype="bfloat16",
        n_queries=args.precision_queries,
        n_reference=args.reference_queries,
        scorer_options=options,
    )
    return {
        "model": model_name,
        "device": device,
        "n_queries": report.n_queries,
        "n_reference": report.n_reference,
        "reference_max_abs": report.reference_max_abs,
        "reference_ok": report.reference_ok,
        "floor": [
            {
                "rule": s.rule,
                "median_abs": s.median_abs,
                "p95_abs": s.p95_abs,
                "max_abs": s.max_abs,
                "flips": s.flips,
                "n_queries": s.n_queries,
                "n_not_finite": s.n_not_finite,
            }
            for s in report.floor
        ],
    }


def precision_markdown(records: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| model | device | rule | median \\|Δ\\| | p95 \\|Δ\\| | max \\|Δ\\| | flips | float32 vs float64 |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        for s in r["floor"]:
            lines.append(
                f"| {r['model']} | {r['device']} | {s['rule']} | {s['median_abs']:.3g} | "
                f"{s['p95_abs']:.3g} | {s['max_abs']:.3g} | {s['flips']}/{s['n_queries']} | "
                f"{r['reference_max_abs']:.2g} ({'ok' if r['reference_ok'] else 'ABOVE 1e-3'}) |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", action="append", help="repeatable; default both built-in")
    parser.add_argument("--dtype", action="append", help="repeatable; default float32, bfloat16")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--batch-size", type=int, default=8, help="lm-eval batch size")
    parser.add_argument("--signalling-queries", type=int, default=32)
    parser.add_argument("--idiom-queries", type=int, default=96)
    parser.add_argument("--precision-queries", type=int, default=128)
    parser.add_argument("--reference-queries", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--smoke", action="store_true", help="a few queries, one run each: checks it runs"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.signalling_queries, args.idiom_queries, args.repeats = 2, 2, 1
        args.precision_queries, args.reference_queries = 4, 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    gemms: dict[str, float] = {}
    precision = []
    for model_name in args.model or ["smollm2", "gemma3-270m"]:
        for dtype in args.dtype or ["float32", "bfloat16"]:
            model_rows, gemms[dtype] = engine_rows(model_name, dtype, args.device, args)
            rows.extend(model_rows)
        precision.append(precision_rows(model_name, args.device, args))
    header = (
        f"{_device_name(args.device)} ({args.device}), torch {torch.__version__}; matrix-multiply "
        f"rate {', '.join(f'{d} {g / 1e12:.2f} TFLOP/s' for d, g in gemms.items())}; "
        f"'of fp32 GEMM' = request tokens/s × 2 × parameters ÷ that dtype's rate; "
        f"wall time {(time.perf_counter() - started) / 60:.1f} min"
    )
    tables = "\n\n".join(
        [
            header,
            markdown(rows),
            "Precision gate (bfloat16 against float32)",
            precision_markdown(precision),
        ]
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_check.json").write_text(
        json.dumps(
            {"header": header, "engine": rows, "precision": precision}, indent=2, default=str
        ),
        encoding="utf-8",
    )
    (args.out / "gpu_check.md").write_text(tables + "\n", encoding="utf-8")
    print(tables)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
