"""Benchmark the causal-LM engine against the naive loop, lm-evaluation-harness and the machine.

Side by side, in one process, on one loaded model (SmolLM2, fp32, CPU by default):

(a) naive     one full forward per (query, option) request at batch size 1;
(b) lm-eval   ``HFLM.loglikelihood`` on the same (context, continuation) requests with the same
              model object (batch size 8); needs lm-eval, which lives only in the benchmark's
              own environment: ``benchmarks/setup_bench_env.sh`` then
              ``.venv-bench/bin/python benchmarks/bench_engine.py``;
(c) engine    ``HFScorer.score`` on the queries (tokenization included).

Two workloads, every request unique (lm-evaluation-harness silently runs a duplicated request
once): *signalling-like* (a ~150-token prompt, 6 options of 1–8 tokens, plus the neutral prompt
for PMI) and *idiom-like* (a short state, 4 options of 5–20 tokens). Printed per method: seconds,
tokens per second (request tokens, i.e. what the naive loop processes, over seconds), speedups,
the ratio to the lower bound (the unique tokens of the workload divided by the best tokens per
second this machine reaches on one large batch of the model body), and the largest
|Δ log-prob| of a request against the naive loop.

Against the machine's own limit: an fp32 GEMM microbenchmark runs on the same threads at the
start, before each model and at the end (the best rate so far is used: on a shared machine one
measurement can fall at a load peak), and each row's tokens/s × 2 × parameters is given as a
fraction of that FLOP rate. A third workload, *meaning-plan*, is the demo's E7 shape (each item
under all 24 orderings of its 4 glosses): there the naive loop and lm-eval are not run (its
requests repeat by design) and the engine with the cross-query prefix cache (a fresh cache per
timed run) is compared with the engine without it, both in one call (where the engine shares a
block between the call's queries even without the cache) and in calls of ``--chunk`` queries as
a run makes them (where only the cache carries a block from one call to the next). Runs both
built-in models by default.

A second table gives each workload's *exact floor*: the linear-layer FLOPs any exact engine
must spend with perfect reuse (every distinct input prefix once, the output projection once per
distinct read position), in seconds at the measured GEMM rate, and the naive loop's and
lm-eval's seconds over it: the largest "× vs naive" and "× vs lm-eval" this machine allows on
that workload, whatever the engine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

WORDS = [
    "anchor",
    "apple",
    "arrow",
    "bell",
    "blanket",
    "boat",
    "bottle",
    "bucket",
    "button",
    "cactus",
    "camera",
    "candle",
    "carrot",
    "chain",
    "chair",
    "clock",
    "coin",
    "comb",
    "crown",
    "cup",
    "dice",
    "drum",
    "feather",
    "fence",
    "flag",
    "flute",
    "fork",
    "glove",
    "hammer",
    "harp",
    "helmet",
    "kettle",
    "key",
    "kite",
    "ladder",
    "lamp",
    "lemon",
    "lock",
    "magnet",
    "mirror",
    "nail",
    "needle",
    "onion",
    "paddle",
    "pillow",
    "pipe",
    "rope",
    "saddle",
    "scarf",
    "shell",
    "shovel",
    "soap",
    "spoon",
    "stamp",
    "sponge",
    "tent",
    "thimble",
    "torch",
    "towel",
    "violin",
    "wagon",
    "whistle",
    "window",
]

TILES = {
    "Size": (
        "tiny",
        "small",
        "about hand sized",
        "as big as a person",
        "larger than a car",
        "huge",
    ),
    "Motion": ("moves", "stays still", "spins around its axis", "rolls", "is carried", "flies"),
    "Sound": ("silent", "quiet hum", "loud bang", "rings like a bell", "rustles", "clicks"),
    "Texture": ("smooth", "rough", "soft and fluffy", "sticky", "sharp edged", "slippery when wet"),
}

SIGNALLING_INSTRUCTION = (
    "You are the forensic scientist. You know the hidden pair of cards (Means, Clue). Choose the "
    "one option of the scene tile that best helps your team identify that exact pair among all "
    "candidate pairs. Reply with the option only."
)
IDIOM_INSTRUCTION = "What is the actual figurative meaning of this idiom?"


def signalling_queries(n: int, seed: int = 0) -> list[Any]:
    """Items with 10 candidate Means and 10 Clues, a hidden pair and one tile of 6 options."""
    from choiceaudit.types import Query

    rng = np.random.default_rng(seed)
    out = []
    tiles = list(TILES.items())
    for i in range(n):
        words = rng.choice(WORDS, 20, replace=False)
        means, clues = list(words[:10]), list(words[10:])
        pair = (means[int(rng.integers(10))], clues[int(rng.integers(10))])
        tile, options = tiles[i % len(tiles)]
        order = rng.permutation(6)
        shown = tuple(options[j] for j in order)
        menu = f"Scene tile: {tile}. Options: {'; '.join(shown)}."
        state = (
            f"Item {i}. Candidate means: {', '.join(means)}.\n"
            f"Candidate clues: {', '.join(clues)}.\n"
            f"The hidden pair is Means = {pair[0]}, Clue = {pair[1]}.\n{menu}"
        )
        neutral = f"Item {i}. Candidate means: ___.\nCandidate clues: ___.\n{menu}"
        out.append(
            Query(
                state=state,
                options=shown,
                instruction=SIGNALLING_INSTRUCTION,
                neutral_state=neutral,
                perm=tuple(int(j) for j in order),
            )
        )
    return out


def meaning_plan_queries(n_items: int, seed: int = 2) -> list[Any]:
    """The demo's meaning plan in miniature: each idiom item under all 24 orderings of its 4
    glosses (E7), so every ordering of an item shares the item's whole prompt."""
    import itertools

    from choiceaudit.types import Query

    out = []
    for i, base in enumerate(idiom_queries(n_items, seed=seed)):
        for perm in itertools.permutations(range(4)):
            out.append(
                Query(
                    state=base.state,
                    options=tuple(base.options[j] for j in perm),
                    instruction=base.instruction,
                    perm=perm,
                    meta={"item_id": f"m{i}"},
                )
            )
    return out


