"""Worker processes against threads, side by side: the same queries scored into run directories
by one process on every core's thread, by ``--workers`` processes of one thread each
(:class:`choiceaudit.audit.ProcessFanout`, as ``--workers`` runs them) and by one process on one
thread, for each built-in model and three workloads shaped like the demo's (signalling-like and
idiom-like through ``hf``, idiom-like through ``lm-choice``)::

    PYTHONPATH=src HF_HUB_OFFLINE=1 python benchmarks/bench_workers.py

Printed per row: the scoring seconds of each method (the model already open: opening is timed
apart, since a run opens once), threads ÷ workers (above 1: the workers are faster), and the
largest difference of any stored score between the workers' run and the one-thread run (0: on
one thread a query's numbers do not depend on which chunk or worker scored it) and between the
workers' run and the threaded run (floating-point reduction order).
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import idiom_queries, signalling_queries

#: workload -> (the model spec's prefix, the queries it scores)
WORKLOADS: dict[str, tuple[str, Callable[[int], list[Any]]]] = {
    "signalling-like": ("", signalling_queries),
    "idiom-like": ("", idiom_queries),
    "idiom-like lm-choice": ("lm-choice:", idiom_queries),
}


def scores(run: Path) -> dict[str, dict[str, np.ndarray]]:
    from choiceaudit.store import RunStore

    return {
        r.query.id: {k: np.asarray(v) for k, v in r.decision.scores.items()}
        for r in RunStore(run).load().rows
    }


def max_difference(a: Path, b: Path) -> float:
    x, y = scores(a), scores(b)
    assert x.keys() == y.keys()
    return max(float(np.max(np.abs(x[q][k] - y[q][k]))) for q in x for k in x[q])


def timed_run(
    scorer: Any, queries: Sequence[Any], run: Path, chunk: int, executor: Any = None
) -> float:
    from choiceaudit.audit import by_prompt, run_scoring

    def in_process(chunks: Sequence[Sequence[Any]]) -> Any:
        for index, chunk in enumerate(chunks):
            yield index, list(scorer.score(chunk))

    start = time.perf_counter()
    execute = by_prompt(executor or in_process)
    run_scoring(scorer, queries, run, chunk_size=chunk, executor=execute)
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", help="smollm2, gemma3-270m (default both)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--signalling", type=int, default=64, help="signalling-like queries")
    parser.add_argument("--idioms", type=int, default=128, help="idiom-like queries")
    parser.add_argument("--chunk", type=int, default=16, help="queries per part (per call)")
    args = parser.parse_args(argv)
    import torch

    from choiceaudit.audit import ProcessFanout, available_cores
    from choiceaudit.scorers import load_scorer, prepare_scorer

    cores = available_cores()
    threads = max(1, cores // args.workers)
    print(
        f"{cores} cores; threads: one process on {cores} threads; workers: {args.workers} "
        f"processes of {threads} thread(s); one thread: one process on 1 thread; parts of "
        f"{args.chunk} queries"
    )
    print(
        "model        workload              threads s  workers s  1 thread s  "
        "threads/workers  max|Δ| workers-1thread  max|Δ| workers-threads"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.model or ["smollm2", "gemma3-270m"]:
            for workload, (prefix, make) in WORKLOADS.items():
                spec = f"{prefix}{model}"
                queries = make(args.signalling if workload == "signalling-like" else args.idioms)
                prepare_scorer(spec)
                out = Path(tmp) / f"{model}-{workload.replace(' ', '-')}"
                scorer = load_scorer(spec)
                torch.set_num_threads(cores)
                t_threads = timed_run(scorer, queries, out / "threads", args.chunk)
                torch.set_num_threads(1)
                t_one = timed_run(load_scorer(spec), queries, out / "one", args.chunk)
                torch.set_num_threads(cores)
                with ProcessFanout(
                    functools.partial(load_scorer, spec), workers=args.workers, threads=threads
                ) as fan:
                    t_workers = timed_run(fan, queries, out / "workers", args.chunk, fan.execute)
                d_one = max_difference(out / "workers", out / "one")
                d_threads = max_difference(out / "workers", out / "threads")
                print(
                    f"{model:12s} {workload:21s} {t_threads:9.1f}  {t_workers:9.1f}  "
                    f"{t_one:10.1f}  {t_threads / t_workers:15.2f}  {d_one:22.1e}  "
                    f"{d_threads:23.1e}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
