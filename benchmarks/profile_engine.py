"""Where the engine's time goes on one workload: the output projection against the rest.

Scores a ``bench_engine`` workload with ``HFScorer`` once to warm up, then once under cProfile,
and prints the warm wall time and the shares of: the blocks of the rows' shared heads, the rows'
tails (the options' trees) and, within the tails, the output projection to the vocabulary at
the read positions (``normalised_reads``: chunks of the vocabulary, each a GEMM of the group's
reads, its float64 logits and their exponentials). Gemma 3's vocabulary has 262,144 entries,
SmolLM2's 49,152, which is why the same workload spends its time so differently on the two
models::

    PYTHONPATH=src HF_HUB_OFFLINE=1 python benchmarks/profile_engine.py gemma3-270m idiom-like
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import idiom_queries, signalling_queries

#: (label, how pstats names the function, the file calling it or "" for every caller)
PARTS = (
    ("blocks of the shared heads", ("_blocks.py", "_forward_block"), ""),
    ("tails (the options' trees), with", ("_engine.py", "_forward_batch"), ""),
    ("  the output projection and log-sum-exp", ("_output_head.py", "normalised_reads"), ""),
    ("    of which the GEMMs", ("~", "<built-in method torch._C._nn.linear>"), "_output_head.py"),
    ("    of which exponentials", ("~", "<built-in method torch.exp>"), "_output_head.py"),
)


def cumulative(stats: pstats.Stats, where: tuple[str, str], caller: str = "") -> float:
    """Cumulative seconds of the function ``where`` (file suffix, name) in ``stats``, only in
    its calls from functions of the file ``caller`` when one is named."""
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = 0.0
    for (path, _line, name), (_cc, _nc, _tt, ct, callers) in table.items():
        if not (path.endswith(where[0]) and name == where[1]):
            continue
        if not caller:
            total += ct
            continue
        total += sum(c[3] for (p, _l, _n), c in callers.items() if p.endswith(caller))
    return total


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="smollm2 or gemma3-270m")
    parser.add_argument("workload", choices=["signalling-like", "idiom-like"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--scorer",
        choices=["hf", "lm-choice"],
        default="hf",
        help="lm-choice reads one position per query: the keys' next-token logits",
    )
    args = parser.parse_args(argv)
    import torch

    from choiceaudit.scorers import load_scorer

    torch.set_num_threads(args.threads)
    kind = "" if args.scorer == "hf" else "lm-choice:"
    scorer = load_scorer(f"{kind}{args.model}", prefix_cache_mb=0)
    queries = signalling_queries(8) if args.workload == "signalling-like" else idiom_queries(24)
    scorer.score(queries)
    start = time.perf_counter()
    scorer.score(queries)
    warm = time.perf_counter() - start
    profile = cProfile.Profile()
    profile.enable()
    scorer.score(queries)
    profile.disable()
    stats = pstats.Stats(profile)
    total = cumulative(stats, ("_hf.py" if args.scorer == "hf" else "_lm_choice.py", "score"))
    print(
        f"{args.model} {args.workload}: {len(queries)} queries, warm {warm:.2f} s "
        f"({args.threads} threads); under the profiler {total:.2f} s"
    )
    for label, where, caller in PARTS:
        seconds = cumulative(stats, where, caller)
        print(f"  {label:42s} {seconds:6.2f} s  {seconds / total:6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
