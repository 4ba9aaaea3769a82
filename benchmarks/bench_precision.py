"""The engine in float32, bfloat16 and float16 side by side, in one process, on the same queries.

For each built-in model (both by default) and each workload — *signalling-like* and
*idiom-like* (the engine benchmark's, every request unique) and *demo-meaning* (the demo's E7
shape: each item under all 24 orderings of its glosses, scored in calls of ``--chunk`` queries
as a run makes them) — the engine is timed in every dtype, the dtypes interleaved within each
repeat so a load peak of a shared machine falls on all of them alike (time = best of
``--repeats``). Printed per row:

* seconds, and tokens per second over the *request* tokens (every option's full string, what a
  naive loop would run), with the ratio of float32's seconds to this dtype's;
* ``of fp32 GEMM (request)``: request tokens/s × 2 × parameters ÷ the machine's float32 GEMM
  rate — the engine benchmark's column under its old name: above 100% it measures the engine's
  reuse of shared prefixes, not the hardware;
* ``of dtype GEMM (run)``: the linear-layer FLOPs the engine actually ran — 2 × body parameters
  × the tokens that went through the model's input embedding (counted by a hook, padding
  included), plus 2 × output-projection parameters × the hidden states the engine's output
  head projects (counted where the engine calls it; its padding of a product to 16 rows left
  out) — per second, ÷ the machine's GEMM rate *in that dtype*: how much of the hardware the
  engine used;
* the noise floor against float32 on the workload itself, as the precision gate computes it
  (:func:`choiceaudit.metrics.rule_shifts`): largest and 95th-percentile |Δ summed
  log-probability| per option, and the share of queries whose chosen option set flips under
  the worst rule.

Float32 is checked once per model against the float64 reference (the gate's diagnostic).

``bfloat16-untiled`` is bfloat16 with the engine's fixed-shape products turned off for that
model (every product at the batch's own number of rows, as before the engine tiled them): what
keeping a row's bits independent of its batch costs in bfloat16, measured beside it. It is a
benchmark's switch only; the engine has no such option.

    python benchmarks/bench_precision.py                    # both models, ~15 min on 2 cores
    python benchmarks/bench_precision.py --smoke --model smollm2
"""

from __future__ import annotations

import argparse
import json
import os
import pkgutil
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import (
    exact_floor,
    gemm_flops,
    idiom_queries,
    meaning_plan_queries,
    requests_of,
    signalling_queries,
)

DTYPES = ("float32", "bfloat16", "bfloat16-untiled", "float16")
UNTILED = "-untiled"
#: what the engine calls to run a reduced precision's products in fixed tiles (patched by name)
TILES = "choiceaudit.scorers._engine.fix_tiles"
HEAD_TILES = "choiceaudit.scorers._output_head.needs_fixed_tiles"


def untiled_patches(models: Sequence[Any]) -> list[Any]:
    """Patches under which ``models`` run without fixed tiles (body and output head) and every
    other model as the engine runs it."""
    fix, needs = pkgutil.resolve_name(TILES), pkgutil.resolve_name(HEAD_TILES)
    skip = {id(m) for m in models}
    weights = {id(m.get_output_embeddings().weight) for m in models}

    def fix_unless(model: Any) -> int:
        return 0 if id(model) in skip else int(fix(model))

    def needs_unless(weight: Any) -> bool:
        return False if id(weight) in weights else bool(needs(weight))

    return [mock.patch(TILES, fix_unless), mock.patch(HEAD_TILES, needs_unless)]


class TokenCounter:
    """Counts the positions that go through a model's input embedding (every forward, padding
    included): the tokens the engine actually runs through the body; and the hidden states it
    projects onto the vocabulary (``reads``; the engine's output head, counted where the engine
    calls it)."""

    def __init__(self, model: Any) -> None:
        self.tokens = 0
        self.reads = 0
        embedding = model.get_input_embeddings()
        self._handle = embedding.register_forward_hook(self._count)

    def _count(self, module: Any, inputs: Any, output: Any) -> None:
        self.tokens += int(inputs[0].numel())


#: where the engine projects its read states onto the vocabulary (patched by name to count)
HEAD = "choiceaudit.scorers._engine.normalised_reads"


