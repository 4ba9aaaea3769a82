"""How far apart two output directories' stored scores are, run by run (two demos, say).

For every run directory under ``A`` (``A/<instrument>/<run>/manifest.json``) the same run under
``B`` must hold the same query ids; the script prints per run the rows, the largest absolute
difference of any stored score or probability, and how many choices differ::

    PYTHONPATH=src python benchmarks/compare_runs.py /tmp/demo-before /tmp/demo-after
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from choiceaudit.store import RunStore
from choiceaudit.types import Decision


def largest_difference(a: Decision, b: Decision) -> float:
    """The largest |Δ| over the two decisions' scores (rule by rule) and probabilities."""
    worst = 0.0
    for rule, values in a.scores.items():
        diff = np.abs(np.asarray(values, dtype=float) - np.asarray(b.scores[rule], dtype=float))
        worst = max(worst, float(diff.max(initial=0.0)))
    diff = np.abs(np.asarray(a.probs, dtype=float) - np.asarray(b.probs, dtype=float))
    return max(worst, float(diff.max(initial=0.0)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    args = parser.parse_args()
    overall = 0.0
    for manifest in sorted(args.a.glob("*/*/manifest.json")):
        rel = manifest.parent.relative_to(args.a)
        rows_a = {r.query.id: r.decision for r in RunStore(manifest.parent).load().rows}
        rows_b = {r.query.id: r.decision for r in RunStore(args.b / rel).load().rows}
        if set(rows_a) != set(rows_b):
            print(f"{rel}: the two runs hold different queries", file=sys.stderr)
            return 1
        worst = max(largest_difference(d, rows_b[q]) for q, d in rows_a.items())
        flips = sum(d.choice() != rows_b[q].choice() for q, d in rows_a.items())
        overall = max(overall, worst)
        print(f"{rel.as_posix():40s} rows {len(rows_a):5d}  max |Δ| {worst:.3g}  choices differ {flips}")
    print(f"largest |Δ| over every run: {overall:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