def idiom_queries(n: int, seed: int = 1) -> list[Any]:
    """A short idiom-like state and 4 glosses of 5–20 tokens, no neutral prompt."""
    from choiceaudit.types import Query

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        a, b = rng.choice(WORDS, 2, replace=False)
        state = f"Idiom {i}: to put the {a} before the {b}"
        options: list[str] = []
        while len(options) < 4:
            length = int(rng.integers(3, 14))
            gloss = "to " + " ".join(str(w) for w in rng.choice(WORDS, length)) + " quickly"
            if gloss not in options:
                options.append(gloss)
        out.append(Query(state=state, options=tuple(options), instruction=IDIOM_INSTRUCTION))
    return out


@dataclass(frozen=True)
class Request:
    """One (context, continuation) pair, its in-place tokens and its place in the queries."""

    context: str
    continuation: str
    ids: tuple[int, ...]
    first: int
    query: int
    option: int
    neutral: bool


def requests_of(scorer: Any, queries: Sequence[Any], *, unique: bool = True) -> list[Request]:
    out = []
    for qi, query in enumerate(queries):
        for neutral in (False, True) if query.neutral_state is not None else (False,):
            prompt = query.prompt(neutral=neutral)
            conts = query.continuations()
            encs = scorer.renderer.encode(prompt, conts, [f"q{qi}o{j}" for j in range(len(conts))])
            for j, (cont, enc) in enumerate(zip(conts, encs, strict=True)):
                out.append(Request(prompt, cont, enc.ids, enc.first_scored, qi, j, neutral))
    keys = {(r.context, r.continuation) for r in out}
    if unique and len(keys) != len(out):
        raise SystemExit("workload has duplicated requests; lm-eval would run them once")
    return out


def run_naive(model: Any, requests: Sequence[Request]) -> tuple[float, np.ndarray]:
    import torch

    out = np.empty(len(requests))
    start = time.perf_counter()
    with torch.inference_mode():
        for k, r in enumerate(requests):
            logits = model(torch.tensor([r.ids], device=model.device)).logits[0]
            logp = torch.log_softmax(logits.double(), -1)
            rows = torch.arange(r.first - 1, len(r.ids) - 1, device=model.device)
            targets = torch.tensor(r.ids[r.first :], device=model.device)
            out[k] = float(logp[rows, targets].sum())
    return time.perf_counter() - start, out


