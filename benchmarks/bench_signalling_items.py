"""Benchmark: generate and score 200,000 signalling candidates (paper §I-F).

Times candidate generation plus the exact oracle under both decay families (what
``generate_candidates`` does), then the robustness pass and selection. Target: under 10 s on two
cores. Run::

    python benchmarks/bench_signalling_items.py                       # things from a shared/data directory beside the checkout
    python benchmarks/bench_signalling_items.py --norms lancaster     # offline default norms
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np

from choiceaudit.instruments.signalling import (
    candidate_columns,
)
from choiceaudit.instruments.signalling.items import (
    build_pool,
    conflict_rates,
    generate_candidates,
    load_lancaster,
    load_things,
    load_tiles,
    select_items,
    tie_readings,
)

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--norms", choices=["things", "lancaster"], default="things")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20260901)
    args = parser.parse_args()

    norms = load_things(args.data) if args.norms == "things" else load_lancaster()
    tiles = load_tiles(args.norms, norms=norms)
    pool = build_pool(norms, dimensions=[t.dimension for t in tiles])
    print(f"numpy {np.__version__}, python {platform.python_version()}, {platform.machine()}")
    print(f"norms={args.norms} pool={len(pool)} tiles={[t.name for t in tiles]} n={args.n:,}")
    times = []
    blocks = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        blocks = generate_candidates(pool, tiles, n_candidates=args.n, seed=args.seed)
        times.append(time.perf_counter() - t0)
    print(
        "generation + oracle (exponential and Gaussian): "
        f"best {min(times):.2f} s, median {sorted(times)[len(times) // 2]:.2f} s "
        f"over {args.repeat} runs"
    )
    t0 = time.perf_counter()
    selection = select_items(blocks, n_items=1000, seed=args.seed)
    print(f"robustness pass + selection of 1,000 items: {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    columns = candidate_columns(selection)
    print(
        f"candidate table ({len(columns['candidate']):,} rows, written as candidates.parquet): "
        f"{time.perf_counter() - t0:.2f} s"
    )
    t0 = time.perf_counter()
    readings = {b.tile.name: tie_readings(b) for b in blocks}
    print(f"Appendix B tie readings: {time.perf_counter() - t0:.2f} s")
    for name, row in conflict_rates(blocks).items():
        print(
            f"  {name:10s} conflict {100 * row['conflict_rate']:6.2f}%  "
            f"ties {100 * row['tie_rate']:5.2f}%  "
            f"median competition ratio {row['median_competition_ratio_conflict']:.3f}"
        )
        reading_of = readings[name]
        shares = {
            key: reading_of[key]
            for key in (
                "bayes_optimum/listed_concepts",
                "bayes_optimum/target_pair",
                "any_two_options/listed_concepts",
                "any_two_options/target_pair",
            )
        }
        for reading, cell in shares.items():
            share = cell["geometric_share"]
            if share is not None:
                print(f"    geometric share of ties [{reading}] {100 * share:.1f}%")


if __name__ == "__main__":
    main()
