"""Measure the ``openai`` probe's conditional gap on ``serve-model`` in reduced precision.

The probe compares a server's echoed log-probability of each continued token with the
log-probability the same server gave that token when it generated it (one token per request),
and refuses the server when the two are more than ``probe_tolerance`` apart (0.02 by default).
In fp32 the two agree to rounding; in bf16 or fp16 the echo (a longer sequence, computed in one
pass) and the generation (a shorter prefix) run different shapes, so a correct server shows a
gap. This command serves each model in each dtype with ``choiceaudit serve-model``'s app in
this process, runs the probe with the tolerance lifted, and reports per (model, dtype):

* ``gap max`` / ``gap median`` — |echoed − generated| over every compared position: what a
  correct server in that precision shows;
* ``shift max`` / ``shift min`` — |echoed[j+1] − generated[j]| over adjacent positions: what the
  probe sees when a server shifts its echo by one position (a fault it must refuse). The probe
  refuses a shifted server when the largest of these exceeds the tolerance, and passes a correct
  one when ``gap max`` stays under it.

Run: ``python benchmarks/probe_precision.py --models smollm2 gemma3-270m
--dtypes float32 bfloat16 float16 --json probe_precision.json`` (CPU; a few minutes).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def measure(model: str, dtype: str) -> dict[str, Any]:
    from choiceaudit.scorers import OpenAIScorer, load_scorer
    from choiceaudit.serve import ServerThread, create_app

    start = time.perf_counter()
    served = load_scorer(model, dtype=dtype)
    with ServerThread(create_app(served, served_name=model)) as url:  # type: ignore[arg-type]
        probe = OpenAIScorer(url, model, probe_tolerance=1e9, reorder_check=0).prepare()
    comparisons = list(probe.comparisons)
    gaps = [c["abs_diff"] for c in comparisons]
    shifted = [
        abs(b["echoed"] - a["generated"])
        for a, b in itertools.pairwise(comparisons)
        if b["prefix"].startswith(a["prefix"]) and b["step"] == a["step"] + 1
    ]
    return {
        "model": model,
        "dtype": dtype,
        "compared": len(gaps),
        "gap_max": max(gaps),
        "gap_median": statistics.median(gaps),
        "shift_max": max(shifted) if shifted else None,
        "shift_min": min(shifted) if shifted else None,
        "seconds": round(time.perf_counter() - start, 1),
    }


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| model | dtype | compared | gap max | gap median | shift max | shift min |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['dtype']} | refused: {r['error'][:120]} | | | | |")
            continue
        hi, lo = ("—" if r[k] is None else f"{r[k]:.3g}" for k in ("shift_max", "shift_min"))
        lines.append(
            f"| {r['model']} | {r['dtype']} | {r['compared']} | {r['gap_max']:.3g} | "
            f"{r['gap_median']:.3g} | {hi} | {lo} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the probe's conditional gap per dtype")
    parser.add_argument("--models", nargs="+", default=["smollm2", "gemma3-270m"])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16", "float16"])
    parser.add_argument("--json", default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    rows = []
    for model in args.models:
        for dtype in args.dtypes:
            try:
                rows.append(measure(model, dtype))
            except Exception as exc:  # a model that cannot run in a dtype is a finding too
                rows.append({"model": model, "dtype": dtype, "error": str(exc)[:300]})
    print(
        f"machine: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, torch threads {os.environ.get('OMP_NUM_THREADS', 'default')}"
    )
    print(markdown(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