def run_lm_eval(
    model: Any, tokenizer: Any, requests: Sequence[Request], batch_size: int
) -> tuple[float, np.ndarray] | str:
    try:
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM
    except ImportError:
        return "not installed here (run benchmarks/setup_bench_env.sh, then use .venv-bench)"
    lm = HFLM(
        pretrained=model, tokenizer=tokenizer, batch_size=batch_size, device=str(model.device)
    )
    instances = [
        Instance(request_type="loglikelihood", doc={}, arguments=(r.context, r.continuation), idx=k)
        for k, r in enumerate(requests)
    ]
    start = time.perf_counter()
    results = lm.loglikelihood(instances, disable_tqdm=True)
    seconds = time.perf_counter() - start
    return seconds, np.array([float(lp) for lp, _ in results])


def run_engine(
    scorer: Any, queries: Sequence[Any], requests: Sequence[Request], chunk: int = 0
) -> tuple[float, np.ndarray]:
    """``scorer.score`` on every query in one call, or in calls of ``chunk`` queries as the run
    loop makes them (its parts are scored 32 queries at a time)."""
    size = chunk or len(queries)
    start = time.perf_counter()
    decisions = [
        d for k in range(0, len(queries), size) for d in scorer.score(queries[k : k + size])
    ]
    seconds = time.perf_counter() - start
    out = np.empty(len(requests))
    for k, r in enumerate(requests):
        d = decisions[r.query]
        total = d.scores["sum"][r.option]
        out[k] = total - d.scores["pmi"][r.option] if r.neutral else total
    return seconds, out


def unique_tokens(requests: Sequence[Request]) -> int:
    """Tokens of the workload's prefix trie: every distinct (query, prefix) counted once."""
    from choiceaudit.scorers import TokenTrie

    by_query: dict[int, list[tuple[int, ...]]] = {}
    for r in requests:
        by_query.setdefault(r.query, []).append(r.ids)
    return sum(len(TokenTrie(seqs)) for seqs in by_query.values())


def exact_floor(model: Any, requests: Sequence[Request]) -> dict[str, int]:
    """What any exact engine must compute for the workload, with perfect reuse: every distinct
    input prefix once (a radix tree over all requests' tokens but their last, which no score
    reads the state after), and the output projection once at every distinct position a scored
    token is predicted from; with the model's parameters split into the body (all but the input
    embedding and the output projection) and the projection."""
    inputs = {r.ids[:t] for r in requests for t in range(1, len(r.ids))}
    reads = {r.ids[:t] for r in requests for t in range(r.first, len(r.ids))}
    head = model.get_output_embeddings().weight
    embed = model.get_input_embeddings().weight
    total = sum(p.numel() for p in model.parameters())  # tied weights are counted once
    body = total - embed.numel() - (0 if head is embed else head.numel())
    return {
        "floor_input_tokens": len(inputs),
        "floor_reads": len(reads),
        "body_params": body,
        "head_params": int(head.numel()),
    }


def floor_seconds(floor: dict[str, int], gemm: float) -> float:
    """The floor's linear-layer FLOPs at the machine's measured GEMM rate (attention, norms and
    everything else left out, so no exact engine can be faster here)."""
    flops = 2 * (floor["body_params"] * floor["floor_input_tokens"])
    return (flops + 2 * floor["head_params"] * floor["floor_reads"]) / gemm


def gemm_flops(
    threads: int, n: int = 1024, repeats: int = 5, *, device: str = "cpu", dtype: str = "float32"
) -> float:
    """The machine's matrix-multiply rate (FLOP/s) in ``dtype`` on ``device``: the best of
    ``repeats`` n×n×n products (on ``threads`` threads on a CPU), the rate a transformer's
    linear layers can at most reach there."""
    import torch

    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    kind = getattr(torch, dtype)
    a = torch.randn((n, n), generator=gen).to(device=device, dtype=kind)
    b = torch.randn((n, n), generator=gen).to(device=device, dtype=kind)

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    torch.mm(a, b)  # warm-up
    sync()
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        sync()
        best = max(best, 2 * n**3 / (time.perf_counter() - start))
    return best


