"""The memory one full throttling table of the study app holds: 100,000 distinct keys of 4,000
characters each go into a default ``KeyedLimiter``; prints the buckets kept and the memory held,
by the table's own size and by tracemalloc.

    PYTHONPATH=src python benchmarks/human_throttle_memory.py
"""

from __future__ import annotations

import tracemalloc

from choiceaudit.human import KeyedLimiter


def main() -> None:
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    limiter = KeyedLimiter(10, 30)
    for n in range(100_000):
        limiter.allow(f"{n:08d}" + "x" * 3992, now=n * 0.001)
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    print(f"buckets kept: {len(limiter)} of max_keys {limiter.max_keys}")
    print(f"table's own size: {limiter.table_bytes() / 2**20:.1f} MiB")
    print(f"held (tracemalloc): {held / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
