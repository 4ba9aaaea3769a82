"""The CPU output projection, per row against grouped: speed side by side, scores compared.

For each built-in model, scores three workloads — signalling-like and idiom-like through ``hf``
(option log-probabilities), and idiom-like through ``lm-choice`` (one read per query: the key's
next-token logits) — with ``-o output_group_mb=0`` (each row's output projection streams the
whole weight, then one float64 log-sum-exp over its logits) and with the default (the rows of a
batch share each chunk of the weight, normalised chunk by chunk while it is in cache), in
alternation, best of ``--repeats``, and prints the largest difference between any two scores of
the two (float64 reordering of the log-sum-exp, a few 1e-15, where the logits are the same bits)::

    PYTHONPATH=src HF_HUB_OFFLINE=1 python benchmarks/bench_output_head.py --threads 2
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import idiom_queries, signalling_queries


def max_difference(a: Sequence[Any], b: Sequence[Any]) -> float:
    return max(
        float(np.max(np.abs(np.asarray(x.scores[k]) - np.asarray(y.scores[k])), initial=0.0))
        for x, y in zip(a, b, strict=True)
        for k in x.scores
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", help="default: smollm2 and gemma3-270m")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    import torch

    from choiceaudit.scorers import load_scorer

    torch.set_num_threads(args.threads)
    print(
        "model        workload         scorer     per row s  grouped s  per row/grouped  max abs Δ"
    )
    for model in args.model or ["smollm2", "gemma3-270m"]:
        scorers = {
            mb: {
                kind: load_scorer(f"{kind}{model}", output_group_mb=mb, prefix_cache_mb=0)
                for kind in ("", "lm-choice:")
            }
            for mb in (0, 512)
        }
        work = [
            ("signalling-like", "", signalling_queries(8)),
            ("idiom-like", "", idiom_queries(24)),
            ("idiom-like", "lm-choice:", idiom_queries(48)),
        ]
        for name, kind, queries in work:
            best = {0: float("inf"), 512: float("inf")}
            out: dict[int, Any] = {}
            for mb in best:
                scorers[mb][kind].score(queries[:2])  # warm
            for _ in range(args.repeats):
                for mb in best:
                    start = time.perf_counter()
                    out[mb] = scorers[mb][kind].score(queries)
                    best[mb] = min(best[mb], time.perf_counter() - start)
            label = kind.rstrip(":") or "hf"
            print(
                f"{model:12s} {name:16s} {label:10s} {best[0]:9.2f}  {best[512]:9.2f}  "
                f"{best[0] / best[512]:15.2f}  {max_difference(out[0], out[512]):.1e}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
