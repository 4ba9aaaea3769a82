"""What the default demo asks of the causal-LM engine, counted, and its calls replayed.

``record OUT.pkl`` runs the default demo's plan with the engine replaced by a recorder (every
call's token ids, no model forward: a couple of minutes), so the rest works without scoring::

    PYTHONPATH=src HF_HUB_OFFLINE=1 python benchmarks/demo_workload.py record /tmp/calls.pkl
    PYTHONPATH=src python benchmarks/demo_workload.py count /tmp/calls.pkl
    PYTHONPATH=src HF_HUB_OFFLINE=1 python benchmarks/demo_workload.py replay /tmp/calls.pkl \\
        gemma3-270m meaning-hf --calls 4 --threads 2

``count`` prints, per model and arm: queries, packed rows (each context of a query) and how many
are distinct sets in their call (what the engine runs), the positions the output projection
reads, the body tokens the engine computes (its blocks and padded tails, with a cross-call cache
that never evicts), and the tokens a perfect prefix
reuse would compute (a radix tree over every string of the arm, each scored sequence without
its last token: the floor no block cache reaches); the body tokens are counted by running the arm's calls through this checkout's engine
on a one-layer stand-in model of the same vocabulary (the engine's blocks, cache and padding
depend on the token ids alone); then the fp32 FLOPs of that floor and of the reads, and the seconds they take at the
GEMM rate measured here (``bench_engine.gemm_flops`` on every core, or ``--gemm``).

``replay`` runs one arm's recorded calls (the first ``--calls``) through the engine of this
checkout and prints the wall and CPU seconds and the body tokens it computed; ``--out`` pickles
the scores, ``--compare`` prints the largest difference from a pickle another checkout wrote
(so one arm can be timed and checked across two commits).

The arms: ``signalling-hf`` (the first 512 queries an ``hf`` scorer of the model was asked),
``meaning-hf`` (the rest) and ``meaning-lm-choice``.
"""

from __future__ import annotations

import argparse
import collections
import os
import pickle
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import gemm_flops

#: the non-embedding parameters (FLOPs per token / 2) and the output projection's size
MODELS = {
    "smollm2": {
        "body": 30 * (2 * 576 * 576 + 2 * 576 * 192 + 3 * 576 * 1536),
        "head": 49152 * 576,
        "vocab": 49152,
    },
    "gemma3-270m": {
        "body": 18 * (2 * 640 * 1024 + 2 * 640 * 256 + 3 * 640 * 2048),
        "head": 262144 * 640,
        "vocab": 262144,
    },
}
SIGNALLING_QUERIES = 512  # the default demo's signalling queries per model


def record(out: Path) -> int:
    """Run the default demo with the two in-process causal-LM scorers recording the token ids
    they would hand the engine (as they tokenize them) and answering zeros instead of scoring."""
    import tempfile

    from choiceaudit.audit import run_demo
    from choiceaudit.scorers import HFScorer, LMChoiceScorer
    from choiceaudit.types import Decision

    calls: list[tuple[str, str, Any]] = []

    def options(self: Any, queries: Sequence[Any]) -> list[Decision]:
        groups = []
        for q in queries:
            conts = q.continuations()
            labels = [str(i) for i in range(len(conts))]
            encs = self.renderer.encode(q.prompt(), conts, labels)
            if q.neutral_state is not None:
                encs += self.renderer.encode(q.prompt(neutral=True), conts, labels)
            groups.append([(tuple(e.ids), e.first_scored) for e in encs])
        calls.append(("seq", self.lm.source.name, groups))
        zero = {"sum": np.zeros(len(q.options)), "mean": np.zeros(len(q.options))}
        return [
            Decision(
                q.id,
                np.full(len(q.options), 1 / len(q.options)),
                {**zero, **({"pmi": zero["sum"]} if q.neutral_state is not None else {})},
            )
            for q in queries
        ]

    def keys(self: Any, queries: Sequence[Any]) -> list[Decision]:
        asked = []
        for q in queries:
            encs = self.renderer.encode(self.prompt(q), [" " + k for k in q.keys], list(q.keys))
            context = tuple(encs[0].ids[: encs[0].first_scored])
            asked.append((context, tuple(e.ids[e.first_scored] for e in encs)))
        calls.append(("next", self.lm.source.name, asked))
        return [
            Decision(
                q.id,
                np.full(len(q.options), 1 / len(q.options)),
                {
                    "prob": np.full(len(q.options), 1 / len(q.options)),
                    "logit": np.zeros(len(q.options)),
                },
                aux={"key_mass": 1.0},
            )
            for q in queries
        ]

    HFScorer.score = options  # type: ignore[method-assign]
    LMChoiceScorer.score = keys  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            run_demo(out=tmp, workers=0)
        except Exception as exc:  # the analyses of all-zero scores may refuse; the calls are in
            print(f"(the demo's analysis stopped on the recorded zeros: {exc})", file=sys.stderr)
    with out.open("wb") as f:
        pickle.dump(calls, f)
    print(f"{len(calls)} engine calls recorded in {out}")
    return 0


