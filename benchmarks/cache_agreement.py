"""Does the prefix cache change a score? The baseline demo's own queries, cached and uncached.

Loads one built-in model, scores the first ``N`` stored rows of a signalling and a meaning run
directory (the demo's baseline runs by default) without the cross-query cache, then twice with
it (cold, then warm), on one thread, and prints the largest difference per score, whether the
scores are the same bits, and the largest difference of the uncached scores from the rows the
run directory stored (the engine that wrote them), each run scored with the chat template its
configuration records:

    PYTHONPATH=src HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python benchmarks/cache_agreement.py smollm2 24
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from choiceaudit.types import Decision


def _flat(decisions: Sequence[Decision]) -> npt.NDArray[np.float64]:
    return np.concatenate(
        [
            np.asarray(d.scores[rule], dtype=np.float64)
            for d in decisions
            for rule in ("sum", "pmi")
            if rule in d.scores
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="smollm2 or gemma3-270m")
    parser.add_argument("n", type=int, help="rows per run directory")
    parser.add_argument("--baseline", default="/work/baseline/demo")
    args = parser.parse_args(argv)
    import torch

    from choiceaudit.scorers import EngineOptions, HFScorer
    from choiceaudit.store import open_run

    torch.set_num_threads(1)
    runs = {
        "signalling": f"{args.baseline}/signalling/{args.model}",
        "meaning": f"{args.baseline}/meaning/meaning-{args.model}",
    }
    loaded = HFScorer.load(args.model, prefix_cache_mb=0)
    for name, path in runs.items():
        run = open_run(path)
        # score as the run scored: signalling applies the model's chat template by default
        # (the paper's scoring environment) and records that choice in its configuration
        default = run.manifest.config.get("chat_template_default") or {}
        template = default.get("chat_template")
        plain, cached = (
            HFScorer(loaded.lm, chat_template=template, engine=EngineOptions(prefix_cache_mb=mb))
            for mb in (0, 512)
        )
        rows = run.rows[: args.n]
        queries = [r.query for r in rows]
        start = time.perf_counter()
        want = plain.score(queries)
        uncached_s = time.perf_counter() - start
        for rep in ("cold", "warm"):
            start = time.perf_counter()
            got = cached.score(queries)
            dev = np.abs(_flat(got) - _flat(want))
            print(
                f"{name} {rep}: cached vs uncached max {dev.max():.3g}, same bits "
                f"{bool((dev == 0).all())}; uncached {uncached_s:.0f} s, cached "
                f"{time.perf_counter() - start:.0f} s",
                flush=True,
            )
        dev = np.abs(_flat(want) - _flat([r.decision for r in rows]))
        print(
            f"{name}: uncached vs stored rows max {dev.max():.3g}, "
            f"{int((dev > 1e-5).sum())} of {dev.size} scores beyond 1e-5",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
