"""How far apart two output directories' stored scores are, run by run (two demos, say).

For every run directory under ``A`` (``A/<instrument>/<run>/manifest.json``) the same run under
``B`` must hold the same query ids; the script prints per run the rows, the largest absolute
difference of any stored score or probability, how many choices differ and how many stored
values differ by more than ``--beyond`` (1e-5 unless given)::

    PYTHONPATH=src python benchmarks/compare_runs.py /tmp/demo-before /tmp/demo-after
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from choiceaudit.store import RunStore
from choiceaudit.types import Decision


def differences(a: Decision, b: Decision) -> np.ndarray:
    """Every |Δ| between the two decisions' scores (rule by rule) and probabilities."""
    parts = [
        np.abs(np.asarray(values, dtype=float) - np.asarray(b.scores[rule], dtype=float)).ravel()
        for rule, values in a.scores.items()
    ]
    parts.append(np.abs(np.asarray(a.probs, dtype=float) - np.asarray(b.probs, dtype=float)))
    return np.concatenate(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument(
        "--beyond",
        type=float,
        default=1e-5,
        help="also count the stored values that differ by more than this (default 1e-5)",
    )
    args = parser.parse_args()
    overall = 0.0
    for manifest in sorted(args.a.glob("*/*/manifest.json")):
        rel = manifest.parent.relative_to(args.a)
        rows_a = {r.query.id: r.decision for r in RunStore(manifest.parent).load().rows}
        rows_b = {r.query.id: r.decision for r in RunStore(args.b / rel).load().rows}
        if set(rows_a) != set(rows_b):
            print(f"{rel}: the two runs hold different queries", file=sys.stderr)
            return 1
        diff = np.concatenate([differences(d, rows_b[q]) for q, d in rows_a.items()])
        worst = float(diff.max(initial=0.0))
        flips = sum(d.choice() != rows_b[q].choice() for q, d in rows_a.items())
        overall = max(overall, worst)
        beyond = int((diff > args.beyond).sum())
        print(
            f"{rel.as_posix():40s} rows {len(rows_a):5d}  max |Δ| {worst:.3g}  choices differ "
            f"{flips}  values beyond {args.beyond:g}: {beyond} of {diff.size}"
        )
    print(f"largest |Δ| over every run: {overall:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