def arms(calls: Sequence[Any]) -> dict[tuple[str, str], list[tuple[str, Any]]]:
    """``(model, arm) -> [(kind, call data)]`` in call order."""
    out: dict[tuple[str, str], list[tuple[str, Any]]] = collections.defaultdict(list)
    seen: dict[str, int] = collections.Counter()
    for kind, model, data in calls:
        if kind == "next":
            out[(model, "meaning-lm-choice")].append((kind, data))
            continue
        arm = "signalling-hf" if seen[model] < SIGNALLING_QUERIES else "meaning-hf"
        seen[model] += len(data)
        out[(model, arm)].append((kind, data))
    return dict(out)


def _rows(kind: str, data: Any) -> list[tuple[tuple[tuple[int, ...], ...], int]]:
    """The call's packed rows as the engine forms them: (its distinct sequences in sorted order,
    its first read position), before rows of the same set are merged."""
    rows = []
    if kind == "seq":
        for group in data:
            by: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
            for ids, first in group:
                by.setdefault(tuple(ids[:first]), []).append(tuple(int(t) for t in ids))
            for context, seqs in by.items():
                rows.append((tuple(sorted(set(seqs))), len(context) - 1))
    else:
        for prompt, _ in data:
            rows.append(((tuple(int(t) for t in prompt),), len(prompt) - 1))
    return rows


def _prefixes(seqs: Sequence[Sequence[int]]) -> set[tuple[int, ...]]:
    return {tuple(s[: j + 1]) for s in seqs for j in range(len(s))}


def _stand_in(vocab: int, positions: int) -> Any:
    """A one-layer model of width 16 with the model's vocabulary and context: the engine packs,
    blocks, caches and pads a call's rows by their token ids alone, so the tokens this model's
    body is given are the tokens the real model's is."""
    import torch
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=16,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=positions,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    model.train(False)
    return model


def _body_tokens(model: str, items: Sequence[tuple[str, Any]]) -> int:
    """The padded tokens the engine gives a model's body for these calls, with the scorers'
    default options and a prefix cache that never evicts (as one run's would, for the demo)."""
    from choiceaudit.scorers import (
        EngineOptions,
        PrefixCache,
        ScoreSpec,
        next_token_logits,
        sequence_logprobs,
    )

    stand_in = _stand_in(MODELS[model]["vocab"], 32768)
    engine = EngineOptions()
    cache = PrefixCache(stand_in, 1e6)
    options: dict[str, Any] = {
        "max_batch_tokens": engine.max_batch_tokens,
        "max_batch_rows": engine.max_batch_rows,
        "pad_multiple": engine.pad_multiple,
        "prefix_cache": cache,
        "output_group_mb": 0,
    }
    tokens = [0]
    stand_in.get_input_embeddings().register_forward_pre_hook(
        lambda _, args: tokens.__setitem__(0, tokens[0] + args[0].numel())
    )
    for kind, data in items:
        if kind == "seq":
            groups = [[ScoreSpec(tuple(ids), first) for ids, first in g] for g in data]
            sequence_logprobs(stand_in, groups, **options)
        else:
            next_token_logits(stand_in, [p for p, _ in data], [c for _, c in data], **options)
    return tokens[0]