def best_tokens_per_second(
    model: Any, *, body_only: bool = False, tokens: int = 1024, repeats: int = 2
) -> float:
    """Tokens per second of one plain causal forward over a large batch (``tokens`` tokens as
    16×64, 8×128 or 4×256), the best over shapes and repeats. A thousand tokens already fill
    the BLAS; more only add Gemma 3's 262k-wide logits (a gigabyte per thousand tokens). A full forward computes the
    logits at every position; ``body_only`` skips the output projection (a stricter bound)."""
    import torch

    gen = torch.Generator().manual_seed(0)
    run = model.base_model if body_only else model
    device = model.device
    best = 0.0
    with torch.inference_mode():
        run(input_ids=torch.randint(0, 100, (2, 32), generator=gen).to(device))  # warm-up
        for width in (128, 256):
            ids = torch.randint(0, model.config.vocab_size, (tokens // width, width), generator=gen)
            ids = ids.to(device)
            for _ in range(repeats):
                start = time.perf_counter()
                run(input_ids=ids)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                best = max(best, tokens / (time.perf_counter() - start))
    return best


def settle_heap() -> None:
    """Hand the memory earlier runs freed back to the system before a timed run (glibc's
    ``malloc_trim``; nothing elsewhere). The methods share one process, and a method timed after
    the naive loop and lm-eval inherited the heap their large logits left behind: on this
    project's machine the engine then ran SmolLM2's signalling-like workload 25–35% slower
    (3.1–3.3 s fresh, 4.1–4.3 s after either, 3.2–3.3 s after either and a trim), which ranked
    the methods by the order they ran in."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        trim(0)


def best_of(repeats: int, run: Any, *args: Any) -> tuple[float, np.ndarray] | str:
    """The fastest of ``repeats`` runs (other processes on the machine only ever slow a run down)."""
    best: tuple[float, np.ndarray] | str | None = None
    for _ in range(repeats):
        settle_heap()
        res = run(*args)
        if isinstance(res, str):
            return res
        if best is None or (not isinstance(best, str) and res[0] < best[0]):
            best = res
    assert best is not None
    return best


_STARTED = time.perf_counter()


def _say(message: str) -> None:
    """Progress on stderr (the table comes at the end on stdout)."""
    print(f"[{time.perf_counter() - _STARTED:6.0f} s] {message}", file=sys.stderr, flush=True)


def bench_workload(
    name: str,
    scorer: Any,
    queries: Sequence[Any],
    batch_size: int,
    tps_best: float,
    repeats: int = 2,
    *,
    gemm: float = 0.0,
    cached: Any = None,
    naive: bool = True,
    chunk: int = 0,
) -> list[dict[str, Any]]:
    model, tokenizer = scorer.lm.model, scorer.lm.tokenizer
    requests = requests_of(scorer, queries, unique=naive)
    n_params = sum(p.numel() for p in model.parameters())
    n_tokens = sum(len(r.ids) for r in requests)
    n_unique = unique_tokens(requests)
    lower_bound = n_unique / tps_best
    floor = exact_floor(model, requests)
    scorer.score(queries[:2])  # warm-up
    results: dict[str, tuple[float, np.ndarray] | str] = {}
    if naive:
        _say(f"{name}: naive, {len(requests)} requests")
        results["naive"] = best_of(repeats, run_naive, model, requests)
        _say(f"{name}: lm-eval")
        results[f"lm-eval (batch {batch_size})"] = best_of(
            repeats, run_lm_eval, model, tokenizer, requests, batch_size
        )
    _say(f"{name}: engine")
    results["engine"] = best_of(repeats, run_engine, scorer, queries, requests)
    if cached is not None:
        # a fresh cache per timed run: the figure is one run's own reuse, not a warm cache's
        def fresh(*args: Any) -> tuple[float, np.ndarray]:
            from choiceaudit.scorers import PrefixCache

            cached.prefix_cache = PrefixCache(cached.lm.model, cached.engine.prefix_cache_mb)
            return run_engine(*args)

        _say(f"{name}: engine + prefix cache")
        results["engine + prefix cache"] = best_of(repeats, fresh, cached, queries, requests)
        if chunk:
            # as a run scores them: calls of `chunk` queries, so only the cache carries a
            # block from one call to the next
            _say(f"{name}: engine, calls of {chunk}")
            results[f"engine, calls of {chunk}"] = best_of(
                repeats, run_engine, scorer, queries, requests, chunk
            )
            _say(f"{name}: engine + prefix cache, calls of {chunk}")
            results[f"engine + prefix cache, calls of {chunk}"] = best_of(
                repeats, fresh, cached, queries, requests, chunk
            )
    ref_name = "naive" if naive else "engine"
    reference = results[ref_name]
    assert not isinstance(reference, str), f"the {ref_name} reference did not run: {reference}"
    naive_s, naive_lp = reference
    lm_eval = results.get(f"lm-eval (batch {batch_size})", "not run")
    rows = []
    for method, res in results.items():
        # a chunked row is compared with the engine chunked the same way
        same = f"engine, calls of {chunk}" if "calls of" in method else "engine"
        engine_res = results[same]
        row: dict[str, Any] = {
            "workload": name,
            "queries": len(queries),
            "requests": len(requests),
            "request_tokens": n_tokens,
            "unique_tokens": n_unique,
            **floor,
            "floor_s": floor_seconds(floor, gemm) if gemm else None,
            "method": method,
        }
        if isinstance(res, str):
            row["note"] = res
            rows.append(row)
            continue
        seconds, lp = res
        row.update(
            seconds=seconds,
            tokens_per_s=n_tokens / seconds,
            speedup_vs_naive=(naive_s / seconds) if naive else None,
            speedup_vs_engine=engine_res[0] / seconds if not isinstance(engine_res, str) else None,
            fraction_of_gemm=(n_tokens / seconds) * 2 * n_params / gemm if gemm else None,
            speedup_vs_lm_eval=(lm_eval[0] / seconds) if not isinstance(lm_eval, str) else None,
            ratio_to_lower_bound=seconds / lower_bound,
            max_abs_dlogp_vs_naive=float(np.abs(lp - naive_lp).max()),
            reference=ref_name,
        )
        rows.append(row)
    return rows


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    head = (
        "| model | workload | method | seconds | tokens/s | of fp32 GEMM | × vs naive "
        "| × vs lm-eval | × vs engine | ÷ lower bound | max abs Δ log-prob vs reference |\n"
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )

    def num(x: Any, fmt: str) -> str:
        return "—" if x is None else format(x, fmt)

    lines = [head]
    for r in rows:
        if "note" in r:
            lines.append(
                f"| {r['model']} | {r['workload']} | {r['method']} | — | — | — | — | — | — | — "
                f"| {r['note']} |"
            )
            continue
        lines.append(
            f"| {r['model']} | {r['workload']} | {r['method']} | {r['seconds']:.2f} "
            f"| {r['tokens_per_s']:.0f} | {num(r['fraction_of_gemm'], '.1%')} "
            f"| {num(r['speedup_vs_naive'], '.2f')} | {num(r['speedup_vs_lm_eval'], '.2f')} "
            f"| {num(r['speedup_vs_engine'], '.2f')} | {r['ratio_to_lower_bound']:.2f} "
            f"| {r['max_abs_dlogp_vs_naive']:.1e} ({r['reference']}) |"
        )
    return "\n".join(lines)


def floors_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """Per workload with the naive loop: the exact floor's seconds and the speed-ups over naive
    and over lm-eval that an engine computing only the floor at the full GEMM rate would show
    (the ceiling of the "× vs" columns on this machine), beside the engine's own."""
    lines = [
        "| model | workload | floor input tokens | floor reads | floor s | naive ÷ floor "
        "| lm-eval ÷ floor | engine ÷ floor |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    seconds: dict[tuple[str, str], dict[str, float]] = {}
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        if "seconds" in r and r.get("floor_s"):
            key = (r["model"], r["workload"])
            first.setdefault(key, r)
            seconds.setdefault(key, {})[r["method"]] = r["seconds"]
    for key, times in seconds.items():
        naive = times.get("naive")
        if naive is None:
            continue
        r = first[key]
        floor = r["floor_s"]
        lm_eval = next((v for k, v in times.items() if k.startswith("lm-eval")), None)
        lines.append(
            f"| {key[0]} | {key[1]} | {r['floor_input_tokens']} | {r['floor_reads']} "
            f"| {floor:.2f} | {naive / floor:.1f} "
            f"| {'—' if lm_eval is None else format(lm_eval / floor, '.1f')} "
            f"| {times['engine'] / floor:.2f} |"
        )
    return "\n".join(lines)


def _loads(loads: Sequence[float]) -> str:
    return " ".join(f"{x:.2f}" for x in loads)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", action="append", help="repeatable; default smollm2 and gemma3-270m"
    )
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8, help="lm-eval batch size")
    # sized so both models finish within 20 minutes on this project's two shared cores: the
    # naive loop (one forward per request) is most of the time, and grows with the queries
    parser.add_argument("--signalling-queries", type=int, default=8)
    parser.add_argument("--idiom-queries", type=int, default=24)
    parser.add_argument("--meaning-items", type=int, default=2, help="items × 24 orderings")
    parser.add_argument(
        "--chunk", type=int, default=32, help="queries per call on the meaning plan, as a run"
    )
    parser.add_argument("--prefix-cache-mb", type=float, default=512)
    parser.add_argument("--repeats", type=int, default=2, help="time = best of this many runs")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a few queries, one run each: checks the benchmark runs, measures nothing",
    )
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.signalling_queries, args.idiom_queries, args.meaning_items = 2, 2, 1
        args.repeats = 1

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from choiceaudit.scorers import EngineOptions, HFScorer, load_causal_lm

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    # the GEMM rate is taken before each model and at the end and the best kept: on a shared
    # machine one measurement can fall at a load peak
    gemms = [gemm_flops(args.threads)]
    load_before = os.getloadavg()
    rows: list[dict[str, Any]] = []
    header = []
    for model_name in args.model or ["smollm2", "gemma3-270m"]:
        lm = load_causal_lm(model_name, dtype=args.dtype)
        gemms.append(gemm_flops(args.threads))
        gemm = max(gemms)
        # the uncached engine is asked for explicitly, whatever the scorers' default
        scorer = HFScorer(lm, engine=EngineOptions(prefix_cache_mb=0))
        cached = HFScorer(lm, engine=EngineOptions(prefix_cache_mb=args.prefix_cache_mb))
        _say(f"{model_name}: loaded; best throughput on one large batch")
        tps_best = best_tokens_per_second(lm.model)
        n_params = sum(p.numel() for p in lm.model.parameters())
        header.append(
            f"{model_name}: {n_params / 1e6:.1f}M parameters; best throughput on one large batch "
            f"{tps_best:.0f} tokens/s (full forward)"
        )
        workloads = (
            ("signalling-like", signalling_queries(args.signalling_queries), True),
            ("idiom-like", idiom_queries(args.idiom_queries), True),
            ("meaning-plan (E7)", meaning_plan_queries(args.meaning_items), False),
        )
        for name, queries, naive in workloads:
            for row in bench_workload(
                name,
                scorer,
                queries,
                args.batch_size,
                tps_best,
                args.repeats,
                gemm=gemm,
                cached=cached,
                naive=naive,
                chunk=0 if naive else args.chunk,
            ):
                rows.append({"model": model_name, **row})
    gemms.append(gemm_flops(args.threads))
    print(
        f"{args.dtype}, torch {torch.__version__}, {args.threads} threads, best of "
        f"{args.repeats} runs, {platform.processor() or platform.machine()}, load average "
        f"(1, 5, 15 min) {_loads(load_before)} at the start, {_loads(os.getloadavg())} at the "
        f"end; measured fp32 GEMM (1024³, same threads) "
        f"{' / '.join(f'{g / 1e9:.1f}' for g in gemms)} GFLOP/s (start, before each model, end); "
        "'of fp32 GEMM' = tokens/s × 2 × parameters ÷ the best of those up to that model"
    )
    print("\n".join(header))
    seen = set()
    for r in rows:
        if (r["model"], r["workload"]) not in seen:
            seen.add((r["model"], r["workload"]))
            print(
                f"{r['model']} {r['workload']}: {r['queries']} queries, {r['requests']} requests, "
                f"{r['request_tokens']} request tokens, {r['unique_tokens']} unique tokens"
            )
    print(markdown(rows))
    print(floors_markdown(rows))
    print(f"benchmark wall time {(time.perf_counter() - started) / 60:.1f} min")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(
                {"rows": rows, "gemm_flops": gemms, "threads": args.threads}, handle, indent=1
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
