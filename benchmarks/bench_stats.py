"""Benchmark for choiceaudit.stats at the papers' scale.

- Item-clustered percentile bootstrap, 4,000 resamples, 1,000 items × 2 renderings, for the
  21 model×rule cells of consistency-without-alignment (Table I), plus excess with its interval.
- ECE (equal-width and equal-mass), AURC and AUGRC over 100,000 rows of 4-way probabilities.

Run: ``python benchmarks/bench_stats.py``. Timings are printed, never asserted.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from choiceaudit.stats import augrc, aurc, bootstrap_ci, ece, excess_consistency_ci

N_CELLS = 21
N_ITEMS = 1_000
N_PERMS = 2
N_RESAMPLES = 4_000
N_ROWS = 100_000


def _timed(label: str, func: Callable[[], Any], repeat: int = 3) -> Any:
    best, result = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        best = min(best, time.perf_counter() - start)
    print(f"{label:<58s} {best * 1e3:9.1f} ms")
    return result


def bench_bootstrap(rng: np.random.Generator) -> None:
    clusters = np.repeat(np.arange(N_ITEMS), N_PERMS)
    cells = [rng.random(N_ITEMS * N_PERMS) for _ in range(N_CELLS)]
    choices = [(rng.integers(0, 4, N_ITEMS), rng.integers(0, 4, N_ITEMS)) for _ in range(N_CELLS)]

    def all_cells() -> list[Any]:
        return [
            bootstrap_ci(v, n_resamples=N_RESAMPLES, level=0.95, clusters=clusters, seed=i)
            for i, v in enumerate(cells)
        ]

    def all_excess() -> list[Any]:
        return [
            excess_consistency_ci(a, b, 4, n_resamples=N_RESAMPLES, seed=i)
            for i, (a, b) in enumerate(choices)
        ]

    def one_cell_loop() -> np.ndarray:
        # The naive version: one Python iteration per resample (reference only).
        gen = np.random.default_rng(0)
        rows_of = clusters.reshape(N_ITEMS, N_PERMS)
        out = np.empty(N_RESAMPLES)
        for b in range(N_RESAMPLES):
            idx = gen.integers(0, N_ITEMS, N_ITEMS)
            out[b] = cells[0][rows_of[idx].ravel()].mean()
        return out

    print(
        f"clustered bootstrap: {N_CELLS} cells × {N_RESAMPLES} resamples × {N_ITEMS} items "
        f"× {N_PERMS} renderings"
    )
    res = _timed(f"bootstrap_ci, all {N_CELLS} cells", all_cells)
    _timed("excess_consistency_ci, all 21 cells", all_excess)
    _timed("naive per-resample loop, ONE cell (reference)", one_cell_loop, repeat=1)
    print(f"  cell 0: {res[0].estimate:.4f} [{res[0].low:.4f}, {res[0].high:.4f}]")


def bench_calibration(rng: np.random.Generator) -> None:
    logits = rng.normal(scale=2.0, size=(N_ROWS, 4))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    labels = rng.integers(0, 4, N_ROWS)
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(float)
    conf_tied = np.round(conf, 2)  # two-decimal confidences: heavy ties
    print(f"calibration and selective prediction over {N_ROWS:,} rows (k = 4)")
    _timed("ece strategy='width' (15 bins)", lambda: ece(probs, labels))
    _timed("ece strategy='mass' (15 bins)", lambda: ece(probs, labels, strategy="mass"))
    _timed("aurc", lambda: aurc(conf, correct))
    _timed("augrc", lambda: augrc(conf, correct))
    _timed("aurc, confidences rounded to 2 decimals (ties)", lambda: aurc(conf_tied, correct))


def main() -> None:
    print(f"numpy {np.__version__}, Python {platform.python_version()}, {platform.machine()}")
    rng = np.random.default_rng(20261001)
    bench_bootstrap(rng)
    bench_calibration(rng)


if __name__ == "__main__":
    main()