def count(calls_file: Path, gemm: float | None) -> int:
    with calls_file.open("rb") as f:
        calls = pickle.load(f)
    if gemm is None:  # the rate bench_engine measures, on every core
        gemm = gemm_flops(os.cpu_count() or 1)
    print(f"fp32 GEMM here: {gemm / 1e9:.0f} GFLOP/s on {os.cpu_count()} cores")
    print(
        "model        arm                queries  rows  distinct  reads   body tokens  "
        "floor tokens  floor s  reads s"
    )
    totals: dict[str, float] = collections.defaultdict(float)
    for (model, arm), items in sorted(arms(calls).items()):
        queries = rows = distinct = reads = 0
        everything: list[tuple[int, ...]] = []
        for kind, data in items:
            queries += len(data)
            call_rows = _rows(kind, data)
            rows += len(call_rows)
            unique = list(dict.fromkeys(call_rows))
            distinct += len(unique)
            for seqs, first_read in unique:
                # a scored sequence's last token is never an input; a prompt's last is read
                everything.extend(s[:-1] if kind == "seq" else s for s in seqs)
                options = [s[first_read + 1 : -1] for s in seqs if len(s) > first_read + 1]
                reads += 1 + len(_prefixes(options))
        floor = len(_prefixes(everything))
        body = _body_tokens(model, items)
        spec = MODELS[model]
        floor_s = 2 * spec["body"] * floor / gemm
        reads_s = 2 * spec["head"] * reads / gemm
        totals[model] += floor_s + reads_s
        print(
            f"{model:12s} {arm:18s} {queries:7d} {rows:5d} {distinct:9d} {reads:6d} "
            f"{body:12d} {floor:13d} {floor_s:8.0f} {reads_s:8.0f}",
            flush=True,
        )
    for model, seconds in totals.items():
        print(
            f"{model}: {seconds:.0f} s of fp32 GEMM at the full measured rate for the floor "
            "tokens and the reads"
        )
    return 0


def replay(
    calls_file: Path,
    model: str,
    arm: str,
    n_calls: int,
    threads: int,
    out: Path | None,
    compare: Path | None,
) -> int:
    import torch

    from choiceaudit.scorers import ScoreSpec, load_scorer, next_token_logits, sequence_logprobs

    torch.set_num_threads(threads)
    with calls_file.open("rb") as f:
        items = arms(pickle.load(f))[(model, arm)]
    items = items[:n_calls] if n_calls else items
    scorer = load_scorer(("lm-choice:" if arm == "meaning-lm-choice" else "") + model)
    lm = scorer.lm.model  # type: ignore[attr-defined]
    engine = scorer.engine  # type: ignore[attr-defined]
    options = {
        "max_batch_tokens": engine.max_batch_tokens,
        "max_batch_rows": engine.max_batch_rows,
        "pad_multiple": engine.pad_multiple,
        "prefix_cache": scorer.prefix_cache,  # type: ignore[attr-defined]
        "output_group_mb": engine.output_group_mb,
    }
    tokens = [0]
    lm.get_input_embeddings().register_forward_pre_hook(
        lambda _, args: tokens.__setitem__(0, tokens[0] + args[0].numel())
    )
    results: list[Any] = []
    wall, cpu = time.perf_counter(), time.process_time()
    for kind, data in items:
        if kind == "seq":
            groups = [[ScoreSpec(tuple(ids), first) for ids, first in g] for g in data]
            results.append(sequence_logprobs(lm, groups, **options))
        else:
            results.append(
                next_token_logits(lm, [p for p, _ in data], [c for _, c in data], **options)
            )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{model} {arm}: {len(items)} calls, {wall:.1f} s wall, {cpu:.1f} s CPU on {threads} "
        f"thread(s); {tokens[0]} padded body tokens"
    )
    flat = [np.asarray(x, dtype=np.float64).ravel() for x in _leaves(results)]
    if out is not None:
        with out.open("wb") as f:
            pickle.dump(flat, f)
    if compare is not None:
        with compare.open("rb") as f:
            other = pickle.load(f)
        biggest = max(
            float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(flat, other, strict=True)
        )
        print(f"largest difference from {compare}: {biggest:.2e}")
    return 0


def _leaves(x: Any) -> list[Any]:
    if isinstance(x, np.ndarray | float):
        return [x]
    return [leaf for y in x for leaf in _leaves(y)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    cnt = sub.add_parser("count")
    cnt.add_argument("calls", type=Path)
    cnt.add_argument("--gemm", type=float, help="GFLOP/s to use instead of measuring")
    rep = sub.add_parser("replay")
    rep.add_argument("calls", type=Path)
    rep.add_argument("model", choices=sorted(MODELS))
    rep.add_argument("arm", choices=["signalling-hf", "meaning-hf", "meaning-lm-choice"])
    rep.add_argument("--calls", type=int, default=0, dest="n_calls", help="first N (0: all)")
    rep.add_argument("--threads", type=int, default=2)
    rep.add_argument("--out", type=Path)
    rep.add_argument("--compare", type=Path)
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.out)
    if args.command == "count":
        return count(args.calls, None if args.gemm is None else args.gemm * 1e9)
    return replay(
        args.calls, args.model, args.arm, args.n_calls, args.threads, args.out, args.compare
    )


if __name__ == "__main__":
    raise SystemExit(main())