def counting_head(counters: dict[int, TokenCounter]) -> Any:
    """The engine's output head, counting each model's projected states into its counter."""
    real = pkgutil.resolve_name(HEAD)

    def head(model: Any, states: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        counter = counters.get(id(model))
        if counter is not None:
            counter.reads += sum(int(h.shape[0]) for h in states)
        return real(model, states, *args, **kwargs)

    return head


def _scores(decisions: Sequence[Any]) -> list[dict[str, np.ndarray]]:
    return [{"probs": d.probs, **d.scores} for d in decisions]


def fresh_cache(scorer: Any) -> None:
    """An empty prefix cache, as a run starts with: a timed call must not be answered from the
    rows an earlier call (the warm-up, another repeat) left in it."""
    from choiceaudit.scorers import PrefixCache

    if scorer.prefix_cache is not None:
        scorer.prefix_cache = PrefixCache(scorer.lm.model, scorer.engine.prefix_cache_mb)


def time_engine(scorer: Any, queries: Sequence[Any], chunk: int) -> tuple[float, list[Any]]:
    """Seconds to score ``queries`` in calls of ``chunk`` (0: one call), and the decisions."""
    calls = (
        [queries] if not chunk else [queries[i : i + chunk] for i in range(0, len(queries), chunk)]
    )
    started = time.perf_counter()
    decisions = [d for call in calls for d in scorer.score(call)]
    return time.perf_counter() - started, decisions


def bench_model(
    model_name: str, args: argparse.Namespace, gemm: dict[str, float]
) -> list[dict[str, Any]]:
    from choiceaudit.metrics import rule_shifts
    from choiceaudit.scorers import ScorerError, load_scorer

    scorers: dict[str, Any] = {
        d: load_scorer(model_name, dtype=d.removesuffix(UNTILED)) for d in args.dtypes
    }
    failed: dict[str, str] = {}  # dtype -> why it cannot score this model
    counters = {d: TokenCounter(s.lm.model) for d, s in scorers.items()}
    patches = [
        mock.patch(HEAD, counting_head({id(s.lm.model): counters[d] for d, s in scorers.items()})),
        *untiled_patches([s.lm.model for d, s in scorers.items() if d.endswith(UNTILED)]),
    ]
    for patch in patches:
        patch.start()
    full = scorers["float32"]
    model = full.lm.model
    workloads = (
        ("signalling-like", signalling_queries(args.signalling_queries), 0),
        ("idiom-like", idiom_queries(args.idiom_queries), 0),
        ("demo-meaning (E7)", meaning_plan_queries(args.meaning_items), args.chunk),
    )
    rows: list[dict[str, Any]] = []
    for name, queries, chunk in workloads:
        requests = requests_of(full, queries, unique=not chunk)
        floor = exact_floor(model, requests)
        request_tokens = sum(len(r.ids) for r in requests)
        n_params = sum(p.numel() for p in model.parameters())
        for dtype, scorer in scorers.items():
            if dtype not in failed:
                try:
                    scorer.score(queries[:2])  # warm-up
                except ScorerError as exc:  # an overflow: Gemma 3 in float16
                    failed[dtype] = str(exc)
        best: dict[str, float] = {}
        run_tokens: dict[str, int] = {}
        run_reads: dict[str, int] = {}
        decisions: dict[str, list[Any]] = {}
        running = {d: s for d, s in scorers.items() if d not in failed}
        for _ in range(args.repeats):
            for dtype, scorer in running.items():
                print(f"{model_name} {name}: {dtype}", file=sys.stderr, flush=True)
                fresh_cache(scorer)
                counters[dtype].tokens = counters[dtype].reads = 0
                seconds, decisions[dtype] = time_engine(scorer, queries, chunk)
                run_tokens[dtype] = counters[dtype].tokens
                run_reads[dtype] = counters[dtype].reads
                best[dtype] = min(best.get(dtype, float("inf")), seconds)
        for dtype in scorers:
            if dtype in failed:
                rows.append(
                    {"model": model_name, "workload": name, "dtype": dtype, "note": failed[dtype]}
                )
                continue
            body = 2 * floor["body_params"] * run_tokens[dtype]
            flops = body + 2 * floor["head_params"] * run_reads[dtype]
            shifts = rule_shifts(_scores(decisions["float32"]), _scores(decisions[dtype]))
            summed = next((s for s in shifts if s.rule == "sum"), None)
            worst = max(shifts, key=lambda s: s.flip_rate)
            rows.append(
                {
                    "model": model_name,
                    "workload": name,
                    "dtype": dtype,
                    "queries": len(queries),
                    "request_tokens": request_tokens,
                    "tokens_run": run_tokens[dtype],
                    "reads_run": run_reads[dtype],
                    "seconds": best[dtype],
                    "tokens_per_s": request_tokens / best[dtype],
                    "speedup_vs_fp32": best["float32"] / best[dtype],
                    "of_fp32_gemm_request": request_tokens
                    / best[dtype]
                    * 2
                    * n_params
                    / gemm["float32"],
                    "of_dtype_gemm_run": flops / best[dtype] / gemm[dtype.removesuffix(UNTILED)],
                    "sum_max_abs": None if summed is None else summed.max_abs,
                    "sum_p95_abs": None if summed is None else summed.p95_abs,
                    "flip_rate": worst.flip_rate,
                    "flip_rule": worst.rule,
                }
            )
    from choiceaudit.scorers import reference_scores

    checked = signalling_queries(args.signalling_queries)[: args.n_reference]
    reference = rule_shifts(
        [{k: v for k, v in s.items() if k != "probs"} for s in _scores(full.score(checked))],
        reference_scores(full, checked),
    )
    rows.append(
        {
            "model": model_name,
            "workload": "float32 against float64",
            "dtype": "float32",
            "queries": len(checked),
            "reference_max_abs": max(s.max_abs for s in reference),
        }
    )
    for patch in reversed(patches):
        patch.stop()
    return rows


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| model | workload | dtype | seconds | tokens/s (request) | × vs fp32 | of fp32 GEMM "
        "(request) | of dtype GEMM (run) | tokens run | reads run | max abs Δ sum | p95 abs Δ sum | flips |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "note" in r:
            lines.append(
                f"| {r['model']} | {r['workload']} | {r['dtype']} | — | — | — | — | — | — | — | — | — "
                "| not finite: the model overflows this precision |"
            )
        if "seconds" not in r:
            continue
        lines.append(
            f"| {r['model']} | {r['workload']} | {r['dtype']} | {r['seconds']:.2f} "
            f"| {r['tokens_per_s']:.0f} | {r['speedup_vs_fp32']:.2f} "
            f"| {r['of_fp32_gemm_request']:.0%} | {r['of_dtype_gemm_run']:.0%} | {r['tokens_run']} "
            f"| {r['reads_run']} "
            f"| {r['sum_max_abs']:.3g} | {r['sum_p95_abs']:.3g} "
            f"| {r['flip_rate']:.1%} ({r['flip_rule']}) |"
        )
    for r in rows:
        if "reference_max_abs" in r:
            lines.append(
                f"\n{r['model']}: float32 against the float64 reference on {r['queries']} "
                f"signalling-like queries, largest abs Δ {r['reference_max_abs']:.2g}"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", help="repeatable; default both built-in")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated; float32 first")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--signalling-queries", type=int, default=32)
    parser.add_argument("--idiom-queries", type=int, default=48)
    parser.add_argument("--meaning-items", type=int, default=4, help="items × 24 orderings")
    parser.add_argument("--chunk", type=int, default=32, help="queries per call, as a run")
    parser.add_argument("--n-reference", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2, help="time = best of this many runs")
    parser.add_argument("--smoke", action="store_true", help="a few queries, one run each")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    args.dtypes = [d.strip() for d in args.dtypes.split(",")]
    if args.dtypes[0] != "float32":
        parser.error("--dtypes must start with float32 (every ratio is to it)")
    if args.smoke:
        args.signalling_queries, args.idiom_queries, args.meaning_items = 2, 2, 1
        args.repeats, args.n_reference = 1, 1
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    load = os.getloadavg()
    gemm = {
        d: gemm_flops(args.threads, dtype=d)
        for d in dict.fromkeys(d.removesuffix(UNTILED) for d in args.dtypes)
    }
    rows: list[dict[str, Any]] = []
    for model_name in args.model or ["smollm2", "gemma3-270m"]:
        rows.extend(bench_model(model_name, args, gemm))
    print(
        f"torch {torch.__version__}, {args.threads} threads, best of {args.repeats} runs, "
        f"{platform.processor() or platform.machine()}, load average (1, 5, 15 min) "
        f"{', '.join(f'{x:.2f}' for x in load)} at the start; measured GEMM (1024³, same "
        "threads): " + ", ".join(f"{d} {g / 1e9:.0f} GFLOP/s" for d, g in gemm.items())
    )
    print(markdown(rows))
    print(f"benchmark wall time {(time.perf_counter() - started) / 60:.1f} min")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "gemm_flops": gemm}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
