"""Measure the fp16/bf16 noise floor of the causal-LM engine against fp32.

consistency-without-alignment §I-J reports "an fp16 noise floor of about 0.24 in summed
log-probability on realistically padded batches" and uses the fp32 equivalent (1.9e-6) to show
that padding and positions are correct: a bug is not a precision effect and survives fp32 at full
magnitude. This command measures the same quantities for any model choiceaudit can load, on the
benchmark's signalling-like (with PMI) and idiom-like workloads:

* ``vs fp32``   — max |Δ| of each rule (``sum``, ``mean``, ``pmi``) between the dtype and fp32,
  and the number of queries whose chosen option set changes under each rule (choice flips);
* ``padding``   — max |Δ sum| within the dtype between two paddings of the same rows (rows
  padded to a multiple of 8 versus 64 tokens), i.e. the reduction-order noise that different
  batch shapes select;
* ``batch``     — max |Δ sum| within the dtype between batched scoring and batch size 1 (zero by
  construction on one CPU thread: rows only share a batch with rows of the same padded width).

Run: ``python benchmarks/noise_floor.py --model smollm2 --dtypes float16 bfloat16`` (CPU by
default; pass ``--device cuda`` on a machine with an accelerator).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import idiom_queries, signalling_queries

RULES = ("sum", "mean", "pmi")


def _scores(decisions: Sequence[Any], rule: str) -> list[np.ndarray]:
    return [d.scores[rule] for d in decisions if rule in d.scores]


def _max_abs(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    return max((float(np.abs(x - y).max()) for x, y in zip(a, b, strict=True)), default=0.0)


def _flips(a: Sequence[Any], b: Sequence[Any], rule: str) -> int:
    return sum(
        x.choice(rule) != y.choice(rule) for x, y in zip(a, b, strict=True) if rule in x.scores
    )


def noise_floor(
    model: str = "smollm2",
    dtypes: Sequence[str] = ("float16", "bfloat16"),
    *,
    device: str = "cpu",
    n_signalling: int = 16,
    n_idiom: int = 16,
) -> list[dict[str, Any]]:
    """One row per dtype (fp32 first, as its own control) with the quantities listed above."""
    from choiceaudit.scorers import EngineOptions, HFScorer, load_causal_lm

    queries = signalling_queries(n_signalling) + idiom_queries(n_idiom)
    reference: list[Any] | None = None
    rows = []
    for dtype in ("float32", *[d for d in dtypes if d != "float32"]):
        lm = load_causal_lm(model, dtype=dtype, device=device)
        start = time.perf_counter()
        batched = HFScorer(lm).score(queries)
        seconds = time.perf_counter() - start
        padded = HFScorer(lm, engine=EngineOptions(pad_multiple=64)).score(queries)
        single = HFScorer(lm, engine=EngineOptions(max_batch_rows=1)).score(queries)
        if reference is None:
            reference = batched
        row: dict[str, Any] = {
            "dtype": dtype,
            "device": device,
            "queries": len(queries),
            "seconds": seconds,
        }
        for rule in RULES:
            row[f"max_abs_d_{rule}_vs_fp32"] = _max_abs(
                _scores(batched, rule), _scores(reference, rule)
            )
            row[f"flips_{rule}_vs_fp32"] = _flips(batched, reference, rule)
        row["max_abs_d_sum_padding"] = _max_abs(_scores(batched, "sum"), _scores(padded, "sum"))
        row["max_abs_d_sum_batch"] = _max_abs(_scores(batched, "sum"), _scores(single, "sum"))
        rows.append(row)
        del lm
    return rows


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| dtype | max abs Δ sum vs fp32 | Δ mean | Δ pmi | flips sum / mean / pmi "
        "| padding Δ sum | batch Δ sum | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        flips = " / ".join(str(r[f"flips_{rule}_vs_fp32"]) for rule in RULES)
        lines.append(
            f"| {r['dtype']} | {r['max_abs_d_sum_vs_fp32']:.2e} | {r['max_abs_d_mean_vs_fp32']:.2e} "
            f"| {r['max_abs_d_pmi_vs_fp32']:.2e} | {flips} of {r['queries']} "
            f"| {r['max_abs_d_sum_padding']:.2e} | {r['max_abs_d_sum_batch']:.2e} | {r['seconds']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fp16/bf16 noise floor of the engine against fp32")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--dtypes", nargs="+", default=["float16", "bfloat16"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--signalling-queries", type=int, default=16)
    parser.add_argument("--idiom-queries", type=int, default=16)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    rows = noise_floor(
        args.model,
        args.dtypes,
        device=args.device,
        n_signalling=args.signalling_queries,
        n_idiom=args.idiom_queries,
    )
    print(
        f"model {args.model}, device {args.device}, torch {torch.__version__}, {args.threads} threads"
    )
    print(markdown(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
