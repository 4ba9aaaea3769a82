"""Scaling benchmark: queries per second against workers, side by side.

In one run, on this machine, through ``run_scoring`` into fresh run directories (parts,
manifest and all, as a user's run):

* ``fake`` scorer: one process; Ray with 1 and 2 actors. The fake scorer costs microseconds, so
  the Ray rows measure Ray's overhead per query (the difference to one process);
* SmolLM2 (fp32, CPU, one torch thread per worker) on the signalling-like workload of
  ``bench_engine.py``: ``hf`` in one process; Ray with 1 and 2 actors (one model each);
  ``openai:`` over ``choiceaudit serve-model`` on 127.0.0.1 (HTTP, JSON, the order check off).

Ray's start-up (cluster and actors, each actor loading its model) is timed separately and not
counted in queries per second. Then the wall time of the paper's full plans behind vLLM on N
GPUs is estimated from measured per-query costs: the prefill tokens a query needs (measured
here with SmolLM2's tokenizer on the workload: a server that does not share the prompt across
a query's strings, as vLLM does not for prompt log-probabilities, prefills every string
whole), the client overhead per query (measured: ``openai`` over the server minus ``hf`` in
process, i.e. HTTP + JSON + parsing) and one *assumed* number, a GPU's prefill throughput for
the audited model, printed with the estimate and settable with ``--gpu-tokens-per-s``.

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_scale.py`` (about 3 minutes on two
cores). With ``--sizes 10000 100000 1000000`` it measures instead the toolkit's own costs
(scoring with the model-free scorer, resume, report, imports, dry-run planning) against run size
(:mod:`scale_sizes`). The machine is shared: read ratios within one run, not absolute numbers across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

#: The paper plans, in scored queries (a query is one menu; its rules come from one pass).
PLANS: dict[str, tuple[int, str]] = {
    "signalling (base)": (
        1_000 * 2 * 7,
        "1,000 items x 2 permutations x 7 models (the 3 rules share one pass); conditions 4/5 "
        "and format L add their own queries linearly and are not counted",
    ),
    "meaning (ladder, per arm)": (
        8_876 * 5,
        "8,876 Bengali items x 5 distractor families (random, surface, tag, +literal, hard)",
    ),
}


def timed(run: Callable[[], Any]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def score_into(scorer: Any, queries: Sequence[Any], root: Path, name: str, **kw: Any) -> float:
    from choiceaudit.audit import run_scoring

    return timed(lambda: run_scoring(scorer, queries, root / name, chunk_size=32, **kw))


def make_fake() -> Any:
    from choiceaudit.scorers import FakeScorer

    return FakeScorer()


def make_smollm2() -> Any:
    import torch

    torch.set_num_threads(1)
    from choiceaudit.scorers import load_scorer

    return load_scorer("smollm2")


def chunks_of(queries: Sequence[Any], size: int = 32) -> list[list[Any]]:
    return [list(queries[i : i + size]) for i in range(0, len(queries), size)]


def ray_rows(
    label: str, make: Callable[[], Any], queries: Sequence[Any], root: Path, workers: Sequence[int]
) -> tuple[list[dict[str, Any]], float]:
    """Rows per worker count, and (for the first) the seconds the chunks take through the
    executor alone, with no store: Ray's round trip without the driver's writes."""
    from choiceaudit.audit import RayFanout

    rows, bare = [], 0.0
    for k, n in enumerate(workers):
        start = time.perf_counter()
        with RayFanout(make, workers=n) as fan:
            startup = time.perf_counter() - start
            if k == 0:
                bare = timed(lambda: list(fan.execute(chunks_of(queries))))
            seconds = score_into(fan, queries, root, f"{label}-ray{n}", executor=fan.execute)
        rows.append(
            {
                "scorer": label,
                "how": f"ray, {n} worker(s)",
                "seconds": seconds,
                "startup_s": startup,
            }
        )
    return rows, bare


def prefill_tokens(scorer: Any, queries: Sequence[Any]) -> float:
    """Mean tokens a server prefills per query when every string is prefilled whole."""
    tokenizer = scorer.lm.tokenizer
    total = 0
    for q in queries:
        contexts = [q.prompt()] + ([q.prompt(neutral=True)] if q.neutral_state is not None else [])
        texts = [c + o for c in contexts for o in q.continuations()]
        total += sum(len(ids) for ids in tokenizer(texts)["input_ids"])
    return total / len(queries)


def estimate(
    per_query_tokens: float, client_s: float, gpus: Sequence[int], tput: float, concurrency: int
) -> list[dict[str, Any]]:
    rows = []
    for plan, (n_queries, what) in PLANS.items():
        for n in gpus:
            gpu_s = n_queries * per_query_tokens / (n * tput)
            client = n_queries * client_s / concurrency
            rows.append(
                {
                    "plan": plan,
                    "queries": n_queries,
                    "gpus": n,
                    "hours": (max(gpu_s, client)) / 3600,
                    "gpu_bound": gpu_s >= client,
                    "what": what,
                }
            )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fake-queries", type=int, default=2000)
    parser.add_argument("--lm-queries", type=int, default=48)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument(
        "--gpu-tokens-per-s",
        type=float,
        default=20_000.0,
        help="ASSUMED prefill throughput of one GPU for the audited model (not measured here)",
    )
    parser.add_argument("--concurrency", type=int, default=16, help="openai requests in flight")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=None,
        help="instead: the toolkit's own costs at these run sizes (scale_sizes.py)",
    )
    parser.add_argument("--step-timeout", type=float, default=3600.0)
    parser.add_argument(
        "--steps",
        nargs="+",
        default=None,
        help="with --sizes: only these steps (e.g. 'import decisions' 'import lm-eval')",
    )
    args = parser.parse_args(argv)
    if args.sizes:
        from scale_sizes import markdown, run_sizes

        size_rows = run_sizes(args.sizes, args.step_timeout, args.steps)
        print(markdown(size_rows, args.sizes))
        if args.json:
            args.json.write_text(json.dumps(size_rows, indent=1))
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import ray
    import torch
    from bench_engine import signalling_queries

    from choiceaudit.scorers import OpenAIScorer
    from choiceaudit.serve import ServerThread, create_app

    torch.set_num_threads(1)
    ray.init(num_cpus=max(args.workers), include_dashboard=False, log_to_driver=False)
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            fake_q = signalling_queries(args.fake_queries, seed=5)
            rows.append(
                {
                    "scorer": "fake",
                    "how": "one process",
                    "seconds": score_into(make_fake(), fake_q, root, "fake-1"),
                }
            )
            fake = make_fake()
            in_process = timed(lambda: [fake.score(c) for c in chunks_of(fake_q)])
            fan_rows, through_ray = ray_rows("fake", make_fake, fake_q, root, args.workers)
            rows += fan_rows
            lm_q = signalling_queries(args.lm_queries, seed=6)
            hf = make_smollm2()
            hf.score(lm_q[:2])  # warm-up
            rows.append(
                {
                    "scorer": "smollm2",
                    "how": "hf, one process",
                    "seconds": score_into(hf, lm_q, root, "lm-1"),
                }
            )
            # the server's engine time, for the client overhead (HTTP, JSON, parsing) below
            app = create_app(hf, served_name="smollm2")
            with ServerThread(app) as url:
                remote = OpenAIScorer(url, "smollm2", reorder_check=0, concurrency=1)
                rows.append(
                    {
                        "scorer": "smollm2",
                        "how": "openai over serve-model",
                        "seconds": score_into(remote, lm_q, root, "lm-http"),
                    }
                )
            engine_s = float(app.state.engine_seconds)
            rows += ray_rows("smollm2", make_smollm2, lm_q, root, args.workers)[0]
            per_query_tokens = prefill_tokens(hf, lm_q)
    finally:
        ray.shutdown()
    for row in rows:
        n = args.fake_queries if row["scorer"] == "fake" else args.lm_queries
        row["queries"] = n
        row["qps"] = n / row["seconds"]
    base = {r["scorer"]: r for r in rows if r["how"] in ("one process", "hf, one process")}
    for row in rows:
        row["speedup"] = row["qps"] / base[row["scorer"]]["qps"]
    ray_overhead = (through_ray - in_process) / args.fake_queries
    http = next(r for r in rows if r["how"] == "openai over serve-model")
    client_s = (http["seconds"] - engine_s) / args.lm_queries
    engine_per_request = engine_s / args.lm_queries
    engine_in_process = base["smollm2"]["seconds"] / args.lm_queries
    est = estimate(
        per_query_tokens, max(client_s, 0.0), args.gpus, args.gpu_tokens_per_s, args.concurrency
    )

    print(f"# bench_scale on {platform.platform()}, {os.cpu_count()} CPUs, ray {ray.__version__}")
    print("| scorer | how | queries | s | queries/s | x one process | start-up s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        startup = f"{r['startup_s']:.1f}" if "startup_s" in r else ""
        print(
            f"| {r['scorer']} | {r['how']} | {r['queries']} | {r['seconds']:.2f} | "
            f"{r['qps']:.1f} | {r['speedup']:.2f} | {startup} |"
        )
    print(
        f"\nRay overhead per query (fake, chunks of 32 through 1 actor with no store, minus "
        f"the same chunks in process): {ray_overhead * 1e3:.3f} ms"
    )
    print(
        f"Client overhead per query (openai wall minus the server's engine time: HTTP, JSON, "
        f"parsing): {client_s * 1e3:.1f} ms"
    )
    print(
        f"SmolLM2 engine s/query: {engine_in_process:.3f} in process (32 queries per call), "
        f"{engine_per_request:.3f} behind the server (one query per request)"
    )
    print(f"Prefill tokens per query (2k strings, each whole): {per_query_tokens:.0f}")
    print(
        f"\nEstimate behind vLLM, ASSUMING {args.gpu_tokens_per_s:,.0f} prefill tokens/s per GPU "
        f"and {args.concurrency} requests in flight:"
    )
    print("| plan | queries | GPUs | hours | bound by |")
    print("|---|---:|---:|---:|---|")
    for e in est:
        bound = "GPU prefill" if e["gpu_bound"] else "client"
        print(f"| {e['plan']} | {e['queries']:,} | {e['gpus']} | {e['hours']:.2f} | {bound} |")
    for plan, (_, what) in PLANS.items():
        print(f"- {plan}: {what}")
    if args.json is not None:
        record = {
            "rows": rows,
            "ray_overhead_s": ray_overhead,
            "client_s": client_s,
            "engine_s_per_query_in_process": engine_in_process,
            "engine_s_per_query_served": engine_per_request,
            "prefill_tokens_per_query": per_query_tokens,
            "estimate": est,
        }
        args.json.write_text(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
